// The client side of `npm run bench -- sockets`: opens idle desktop connections (websocket only,
// as the apps do) and holds them until told to let go. Each either says hello with its pairing
// code and waits for the welcome, or (for the bare baseline) only connects.
import type { Socket } from 'socket.io-client';
import { openDesktopSocket } from '../support/desktop-socket';

interface ConnectCommand {
  type: 'connect';
  url: string;
  count: number;
  /** One code per connection, or null for hello-less connections. */
  codes: string[] | null;
  concurrency: number;
}

const held: Socket[] = [];

async function connect(command: ConnectCommand): Promise<void> {
  const started = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: command.concurrency }, async () => {
      while (next < command.count) {
        const index = next++;
        held.push(await openDesktopSocket(command.url, command.codes ? command.codes[index]! : null));
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
