import { expect } from 'chai';
import { MicroBatcher } from '../../shared/webhooks/micro-batcher';

describe('MicroBatcher (webhook statements shared by jobs running together)', () => {
  it('runs calls made in the same turn as one batch and gives each caller its own result', async () => {
    const batches: number[][] = [];
    const batcher = new MicroBatcher<number, string>(async (items) => {
      batches.push(items);
      return items.map((n) => `r${n}`);
    }, { maxBatch: 100 });
    const results = await Promise.all([1, 2, 3].map((n) => batcher.add(n)));
    expect(results).to.deep.equal(['r1', 'r2', 'r3']);
    expect(batches).to.deep.equal([[1, 2, 3]]);
    expect(await batcher.add(4)).to.equal('r4');
    expect(batches).to.deep.equal([[1, 2, 3], [4]]);
  });

  it('splits at maxBatch', async () => {
    const sizes: number[] = [];
    const batcher = new MicroBatcher<number, number>(async (items) => {
      sizes.push(items.length);
      return items;
    }, { maxBatch: 2 });
    await Promise.all([1, 2, 3, 4, 5].map((n) => batcher.add(n)));
    expect(sizes).to.deep.equal([2, 2, 1]);
  });

  it('never puts two items with the same key in one batch', async () => {
    const batches: string[][] = [];
    const batcher = new MicroBatcher<string, string>(async (items) => {
      batches.push(items);
      return items;
    }, { maxBatch: 100, key: (item) => item });
    await Promise.all(['a', 'b', 'a', 'a'].map((item) => batcher.add(item)));
    expect(batches).to.deep.equal([['a', 'b'], ['a'], ['a']]);
  });

  it('retries the items of a failed batch one by one, so one bad item fails alone', async () => {
    const batcher = new MicroBatcher<number, number>(async (items) => {
      if (items.includes(13)) throw new Error('bad item');
      return items.map((n) => n * 10);
    }, { maxBatch: 100 });
    const results = await Promise.allSettled([1, 13, 2].map((n) => batcher.add(n)));
    expect(results.map((r) => r.status)).to.deep.equal(['fulfilled', 'rejected', 'fulfilled']);
    expect((results[0] as PromiseFulfilledResult<number>).value).to.equal(10);
    expect((results[1] as PromiseRejectedResult).reason.message).to.equal('bad item');
  });
});
