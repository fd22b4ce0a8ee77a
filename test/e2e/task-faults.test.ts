import { fork, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { expect } from 'chai';
import { testEnv } from '../support/environment';
import { startTestService, waitFor } from '../support/service';
import { connectDesktop, follow } from '../support/tasks';

describe('a worker killed mid-step', function () {
  this.timeout(60_000);

  it('fails the task with "server restarted" instead of leaving it running', async () => {
    // A model vendor that never answers keeps the step job busy inside its model call.
    const requests: string[] = [];
    const vendor = http.createServer((request) => requests.push(request.url ?? ''));
    await new Promise<void>((resolve) => vendor.listen(0, '127.0.0.1', resolve));
    const vendorUrl = `http://127.0.0.1:${(vendor.address() as AddressInfo).port}/v1`;
    const env = {
      OPENAI_API_KEY: 'sk-test-hanging',
      OPENAI_BASE_URL: vendorUrl,
      DESKHAND_WORKER_LOCK_DURATION_MS: '1000',
      DESKHAND_WORKER_STALLED_INTERVAL_MS: '500',
      DESKHAND_REDIS_PREFIX: `kill-${Date.now()}`,
    };
    // The web process (and a clock) here; the agent worker in a child process we can kill.
    const service = await startTestService(env, ['web', 'worker-clock']);
    const startWorker = async (): Promise<ChildProcess> => {
      const child = fork(path.join(__dirname, '..', 'support', 'deskhand-process.ts'), ['worker-agent'], {
        execArgv: ['--import', 'tsx'],
        env: { ...process.env, ...testEnv(env) },
        stdio: 'ignore',
      });
      await new Promise<void>((resolve, reject) => {
        child.once('message', () => resolve());
        child.once('exit', (code) => reject(new Error(`worker exited with ${code}`)));
      });
      return child;
    };
    const worker = await startWorker();
    let restarted: ChildProcess | null = null;
    try {
      const { key } = await service.newOrg();
      const { code, client } = await connectDesktop(service, key);
      const { body } = await service.api(key, 'POST', `/v1/sessions/${code}/tasks`, { prompt: 'Open the mail app' });
      expect(body.status).to.equal('queued');
      await waitFor(() => requests.length > 0, 15_000, 'the model call to start');
      worker.kill('SIGKILL');
      // The server comes back: the new worker finds the step that died with the old one.
      restarted = await startWorker();
      const queue = service.running.container.queues.queue('task-steps');
      const row = await service.running.container.db('tasks').where({ id: body.task_id }).first();
      await waitFor(async () => (await queue.getJobState(row.current_job_id)) === 'failed', 15_000, 'the stalled step job to fail');
      expect(await service.running.container.loop.reconcile(0)).to.equal(1);
      const { task } = await follow(service, key, body.task_id);
      expect(task).to.include({ status: 'failed', error: 'server restarted', done: true });
      await client.close();
    } finally {
      if (worker.exitCode === null) worker.kill('SIGKILL');
      restarted?.kill('SIGKILL');
      vendor.closeAllConnections();
      vendor.close();
      await service.stop();
    }
  });
});
