import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { GUEST_CONTROL_DIR, GUEST_CONTROL_FILE, GUEST_STATE_FILE, type GuestAppState, type GuestControl } from '../../desktop/src/guest-control';
import type { GuestAgent } from './guest-agent';

/**
 * The runner's side of the desktop app inside a machine (desktop/src/guest-main.ts, which the
 * machine's session starts at boot and which waits, loaded, in every snapshot). The two talk
 * through two files in the session user's runtime folder (desktop/src/guest-control.ts), read
 * and written with the guest agent's file commands: no process is started in the guest for it
 * (each costs some 50 ms under TCG), a round trip is a few milliseconds.
 */

/** Why the app did not do what it was asked: its state says so, or it did not answer in time. */
export class GuestAppError extends Error {
  constructor(
    message: string,
    readonly state: GuestAppState | null,
  ) {
    super(message);
    this.name = 'GuestAppError';
  }
}

/** What the app answered when it was asked to pair. */
export interface PairedApp {
  state: GuestAppState;
  /** From the request until the app said it was paired. */
  ms: number;
}

const STATE_PATH = path.posix.join(GUEST_CONTROL_DIR, GUEST_STATE_FILE);
const CONTROL_PATH = path.posix.join(GUEST_CONTROL_DIR, GUEST_CONTROL_FILE);

/**
 * Hands the app the pairing code of the machine session the runner was given: it connects to
 * the service at `baseUrl` (the guest's way out, http://10.0.2.2:PORT). Resolves once the
 * service has accepted its hello; rejects with the app's `refused` or `failed` state, or after
 * `timeoutMs`.
 */
export async function pairGuestApp(agent: GuestAgent, request: { code: string; baseUrl: string; name: string }, timeoutMs: number): Promise<PairedApp> {
  const began = Date.now();
  const id = randomBytes(8).toString('hex');
  await writeControl(agent, { id, action: 'pair', code: request.code, base_url: request.baseUrl, name: request.name });
  const state = await waitForState(agent, (current) => current.id === id && current.state !== 'pairing', timeoutMs, 'pair with the service');
  if (state.state !== 'paired') throw new GuestAppError(`The machine's desktop app did not pair (${state.state}${state.code ? ` ${state.code}` : ''}): ${state.message ?? 'no reason given'}`, state);
  return { state, ms: Date.now() - began };
}

/** Closes the app (it disconnects) and waits until it waits for a code again. */
export async function resetGuestApp(agent: GuestAgent, timeoutMs: number): Promise<void> {
  const id = randomBytes(8).toString('hex');
  await writeControl(agent, { id, action: 'reset' });
  await waitForState(agent, (current) => current.id === id && current.state === 'waiting', timeoutMs, 'close and wait again');
}

/** Waits until the app, started by the session, waits for a code (a cold boot before its snapshot is saved). */
export function waitGuestAppWaiting(agent: GuestAgent, timeoutMs: number): Promise<GuestAppState> {
  return waitForState(agent, (current) => current.state === 'waiting', timeoutMs, 'start and wait for a code');
}

/** The app's state now, or null before it wrote one. */
export async function readGuestAppState(agent: GuestAgent): Promise<GuestAppState | null> {
  const text = await readGuestFile(agent, STATE_PATH);
  if (text === null) return null;
  try {
    return JSON.parse(text) as GuestAppState;
  } catch {
    return null;
  }
}

/** The end of the app's log in the guest (its JSON lines), to say why it failed. */
export async function guestAppLogTail(agent: GuestAgent, bytes = 3000): Promise<string> {
  const text = await readGuestFile(agent, path.posix.join(GUEST_CONTROL_DIR, 'app.log'), bytes).catch(() => null);
  return text ?? '';
}

async function waitForState(agent: GuestAgent, done: (state: GuestAppState) => boolean, timeoutMs: number, what: string): Promise<GuestAppState> {
  const deadline = Date.now() + timeoutMs;
  let last: GuestAppState | null = null;
  for (let pause = 20; ; pause = Math.min(pause * 2, 200)) {
    last = (await readGuestAppState(agent)) ?? last;
    if (last && done(last)) return last;
    if (Date.now() >= deadline) {
      throw new GuestAppError(`The machine's desktop app did not ${what} within ${timeoutMs} ms (it says ${last ? `${last.state}${last.message ? `: ${last.message}` : ''}` : 'nothing yet'}).`, last);
    }
    await sleep(pause);
  }
}

async function writeControl(agent: GuestAgent, control: GuestControl): Promise<void> {
  const handle = await agent.execute<number>('guest-file-open', { path: CONTROL_PATH, mode: 'w' });
  try {
    await agent.execute('guest-file-write', { handle, 'buf-b64': Buffer.from(`${JSON.stringify(control)}\n`).toString('base64') });
  } finally {
    await agent.execute('guest-file-close', { handle });
  }
}

/** A small file of the guest (or its last `tailBytes`), or null when it does not exist. */
async function readGuestFile(agent: GuestAgent, file: string, tailBytes?: number): Promise<string | null> {
  let handle: number;
  try {
    handle = await agent.execute<number>('guest-file-open', { path: file, mode: 'r' });
  } catch (error) {
    if (/No such file|not found|ENOENT/i.test((error as Error).message)) return null;
    throw error;
  }
  try {
    if (tailBytes) {
      // Past the start of a short file, the seek fails and the whole file is read.
      await agent.execute('guest-file-seek', { handle, offset: -tailBytes, whence: 'end' }).catch(() => undefined);
    }
    const chunks: Buffer[] = [];
    for (;;) {
      const read = await agent.execute<{ count: number; 'buf-b64': string; eof: boolean }>('guest-file-read', { handle, count: 65536 });
      chunks.push(Buffer.from(read['buf-b64'], 'base64'));
      if (read.eof || read.count === 0) break;
    }
    return Buffer.concat(chunks).toString('utf8');
  } finally {
    await agent.execute('guest-file-close', { handle });
  }
}
