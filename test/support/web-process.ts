import { fork, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { testEnv } from './environment';

/** Process types (`web`, …) in a child process of their own on `port`, with the test world's environment plus `env`. */
export async function startChildProcess(types: string[], env: Record<string, string>, port: number): Promise<{ child: ChildProcess; baseUrl: string; stop(signal?: 'SIGTERM' | 'SIGKILL'): Promise<void> }> {
  const stderr: string[] = [];
  const child = fork(path.join(__dirname, 'deskhand-process.ts'), types, {
    execArgv: ['--import', 'tsx'],
    env: { ...process.env, ...testEnv({ ...env, PORT: String(port) }) },
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
  });
  child.stderr?.on('data', (chunk: Buffer) => stderr.push(chunk.toString()));
  await new Promise<void>((resolve, reject) => {
    child.once('message', () => resolve());
    child.once('exit', (code) => reject(new Error(`${types.join(',')} exited with ${code}: ${stderr.join('')}`)));
  });
  return {
    child,
    baseUrl: `http://127.0.0.1:${port}`,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill(signal);
      await exited;
    },
  };
}
