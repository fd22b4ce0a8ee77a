import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { testEnv } from '../support/environment';

const run = promisify(execFile);
const root = path.join(__dirname, '..', '..');
const bin = path.join(root, 'bin', 'deskhand.js');
/** As production runs it: `bin/deskhand.js` takes the compiled build in dist/ when DESKHAND_ENV=production. */
const ADMIN_TOKEN = 'compiled-build-admin-token-0123456789';
const productionEnv = () => ({ ...process.env, ...testEnv({ DESKHAND_ENV: 'production', LOG_LEVEL: 'info', DESKHAND_ADMIN_TOKEN: ADMIN_TOKEN }) });

describe('the compiled build (npm run build, run with DESKHAND_ENV=production)', function () {
  this.timeout(180_000);

  before(async () => {
    // As `npm run build` does: from an empty dist/, so that no file of an earlier build (a renamed migration) is left.
    await fs.rm(path.join(root, 'dist'), { recursive: true, force: true });
    await run(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', 'tsconfig.build.json'], { cwd: root });
  });

  it('finds a database migrated from the TypeScript sources up to date (the names recorded are the same)', async () => {
    // The test world's database was migrated from migrations/*.ts; the build has migrations/*.js.
    // Before, Knex refused: "The migration directory is corrupt, the following files are missing: ….ts".
    const { stdout, stderr } = await run(process.execPath, [bin, 'migrate'], { env: productionEnv() });
    expect(stdout + stderr).to.contain('database is up to date');
  });

  it('serves the API and stops cleanly on SIGTERM', async () => {
    const child = spawn(process.execPath, [bin, 'start', '--only', 'web', '--no-migrate'], { env: productionEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
    try {
      let output = '';
      const port = await new Promise<number>((resolve, reject) => {
        child.stdout.on('data', (chunk: Buffer) => {
          output += chunk.toString();
          const started = /"port":(\d+)[^\n]*"msg":"deskhand started"/.exec(output);
          if (started) resolve(Number(started[1]));
        });
        child.once('exit', (code) => reject(new Error(`exited with ${code}: ${output}`)));
      });
      const health = await fetch(`http://127.0.0.1:${port}/healthz`);
      expect(health.status).to.equal(200);
      // Production keys are live keys: a test key is refused before any lookup.
      const me = await fetch(`http://127.0.0.1:${port}/v1/me`, { headers: { authorization: 'Bearer dh_test_nope' } });
      expect(me.status).to.equal(401);
      // Bull Board, loaded on first use, from the compiled build too.
      const board = await fetch(`http://127.0.0.1:${port}/admin/queues/api/queues`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
      expect(board.status).to.equal(200);
      expect(((await board.json()) as { queues: Array<{ name: string }> }).queues.map((queue) => queue.name)).to.include('task-steps');
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      const [code] = await exited;
      expect(code).to.equal(0);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });
});
