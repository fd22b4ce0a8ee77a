import { expect } from 'chai';
import { QUEUE_NAMES } from '../../shared/queues/catalog';
import { assertJobPayload, jobId } from '../../shared/queues/job-queues';

describe('job payloads (shared/queues/catalog.ts)', () => {
  it('takes a step job of ids and refuses one with fields the catalog does not name', () => {
    expect(() => assertJobPayload(QUEUE_NAMES.taskSteps, 'step', { task_id: 'task_abc', step: 3 })).not.to.throw();
    expect(() => assertJobPayload(QUEUE_NAMES.taskSteps, 'step', { task_id: 'task_abc', step: 3, row: {} })).to.throw(/bad task-steps\/step payload/);
    expect(() => assertJobPayload(QUEUE_NAMES.taskSteps, 'step', { task_id: 'task_abc' })).to.throw(/step/);
  });

  it('still runs step jobs queued by a release whose jobs carried the task row', () => {
    expect(() => assertJobPayload(QUEUE_NAMES.taskSteps, 'step', { task_id: 'task_abc', step: 3, seen: { id: 'task_abc', row_version: '1234' } })).not.to.throw();
  });

  it('refuses job ids with colons, which BullMQ cannot take', () => {
    expect(jobId('step', 'task_abc', 2)).to.equal('step-task_abc-2');
    expect(() => jobId('step', 'a:b')).to.throw(/may not contain ':'/);
  });
});
