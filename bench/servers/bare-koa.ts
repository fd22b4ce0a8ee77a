// The baseline of `npm run bench -- http`: Koa answering a small JSON body, nothing else.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';

const app = new Koa();
app.use((ctx) => {
  ctx.body = { data: [], has_more: false, next_cursor: null };
});
const server = http.createServer(app.callback()).listen(0, () => {
  process.send?.({ port: (server.address() as AddressInfo).port });
});
