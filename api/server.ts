import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Container } from '../shared/container';
import { createApp } from './app';

export interface WebServer {
  server: http.Server;
  port: number;
  /** Stops accepting connections and waits for open requests to end. */
  close(): Promise<void>;
}

/** The web process: the Koa API on one HTTP server (the socket.io gateway attaches here too). */
export async function startWeb(container: Container, options: { port?: number; validateResponses?: boolean } = {}): Promise<WebServer> {
  await container.apiKeys.listenForRevocations();
  const { app } = createApp(container, { validateResponses: options.validateResponses });
  const server = http.createServer(app.callback());
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
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      }),
  };
}
