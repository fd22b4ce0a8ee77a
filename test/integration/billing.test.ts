import { expect } from 'chai';
import { ManualClock } from '../../shared/clock';
import type { DesktopClient } from '../../shared/simulator/desktop-client';
import { testEnv } from '../support/environment';
import { deskhand, DESKHAND_BIN, run } from '../support/cli';
import { startTestService, type TestService } from '../support/service';
import { connectDesktop, follow, script, startSleepingTask } from '../support/tasks';
import { sendStripeWebhook, startStripeStandIn, stripeEvent, type StripeStandIn } from '../support/stripe-stand-in';

const WEBHOOK_SECRET = 'whsec_billing_test_secret_0123456789';
describe('billing: plans, metering, 402 and 429 at task start, payments (against a local Stripe stand-in)', function () {
  this.timeout(120_000);
  let service: TestService;
  let stripe: StripeStandIn;
  const clock = new ManualClock();
  const clients: DesktopClient[] = [];

  const db = () => service.running.container.db;
  const billing = () => service.running.container.billing;
  const meter = () => service.running.container.loop.meterRunning();
  const operator = (orgId: string) => ({ orgId, actor: null });
  const ledgerOf = (taskId: string) => db()('billing_ledger').where({ task_id: taskId }).orderBy('minute');
  const sleeping = async (key: string) => {
    const started = await startSleepingTask(service, key);
    clients.push(started.desktop);
    return started.taskId;
  };
  const start = async (key: string) => {
    const { code, client } = await connectDesktop(service, key);
    clients.push(client);
    return service.api(key, 'POST', `/v1/sessions/${code}/tasks`, { prompt: script('sleep 3600') });
  };
  /** An org on `plan` (the operator's lever), with `cents` credited when given. */
  const orgOn = async (plan: string, cents = 0) => {
    const org = await service.newOrg();
    await billing().levers.setPlan(org.orgId, plan, operator(org.orgId), { operator: true });
    if (cents) await billing().levers.credit(org.orgId, cents, operator(org.orgId));
    return org;
  };
  /** Saves a card the way a person does: the SetupIntent's secret to the browser, then Stripe's webhook. */
  const saveCard = async (key: string, orgId: string) => {
    const setup = await service.api(key, 'POST', '/v1/billing/card');
    expect(setup.status).to.equal(200);
    expect(setup.body.client_secret).to.match(/^seti_.+_secret_/);
    const customer = (await db()('billing_accounts').where({ org_id: orgId }).first()).provider_customer_id;
    const saved = await sendStripeWebhook(service.baseUrl, stripeEvent('setup_intent.succeeded', { id: setup.body.setup_intent_id, object: 'setup_intent', customer, payment_method: 'pm_card_visa', status: 'succeeded' }), WEBHOOK_SECRET);
    expect(saved, JSON.stringify(saved.body)).to.deep.include({ status: 200 });
    return customer as string;
  };

  before(async () => {
    stripe = await startStripeStandIn();
    service = await startTestService(
      { DESKHAND_SCRIPTED_MODELS: '1', DESKHAND_DEFAULT_PLAN: 'free', STRIPE_SECRET_KEY: 'sk_test_standin', STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET, STRIPE_API_BASE: stripe.url },
      undefined,
      { clock },
    );
    // Plans are data: an operator adds one (no free minutes, 10 cents a minute, 3 tasks at once).
    await db()('plans').insert({ id: 'metered_test', name: 'Metered (test)', description: 'Every minute paid', free_minutes: 0, price_per_minute_cents: 10, concurrent_tasks: 3, self_serve: false, listed: false, position: 90 });
  });
  afterEach(async () => {
    for (const client of clients.splice(0)) await client.close();
  });
  after(async () => {
    await service?.stop();
    await stripe?.close();
  });

  describe('GET /v1/plans, GET /v1/usage, PUT /v1/plan', () => {
    it('lists the plans and answers usage for a new org: the free plan, nothing used, no balance', async () => {
      const { key } = await service.newOrg();
      const plans = await service.api(key, 'GET', '/v1/plans');
      expect(plans.status).to.equal(200);
      expect(plans.body.data.map((plan: any) => plan.plan_id)).to.deep.equal(['free', 'pay_as_you_go', 'enterprise']);
      const free = plans.body.data.find((plan: any) => plan.plan_id === 'free');
      expect(free).to.include({ object: 'plan', price_per_minute_cents: null, self_serve: true });
      const usage = await service.api(key, 'GET', '/v1/usage');
      expect(usage.status).to.equal(200);
      expect(usage.body.plan).to.deep.equal(free);
      expect(usage.body).to.include({ balance_cents: 0, minutes_used: 0, free_minutes_used: 0, free_minutes_left: free.free_minutes, running_tasks: 0 });
      expect(usage.body.by_day).to.deep.equal([]);
    });

    it('refuses a plan change with an API key (403 permission: owners choose plans)', async () => {
      const { key, orgId } = await service.newOrg();
      const refused = await service.api(key, 'PUT', '/v1/plan', { plan_id: 'pay_as_you_go' });
      expect(refused.status).to.equal(403);
      expect(refused.body.error).to.include({ type: 'permission' });
      expect(refused.body.error.message).to.contain('owner');
      expect((await service.api(key, 'GET', '/v1/usage')).body.plan.plan_id).to.equal('free');
      // An owner's change (the console's sign-in), through the service: audited; an operator-only plan refused.
      await billing().levers.setPlan(orgId, 'pay_as_you_go', { orgId, actor: { type: 'user', email: 'owner@example.com' } });
      let refusedEnterprise: any;
      await billing().levers.setPlan(orgId, 'enterprise', { orgId, actor: { type: 'user', email: 'owner@example.com' } }).catch((error) => (refusedEnterprise = error));
      expect(refusedEnterprise).to.include({ status: 403 });
      const audit = await service.api(key, 'GET', '/v1/audit_log?action=billing.plan_changed');
      expect(audit.body.data[0].data).to.deep.equal({ from: 'free', to: 'pay_as_you_go' });
    });

    it('CLI: orgs set-plan and orgs credit print JSON; a bad plan or org goes to stderr with a non-zero exit', async () => {
      const { key, orgId } = await service.newOrg();
      const set = await deskhand('orgs', 'set-plan', '--org', orgId, '--plan', 'enterprise');
      expect(set.code).to.equal(0);
      expect(JSON.parse(set.stdout).plan).to.include({ plan_id: 'enterprise', concurrent_tasks: 50 });
      const credited = await deskhand('orgs', 'credit', '--org', orgId, '--cents', '2500');
      expect(credited.code).to.equal(0);
      expect(JSON.parse(credited.stdout)).to.include({ org_id: orgId, balance_cents: 2500 });
      const usage = (await service.api(key, 'GET', '/v1/usage')).body;
      expect(usage).to.include({ balance_cents: 2500 });
      expect(usage.plan.plan_id).to.equal('enterprise');
      for (const args of [['set-plan', '--org', orgId, '--plan', 'gold'], ['credit', '--org', 'org_nope', '--cents', '5'], ['credit', '--org', orgId, '--cents', '1.5']]) {
        const failed = await deskhand('orgs', ...args);
        expect(failed.code, args.join(' ')).to.not.equal(0);
        expect(failed.stderr, args.join(' ')).to.match(/\S/);
        expect(failed.stdout).to.equal('');
      }
      // A live key in development stops any command at once, with a message naming the variable.
      const live = await run(process.execPath, [DESKHAND_BIN, 'orgs', 'list'], { env: { ...process.env, ...testEnv(), STRIPE_SECRET_KEY: 'sk_live_not_here' } }).catch((error) => error);
      expect(live.code).to.equal(1);
      expect(live.stderr).to.match(/configuration: STRIPE_SECRET_KEY is a live key .* development takes test-mode keys/);
      const entries = (await service.api(key, 'GET', '/v1/billing/ledger?kind=payments')).body.data;
      expect(entries).to.have.length(1);
      expect(entries[0]).to.include({ kind: 'credit', amount_cents: 2500, balance_after_cents: 2500 });
    });
  });

  describe('metering', () => {
    it('charges a running task minute by minute as it runs; at its end the charged minutes are its billed_minutes', async () => {
      const { key, orgId } = await orgOn('metered_test', 1000);
      const taskId = await sleeping(key);
      clock.advance(30_000);
      await meter();
      expect(await ledgerOf(taskId)).to.have.length(1);
      clock.advance(120_000);
      await meter();
      await meter(); // twice: each minute once
      const charged = await ledgerOf(taskId);
      expect(charged.map((row) => row.minute)).to.deep.equal([1, 2, 3]);
      expect(charged.map((row) => Number(row.amount_cents))).to.deep.equal([-10, -10, -10]);
      expect((await service.api(key, 'GET', '/v1/usage')).body).to.include({ balance_cents: 970, minutes_used: 3, spent_cents: 30 });
      clock.advance(40_000);
      const stopped = await service.api(key, 'POST', `/v1/tasks/${taskId}/stop`);
      expect(stopped.body.status).to.equal('stopped');
      const billed = stopped.body.billed_minutes;
      expect(billed).to.equal(4);
      expect(await ledgerOf(taskId)).to.have.length(billed);
      const usage = (await service.api(key, 'GET', '/v1/usage')).body;
      expect(usage).to.include({ balance_cents: 1000 - 10 * billed, minutes_used: billed, task_minutes: billed });
      expect(usage.by_agent).to.deep.equal([{ agent_id: 'default', minutes: billed }]);
      expect(usage.by_day.reduce((sum: number, day: any) => sum + day.minutes, 0)).to.equal(billed);
      const account = await db()('billing_accounts').where({ org_id: orgId }).first();
      expect(Number(account.balance_cents)).to.equal(1000 - 10 * billed);
    });

    it('stops a free-plan task when the free minutes run out (its stopped event says so); the next start is 402 insufficient_balance', async () => {
      const { key } = await service.newOrg();
      const taskId = await sleeping(key);
      clock.advance(61 * 60_000);
      await meter();
      const { task, events } = await follow(service, key, taskId);
      expect(task.status).to.equal('stopped');
      const last = events.at(-1);
      expect(last.type).to.equal('stopped');
      expect(last.message).to.match(/free minutes of this month ran out/);
      expect(await ledgerOf(taskId)).to.have.length(task.billed_minutes);
      const usage = (await service.api(key, 'GET', '/v1/usage')).body;
      expect(usage).to.include({ free_minutes_used: 60, free_minutes_left: 0, balance_cents: 0 });
      const refused = await start(key);
      expect(refused.status).to.equal(402);
      expect(refused.body.error).to.include({ type: 'payment_required', code: 'insufficient_balance' });
      expect(refused.body.error.message).to.match(/free minutes .* used up.*PUT \/v1\/plan/);
    });

    it('stops a paid task whose balance runs out, and refuses the next start until funds are added', async () => {
      const { key, orgId } = await orgOn('metered_test', 20);
      const taskId = await sleeping(key);
      clock.advance(150_000);
      await meter();
      const { task, events } = await follow(service, key, taskId);
      expect(task.status).to.equal('stopped');
      expect(events.at(-1).message).to.match(/balance cannot cover another minute/);
      expect(await ledgerOf(taskId)).to.have.length(task.billed_minutes);
      const refused = await start(key);
      expect(refused.status).to.equal(402);
      expect(refused.body.error).to.include({ code: 'insufficient_balance' });
      expect(refused.body.error.message).to.match(/add funds/);
      await billing().levers.credit(orgId, 500, operator(orgId));
      expect((await start(key)).status).to.equal(200);
    });
  });

  describe('machine minutes', () => {
    it('charges eval tries on cloud runners per machine minute, once; tries on the org\'s own runners are not charged', async () => {
      const { key, orgId } = await orgOn('metered_test', 1000);
      const cloud = await service.running.container.runners.createCloud('Cloud (billing test)');
      const own = await service.api(key, 'POST', '/v1/runners', { name: 'Our runner' });
      expect(own.status).to.equal(200);
      // A run with two tries that ran 150 s each (the tries' own rows, as the evals flow leaves them).
      const runId = `tr_billing_${Date.now()}`;
      await db()('test_runs').insert({ id: runId, org_id: orgId, agent_id: 'default', agent_version: 1, agent: JSON.stringify({}), status: 'completed' });
      const tryRow = (id: string, runnerId: string) => ({
        id,
        org_id: orgId,
        run_id: runId,
        position: 1,
        test_case_id: 'tc_billing',
        attempt: id.endsWith('cloud') ? 1 : 2,
        status: 'passed',
        runner_id: runnerId,
        started_at: db().raw("now() - interval '150 seconds'"),
        ended_at: db().raw('now()'),
      });
      await db()('tries').insert([tryRow(`try_${runId}_cloud`, cloud.runner.runner_id), tryRow(`try_${runId}_own`, own.body.runner_id)]);
      await billing().metering.chargeMachineMinutes();
      await billing().metering.chargeMachineMinutes();
      const charged = await db()('billing_ledger').where({ org_id: orgId, kind: 'machine_minute' }).orderBy('minute');
      expect(charged.map((row) => [row.try_id, row.minute, Number(row.amount_cents)])).to.deep.equal([1, 2, 3].map((minute) => [`try_${runId}_cloud`, minute, -10]));
      const usage = (await service.api(key, 'GET', '/v1/usage')).body;
      expect(usage).to.include({ machine_minutes: 3, task_minutes: 0, minutes_used: 3, balance_cents: 970 });
    });
  });

  describe('payments', () => {
    it('saves a card with a SetupIntent, tops up from it, and credits a payment once however often Stripe tells it', async () => {
      const { key, orgId } = await orgOn('pay_as_you_go');
      const customer = await saveCard(key, orgId);
      expect((await service.api(key, 'GET', '/v1/billing')).body.card).to.deep.equal({ status: 'ok' });
      const topUp = await service.api(key, 'POST', '/v1/billing/top_ups', { amount_cents: 2000 }, { 'x-request-id': `top-up-${orgId}` });
      expect(topUp.status).to.equal(200);
      expect(topUp.body).to.include({ kind: 'top_up', amount_cents: 2000, balance_after_cents: 2000 });
      const intent = stripe.paymentIntents.get(topUp.body.payment_id)!;
      expect(intent).to.include({ customer, payment_method: 'pm_card_visa', amount: 2000 });
      // The same request again is the same payment; Stripe's webhook of it, twice, credits nothing more.
      const again = await service.api(key, 'POST', '/v1/billing/top_ups', { amount_cents: 2000 }, { 'x-request-id': `top-up-${orgId}` });
      expect(again.body.payment_id).to.equal(topUp.body.payment_id);
      const event = stripeEvent('payment_intent.succeeded', intent);
      expect((await sendStripeWebhook(service.baseUrl, event, WEBHOOK_SECRET)).body).to.deep.equal({ received: true, handled: true });
      expect((await sendStripeWebhook(service.baseUrl, event, WEBHOOK_SECRET)).body).to.deep.equal({ received: true, handled: false });
      expect((await service.api(key, 'GET', '/v1/billing')).body.balance_cents).to.equal(2000);
      const payments = (await service.api(key, 'GET', '/v1/billing/ledger?kind=payments')).body.data;
      expect(payments).to.have.length(1);
      const audit = (await service.api(key, 'GET', '/v1/audit_log?object_id=' + orgId)).body.data.map((entry: any) => entry.action);
      expect(audit).to.include.members(['billing.card_setup_started', 'billing.card_updated', 'billing.topped_up']);
    });

    it('refuses provider webhooks whose signature does not verify (400), and changes nothing', async () => {
      const { key, orgId } = await orgOn('pay_as_you_go');
      const customer = await saveCard(key, orgId);
      const event = stripeEvent('payment_intent.succeeded', { id: 'pi_forged', object: 'payment_intent', amount: 100000, amount_received: 100000, customer, metadata: { kind: 'top_up' } });
      const payload = JSON.stringify(event);
      const wrongSecret = await sendStripeWebhook(service.baseUrl, event, 'whsec_not_the_right_one');
      expect(wrongSecret.status).to.equal(400);
      expect(wrongSecret.body.error).to.include({ type: 'invalid_request' });
      const garbage = await sendStripeWebhook(service.baseUrl, event, WEBHOOK_SECRET, 't=1,v1=00');
      expect(garbage.status).to.equal(400);
      const unsigned = await fetch(`${service.baseUrl}/billing/stripe/webhook`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: payload });
      expect(unsigned.status).to.equal(400);
      expect((await service.api(key, 'GET', '/v1/billing')).body.balance_cents).to.equal(0);
    });

    it('does not count a webhook whose handling failed as handled: Stripe\'s next delivery of it credits the payment', async () => {
      const { key, orgId } = await orgOn('pay_as_you_go');
      const customer = await saveCard(key, orgId);
      const event = stripeEvent('payment_intent.succeeded', { id: `pi_redelivered_${orgId}`, object: 'payment_intent', amount: 1500, amount_received: 1500, customer, metadata: { kind: 'top_up' } });
      // Crediting writes an audit row in its transaction: while a trigger refuses audit rows, handling the event fails.
      await db().raw(`create function test_refuse_audit_rows() returns trigger language plpgsql as $$ begin raise exception 'audit row refused by the test'; end $$;
        create trigger test_refuse_audit_rows before insert on audit_log for each row execute function test_refuse_audit_rows()`);
      let first: { status: number; body: any };
      try {
        first = await sendStripeWebhook(service.baseUrl, event, WEBHOOK_SECRET);
      } finally {
        await db().raw('drop trigger if exists test_refuse_audit_rows on audit_log; drop function if exists test_refuse_audit_rows()');
      }
      expect(first.status).to.equal(500);
      expect(await db()('billing_provider_events').where({ id: event.id })).to.deep.equal([]);
      expect((await service.api(key, 'GET', '/v1/billing')).body.balance_cents).to.equal(0);
      expect((await sendStripeWebhook(service.baseUrl, event, WEBHOOK_SECRET)).body).to.deep.equal({ received: true, handled: true });
      expect((await service.api(key, 'GET', '/v1/billing')).body.balance_cents).to.equal(1500);
      expect((await sendStripeWebhook(service.baseUrl, event, WEBHOOK_SECRET)).body).to.deep.equal({ received: true, handled: false });
    });

    it('a declined auto top-up marks the card: the start answers 402 card_needs_attention; an updated card starts again', async () => {
      const { key, orgId } = await orgOn('metered_test');
      await saveCard(key, orgId);
      const settings = await service.api(key, 'PUT', '/v1/billing/settings', { auto_topup: { enabled: true, amount_cents: 1000, threshold_cents: 100, monthly_limit_cents: 5000 } });
      expect(settings.status).to.equal(200);
      expect(settings.body.auto_topup).to.include({ enabled: true, amount_cents: 1000 });
      stripe.declineNext();
      const refused = await start(key);
      expect(refused.status).to.equal(402);
      expect(refused.body.error).to.include({ type: 'payment_required', code: 'card_needs_attention' });
      expect(refused.body.error.message).to.match(/update the card/);
      expect((await service.api(key, 'GET', '/v1/billing')).body.card.status).to.equal('needs_attention');
      await saveCard(key, orgId);
      const started = await start(key);
      expect(started.status, JSON.stringify(started.body)).to.equal(200);
      const account = (await service.api(key, 'GET', '/v1/billing')).body;
      expect(account).to.deep.include({ balance_cents: 1000 });
      expect(account.auto_topup.used_this_month_cents).to.equal(1000);
    });

    it('past the monthly auto top-up limit a start answers 402 auto_topup_limit_reached', async () => {
      const { key, orgId } = await orgOn('metered_test');
      await saveCard(key, orgId);
      await service.api(key, 'PUT', '/v1/billing/settings', { auto_topup: { enabled: true, amount_cents: 500, threshold_cents: 0, monthly_limit_cents: 500 } });
      // The first start tops up $5.00 (the month's limit); fifty minutes spend it.
      const first = await start(key);
      expect(first.status).to.equal(200);
      await follow(service, key, first.body.task_id, (_task, events) => events.some((event) => event.type === 'sleep'));
      clock.advance(50 * 60_000);
      await meter();
      expect((await service.api(key, 'GET', '/v1/billing')).body.balance_cents).to.equal(0);
      await service.api(key, 'POST', `/v1/tasks/${first.body.task_id}/stop`);
      const refused = await start(key);
      expect(refused.status).to.equal(402);
      expect(refused.body.error).to.include({ code: 'auto_topup_limit_reached' });
      expect(refused.body.error.message).to.match(/raise the limit/);
      const raised = await service.api(key, 'PUT', '/v1/billing/settings', { auto_topup: { monthly_limit_cents: 5000 } });
      expect(raised.status).to.equal(200);
      expect((await start(key)).status).to.equal(200);
    });

    it('after Stripe reports a failed payment, a start with too little balance answers 402 card_needs_attention', async () => {
      const { key, orgId } = await orgOn('metered_test');
      const customer = await saveCard(key, orgId);
      const failed = stripeEvent('payment_intent.payment_failed', { id: 'pi_failed_1', object: 'payment_intent', customer, amount: 2000, status: 'requires_payment_method', last_payment_error: { message: 'Your card has expired.' }, metadata: { org_id: orgId, kind: 'top_up' } });
      expect((await sendStripeWebhook(service.baseUrl, failed, WEBHOOK_SECRET)).status).to.equal(200);
      const refused = await start(key);
      expect(refused.status).to.equal(402);
      expect(refused.body.error).to.include({ code: 'card_needs_attention' });
      const audit = (await service.api(key, 'GET', '/v1/audit_log?action=billing.card_needs_attention')).body.data;
      expect(audit[0].data).to.deep.equal({ reason: 'Your card has expired.' });
    });

    it('the older API\'s start answers the same 402', async () => {
      const { key } = await orgOn('metered_test');
      const { code, token, client } = await connectDesktop(service, key);
      clients.push(client);
      const refused = await service.api(token, 'POST', '/start', { code, prompt: 'hello' });
      expect(refused.status).to.equal(402);
      expect(refused.body).to.include({ code: 'insufficient_balance' });
    });
  });
});
