#!/usr/bin/env node
import { watch } from 'node:fs';
import { mkdir, readFile, rename, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { desktopAppVersion, startLinuxApp, type LinuxApp } from './app';
import { GUEST_CONTROL_DIR, GUEST_CONTROL_FILE, GUEST_STATE_FILE, parseGuestControl, type GuestAppState, type GuestControl } from './guest-control';
import { LinuxComputer } from './linux-computer';

/**
 * `deskhand-guest`: the desktop app inside a runner's test machine (docs/runners.md, the QEMU
 * provider). The machine's session starts it at boot, before the runner keeps the machine as a
 * running snapshot, so every machine started from that snapshot already has it loaded and
 * waiting: the runner hands it the pairing code of the machine session the service gave it
 * (guest-control.ts: a file written through the guest agent) and it connects at once, as the
 * same Linux app a person runs (`startLinuxApp`), on display :0 with the session's bus.
 *
 * A test machine has no person at it, so the app opens no person's window (`personWindow:
 * false`): what the service shows the person (questions, approvals) is answered by the eval's
 * simulated customer through the service, and still printed here. It prints one JSON line per
 * event (the session sends them to `app.log` beside the control files).
 */

const DISPLAY = ':0';
const SESSION_BUS = 'unix:path=/run/user/1000/bus';
/** A fallback to the folder's watch: the control file is looked for this often anyway. */
const POLL_MS = 1000;

const out = (line: object): void => void process.stdout.write(`${JSON.stringify({ at: new Date().toISOString(), ...line })}\n`);

class GuestApp {
  private app: LinuxApp | null = null;
  /** The control being carried out; states written for an older one are dropped. */
  private current: string | null = null;
  private reading = false;
  private again = false;
  /** State writes, one after another (they share a temporary file). */
  private writing: Promise<void> = Promise.resolve();

  constructor(private readonly dir: string) {}

  async start(): Promise<void> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    await this.write({ id: null, state: 'starting' });
    await this.warmUp();
    await this.write({ id: null, state: 'waiting' });
    watch(this.dir, () => void this.look()).on('error', (error) => out({ event: 'watch_error', message: error.message }));
    setInterval(() => void this.look(), POLL_MS);
    await this.look();
  }

  async stop(): Promise<void> {
    await this.closeApp();
  }

  /**
   * Opens the computer once and closes it, so that what a pairing needs is loaded and started
   * before the runner saves the machine: the modules, the X connection's code paths, and the
   * accessibility bus (its launcher is started by the first client that asks for it).
   */
  private async warmUp(): Promise<void> {
    const began = Date.now();
    try {
      const computer = await LinuxComputer.open({ display: DISPLAY, sessionBusAddress: SESSION_BUS, appVersion: desktopAppVersion(), name: 'warm-up' });
      const hello = computer.hello('');
      await computer.close();
      out({ event: 'warmed_up', ms: Date.now() - began, width: hello.device.width, height: hello.device.height, capabilities: hello.capabilities });
    } catch (error) {
      out({ event: 'warm_up_failed', message: (error as Error).message });
    }
  }

  /** Reads the control file, once at a time (a change while reading is looked at again). */
  private async look(): Promise<void> {
    if (this.reading) {
      this.again = true;
      return;
    }
    this.reading = true;
    try {
      do {
        this.again = false;
        await this.readControl();
      } while (this.again);
    } finally {
      this.reading = false;
    }
  }

  private async readControl(): Promise<void> {
    const file = path.join(this.dir, GUEST_CONTROL_FILE);
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch {
      return;
    }
    const control = parseGuestControl(text);
    // Half written: the write that completes it is seen next.
    if (typeof control === 'string') {
      if (control !== 'not JSON (yet)') out({ event: 'control_refused', message: control });
      return;
    }
    // It carries the pairing code: gone as soon as it is read.
    await unlink(file).catch(() => undefined);
    if (control.id === this.current) return;
    this.current = control.id;
    out({ event: 'control', id: control.id, action: control.action });
    void this.carryOut(control).catch((error: unknown) => this.write({ id: control.id, state: 'failed', message: (error as Error).message }));
  }

  private async carryOut(control: GuestControl): Promise<void> {
    await this.closeApp();
    if (control.action === 'reset') {
      await this.write({ id: control.id, state: 'waiting' });
      return;
    }
    await this.write({ id: control.id, state: 'pairing' });
    const app = await startLinuxApp({
      baseUrl: control.base_url,
      code: control.code,
      display: DISPLAY,
      sessionBusAddress: SESSION_BUS,
      name: control.name,
      // A test machine has no person at it: nobody would read the window.
      personWindow: false,
      out,
    });
    this.app = app;
    void app.finished.then((end) => {
      if (this.app === app) this.app = null;
      if (end.reason === 'refused') return this.write({ id: control.id, state: 'refused', code: end.code, message: end.message });
      return this.write({ id: control.id, state: 'ended', message: end.reason });
    });
    const welcomed = await Promise.race([app.welcomed.then(() => true, () => false), app.finished.then(() => false)]);
    if (welcomed && this.app === app) {
      const { device } = app.computer.hello('');
      await this.write({ id: control.id, state: 'paired', device: { os: device.os, width: device.width, height: device.height, app_version: device.app_version } });
    }
  }

  private async closeApp(): Promise<void> {
    const app = this.app;
    this.app = null;
    if (app) await app.close();
  }

  /** Writes the state whole (renamed into place), unless a newer control has been taken since. */
  private write(state: Omit<GuestAppState, 'pid' | 'at'>): Promise<void> {
    const next = this.writing.then(async () => {
      if (state.id !== null && state.id !== this.current) return;
      const full: GuestAppState = { ...state, pid: process.pid, at: new Date().toISOString() };
      const file = path.join(this.dir, GUEST_STATE_FILE);
      const temporary = `${file}.${process.pid}.tmp`;
      await writeFile(temporary, `${JSON.stringify(full)}\n`);
      await rename(temporary, file);
      out({ event: 'state', ...full });
    });
    this.writing = next.catch(() => undefined);
    return next;
  }
}

async function main(): Promise<void> {
  // DESKHAND_GUEST_DIR: another folder, to run it on a desktop of one's own.
  const guest = new GuestApp(process.env.DESKHAND_GUEST_DIR || GUEST_CONTROL_DIR);
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => void guest.stop().finally(() => process.exit(0)));
  }
  await guest.start();
}

main().catch((error: unknown) => {
  out({ event: 'failed', message: (error as Error).stack ?? String(error) });
  process.exit(1);
});
