// What the server side of `npm run bench -- sockets` answers to the bench over IPC: how many
// sockets it holds, and its memory after a forced collection (the process runs with --expose-gc).
import v8 from 'node:v8';

export interface SocketProbeReply {
  type: 'memory';
  sockets: number;
  usage: NodeJS.MemoryUsage;
}

async function collect(): Promise<void> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('start the server with --expose-gc');
  // Twice, with a turn of the loop between: weak callbacks and finalizers free more the second time.
  for (let i = 0; i < 3; i++) {
    gc();
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/** Answers `measure` (and `snapshot`, for finding out where the memory goes) on the IPC channel. */
export function serveSocketProbe(countSockets: () => number): void {
  process.on('message', (message: { type: string; path?: string }) => {
    if (message.type === 'measure') {
      void collect().then(() => process.send?.({ type: 'memory', sockets: countSockets(), usage: process.memoryUsage() } satisfies SocketProbeReply));
    } else if (message.type === 'snapshot' && message.path) {
      void collect().then(() => process.send?.({ type: 'snapshot', path: v8.writeHeapSnapshot(message.path) }));
    } else if (message.type === 'exit') {
      process.exit(0);
    }
  });
}
