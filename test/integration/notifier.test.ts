import { expect } from 'chai';
import { Notifier } from '../../shared/notifier';
import { createRedis } from '../../shared/redis';
import { testConfig } from '../support/environment';
import { waitFor } from '../support/service';

describe('Notifier (Redis pub/sub wake-ups)', () => {
  const config = testConfig();
  const publisher = createRedis(config.redisUrl);
  const subscriber = createRedis(config.redisUrl, { blocking: true });
  const notifier = new Notifier(publisher, subscriber, `${config.redisPrefix}-n`);
  // A second notifier whose channels linger only briefly, for the release test.
  const brief = new Notifier(publisher, subscriber, `${config.redisPrefix}-b`, 200);
  after(() => {
    publisher.disconnect();
    subscriber.disconnect();
  });

  it('delivers to every listener that subscribed before the publish, also ones that joined a pending SUBSCRIBE', async () => {
    const heard: string[] = [];
    const [first, second] = await Promise.all([
      notifier.subscribe('task:a', (message) => heard.push(`1:${message}`)),
      notifier.subscribe('task:a', (message) => heard.push(`2:${message}`)),
    ]);
    await notifier.publish('task:a', '7');
    await waitFor(() => heard.length === 2, 2000, 'both listeners');
    expect(heard.sort()).to.deep.equal(['1:7', '2:7']);
    await first();
    await second();
  });

  it('stops delivering to a listener that left, and keeps the channel for the next one', async () => {
    const heard: string[] = [];
    const leave = await notifier.subscribe('task:b', (message) => heard.push(message));
    await leave();
    await notifier.publish('task:b', 'after-leave');
    const again: string[] = [];
    const stay = await notifier.subscribe('task:b', (message) => again.push(message));
    await notifier.publish('task:b', 'second');
    await waitFor(() => again.includes('second'), 2000, 'the new listener');
    // The listener that left hears nothing; the new one may also hear the earlier message if it
    // was still on its way (notifications are wake-ups, not a record).
    expect(heard).to.deep.equal([]);
    await stay();
  });

  it('marks a channel as quiet until a message arrives, and unsubscribes after the linger, telling its observers', async () => {
    const observed: string[] = [];
    brief.observe('task:', { message: (name, message) => observed.push(`${name} ${message}`), released: (name) => observed.push(`${name} released`) });
    const leave = await brief.subscribe('task:c', () => undefined);
    const before = brief.mark('task:c');
    expect(before).to.be.a('string');
    expect(brief.mark('task:c')).to.equal(before);
    await brief.publish('task:c', 'x');
    await waitFor(() => brief.mark('task:c') !== before, 2000, 'the mark to move');
    await leave();
    await waitFor(() => brief.mark('task:c') === null, 3000, 'the channel to be released');
    expect(observed).to.deep.equal(['task:c x', 'task:c released']);
  });
});
