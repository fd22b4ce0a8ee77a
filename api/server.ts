import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Container } from '../shared/container';
import { createApp } from './app';
import { attachDesktopGateway } from './sockets/desktop.gateway';
import type { DesktopInbox } from '../shared/desktop/inbox';

export interface WebServer {
  server: http.Server;
  gateway: ReturnType<typeof attachDesktopGateway>;
  port: number;
  /** Stops accepting connections and waits for open requests to end. */
  close(): Promise<void>;
}

/** The web process: the API (Koa, and long polls beside it) on one HTTP server (the socket.io gateway attaches here too). */
export async function startWeb(
  container: Container,
  options: { port?: number; validateResponses?: boolean; inboxes?: DesktopInbox[] } = {},
): Promise<WebServer> {
  await container.apiKeys.listenForRevocations();
  const { listener } = createApp(container, { validateResponses: options.validateResponses });
  let closing = false;
  const server = http.createServer((req, res) => {
    // While stopping, each answer ends its keep-alive connection: the client comes back on another process.
    if (closing) res.setHeader('Connection', 'close');
    listener(req, res);
  });
  const gateway = attachDesktopGateway(server, container, options.inboxes ?? []);
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
