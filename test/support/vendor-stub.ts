import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A local stand-in of a model vendor's HTTP API: a real node:http server on 127.0.0.1 that
 * records each request and answers from a queue of canned replies.
 */

export interface Recorded {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: any;
}

export interface Reply {
  status?: number;
  headers?: Record<string, string>;
  body: unknown;
  /** Never answer (for timeouts). */
  hang?: boolean;
}

export interface Stub {
  url: string;
  requests: Recorded[];
  reply(...replies: Reply[]): void;
  close(): Promise<void>;
}

export async function startStub(): Promise<Stub> {
  const requests: Recorded[] = [];
  const queue: Reply[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      requests.push({ method: req.method ?? '', path: req.url ?? '', headers: req.headers, body: raw ? JSON.parse(raw) : null });
      const next = queue.shift() ?? { status: 500, body: { error: { message: 'no canned reply left' } } };
      if (next.hang) return;
      res.writeHead(next.status ?? 200, { 'content-type': 'application/json', ...next.headers });
      res.end(JSON.stringify(next.body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    reply: (...replies) => queue.push(...replies),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
