import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { ComputerLink, socketIoKey } from '../../shared/desktop/computer-link';
import { createRedis } from '../../shared/redis';
import { testConfig } from '../support/environment';
import { startTestService, waitFor } from '../support/service';
import { connectDesktop, follow, script } from '../support/tasks';

describe('ComputerLink when Redis refuses the publish', () => {
  it('drops the message without an unhandled rejection (which would end the process)', async () => {
    const config = testConfig();
    const redis = createRedis(config.redisUrl);
    await redis.quit();
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    const mochaListeners = process.listeners('unhandledRejection');
    process.removeAllListeners('unhandledRejection');
    process.on('unhandledRejection', onUnhandled);
    try {
      const published: string[] = [];
      const publish = redis.publish.bind(redis);
      redis.publish = ((channel: string, message: string | Buffer) => {
        published.push(channel);
        return publish(channel, message);
      }) as typeof redis.publish;
      const link = new ComputerLink(redis, config.redisPrefix);
      link.send('ABCD-EFGH', 'desktop:act', { task_id: 'task_x', act_id: 'act_x', action: { type: 'screenshot' } });
      link.show('ABCD-EFGH', { kind: 'banner', task_id: 'task_x', agent_name: 'Test', running: false });
      // Both were published, and refused as they were sent (ioredis rejects a command on a closed
      // connection at once). Node reports a rejection nobody handled once the microtasks of the
      // turn it happened in have run: by the next turn of the event loop it would have.
      expect(published).to.have.length(2);
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.removeListener('unhandledRejection', onUnhandled);
      for (const listener of mochaListeners) process.on('unhandledRejection', listener);
    }
    expect(unhandled).to.deep.equal([]);
  });
});

describe('what goes through Redis to reach a computer', () => {
  it('an act carries ids and the action, never the task\'s state (its prompt, its agent\'s config)', async () => {
    const prefix = `acts-${randomUUID().slice(0, 8)}`;
    const service = await startTestService({ DESKHAND_SCRIPTED_MODELS: '1', DESKHAND_REDIS_PREFIX: prefix }, ['web', 'worker-agent']);
    const subscriber = createRedis(service.running.container.config.redisUrl, { blocking: true });
    const published: Buffer[] = [];
    subscriber.on('pmessageBuffer', (_pattern: Buffer, _channel: Buffer, message: Buffer) => published.push(message));
    let desktop: Awaited<ReturnType<typeof connectDesktop>> | undefined;
    try {
      await subscriber.psubscribe(`${socketIoKey(prefix)}*`);
      const { key } = await service.newOrg();
      // Marks found only in the task's row: a comment of the script (the prompt), the agent's instructions.
      const promptMark = `prompt-mark-${randomUUID()}`;
      const configMark = `config-mark-${randomUUID()}`;
      await service.api(key, 'POST', '/v1/agents', { agent_id: 'marked', instructions: `Say nothing of ${configMark}.`, guardrails: { confirm: [] } });
      desktop = await connectDesktop(service, key, {}, { agent_id: 'marked' });
      const started = await service.api(key, 'POST', `/v1/sessions/${desktop.code}/tasks`, { prompt: script(`# ${promptMark}`, 'click_at 5 5', 'done "clicked"') });
      expect(started.status, JSON.stringify(started.body)).to.equal(200);
      const { task, events } = await follow(service, key, started.body.task_id);
      expect(task.status).to.equal('completed');
      const actIds: string[] = events.filter((event) => event.type === 'action').map((event) => event.data.act_id);
      expect(actIds).to.have.length(2);
      // Every act was published (socket.io's emitter), and nothing published holds the row.
      await waitFor(() => actIds.every((actId) => published.some((message) => message.includes(actId))), 5_000, 'the acts to be seen on Redis');
      for (const message of published) {
        expect(message.includes(promptMark), 'the prompt went through Redis').to.equal(false);
        expect(message.includes(configMark), 'the agent config went through Redis').to.equal(false);
        expect(message.includes('agent_config'), 'a task row went through Redis').to.equal(false);
      }
    } finally {
      subscriber.disconnect();
      await desktop?.client.close();
      await service.stop();
    }
  });
});
