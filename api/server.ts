import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Container } from '../shared/container';
import { createApp } from './app';
import { socketIoKey } from '../shared/desktop/computer-link';
import { attachGateways, type AttachedGateways, type Gateway } from './sockets/gateway';

export interface WebServer {
  server: http.Server;
  /** The socket.io server with every gateway's namespace. */
  gateway: AttachedGateways;
  port: number;
  /** Stops accepting connections and waits for open requests to end. */
  close(): Promise<void>;
}

/**
 * The web process: the API (Koa, and long polls beside it) on one HTTP server, and the given
 * socket.io gateways (the composition root's: `/desktop`, …) on one socket.io server beside it.
 */
export async function startWeb(
  container: Container,
  options: { port?: number; validateResponses?: boolean; gateways?: readonly Gateway[] } = {},
): Promise<WebServer> {
  await container.apiKeys.listenForRevocations();
  const { listener } = createApp(container, { validateResponses: options.validateResponses });
  let closing = false;
  const server = http.createServer((req, res) => {
    // While stopping, each answer ends its keep-alive connection: the client comes back on another process.
    if (closing) res.setHeader('Connection', 'close');
    listener(req, res);
  });
  const gateway = attachGateways(server, { redis: container.redis, redisPrefixKey: socketIoKey(container.config.redisPrefix), logger: container.logger }, options.gateways ?? []);
  // Long polls wait up to 55 s; keep sockets and requests alive past that.
  server.requestTimeout = 120_000;
  server.headersTimeout = 65_000;
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? container.config.port, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    server,
    gateway,
    port,
    async close() {
      closing = true;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // Keep-alive connections would hold the close until they time out: each is closed as soon
      // as its request in flight (answered before `closing` was set) has been answered.
      server.closeIdleConnections();
      const sweep = setInterval(() => server.closeIdleConnections(), 50);
      // Waiting long polls would hold the close for up to 55 s: they are answered now.
      container.followers.endWaits();
      try {
        await gateway.close();
        await closed;
      } finally {
        clearInterval(sweep);
      }
    },
  };
}
