import { createServer, type Server as HttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Server, type Socket } from 'socket.io';
import { DesktopEvents, type HelloMessage, type HelloReply as DesktopHelloReply } from '../../shared/desktop/protocol';
import {
  RunnerProtocolEvents as Events,
  type CommandDone,
  type HelloReply,
  type RunnerCommand,
  type RunnerHello,
} from '../../shared/simulator/runner/runner-protocol';
import { waitFor } from './service';

/**
 * The service's side of the runner protocol (docs/runners.md), played by a real socket.io
 * server on an ephemeral port: it answers hellos as it is told, records heartbeats and
 * `runner:done` answers, and sends commands and console events to the connected runner. Its
 * `/desktop` namespace welcomes any pairing code, for runners whose machines need no real service.
 */
export class FakeRunnerService {
  readonly hellos: RunnerHello[] = [];
  readonly heartbeats: Array<{ busy?: number }> = [];
  readonly dones: CommandDone[] = [];
  readonly desktopHellos: HelloMessage[] = [];
  /** How the next hellos are answered. */
  helloReply: (hello: RunnerHello) => HelloReply = () => ({ ok: true, runner_id: 'rn_fake', name: 'fake', scope: 'org', heartbeat_ms: 50 });
  private runner: Socket | null = null;
  private readonly http: HttpServer;
  private readonly io: Server;

  private constructor() {
    this.http = createServer();
    this.io = new Server(this.http, { maxHttpBufferSize: 50e6 });
    this.io.of('/runners').on('connection', (socket) => {
      socket.on(Events.hello, (hello: RunnerHello, ack: (reply: HelloReply) => void) => {
        this.hellos.push(hello);
        const reply = this.helloReply(hello);
        ack(reply);
        if (reply.ok) this.runner = socket;
        else setTimeout(() => socket.disconnect(true), 10);
      });
      socket.on(Events.heartbeat, (payload: { busy?: number }, ack: (reply: object) => void) => {
        this.heartbeats.push(payload);
        ack({ ok: true });
      });
      socket.on(Events.done, (done: CommandDone, ack: (reply: object) => void) => {
        this.dones.push(done);
        ack({ ok: true });
      });
    });
    this.io.of('/desktop').on('connection', (socket) => {
      socket.on(DesktopEvents.hello, (hello: HelloMessage, ack: (reply: DesktopHelloReply) => void) => {
        this.desktopHellos.push(hello);
        ack({ ok: true, session_id: `sess_${hello.code}`, agent: { display_name: 'Helper', greeting: 'Hi.' } });
      });
    });
  }

  static async start(): Promise<FakeRunnerService> {
    const service = new FakeRunnerService();
    await new Promise<void>((resolve) => service.http.listen(0, '127.0.0.1', resolve));
    return service;
  }

  get baseUrl(): string {
    return `http://127.0.0.1:${(this.http.address() as AddressInfo).port}`;
  }

  /** Whether a runner holds the connection now (its hello was accepted and it is still connected). */
  get connected(): boolean {
    return this.runner?.connected === true;
  }

  /** Waits for a connected runner whose hello was accepted. */
  async waitForRunner(): Promise<void> {
    // A runner is a child process: on a busy 2-core host its start alone can take over 10 s.
    await waitFor(() => this.connected, 30_000, 'a runner to say hello');
  }

  /** Sends a command as the service does; does not wait for its answer. */
  send(command: RunnerCommand): void {
    if (!this.runner) throw new Error('no runner is connected');
    this.runner.emit(Events.command, command);
  }

  /** Sends a command and resolves with the first answer to it that arrives after. */
  async command(command: RunnerCommand, timeoutMs = 15_000): Promise<CommandDone> {
    const before = this.dones.length;
    this.send(command);
    return waitFor(() => this.dones.slice(before).find((done) => done.command_id === command.command_id), timeoutMs, `runner:done for ${command.command_id}`);
  }

  /** Every answer received for one command. */
  donesFor(commandId: string): CommandDone[] {
    return this.dones.filter((done) => done.command_id === commandId);
  }

  screen(machineId: string): Promise<any> {
    return this.runner!.timeout(10_000).emitWithAck(Events.screen, { machine_id: machineId });
  }

  input(machineId: string, input: object): Promise<any> {
    return this.runner!.timeout(10_000).emitWithAck(Events.input, { machine_id: machineId, input });
  }

  /** Hangs up on the runner, as a web process that restarts does. */
  dropRunner(): void {
    this.runner?.disconnect(true);
    this.runner = null;
  }

  async close(): Promise<void> {
    this.io.disconnectSockets(true);
    await new Promise<void>((resolve) => this.io.close(() => resolve()));
  }
}
