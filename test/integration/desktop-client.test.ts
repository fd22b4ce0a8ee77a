import { EventEmitter } from 'node:events';
import { createServer, type Server as HttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { Command, CommanderError } from 'commander';
import { Server, type Namespace, type Socket } from 'socket.io';
import { registerDesktopCommand } from '../../bin/desktop.command';
import {
  DesktopEvents,
  type ActMessage,
  type ActionResult,
  type DesktopAction,
  type HelloMessage,
  type HelloReply,
  type PersonMessage,
  type ResultMessage,
  type ShowMessage,
} from '../../shared/desktop/protocol';
import { DesktopClient, type DesktopClientOptions } from '../../shared/simulator/desktop-client';

/**
 * The reference desktop client against a real socket.io server on an ephemeral port: a stand-in
 * for the service's gateway that can be told how to answer the hello.
 */
class FakeGateway {
  readonly hellos: HelloMessage[] = [];
  readonly personMessages: PersonMessage[] = [];
  readonly results: Array<ResultMessage & { helloCountAtArrival: number }> = [];
  /** What the gateway acknowledges a result with, as the service's inbox does. */
  resultReply: (message: ResultMessage) => { ok: boolean; message?: string } = () => ({ ok: true });
  readonly sockets: Socket[] = [];
  reply: (hello: HelloMessage) => HelloReply = (hello) => ({
    ok: true,
    session_id: hello.code,
    agent: { display_name: 'Helper', greeting: 'Hi, I am Helper.' },
  });
  private readonly http: HttpServer;
  private readonly io: Server;
  readonly desktop: Namespace;

  constructor() {
    this.http = createServer();
    this.io = new Server(this.http);
    this.desktop = this.io.of('/desktop');
    this.desktop.on('connection', (socket) => {
      this.sockets.push(socket);
      socket.on(DesktopEvents.hello, (hello: HelloMessage, ack: (reply: HelloReply) => void) => {
        this.hellos.push(hello);
        ack(this.reply(hello));
      });
      socket.on(DesktopEvents.person, (message: PersonMessage, ack?: (answer: unknown) => void) => {
        this.personMessages.push(message);
        ack?.({ ok: true });
      });
      socket.on(DesktopEvents.result, (message: ResultMessage, ack?: (answer: unknown) => void) => {
        this.results.push({ ...message, helloCountAtArrival: this.hellos.length });
        ack?.(this.resultReply(message));
      });
    });
  }

  async listen(): Promise<string> {
    await new Promise<void>((resolve) => this.http.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.http.address() as AddressInfo).port}`;
  }

  /** The socket of the latest connection that has said hello. */
  get socket(): Socket {
    const socket = this.sockets.at(-1);
    if (!socket) throw new Error('no desktop connected');
    return socket;
  }

  /** Sends one action the way the service does (no acknowledgement; the app answers with a result). */
  actOne(message: ActMessage): void {
    this.socket.emit(DesktopEvents.act, message);
  }

  act(taskId: string, actions: DesktopAction[]): Promise<ActionResult[]> {
    return this.socket.timeout(10_000).emitWithAck(DesktopEvents.act, { task_id: taskId, actions });
  }

  show(message: ShowMessage): void {
    this.socket.emit(DesktopEvents.show, message);
  }

  connectedCount(): number {
    return this.sockets.filter((socket) => socket.connected).length;
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => this.io.close(() => resolve()));
  }
}

/** Waits for a condition by polling with growing sleeps (never one fixed sleep). */
async function waitFor(condition: () => boolean, what: string, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let pause = 5;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, pause));
    pause = Math.min(pause * 2, 100);
  }
}

type Line = { event: string } & Record<string, unknown>;

describe('reference desktop client', () => {
  let gateway: FakeGateway;
  let baseUrl: string;
  let clients: DesktopClient[];

  beforeEach(async () => {
    gateway = new FakeGateway();
    baseUrl = await gateway.listen();
    clients = [];
  });

  afterEach(async () => {
    await Promise.all(clients.map((client) => client.close()));
    await gateway.close();
  });

  function makeClient(options: Partial<DesktopClientOptions> = {}): { client: DesktopClient; lines: Line[] } {
    const lines: Line[] = [];
    const client = new DesktopClient({
      baseUrl,
      code: 'ABCD-EFGH',
      os: 'mac',
      appVersion: '1.0.20',
      name: 'test-mac',
      width: 800,
      height: 600,
      accessibility: true,
      delayMs: 20,
      reconnectDelayMs: 50,
      out: (line) => lines.push(line as Line),
      ...options,
    });
    clients.push(client);
    return { client, lines };
  }

  describe('pairing', () => {
    it('says hello with the pairing code, the device and its capabilities, and resolves with the welcome', async () => {
      const { client, lines } = makeClient({ os: 'windows', appVersion: '1.0.19', name: 'pc-1', width: 1280, height: 720 });
      const welcome = await client.start();
      expect(welcome).to.deep.equal({ session_id: 'ABCD-EFGH', agent: { display_name: 'Helper', greeting: 'Hi, I am Helper.' } });
      expect(gateway.hellos).to.deep.equal([
        {
          code: 'ABCD-EFGH',
          device: { os: 'windows', name: 'pc-1', width: 1280, height: 720, app_version: '1.0.19' },
          capabilities: { accessibility: true, page_addresses: false, element_info: false },
        },
      ]);
      expect(lines.map((line) => line.event)).to.deep.equal(['connecting', 'connected', 'hello']);
      expect(lines[2]).to.include({ ok: true, session_id: 'ABCD-EFGH' });
    });

    it('rejects and prints the reason when the service refuses the code', async () => {
      gateway.reply = () => ({ ok: false, code: 'expired', message: 'This code has expired.' });
      const { client, lines } = makeClient();
      let refusal: Error | undefined;
      await client.start().catch((error: Error) => (refusal = error));
      expect(refusal?.message).to.contain('This code has expired.');
      expect(await client.finished).to.deep.equal({ reason: 'refused', code: 'expired', message: 'This code has expired.' });
      expect(lines.find((line) => line.event === 'hello')).to.include({ ok: false, code: 'expired', message: 'This code has expired.' });
      await waitFor(() => gateway.connectedCount() === 0, 'the refused client to disconnect');
    });

    it('says hello again with the same code after the connection drops', async () => {
      const { client } = makeClient();
      await client.start();
      gateway.socket.disconnect(true);
      await waitFor(() => gateway.hellos.length === 2, 'a second hello');
      expect(gateway.hellos.map((hello) => hello.code)).to.deep.equal(['ABCD-EFGH', 'ABCD-EFGH']);
      await waitFor(() => gateway.connectedCount() === 1, 'the reconnection');
    });

    it('reconnects by itself after the network drops, saying hello with the same code', async () => {
      const { client, lines } = makeClient();
      await client.start();
      gateway.socket.conn.close();
      await waitFor(() => gateway.hellos.length === 2, 'a second hello');
      expect(gateway.hellos[1]!.code).to.equal('ABCD-EFGH');
      expect(lines.map((line) => line.event)).to.include('disconnected');
    });

    it('forgets the code and disconnects when the team releases the computer', async () => {
      const { client, lines } = makeClient();
      await client.start();
      gateway.socket.emit(DesktopEvents.released);
      expect(await client.finished).to.deep.equal({ reason: 'released' });
      await waitFor(() => gateway.connectedCount() === 0, 'the released client to disconnect');
      expect(lines.map((line) => line.event)).to.include('released');
      expect(gateway.hellos).to.have.length(1);
    });

    it('disconnects cleanly on close()', async () => {
      const { client, lines } = makeClient();
      await client.start();
      await client.close();
      await waitFor(() => gateway.connectedCount() === 0, 'the closed client to disconnect');
      expect(await client.finished).to.deep.equal({ reason: 'closed' });
      expect(lines.at(-1)?.event).to.be.oneOf(['closed', 'disconnected']);
    });
  });

  describe('running steps', () => {
    it('runs the steps of an act in order and acknowledges with their results and screenshots', async () => {
      const { client, lines } = makeClient();
      await client.start();
      const results = await gateway.act('task_1', [
        { type: 'key', keys: 'cmd+space' },
        { type: 'type', text: 'Safari' },
        { type: 'key', keys: 'enter' },
      ]);
      expect(results.map((result) => result.ok)).to.deep.equal([true, true, true]);
      expect(results[2]!.observation.focused_app).to.equal('Safari');
      expect(results[2]!.observation.windows.find((window) => window.app === 'Safari')?.url).to.equal('about:blank');
      const png = Buffer.from(results[2]!.screenshot);
      expect(png.subarray(1, 4).toString('ascii')).to.equal('PNG');
      expect([png.readUInt32BE(16), png.readUInt32BE(20)]).to.deep.equal([800, 600]);
      const act = lines.find((line) => line.event === 'act')!;
      expect(act).to.include({ task_id: 'task_1' });
      expect((act.results as Array<{ ok: boolean }>).map((result) => result.ok)).to.deep.equal([true, true, true]);
    });

    it('runs one action named by act_id and answers with a result message', async () => {
      const { client, lines } = makeClient();
      await client.start();
      gateway.actOne({ task_id: 'task_1', act_id: 'act_1', action: { type: 'key', keys: 'cmd+space' } });
      await waitFor(() => gateway.results.length === 1, 'the result');
      const [message] = gateway.results;
      expect(message).to.include({ task_id: 'task_1', act_id: 'act_1' });
      expect(message!.result).to.include({ ok: true });
      expect(message!.result.observation.focused_app).to.equal('Spotlight');
      expect(Buffer.from(message!.result.screenshot).subarray(1, 4).toString('ascii')).to.equal('PNG');
      expect(lines.find((line) => line.event === 'act')).to.include({ task_id: 'task_1', act_id: 'act_1' });
    });

    it('reports a failed action in its result message', async () => {
      const { client } = makeClient();
      await client.start();
      gateway.actOne({ task_id: 'task_1', act_id: 'act_2', action: { type: 'type', text: 'hello' } });
      await waitFor(() => gateway.results.length === 1, 'the result');
      expect(gateway.results[0]!.result).to.include({ ok: false, error: 'Nothing to type into: no window is open.' });
    });

    it('holds a result made while the connection was down until the service welcomes it again', async () => {
      const { client } = makeClient();
      await client.start();
      gateway.actOne({ task_id: 'task_1', act_id: 'act_3', action: { type: 'wait', ms: 300 } });
      // engine.io flushes the act before it closes, so the client gets it, then loses the line mid-wait.
      gateway.socket.conn.close();
      await waitFor(() => gateway.results.length === 1, 'the result after reconnecting');
      expect(gateway.results[0]).to.include({ act_id: 'act_3', helloCountAtArrival: 2 });
    });

    it('runs an act sent again under the same act_id once, and answers the repeat with the same result', async () => {
      const { client, lines } = makeClient();
      await client.start();
      gateway.actOne({ task_id: 'task_1', act_id: 'act_4', action: { type: 'key', keys: 'cmd+space' } });
      await waitFor(() => gateway.results.length === 1, 'the result');
      // After a reconnect the service sends the act it still waits for: pressing the keys again
      // would close Spotlight.
      gateway.actOne({ task_id: 'task_1', act_id: 'act_4', action: { type: 'key', keys: 'cmd+space' } });
      await waitFor(() => gateway.results.length === 2, 'the repeated result');
      const [first, again] = gateway.results;
      expect(again).to.include({ task_id: 'task_1', act_id: 'act_4' });
      expect(again!.result.observation).to.deep.equal(first!.result.observation);
      expect(client.computer.inspect().focused_app).to.equal('Spotlight');
      expect(lines.filter((line) => line.event === 'act')).to.have.length(1);
      expect(lines.filter((line) => line.event === 'act_repeated')).to.have.length(1);
    });

    it('prints the service refusing a result', async () => {
      gateway.resultReply = () => ({ ok: false, message: 'That action is no longer awaited' });
      const { client, lines } = makeClient();
      await client.start();
      gateway.actOne({ task_id: 'task_1', act_id: 'act_4', action: { type: 'screenshot' } });
      await waitFor(() => lines.some((line) => line.event === 'refused'), 'the refusal line');
      expect(lines.find((line) => line.event === 'refused')).to.deep.include({ refused: DesktopEvents.result, task_id: 'task_1', message: 'That action is no longer awaited' });
    });

    it('stops at the first step that fails', async () => {
      const { client } = makeClient();
      await client.start();
      const results = await gateway.act('task_1', [
        { type: 'click', x: 400, y: 300 },
        { type: 'key', keys: 'cmd+space' },
      ]);
      expect(results).to.have.length(1);
      expect(results[0]).to.include({ ok: false, error: 'Nothing to click at (400, 300).' });
    });

    it('answers a malformed act with one failed result', async () => {
      const { client } = makeClient();
      await client.start();
      const results: ActionResult[] = await gateway.socket.timeout(5000).emitWithAck(DesktopEvents.act, { actions: 'nope' });
      expect(results).to.have.length(1);
      expect(results[0]!.ok).to.equal(false);
      expect(results[0]!.error).to.contain('task_id');
    });
  });

  describe('the person', () => {
    it('answers every question shown to them after the delay', async () => {
      const { client, lines } = makeClient({ answer: 'M' });
      await client.start();
      gateway.show({ kind: 'question', task_id: 'task_1', question_id: 'q_1', question: 'Which size?', options: ['S', 'M', 'L'] });
      await waitFor(() => gateway.personMessages.length === 1, 'the answer');
      expect(gateway.personMessages[0]).to.deep.equal({ kind: 'answer', task_id: 'task_1', question_id: 'q_1', answer: 'M' });
      expect(lines.filter((line) => line.event === 'show')[0]).to.include({ kind: 'question', question: 'Which size?' });
      expect(lines.filter((line) => line.event === 'person')[0]).to.include({ kind: 'answer', answer: 'M' });
      expect(client.view().pending).to.deep.equal({});
    });

    it('approves every approval when told to approve', async () => {
      const { client } = makeClient({ approve: true });
      await client.start();
      gateway.show({ kind: 'approval', task_id: 'task_1', approval_id: 'ap_1', what: 'Click "Buy now"', risk: 'normal', category: 'purchase' });
      await waitFor(() => gateway.personMessages.length === 1, 'the decision');
      expect(gateway.personMessages[0]).to.deep.equal({ kind: 'decision', task_id: 'task_1', approval_id: 'ap_1', decision: 'approve' });
    });

    it('denies every approval when told to deny', async () => {
      const { client } = makeClient({ deny: true });
      await client.start();
      gateway.show({ kind: 'approval', task_id: 'task_1', approval_id: 'ap_2', what: 'Empty the Trash', risk: 'high', category: null });
      await waitFor(() => gateway.personMessages.length === 1, 'the decision');
      expect(gateway.personMessages[0]).to.include({ kind: 'decision', decision: 'deny' });
    });

    it('leaves questions and approvals alone when given no answer or decision', async () => {
      const { client } = makeClient({ delayMs: 0 });
      await client.start();
      gateway.show({ kind: 'question', task_id: 'task_1', question_id: 'q_1', question: 'Which size?', options: [] });
      gateway.show({ kind: 'approval', task_id: 'task_1', approval_id: 'ap_1', what: 'Pay', risk: 'normal', category: 'purchase' });
      await waitFor(() => Object.keys(client.view().pending).length === 2, 'both items on screen');
      // A step the client runs afterwards proves it has handled both messages.
      await gateway.act('task_1', [{ type: 'screenshot' }]);
      expect(gateway.personMessages).to.deep.equal([]);
    });

    it('does not answer a question cleared before the delay ran out', async () => {
      const { client } = makeClient({ answer: 'M', delayMs: 300 });
      await client.start();
      gateway.show({ kind: 'question', task_id: 'task_1', question_id: 'q_1', question: 'Which size?', options: [] });
      gateway.show({ kind: 'clear', task_id: 'task_1', item_id: 'q_1' });
      gateway.show({ kind: 'question', task_id: 'task_1', question_id: 'q_2', question: 'Which colour?', options: [] });
      await waitFor(() => gateway.personMessages.length === 1, 'the second answer');
      expect(gateway.personMessages.map((message) => (message as { question_id: string }).question_id)).to.deep.equal(['q_2']);
    });

    it('types a secret into the field it was asked about and says it typed it, without printing it', async () => {
      const { client, lines } = makeClient({ typeSecrets: true });
      await client.start();
      await gateway.act('task_1', [
        { type: 'key', keys: 'cmd+space' },
        { type: 'type', text: 'Safari' },
        { type: 'key', keys: 'enter' },
        { type: 'key', keys: 'cmd+l' },
        { type: 'type', text: 'login.example.com' },
        { type: 'key', keys: 'enter' },
      ]);
      gateway.show({ kind: 'type_secret', task_id: 'task_1', request_id: 'sec_1', field: 'Password', text: 'hunter2' });
      await waitFor(() => gateway.personMessages.length === 1, 'typed_secret');
      expect(gateway.personMessages[0]).to.deep.equal({ kind: 'typed_secret', task_id: 'task_1', request_id: 'sec_1' });
      expect(client.computer.snapshot().fields['page.password']).to.equal('hunter2');
      const [screen] = await gateway.act('task_1', [{ type: 'screenshot' }]);
      expect(screen!.observation.focused).to.include({ role: 'password_field', label: 'Password' });
      expect(JSON.stringify(lines)).not.to.contain('hunter2');
    });

    it('presses Stop after the task\'s Nth action, not counting screenshots', async () => {
      const { client } = makeClient({ stopAfter: 2 });
      await client.start();
      await gateway.act('task_1', [{ type: 'screenshot' }, { type: 'key', keys: 'cmd+space' }]);
      expect(gateway.personMessages).to.deep.equal([]);
      await gateway.act('task_1', [{ type: 'key', keys: 'escape' }, { type: 'screenshot' }]);
      await waitFor(() => gateway.personMessages.length === 1, 'the stop');
      expect(gateway.personMessages[0]).to.deep.equal({ kind: 'stop', task_id: 'task_1' });
      await gateway.act('task_1', [{ type: 'key', keys: 'cmd+space' }]);
      expect(gateway.personMessages).to.have.length(1);
    });

    it('keeps the banner, narration and summary it is shown', async () => {
      const { client, lines } = makeClient();
      await client.start();
      gateway.show({ kind: 'banner', task_id: 'task_1', agent_name: 'Helper', running: true });
      gateway.show({ kind: 'narration', task_id: 'task_1', text: 'Opening the shop', step: 'open Browser' });
      gateway.show({ kind: 'summary', task_id: 'task_1', text: 'Bought it' });
      gateway.show({ kind: 'ended', task_id: 'task_1', status: 'completed', message: 'Done' });
      await waitFor(() => client.view().ended.length === 1, 'the end of the task');
      const view = client.view();
      expect(view.banner).to.deep.equal({ kind: 'banner', task_id: 'task_1', agent_name: 'Helper', running: false });
      expect(view.narration.map((line) => line.text)).to.deep.equal(['Opening the shop']);
      expect(view.summaries.map((line) => line.text)).to.deep.equal(['Bought it']);
      expect(lines.filter((line) => line.event === 'show').map((line) => line.kind)).to.deep.equal(['banner', 'narration', 'summary', 'ended']);
    });
  });

  describe('deskhand desktop', () => {
    function program(): { program: Command; stderr: string[]; lines: Line[]; signals: EventEmitter } {
      const stderr: string[] = [];
      const lines: Line[] = [];
      const signals = new EventEmitter();
      const root = new Command('deskhand').exitOverride().configureOutput({ writeErr: (text) => void stderr.push(text), writeOut: () => undefined });
      registerDesktopCommand(root, { out: (line) => lines.push(line as Line), signals });
      return { program: root, stderr, lines, signals };
    }

    async function parseError(args: string[]): Promise<{ error: CommanderError; stderr: string }> {
      const cli = program();
      try {
        await cli.program.parseAsync(['desktop', ...args], { from: 'user' });
      } catch (error) {
        if (error instanceof CommanderError) return { error, stderr: cli.stderr.join('') };
        throw error;
      }
      throw new Error(`expected ${args.join(' ')} to fail`);
    }

    for (const [args, message] of [
      [[], "required option '--code <code>' not specified"],
      [['--code', 'ABCD-EFGH', '--os', 'linux'], 'Allowed choices are mac, windows'],
      [['--code', 'ABCD-EFGH', '--width', 'wide'], 'width is a whole number'],
      [['--code', 'ABCD-EFGH', '--height', '100'], 'height is a whole number of pixels from 480'],
      [['--code', 'ABCD-EFGH', '--app-version', '1.0'], 'An app version looks like 1.0.20'],
      [['--code', 'ABCD-EFGH', '--approve', '--deny'], 'cannot be used with'],
      [['--code', 'ABCD-EFGH', '--stop-after', '0'], '--stop-after takes a whole number of at least 1'],
      [['--code', 'ABCD-EFGH', '--delay-ms', '-5'], '--delay-ms takes a whole number'],
      [['--code', 'ABCD-EFGH', '--base-url', 'ftp://x'], 'must start with http:// or https://'],
    ] as Array<[string[], string]>) {
      it(`refuses ${args.join(' ') || 'no --code'} with an error on stderr and a non-zero exit`, async () => {
        const { error, stderr } = await parseError(args);
        expect(error.exitCode).to.be.above(0);
        expect(stderr).to.contain(message);
      });
    }

    it('serves the computer until released, printing one JSON line per event', async () => {
      const cli = program();
      const run = cli.program.parseAsync(['desktop', '--code', 'WXYZ-1234', '--base-url', baseUrl, '--os', 'windows', '--answer', 'L', '--delay-ms', '0', '--width', '800', '--height', '600'], { from: 'user' });
      await waitFor(() => gateway.hellos.length === 1 && cli.lines.some((line) => line.event === 'hello'), 'the hello');
      expect(gateway.hellos[0]).to.deep.include({ code: 'WXYZ-1234' });
      expect(gateway.hellos[0]!.device).to.include({ os: 'windows', width: 800, height: 600, app_version: '1.0.20' });
      gateway.show({ kind: 'question', task_id: 'task_9', question_id: 'q_9', question: 'Size?', options: [] });
      await waitFor(() => gateway.personMessages.length === 1, 'the answer');
      gateway.socket.emit(DesktopEvents.released);
      await run;
      expect(cli.lines.map((line) => line.event)).to.include.members(['connecting', 'connected', 'hello', 'show', 'person', 'released']);
    });

    it('disconnects cleanly on SIGTERM', async () => {
      const cli = program();
      const run = cli.program.parseAsync(['desktop', '--code', 'WXYZ-1234', '--base-url', baseUrl], { from: 'user' });
      await waitFor(() => gateway.connectedCount() === 1 && cli.lines.some((line) => line.event === 'hello'), 'the connection');
      cli.signals.emit('SIGTERM');
      await run;
      await waitFor(() => gateway.connectedCount() === 0, 'the disconnection');
      expect(cli.signals.listenerCount('SIGTERM') + cli.signals.listenerCount('SIGINT')).to.equal(0);
    });

    it('exits non-zero with the reason on stderr when the code is refused', async () => {
      gateway.reply = () => ({ ok: false, code: 'unknown_code', message: 'No session has this code.' });
      const cli = program();
      let failure: unknown;
      await cli.program.parseAsync(['desktop', '--code', 'NOPE-NOPE', '--base-url', baseUrl], { from: 'user' }).catch((error) => (failure = error));
      expect(failure).to.be.instanceOf(CommanderError);
      expect((failure as CommanderError).exitCode).to.equal(1);
      expect(cli.stderr.join('')).to.contain('refused the pairing code (unknown_code): No session has this code.');
    });
  });
});
