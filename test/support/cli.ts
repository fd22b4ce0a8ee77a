import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { testEnv } from './environment';

export const run = promisify(execFile);
/** The `deskhand` command as a user runs it (`npx deskhand` runs this file). */
export const DESKHAND_BIN = path.join(__dirname, '..', '..', 'bin', 'deskhand.js');

/** Runs `deskhand …args` against the test world; its output and exit code, never a throw. */
export async function deskhand(...args: string[]): Promise<{ stdout: string; stderr: string; code: number }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [DESKHAND_BIN, ...args], { env: { ...process.env, ...testEnv() } });
    return { stdout, stderr, code: 0 };
  } catch (error) {
    const failed = error as { stdout: string; stderr: string; code: number };
    return { stdout: failed.stdout, stderr: failed.stderr, code: failed.code };
  }
}
