// The baseline of `npm run bench -- sockets`: a socket.io server with the gateway's namespace and
// options and nothing of Deskhand (no adapter in Redis, no hello, no handlers).
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Server } from 'socket.io';
import { serveSocketProbe } from './socket-probe';

const server = http.createServer((_request, response) => response.writeHead(404).end());
const io = new Server(server, { serveClient: false, maxHttpBufferSize: 16 * 1024 * 1024 });
const desktop = io.of('/desktop');
serveSocketProbe(() => desktop.sockets.size);
server.listen(0, '127.0.0.1', () => process.send?.({ type: 'ready', port: (server.address() as AddressInfo).port, codes: [] }));
