// The baseline of `npm run bench -- machines`: the service's side of the runner protocol with
// none of the service's logic. A bare socket.io server whose `/runners` namespace welcomes any
// hello and whose `/desktop` namespace welcomes any machine's hello at once; asked
// `{ type: 'run', machines, atOnce }`, it makes and destroys that many machines on the connected
// runner, `atOnce` lanes each making then destroying one machine after another, and answers
// `{ type: 'result', make, destroy, seconds }`: each command's time from sending it to its
// `runner:done`, and the run's length. What the reference runner costs for the same work as the
// whole path (boot, desktop connection and hello, destroy), and the socket.io hops it needs.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Server, type Socket } from 'socket.io';
import { DesktopEvents, type HelloMessage, type HelloReply as DesktopHelloReply } from '../../shared/desktop/protocol';
import { RunnerProtocolEvents as Events, type CommandDone, type RunnerCommand } from '../../shared/simulator/runner/runner-protocol';

const server = http.createServer((_request, response) => response.writeHead(404).end());
const io = new Server(server, { serveClient: false, maxHttpBufferSize: 16 * 1024 * 1024 });
let runner: Socket | null = null;
let runnerConnected: () => void = () => undefined;
const connected = new Promise<void>((resolve) => (runnerConnected = resolve));
const waiting = new Map<string, (done: CommandDone) => void>();

io.of('/runners').on('connection', (socket) => {
  socket.on(Events.hello, (_hello: unknown, ack: (reply: object) => void) => {
    ack({ ok: true, runner_id: 'rn_bare', name: 'bare', scope: 'org', heartbeat_ms: 10_000 });
    runner = socket;
    runnerConnected();
  });
  socket.on(Events.heartbeat, (_payload: unknown, ack: (reply: object) => void) => ack({ ok: true }));
  socket.on(Events.done, (done: CommandDone, ack: (reply: object) => void) => {
    ack({ ok: true });
    waiting.get(done.command_id)?.(done);
    waiting.delete(done.command_id);
  });
});
io.of('/desktop').on('connection', (socket) => {
  socket.on(DesktopEvents.hello, (hello: HelloMessage, ack: (reply: DesktopHelloReply) => void) => {
    ack({ ok: true, session_id: `sess_${hello.code}`, agent: { display_name: 'Helper', greeting: 'Hi.' } });
  });
});

let commands = 0;
/** Sends a command to the runner; resolves with the milliseconds until its answer. */
function command(type: RunnerCommand['type'], machineId: string, args: Record<string, unknown>): Promise<number> {
  const command_id = `cmd_bare_${++commands}`;
  const started = performance.now();
  return new Promise((resolve, reject) => {
    waiting.set(command_id, (done) => (done.ok ? resolve(performance.now() - started) : reject(new Error(`${type} ${machineId}: ${JSON.stringify(done)}`))));
    runner!.emit(Events.command, { command_id, type, machine_id: machineId, args });
  });
}

let machines = 0;
async function run(count: number, atOnce: number): Promise<{ make: number[]; destroy: number[]; seconds: number }> {
  await connected;
  const make: number[] = [];
  const destroy: number[] = [];
  let left = count;
  const started = performance.now();
  const lane = async () => {
    while (left > 0) {
      left -= 1;
      const id = `mc_bare_${++machines}`;
      make.push(await command('machine.make', id, { disk: { image: 'macos-15' }, os: 'mac', session: { code: `BARE${machines}` } }));
      destroy.push(await command('machine.destroy', id, {}));
    }
  };
  await Promise.all(Array.from({ length: atOnce }, lane));
  return { make, destroy, seconds: (performance.now() - started) / 1000 };
}

process.on('message', (message: { type: string; machines: number; atOnce: number }) => {
  if (message.type !== 'run') return;
  run(message.machines, message.atOnce).then(
    (result) => process.send?.({ type: 'result', ...result }),
    (error: unknown) => {
      process.stderr.write(`${(error as Error).stack ?? String(error)}\n`);
      process.exit(1);
    },
  );
});
server.listen(0, '127.0.0.1', () => process.send?.({ type: 'ready', port: (server.address() as AddressInfo).port }));
process.on('SIGTERM', () => io.close(() => process.exit(0)));
