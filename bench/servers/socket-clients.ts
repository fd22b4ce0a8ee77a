// The client side of `npm run bench -- sockets`: opens idle desktop connections (websocket only,
// as the apps do) and holds them until told to let go. Each either says hello with its pairing
// code and waits for the welcome, or (for the bare baseline) only connects.
import { io, type Socket } from 'socket.io-client';
import { DesktopEvents, type HelloReply } from '../../shared/desktop/protocol';

interface ConnectCommand {
  type: 'connect';
  url: string;
  count: number;
  /** One code per connection, or null for hello-less connections. */
  codes: string[] | null;
  concurrency: number;
}

const held: Socket[] = [];

function open(url: string, code: string | null): Promise<Socket> {
  const socket = io(`${url}/desktop`, { transports: ['websocket'], reconnection: false, forceNew: true, timeout: 60_000 });
  return new Promise((resolve, reject) => {
    socket.once('connect_error', reject);
    socket.once('connect', () => {
      if (code === null) return resolve(socket);
      socket
        .timeout(60_000)
        .emitWithAck(DesktopEvents.hello, {
          code,
          device: { os: 'mac', name: 'bench', width: 1440, height: 900, app_version: '1.0.20' },
          capabilities: { accessibility: true, page_addresses: true, element_info: true },
        })
        .then((reply: HelloReply) => (reply.ok ? resolve(socket) : reject(new Error(`hello refused: ${reply.code} ${reply.message}`))), reject);
    });
  });
}

async function connect(command: ConnectCommand): Promise<void> {
  const started = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: command.concurrency }, async () => {
      while (next < command.count) {
        const index = next++;
        held.push(await open(command.url, command.codes ? command.codes[index]! : null));
      }
    }),
  );
  process.send?.({ type: 'connected', count: held.length, ms: performance.now() - started });
}

process.on('message', (message: { type: string }) => {
  if (message.type === 'connect') {
    connect(message as ConnectCommand).catch((error: unknown) => {
      process.send?.({ type: 'failed', message: (error as Error).message });
    });
  } else if (message.type === 'disconnect') {
    for (const socket of held.splice(0)) socket.disconnect();
    process.send?.({ type: 'disconnected' });
  } else if (message.type === 'exit') {
    process.exit(0);
  }
});
process.send?.({ type: 'ready' });
