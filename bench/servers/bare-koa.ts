// The baseline of `npm run bench -- http` and `reads`: Koa answering a small JSON body, nothing
// else. Sent `{ type: 'answer', body }`, it answers that object instead (stringified per request,
// as the service writes its objects): the reads bench's floor for an answer of that size.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';

let answer: unknown = { data: [], has_more: false, next_cursor: null };
process.on('message', (message: { type?: string; body?: unknown }) => {
  if (message.type !== 'answer') return;
  answer = message.body;
  process.send?.({ type: 'answered' });
});

const app = new Koa();
app.use((ctx) => {
  ctx.body = answer;
});
const server = http.createServer(app.callback()).listen(0, () => {
  process.send?.({ port: (server.address() as AddressInfo).port });
});
