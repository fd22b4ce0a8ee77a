import { expect } from 'chai';
import { createLogger } from '../../shared/logger';
import { everyInterval } from '../../workers/runtime';

describe('everyInterval (work beside a queue worker, e.g. worker-evals\' deadline look)', () => {
  const logger = createLogger('silent');
  const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  it('stop resolves only once a run still going has finished, and no run starts after it', async () => {
    let runs = 0;
    let finished = 0;
    let release!: () => void;
    const looks = everyInterval(5, async () => {
      runs += 1;
      await new Promise<void>((resolve) => (release = resolve));
      finished += 1;
    }, logger, 'failed');
    while (runs === 0) await wait(2);
    let stopped = false;
    const stopping = looks.stop().then(() => (stopped = true));
    await wait(20);
    expect(stopped, 'stop waits for the run in progress').to.equal(false);
    release();
    await stopping;
    expect(finished).to.equal(1);
    await wait(20);
    expect(runs, 'one run at a time, none after stop').to.equal(1);
  });

  it('stop resolves at once when no run is going, and a failed run does not reject it', async () => {
    let runs = 0;
    const looks = everyInterval(5, async () => {
      runs += 1;
      throw new Error('database gone');
    }, logger, 'failed');
    while (runs < 2) await wait(2);
    await looks.stop();
    const after = runs;
    await wait(20);
    expect(runs).to.equal(after);
  });
});
