import { expect } from 'chai';
import fc from 'fast-check';
import type { DesktopClient } from '../../shared/simulator/desktop-client';
import { appendLedger, lockAccount } from '../../shared/billing/billing.repository';
import { startTestService, type TestService } from '../support/service';
import { connectDesktop, script } from '../support/tasks';

/**
 * What the database settles when many things happen at once: the plan's tasks at once under
 * 200 concurrent starts, and the balance under concurrent charges and credits.
 */
describe('billing under concurrency', function () {
  this.timeout(240_000);
  let service: TestService;
  const db = () => service.running.container.db;
  before(async () => {
    service = await startTestService({ DESKHAND_SCRIPTED_MODELS: '1', DESKHAND_SESSIONS_PER_HOUR: '100000' });
    await db()('plans').insert({ id: 'race_test', name: 'Race (test)', description: 'Three at once', free_minutes: 10_000, price_per_minute_cents: 10, concurrent_tasks: 3, self_serve: false, listed: false, position: 91 });
  });
  after(async () => service.stop());

  describe('POST /v1/sessions/{id}/tasks: 200 concurrent starts on 200 connected sessions', () => {
    const clients: DesktopClient[] = [];
    after(async () => {
      await Promise.all(clients.splice(0).map((client) => client.close()));
    });

    it('runs no more tasks than the plan allows; every other start answers 429 concurrency_limit', async () => {
      const { key, orgId } = await service.newOrg();
      await service.running.container.billing.levers.setPlan(orgId, 'race_test', { orgId, actor: null }, { operator: true });
      const codes: string[] = [];
      for (let batch = 0; batch < 10; batch++) {
        const connected = await Promise.all(Array.from({ length: 20 }, () => connectDesktop(service, key)));
        for (const { code, client } of connected) {
          codes.push(code);
          clients.push(client);
        }
      }
      const answers = await Promise.all(codes.map((code) => service.api(key, 'POST', `/v1/sessions/${code}/tasks`, { prompt: script('sleep 3600') })));
      const started = answers.filter((answer) => answer.status === 200);
      const refused = answers.filter((answer) => answer.status === 429);
      expect(started).to.have.length(3);
      expect(refused).to.have.length(197);
      for (const answer of refused) {
        expect(answer.body.error).to.include({ type: 'rate_limit', code: 'concurrency_limit', concurrent_tasks: 3 });
      }
      const active = await db()('tasks').where({ org_id: orgId }).whereIn('status', ['queued', 'running']).count<{ count: string }[]>('* as count');
      expect(Number(active[0]!.count)).to.equal(3);
      expect((await service.api(key, 'GET', '/v1/usage')).body.running_tasks).to.equal(3);
      // A slot freed is a start allowed.
      await service.api(key, 'POST', `/v1/tasks/${started[0]!.body.task_id}/stop`);
      const free = codes.find((code) => !started.some((answer) => answer.body.session_id === code))!;
      expect((await service.api(key, 'POST', `/v1/sessions/${free}/tasks`, { prompt: script('sleep 3600') })).status).to.equal(200);
    });
  });

  describe('without a payment provider (no STRIPE_SECRET_KEY)', () => {
    it('answers paid features with 503 payments_unavailable, and the free plan works', async () => {
      const { key, orgId } = await service.newOrg();
      await service.running.container.billing.levers.setPlan(orgId, 'free', { orgId, actor: null }, { operator: true });
      for (const [method, path, body] of [['POST', '/v1/billing/card', undefined], ['POST', '/v1/billing/top_ups', { amount_cents: 1000 }], ['PUT', '/v1/billing/settings', { auto_topup: { enabled: true } }]] as const) {
        const refused = await service.api(key, method, path, body);
        expect(refused.status, path).to.equal(503);
        expect(refused.body.error, path).to.include({ code: 'payments_unavailable' });
        expect(refused.body.error.message).to.contain('STRIPE_SECRET_KEY');
      }
      const webhook = await fetch(`${service.baseUrl}/billing/stripe/webhook`, { method: 'POST', headers: { 'content-type': 'application/json', 'stripe-signature': 't=1,v1=00' }, body: '{}' });
      expect(webhook.status).to.equal(503);
      expect((await service.api(key, 'GET', '/v1/billing')).body).to.include({ payments_available: false, plan_id: 'free' });
      const { code, client } = await connectDesktop(service, key);
      try {
        expect((await service.api(key, 'POST', `/v1/sessions/${code}/tasks`, { prompt: script('done "ok"') })).status).to.equal(200);
      } finally {
        await client.close();
      }
    });
  });

  describe('the ledger', () => {
    it('keeps the balance equal to the sum of the ledger, row by row, under concurrent charges and credits (property)', async () => {
      const operation = fc.oneof(
        fc.record({ kind: fc.constant('credit' as const), cents: fc.integer({ min: 1, max: 5000 }) }),
        // Minutes of a few tasks, repeats included: each (task, minute) is charged once.
        fc.record({ kind: fc.constant('minute' as const), task: fc.integer({ min: 1, max: 3 }), minute: fc.integer({ min: 1, max: 6 }), cents: fc.integer({ min: 0, max: 50 }) }),
      );
      await fc.assert(
        fc.asyncProperty(fc.array(operation, { minLength: 1, maxLength: 40 }), async (operations) => {
          const { orgId } = await service.newOrg();
          const run = `${orgId}`;
          await Promise.all(
            operations.map((op) =>
              db().transaction(async (trx) => {
                const locked = await lockAccount(trx, orgId);
                if (op.kind === 'credit') await appendLedger(trx, locked, { kind: 'credit', amount_cents: op.cents, description: 'credit' }, new Date());
                else await appendLedger(trx, locked, { kind: 'task_minute', amount_cents: -op.cents, task_id: `task_${run}_${op.task}`, minute: op.minute, description: 'minute' }, new Date());
              }),
            ),
          );
          const rows = await db()('billing_ledger').where({ org_id: orgId }).orderBy('seq');
          let running = 0;
          for (const row of rows) {
            running += Number(row.amount_cents);
            expect(Number(row.balance_after_cents)).to.equal(running);
          }
          const account = await db()('billing_accounts').where({ org_id: orgId }).first();
          expect(Number(account.balance_cents)).to.equal(running);
          // Each minute once: as many minute rows as distinct (task, minute) asked for.
          const distinct = new Set(operations.filter((op) => op.kind === 'minute').map((op) => `${(op as { task: number }).task}/${(op as { minute: number }).minute}`));
          expect(rows.filter((row) => row.kind === 'task_minute')).to.have.length(distinct.size);
          expect(rows.filter((row) => row.kind === 'credit')).to.have.length(operations.filter((op) => op.kind === 'credit').length);
        }),
        { numRuns: 25 },
      );
    });
  });
});
