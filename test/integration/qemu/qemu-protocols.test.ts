import { mkdtempSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { GuestAgent, GuestAgentError } from '../../../runner/qemu/guest-agent';
import { parseAptSources, hostDebianMirror } from '../../../runner/qemu/host-apt-sources';
import { imageKey, recipeDir, recipePackages } from '../../../runner/qemu/image-builder';
import { kernelAppend, qemuArgs, type MachineHardware } from '../../../runner/qemu/qemu-args';
import { QmpClient, QmpError } from '../../../runner/qemu/qmp';
import { comboQcodes, qemuInput } from '../../../runner/qemu/qemu-console';
import { checkoutDir, dependencyDirs } from '../../../runner/qemu/app-disk';
import { parseGuestControl } from '../../../desktop/src/guest-control';
import { Command } from 'commander';
import { registerRunnerCommand } from '../../../bin/runner.command';

// The QEMU provider's parts that need no QEMU: QMP and the guest agent against stand-in servers
// on unix sockets that answer as QEMU and qemu-ga do, the command line, the apt sources, the
// image key, the console's input as QEMU events, the guest app's control file, the app disk's
// packages, and the runner command's provider options.

type Reply = (message: Record<string, unknown>, socket: net.Socket) => void;

/** A unix socket server that hands every JSON line it reads to `reply`. */
async function standIn(socketPath: string, onConnect: (socket: net.Socket) => void, reply: Reply): Promise<net.Server> {
  const server = net.createServer((socket) => {
    onConnect(socket);
    let buffer = '';
    socket.on('data', (chunk: Buffer) => {
      // The guest agent's delimiter byte is not JSON: a stand-in ignores it as qemu-ga does.
      buffer += chunk.toString('latin1').replace(/\xff/g, '');
      let newline: number;
      while ((newline = buffer.indexOf('\n')) >= 0) {
        const line = buffer.slice(0, newline);
        buffer = buffer.slice(newline + 1);
        if (line.trim()) reply(JSON.parse(line) as Record<string, unknown>, socket);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(socketPath, resolve));
  return server;
}

describe('QEMU provider parts: QMP, the guest agent, the command line', () => {
  let dir: string;
  const servers: net.Server[] = [];

  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'dhq-parts-'));
  });

  afterEach(async () => {
    for (const server of servers.splice(0)) server.close();
    await rm(dir, { recursive: true, force: true });
  });

  describe('QmpClient', () => {
    it('negotiates capabilities, matches answers to commands by id and passes events on', async () => {
      const socketPath = path.join(dir, 'qmp.sock');
      let negotiated = false;
      servers.push(
        await standIn(
          socketPath,
          (socket) => socket.write(`${JSON.stringify({ QMP: { version: { qemu: { major: 7, minor: 2, micro: 22 } }, capabilities: [] } })}\n`),
          (message, socket) => {
            if (message.execute === 'qmp_capabilities') {
              negotiated = true;
              socket.write(`${JSON.stringify({ return: {}, id: message.id })}\n`);
            } else if (message.execute === 'query-status') {
              // An event first, and the answers out of order: ids, not order, pair them.
              setTimeout(() => socket.write(`${JSON.stringify({ event: 'RESUME', timestamp: { seconds: 1, microseconds: 0 } })}\n${JSON.stringify({ return: { status: 'running', running: true }, id: message.id })}\n`), 20);
            } else {
              socket.write(`${JSON.stringify({ error: { class: 'CommandNotFound', desc: `The command ${String(message.execute)} has not been found` }, id: message.id })}\n`);
            }
          },
        ),
      );
      const client = await QmpClient.connect(socketPath);
      try {
        expect(negotiated).to.equal(true);
        expect(client.version).to.deep.equal({ major: 7, minor: 2, micro: 22 });
        const resumed = client.waitForEvent('RESUME', 2000);
        const [status, missing] = await Promise.all([client.execute('query-status'), client.execute('nonsense').catch((error: unknown) => error)]);
        expect(status).to.deep.equal({ status: 'running', running: true });
        expect(missing).to.be.instanceOf(QmpError).and.to.include({ errorClass: 'CommandNotFound' });
        expect((await resumed).event).to.equal('RESUME');
      } finally {
        client.close();
      }
    });
  });

  describe('GuestAgent', () => {
    it('syncs past stale bytes, and after an answer that came too late, syncs again before the next command', async () => {
      const socketPath = path.join(dir, 'agent.sock');
      let slow = true;
      servers.push(
        await standIn(
          socketPath,
          // A half answer left from before the restore, as the port may hold.
          (socket) => socket.write('{"return": {"stale'),
          (message, socket) => {
            const args = message.arguments as { id?: number } | undefined;
            if (message.execute === 'guest-sync-delimited') socket.write(Buffer.concat([Buffer.from([0xff]), Buffer.from(`${JSON.stringify({ return: args?.id })}\n`)]));
            else if (message.execute === 'guest-info' && slow) {
              slow = false;
              setTimeout(() => socket.write(`${JSON.stringify({ return: { version: 'late' } })}\n`), 300);
            } else if (message.execute === 'guest-info') socket.write(`${JSON.stringify({ return: { version: '7.2' } })}\n`);
            else socket.write(`${JSON.stringify({ error: { class: 'GenericError', desc: 'unknown' } })}\n`);
          },
        ),
      );
      const agent = await GuestAgent.connect(socketPath);
      try {
        await agent.sync(2000);
        const late = await agent.execute('guest-info', undefined, 100).catch((error: unknown) => error);
        expect(String(late)).to.match(/no answer within 100 ms/);
        await new Promise((resolve) => setTimeout(resolve, 400));
        expect(await agent.execute('guest-info')).to.deep.equal({ version: '7.2' });
        expect(await agent.execute('guest-nonsense').catch((error: unknown) => error)).to.be.instanceOf(GuestAgentError);
      } finally {
        agent.close();
      }
    });
  });

  describe('qemuArgs', () => {
    const hardware: MachineHardware = { accel: 'tcg', memoryMb: 1024, kernel: '/i/vmlinuz', initrd: '/i/initrd.img', append: kernelAppend() };
    const places = { disk: '/m/disk.qcow2', qmpSocket: '/m/qmp.sock', agentSocket: '/m/agent.sock', vncSocket: '/m/vnc.sock', serialLog: '/m/serial.log' };

    it('bounds the machine and restricts its network to the one forward', () => {
      const args = qemuArgs('a', hardware, { ...places, incomingState: '/s/state', forward: { guestPort: 8080, command: ['/usr/bin/node', '/r/forward.cjs', '127.0.0.1', '8080'] } });
      const value = (flag: string): string[] => args.flatMap((arg, index) => (arg === flag ? [args[index + 1]] : []));
      expect(value('-smp')).to.deep.equal(['1']);
      expect(value('-m')).to.deep.equal(['1024']);
      expect(value('-netdev')).to.deep.equal(['user,id=net0,restrict=on,ipv6=off,net=10.0.2.0/24,host=10.0.2.254,guestfwd=tcp:10.0.2.2:8080-cmd:/usr/bin/node /r/forward.cjs 127.0.0.1 8080']);
      expect(value('-incoming')).to.deep.equal([`exec:cat '/s/state'`]);
      expect(value('-vnc')).to.deep.equal(['unix:/m/vnc.sock']);
      expect(args).to.not.include('-daemonize');
    });

    it('gives a cold boot and a restore the same devices', () => {
      const strip = (args: string[]): string[] => args.filter((_arg, index) => args[index] !== '-incoming' && args[index - 1] !== '-incoming');
      expect(strip(qemuArgs('a', hardware, { ...places, incomingState: '/s/state' }))).to.deep.equal(qemuArgs('a', hardware, places));
    });

    it('refuses paths and forward words that QEMU would split', () => {
      expect(() => qemuArgs('a', hardware, { ...places, disk: '/m/a,b.qcow2' })).to.throw(/comma/);
      expect(() => qemuArgs('a', hardware, { ...places, forward: { guestPort: 1, command: ['/a b/node'] } })).to.throw(/spaces/);
    });
  });

  describe('the image recipe and the host mirror', () => {
    it('takes the mirror for a suite from one-line and deb822 apt sources', () => {
      const list = parseAptSources('# a comment\ndeb [arch=amd64] http://mirror.example/debian bookworm main contrib\ndeb-src http://mirror.example/debian bookworm main\n', 'list');
      const sources = parseAptSources('Types: deb\nURIs: http://other.example/debian\nSuites: bookworm bookworm-updates\nComponents: main\n\nTypes: deb\nURIs: http://security.example/debian-security\nSuites: bookworm-security\nComponents: main\n', 'sources');
      expect(hostDebianMirror('bookworm', list)).to.equal('http://mirror.example/debian');
      expect(hostDebianMirror('bookworm', sources)).to.equal('http://other.example/debian');
      expect(() => hostDebianMirror('trixie', sources)).to.throw(/no http\(s\) mirror/);
    });

    it('keys the image by the recipe and the node version', () => {
      const key = imageKey(recipeDir(), 'v20.20.2');
      expect(key).to.match(/^[0-9a-f]{16}$/);
      expect(imageKey(recipeDir(), 'v20.20.2')).to.equal(key);
      expect(imageKey(recipeDir(), 'v22.0.0')).to.not.equal(key);
      expect(recipePackages()).to.include.members(['linux-image-amd64', 'qemu-guest-agent', 'openbox', 'xterm', 'mousepad', 'chromium', 'at-spi2-core']);
    });
  });

  describe('the console\'s input as QEMU events', () => {
    it('clicks at a point of the 1280×800 screen on the tablet\'s absolute axes, and refuses one off the screen', () => {
      const click = qemuInput({ type: 'click', x: 1279, y: 400 }) as { pointer: Array<Array<{ type: string; data: Record<string, unknown> }>> };
      expect(click.pointer[0]).to.deep.equal([{ type: 'abs', data: { axis: 'x', value: 0x7fff } }, { type: 'abs', data: { axis: 'y', value: Math.round((400 * 0x7fff) / 799) } }]);
      expect(click.pointer.slice(1).map((batch) => batch[0].data.down)).to.deep.equal([true, false]);
      expect(qemuInput({ type: 'click', x: 1280, y: 10 })).to.be.a('string').that.contains('off the');
    });

    it('types US-keyboard characters as key chords (Shift for capitals and symbols, Return for a line break), and refuses others', () => {
      expect(qemuInput({ type: 'type', text: 'aZ ~/x\n' })).to.deep.equal({ chords: [['a'], ['shift', 'z'], ['spc'], ['shift', 'grave_accent'], ['slash'], ['x'], ['ret']] });
      expect(qemuInput({ type: 'type', text: 'café' })).to.be.a('string').that.contains('"é"');
    });

    it('presses combos as Linux does: cmd is Ctrl, the system key Super; an unknown key is refused', () => {
      expect(comboQcodes('cmd+s')).to.deep.equal({ modifiers: ['ctrl'], key: 's' });
      expect(comboQcodes('ctrl+shift+T')).to.deep.equal({ modifiers: ['ctrl', 'shift'], key: 't' });
      expect(comboQcodes('super')).to.deep.equal({ modifiers: [], key: 'meta_l' });
      expect(comboQcodes('Return')).to.deep.equal({ modifiers: [], key: 'ret' });
      expect(comboQcodes('ctrl+launchpad')).to.be.a('string').that.contains('Unknown key');
      expect(qemuInput({ type: 'click_label', label: 'Notes' })).to.be.a('string').that.contains('by position');
    });
  });

  describe('the guest app\'s control file', () => {
    it('reads a pair with its code and base URL, and a reset; a half-written file is not yet one', () => {
      expect(parseGuestControl('{"id":"a1","action":"pair","code":"ABCD-EFGH","base_url":"http://10.0.2.2:8080","name":"mc_1"}')).to.deep.equal({ id: 'a1', action: 'pair', code: 'ABCD-EFGH', base_url: 'http://10.0.2.2:8080', name: 'mc_1' });
      expect(parseGuestControl('{"id":"a2","action":"reset"}')).to.deep.equal({ id: 'a2', action: 'reset' });
      expect(parseGuestControl('{"id":"a3","act')).to.equal('not JSON (yet)');
      expect(parseGuestControl('{"id":"a4","action":"pair","code":"X"}')).to.be.a('string');
    });
  });

  describe('the app disk', () => {
    it('takes the desktop package\'s dependencies and theirs from the checkout, the canvas\'s platform binary among them', () => {
      const checkout = checkoutDir();
      const dirs = dependencyDirs(['@jellybrick/dbus-next', '@napi-rs/canvas', 'socket.io-client', 'x11'], path.join(checkout, 'desktop'), checkout).map((dir) => path.relative(path.join(checkout, 'node_modules'), dir));
      expect(dirs).to.include.members(['@jellybrick/dbus-next', '@napi-rs/canvas', '@napi-rs/canvas-linux-x64-gnu', 'socket.io-client', 'engine.io-client', 'x11']);
      expect(dirs.some((dir) => dir.startsWith('..'))).to.equal(false);
    });
  });

  describe('deskhand runner --provider', () => {
    async function parse(args: string[]): Promise<{ code?: string; message?: string }> {
      const program = new Command().exitOverride().configureOutput({ writeErr: () => undefined, writeOut: () => undefined });
      registerRunnerCommand(program, { out: () => undefined, signals: { once: () => undefined, off: () => undefined } as never });
      try {
        await program.parseAsync(['runner', '--token', 'dhr_x', ...args], { from: 'user' });
        return {};
      } catch (error) {
        return { code: (error as { code?: string }).code, message: (error as Error).message };
      }
    }

    it('refuses an option of the other provider, an unknown provider or accelerator, and memory out of bounds, before anything starts', async () => {
      expect(await parse(['--provider', 'qemu', '--images', 'macos-15'])).to.deep.include({ code: 'deskhand.providerOption' });
      expect(await parse(['--memory', '2048'])).to.deep.include({ code: 'deskhand.providerOption' });
      expect((await parse(['--provider', 'vmware'])).code).to.equal('commander.invalidArgument');
      expect((await parse(['--provider', 'qemu', '--accel', 'hvf'])).code).to.equal('commander.invalidArgument');
      expect((await parse(['--provider', 'qemu', '--memory', '64'])).message).to.contain('--memory takes a whole number from 256');
    });
  });
});
