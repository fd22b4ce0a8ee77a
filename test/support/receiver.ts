import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { waitFor } from './service';

/** One request that reached a receiver, body exactly as it arrived. */
export interface ReceivedRequest {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  rawBody: Buffer;
  /** The body as UTF-8 text. */
  body: string;
  receivedAt: number;
}

/** How the receiver answers: a fixed reply, or a function that writes the response itself. */
export type Reply =
  | { status?: number; body?: string; headers?: Record<string, string>; delayMs?: number }
  | ((request: ReceivedRequest, res: http.ServerResponse) => void);

export interface Receiver {
  port: number;
  /** `http://127.0.0.1:<port><path>` */
  url(path?: string): string;
  /** Every request, in arrival order. */
  requests: ReceivedRequest[];
  /** TCP connections accepted, whether or not a request followed. */
  connections: number;
  /** Answer with this from now on (default: 200 `{"received":true}`). */
  reply(reply: Reply): void;
  /** Answer the next requests with these, in order, then with the standing reply. */
  replyOnce(...replies: Reply[]): void;
  /** Requests whose JSON body has this `id` (webhook envelopes). */
  withId(id: string): ReceivedRequest[];
  /** Polls until at least `count` requests (matching `filter`) have arrived. */
  waitForRequests(count: number, options?: { timeoutMs?: number; filter?: (request: ReceivedRequest) => boolean }): Promise<ReceivedRequest[]>;
  close(): Promise<void>;
}

const DEFAULT_REPLY: Reply = { status: 200, body: '{"received":true}', headers: { 'content-type': 'application/json' } };

/**
 * A local HTTP server that stands in for a customer's webhook receiver or HTTP tool: it records
 * every request (raw body included) and answers as told, possibly after a delay. Delays end
 * when the client goes away, so a test's deadline never keeps the receiver busy.
 */
export async function startReceiver(initial: Reply = DEFAULT_REPLY): Promise<Receiver> {
  const sockets = new Set<Socket>();
  let standing: Reply = initial;
  const queued: Reply[] = [];

  const answer = (reply: Reply, request: ReceivedRequest, res: http.ServerResponse): void => {
    if (typeof reply === 'function') {
      reply(request, res);
      return;
    }
    const send = (): void => {
      if (res.destroyed) return;
      res.writeHead(reply.status ?? 200, reply.headers ?? { 'content-type': 'application/json' });
      res.end(reply.body ?? '');
    };
    if (!reply.delayMs) {
      send();
      return;
    }
    const timer = setTimeout(send, reply.delayMs);
    res.once('close', () => clearTimeout(timer));
  };

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const rawBody = Buffer.concat(chunks);
      const request: ReceivedRequest = {
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        rawBody,
        body: rawBody.toString('utf8'),
        receivedAt: Date.now(),
      };
      receiver.requests.push(request);
      answer(queued.shift() ?? standing, request, res);
    });
  });
  server.keepAliveTimeout = 30_000;
  server.on('connection', (socket: Socket) => {
    receiver.connections += 1;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;

  const receiver: Receiver = {
    port,
    url: (path = '/hooks') => `http://127.0.0.1:${port}${path}`,
    requests: [],
    connections: 0,
    reply(reply) {
      standing = reply;
    },
    replyOnce(...replies) {
      queued.push(...replies);
    },
    withId(id) {
      return receiver.requests.filter((request) => {
        try {
          return (JSON.parse(request.body) as { id?: unknown }).id === id;
        } catch {
          return false;
        }
      });
    },
    async waitForRequests(count, options = {}) {
      const filter = options.filter ?? (() => true);
      return waitFor(
        () => {
          const matching = receiver.requests.filter(filter);
          return matching.length >= count ? matching : null;
        },
        options.timeoutMs ?? 10_000,
        `${count} request(s) at the receiver`,
      );
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
  return receiver;
}
