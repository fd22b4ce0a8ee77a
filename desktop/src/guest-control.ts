/**
 * How a runner talks to the desktop app inside one of its test machines (guest-main.ts): two
 * small JSON files in the session user's runtime folder. The runner writes `control.json` through
 * the QEMU guest agent (as root, into a folder only the user and root can enter); the app reads
 * it, deletes it (it carries the pairing code), acts, and answers in `state.json` (written whole,
 * renamed into place), which the runner reads through the agent. Each control has an `id` the
 * state repeats once it is handled, so the runner knows the answer is to its own request.
 *
 * - `pair`: connect to the service with this pairing code (the machine session the runner was
 *   given), as this device name. The state goes `pairing`, then `paired` once the service
 *   accepted the hello, or `refused` / `failed` with a message.
 * - `reset`: close the app (it disconnects) and wait for a code again: `waiting`. A runner
 *   resets the app before it saves a machine's running state, so that every machine started
 *   from that state finds the app waiting, never connected as another machine's session.
 */

/** The folder of the two files, in the session user's runtime folder (uid 1000 in the image). */
export const GUEST_CONTROL_DIR = '/run/user/1000/deskhand';
export const GUEST_CONTROL_FILE = 'control.json';
export const GUEST_STATE_FILE = 'state.json';

export type GuestControl =
  | { id: string; action: 'pair'; code: string; base_url: string; name?: string }
  | { id: string; action: 'reset' };

export type GuestAppStatus = 'starting' | 'waiting' | 'pairing' | 'paired' | 'refused' | 'failed' | 'ended';

export interface GuestAppState {
  /** The control this state answers; null before the first. */
  id: string | null;
  state: GuestAppStatus;
  pid: number;
  /** When the state was written (the guest's clock, ISO 8601). */
  at: string;
  /** Why, for `refused`, `failed` and `ended`. */
  message?: string;
  /** The service's code, for `refused`. */
  code?: string;
  /** The hello's device, once paired. */
  device?: { os: string; width: number; height: number; app_version: string };
}

/** A control read from its file, or why it is not one. */
export function parseGuestControl(text: string): GuestControl | string {
  let value: Record<string, unknown>;
  try {
    value = JSON.parse(text) as Record<string, unknown>;
  } catch {
    return 'not JSON (yet)';
  }
  if (!value || typeof value !== 'object' || typeof value.id !== 'string' || !value.id) return 'no id';
  if (value.action === 'reset') return { id: value.id, action: 'reset' };
  if (value.action === 'pair') {
    if (typeof value.code !== 'string' || !value.code || typeof value.base_url !== 'string' || !/^https?:\/\//.test(value.base_url)) return 'a pair needs code and base_url';
    return { id: value.id, action: 'pair', code: value.code, base_url: value.base_url, ...(typeof value.name === 'string' && value.name ? { name: value.name } : {}) };
  }
  return `unknown action ${String(value.action)}`;
}
