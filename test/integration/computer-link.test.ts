import { expect } from 'chai';
import { ComputerLink } from '../../shared/desktop/computer-link';
import { createRedis } from '../../shared/redis';
import { testConfig } from '../support/environment';

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
      const link = new ComputerLink(redis, config.redisPrefix);
      link.send('ABCD-EFGH', 'desktop:act', { task_id: 'task_x', act_id: 'act_x', action: { type: 'screenshot' } });
      link.show('ABCD-EFGH', { kind: 'banner', task_id: 'task_x', agent_name: 'Test', running: false });
      await new Promise((resolve) => setTimeout(resolve, 100));
    } finally {
      process.removeListener('unhandledRejection', onUnhandled);
      for (const listener of mochaListeners) process.on('unhandledRejection', listener);
    }
    expect(unhandled).to.deep.equal([]);
  });
});
