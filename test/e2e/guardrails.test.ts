import { expect } from 'chai';
import type { DesktopClient, DesktopClientOptions } from '../../shared/simulator/desktop-client';
import type { ComputerState, SimulatorEffect } from '../../shared/simulator/computer-state';
import { ManualClock } from '../../shared/clock';
import { QUEUE_NAMES } from '../../shared/queues/catalog';
import { startQueueWorker } from '../../workers/runtime';
import { sweepSteps } from '../../workers/maintenance';
import { startTestService, waitFor, type TestService } from '../support/service';
import { connectDesktop, follow as followTask, script } from '../support/tasks';

/**
 * The guardrails end to end: every fixture of spec/simulator.md driven through the running
 * service by the reference desktop client and the scripted model, on the four kinds of
 * computer the guardrails tell apart. What is asserted is what a user relies on: the task's
 * events (guardrail, approval, decision), how it ended, and what really happened on the
 * simulated computer (`effects`: mails sent, purchases, deletions…).
 */

const VARIANTS = {
  'mac 1.0.20': { os: 'mac', appVersion: '1.0.20', accessibility: true },
  'mac 1.0.19': { os: 'mac', appVersion: '1.0.19', accessibility: true },
  windows: { os: 'windows', appVersion: '1.0.20', accessibility: true },
  'a Mac without Accessibility': { os: 'mac', appVersion: '1.0.20', accessibility: false },
} as const satisfies Record<string, Pick<DesktopClientOptions, 'os' | 'appVersion' | 'accessibility'>>;
type Variant = keyof typeof VARIANTS;
const ALL_VARIANTS = Object.keys(VARIANTS) as Variant[];
/** Computers that report no categories: the agent's own approval requests are all there is. */
const UNDETECTED: Variant[] = ['mac 1.0.19', 'windows'];
const NO_AX: Variant = 'a Mac without Accessibility';

const ALL_CATEGORIES = ['purchase', 'send', 'delete', 'install', 'security', 'terms'];
const SECRET = 'sk_live_51HxQ2eZvKYlo2C0a9bT3mNpQrStUv';

/** The agents of this file, created once: id → guardrails. */
const AGENTS: Record<string, Record<string, unknown>> = {
  // Nothing to check on screen: runs on a Mac without Accessibility too.
  'no-confirm': { confirm: [] },
  'block-all': { block: ALL_CATEGORIES },
  unattended: { mode: 'unattended' },
  'apps-block': { confirm: [], apps: { block: ['App Store', 'WinStore.App.exe'] } },
  'apps-allow': { confirm: [], apps: { allow: ['Safari', 'msedge.exe', 'explorer.exe'] } },
  'apps-allow-browsers': { confirm: [], apps: { allow: ['Safari', 'msedge.exe'] } },
  'sites-block': { confirm: [], sites: { block: ['news.example.com'] } },
  'sites-allow': { confirm: [], sites: { allow: ['https://Shop.Example.com/cart'] } },
  'screen-ask': { confirm: [], screen_check: true },
  'screen-stop': { confirm: [], screen_check: true, safety_checks: 'stop' },
  'screen-unattended': { confirm: [], screen_check: true, mode: 'unattended' },
  'safety-stop': { confirm: [], safety_checks: 'stop' },
  scoped: { confirm: [], scope: 'Shopping for clothes on shop.example.com' },
};

type Decide = 'approve' | 'deny' | ((pending: any, index: number) => 'approve' | 'deny');
/** Answers a question once the condition it waits for has happened; null: not yet. */
type Answer = (task: any, events: any[]) => string | null;

interface Run {
  task: any;
  events: any[];
  effects: SimulatorEffect[];
  /** The simulated computer's state once the task ended. */
  computer: ComputerState;
  /** What the person's app printed (one object per protocol event). */
  lines: any[];
  guardrails: any[];
  approvals: any[];
  decisions: any[];
}

const effectTypes = (run: Run) => run.effects.map((effect) => effect.type);

/**
 * Runs of one `describe`, started together in its `before` so that they overlap (each is
 * mostly waiting on its computer), each awaited by the test that asserts on it.
 */
class Runs {
  private readonly planned = new Map<string, () => Promise<Run>>();
  private readonly started = new Map<string, Promise<Run>>();

  add(id: string, start: () => Promise<Run>): void {
    if (this.planned.has(id)) throw new Error(`run ${id} is planned twice`);
    this.planned.set(id, start);
  }

  startAll(): void {
    for (const [id, start] of this.planned) {
      const running = start();
      running.catch(() => undefined); // reported by the test that awaits it
      this.started.set(id, running);
    }
  }

  get(id: string): Promise<Run> {
    const running = this.started.get(id);
    if (!running) throw new Error(`run ${id} was not planned`);
    return running;
  }
}
/** The agent's steps in the script end with this line, so that a finished task proves it went on. */
const DONE = 'done "finished"';

describe('guardrails end to end (reference desktop client, scripted model)', function () {
  // The first test of each group waits for all of the group's runs.
  this.timeout(120_000);
  let service: TestService;
  let key: string;
  const clients: DesktopClient[] = [];

  before(async () => {
    service = await startTestService({ DESKHAND_SCRIPTED_MODELS: '1' });
    ({ key } = await service.newOrg());
    for (const [agentId, guardrails] of Object.entries(AGENTS)) {
      const created = await service.api(key, 'POST', '/v1/agents', { agent_id: agentId, guardrails });
      expect(created.status, agentId).to.equal(200);
    }
  });
  after(async () => {
    for (const client of clients.splice(0)) await client.close();
    await service.stop();
  });

  /**
   * Runs a script on a fresh computer of `variant` with `agent` until the task ends, deciding
   * approvals through the API as `decide` says and answering questions when `answer` does.
   */
  async function run(variant: Variant, agent: string, steps: string[], options: { decide?: Decide; answer?: Answer; person?: Partial<DesktopClientOptions> } = {}): Promise<Run> {
    const { code, client, lines } = await connectDesktop(service, key, { ...VARIANTS[variant], ...options.person }, { agent_id: agent });
    try {
      return await follow(client, lines, code, steps, options);
    } finally {
      await client.close();
    }
  }

  async function follow(client: DesktopClient, lines: any[], code: string, steps: string[], options: { decide?: Decide; answer?: Answer }): Promise<Run> {
    const started = await service.api(key, 'POST', `/v1/sessions/${code}/tasks`, { prompt: script(...steps) });
    expect(started.status, JSON.stringify(started.body)).to.equal(200);
    const taskId = started.body.task_id;
    const events: any[] = [];
    let cursor = 0;
    let approvalsDecided = 0;
    const deadline = Date.now() + 90_000;
    for (;;) {
      const response = await service.api(key, 'GET', `/v1/tasks/${taskId}/events?after=${cursor}&wait_ms=2000`);
      expect(response.status).to.equal(200);
      events.push(...response.body.data);
      cursor = response.body.cursor;
      const task = response.body.task;
      if (task.done) {
        const of = (type: string) => events.filter((event) => event.type === type).map((event) => event.data);
        return { task, events, effects: client.computer.effects(), computer: client.computer.snapshot(), lines, guardrails: of('guardrail'), approvals: of('approval'), decisions: of('decision') };
      }
      const pending = task.pending;
      if (pending?.type === 'approval' && options.decide) {
        const decision = typeof options.decide === 'function' ? options.decide(pending, approvalsDecided) : options.decide;
        approvalsDecided++;
        const decided = await service.api(key, 'POST', `/v1/tasks/${taskId}/respond`, { approval_id: pending.approval_id, decision });
        expect(decided.status, JSON.stringify(decided.body)).to.equal(200);
      }
      if (pending?.type === 'question' && options.answer) {
        const answer = options.answer(task, events);
        if (answer !== null) {
          const answered = await service.api(key, 'POST', `/v1/tasks/${taskId}/respond`, { question_id: pending.question_id, answer });
          expect(answered.status, JSON.stringify(answered.body)).to.equal(200);
        }
      }
      if (Date.now() > deadline) throw new Error(`task ${taskId} did not end: ${JSON.stringify(task)}\n${JSON.stringify(events.slice(-8))}`);
    }
  }

  /** The task failed before it started: nothing reached the computer. */
  function expectFailedAtStart(outcome: Run, error: RegExp): void {
    expect(outcome.task).to.include({ status: 'failed', done: true });
    expect(outcome.task.error).to.match(error);
    expect(outcome.events.map((event) => event.type)).not.to.include('started');
    expect(outcome.effects).to.deep.equal([]);
    expect(outcome.lines.filter((line) => line.event === 'act')).to.deep.equal([]);
  }

  const ACCESSIBILITY = /lacks Accessibility permission, so it cannot check this agent's guardrails/;
  const PAGE_ADDRESSES = /has site rules, which need a computer that reports page addresses/;

  // ---- start-time checks ---------------------------------------------------------------------

  describe('what each computer can check, at start', () => {
    const runs = new Runs();
    before(() => runs.startAll());
    runs.add('default/no-ax', () => run(NO_AX, 'default', ['open Browser', 'go shop.example.com', 'click "Buy now"', DONE]));
    runs.add('apps/no-ax', () => run(NO_AX, 'apps-block', ['open Store', DONE]));
    for (const variant of ['mac 1.0.19', 'windows'] as const) {
      runs.add(`sites-block/${variant}`, () => run(variant, 'sites-block', ['open Browser', DONE]));
      runs.add(`sites-allow/${variant}`, () => run(variant, 'sites-allow', ['open Browser', DONE]));
    }
    runs.add('sites/no-ax', () => run(NO_AX, 'sites-block', ['open Browser', DONE]));
    runs.add('nothing/no-ax', () => run(NO_AX, 'no-confirm', ['open Browser', 'go shop.example.com', 'click "Buy now"', DONE]));

    it('fails a default agent (six confirm categories) on a Mac without Accessibility, before anything reaches the computer', async () => {
      const outcome = await runs.get('default/no-ax');
      expectFailedAtStart(outcome, ACCESSIBILITY);
      expect(outcome.task.error).to.contain('(confirm)');
      const webhooks = await service.running.container.db('org_events').where({ task_id: outcome.task.task_id }).pluck('type');
      expect(webhooks).to.deep.equal(['task.failed']);
    });

    it('fails app and site rules on a Mac without Accessibility, naming the rules', async () => {
      const apps = await runs.get('apps/no-ax');
      expectFailedAtStart(apps, ACCESSIBILITY);
      expect(apps.task.error).to.contain('(apps.block)');
      const sites = await runs.get('sites/no-ax');
      expectFailedAtStart(sites, ACCESSIBILITY);
      expect(sites.task.error).to.contain('(sites.block)');
    });

    for (const variant of ['mac 1.0.19', 'windows'] as const) {
      it(`fails site rules on ${variant}, which reports no page addresses`, async () => {
        const blocked = await runs.get(`sites-block/${variant}`);
        const allowed = await runs.get(`sites-allow/${variant}`);
        expectFailedAtStart(blocked, PAGE_ADDRESSES);
        expectFailedAtStart(allowed, PAGE_ADDRESSES);
        expect(blocked.task.error).to.contain(`(${VARIANTS[variant].os}, app ${VARIANTS[variant].appVersion})`);
      });
    }

    it('runs an agent with nothing to check on screen on a Mac without Accessibility', async () => {
      const outcome = await runs.get('nothing/no-ax');
      expect(outcome.task).to.include({ status: 'completed', result: 'finished' });
      expect(effectTypes(outcome)).to.include('purchased');
      expect(outcome.approvals).to.deep.equal([]);
    });
  });

  // ---- categories ----------------------------------------------------------------------------

  interface Fixture {
    name: string;
    category: string;
    /** Steps that lead up to the one in the category. */
    before: string[];
    /** The step in the category. */
    act: string;
    /** The effect the step has on the computer. */
    effect: SimulatorEffect['type'];
  }

  const FIXTURES: Fixture[] = [
    { name: 'purchase: Buy now', category: 'purchase', before: ['open Browser', 'go shop.example.com'], act: 'click "Buy now"', effect: 'purchased' },
    { name: 'purchase: Pay at checkout', category: 'purchase', before: ['open Browser', 'go checkout.shop.example.com'], act: 'click "Pay"', effect: 'purchased' },
    { name: 'send: the Send button in Mail', category: 'send', before: ['open Mail', 'type "bob@example.com"', 'click "Message"', 'type "Hello Bob"'], act: 'click "Send"', effect: 'mail_sent' },
    { name: 'send: Cmd+Enter in Mail', category: 'send', before: ['open Mail', 'type "bob@example.com"', 'click "Message"', 'type "Hello Bob"'], act: 'key cmd+enter', effect: 'mail_sent' },
    { name: 'send: Enter in the Message box of Mail', category: 'send', before: ['open Mail', 'type "bob@example.com"', 'click "Message"', 'type "Hello Bob"'], act: 'key enter', effect: 'mail_sent' },
    { name: 'send: a line break typed into the Message box of Mail', category: 'send', before: ['open Mail', 'type "bob@example.com"', 'click "Message"'], act: 'type "Hello Bob\\n"', effect: 'mail_sent' },
    { name: 'send: the Send button of webmail', category: 'send', before: ['open Browser', 'go mail.example.com', 'click "To"', 'type "bob@example.com"', 'click "Message"', 'type "Hello Bob"'], act: 'click "Send"', effect: 'mail_sent' },
    { name: 'send: Enter in the Message box of webmail', category: 'send', before: ['open Browser', 'go mail.example.com', 'click "To"', 'type "bob@example.com"', 'click "Message"', 'type "Hello Bob"'], act: 'key enter', effect: 'mail_sent' },
    { name: 'delete: the Move to Trash button', category: 'delete', before: ['open Files', 'click "report.txt"'], act: 'click "Move to Trash"', effect: 'moved_to_trash' },
    { name: 'delete: the Delete key', category: 'delete', before: ['open Files', 'click "report.txt"'], act: 'key delete', effect: 'moved_to_trash' },
    { name: 'delete: a drag to the Trash', category: 'delete', before: ['open Files'], act: 'drag "report.txt" to "Trash"', effect: 'moved_to_trash' },
    { name: 'delete: Delete account', category: 'delete', before: ['open Browser', 'go account.example.com'], act: 'click "Delete account"', effect: 'account_deleted' },
    { name: 'install: Install in the store', category: 'install', before: ['open Store'], act: 'click "Install"', effect: 'installed' },
    { name: 'security: Turn off firewall', category: 'security', before: ['open Settings'], act: 'click "Turn off firewall"', effect: 'firewall_changed' },
    { name: 'security: Change password in Settings', category: 'security', before: ['open Settings'], act: 'click "Change password"', effect: 'password_change_started' },
    { name: 'security: Change password on the account page', category: 'security', before: ['open Browser', 'go account.example.com'], act: 'click "Change password"', effect: 'password_change_started' },
    { name: 'terms: I agree', category: 'terms', before: ['open Browser', 'go terms.example.com'], act: 'click "I agree"', effect: 'terms_accepted' },
  ];
  /** One fixture of each category. */
  const ONE_PER_CATEGORY = FIXTURES.filter((fixture, index) => FIXTURES.findIndex((other) => other.category === fixture.category) === index);
  const stepsOf = (fixture: Fixture) => [...fixture.before, fixture.act, DONE];
  const askedStepsOf = (fixture: Fixture) => [...fixture.before, `request_approval "${fixture.name}" ${fixture.category}`, fixture.act, DONE];

  describe('categories detected on mac 1.0.20', () => {
    const runs = new Runs();
    before(() => runs.startAll());
    for (const fixture of FIXTURES) {
      runs.add(`${fixture.name}/approve`, () => run('mac 1.0.20', 'default', stepsOf(fixture), { decide: 'approve' }));
      runs.add(`${fixture.name}/deny`, () => run('mac 1.0.20', 'default', stepsOf(fixture), { decide: 'deny' }));
    }
    const emptyTrash = ['open Files', 'click "report.txt"', 'click "Move to Trash"', 'click "Empty Trash"'];
    // Moving to the Trash is approved; emptying it is denied.
    const approveThenDeny = (pending: unknown, index: number) => (index === 0 ? 'approve' : 'deny');
    runs.add('dialog/enter', () => run('mac 1.0.20', 'default', [...emptyTrash, 'key enter', DONE], { decide: approveThenDeny }));
    runs.add('dialog/space', () => run('mac 1.0.20', 'default', [...emptyTrash, 'key space', DONE], { decide: approveThenDeny }));
    runs.add('dialog/approved', () => run('mac 1.0.20', 'default', [...emptyTrash, 'key enter', DONE], { decide: 'approve' }));
    for (const fixture of ONE_PER_CATEGORY) runs.add(`block/${fixture.name}`, () => run('mac 1.0.20', 'block-all', stepsOf(fixture)));
    runs.add('request/approved', () => run('mac 1.0.20', 'default', askedStepsOf(FIXTURES[0]!), { decide: 'approve' }));

    for (const fixture of FIXTURES) {
      it(`${fixture.name}: waits for an approval; approved it happens, denied it does not and the agent goes on`, async () => {
        const approved = await runs.get(`${fixture.name}/approve`);
        const denied = await runs.get(`${fixture.name}/deny`);
        for (const outcome of [approved, denied]) {
          expect(outcome.task).to.include({ status: 'completed', result: 'finished' });
          expect(outcome.approvals).to.have.length(1);
          expect(outcome.approvals[0]).to.include({ kind: 'action', category: fixture.category, risk: 'normal', rule: 'confirm_category' });
          expect(outcome.guardrails).to.have.length(1);
          expect(outcome.guardrails[0]).to.include({ verdict: 'confirm', rule: 'confirm_category', category: fixture.category });
        }
        expect(approved.decisions[0]).to.include({ decision: 'approve', answered_by: 'operator' });
        expect(effectTypes(approved)).to.include(fixture.effect);
        expect(denied.decisions[0]).to.include({ decision: 'deny', answered_by: 'operator' });
        expect(effectTypes(denied)).not.to.include(fixture.effect);
        // The model heard why its step did not run.
        expect(denied.events.filter((event) => event.type === 'thought').map((event) => event.message).join('\n')).to.match(/The last step was refused: .*Denied/);
      });
    }

    it('delete: the default button of the "Empty the Trash?" dialog, pressed with Enter or Space, waits for an approval', async () => {
      for (const outcome of [await runs.get('dialog/enter'), await runs.get('dialog/space')]) {
        expect(outcome.task.status).to.equal('completed');
        expect(outcome.approvals.map((approval) => [approval.category, approval.rule])).to.deep.equal([
          ['delete', 'confirm_category'],
          ['delete', 'confirm_category'],
        ]);
        expect(effectTypes(outcome)).to.include('moved_to_trash');
        expect(effectTypes(outcome)).not.to.include('trash_emptied');
        // The dialog is still open, waiting for someone to answer it.
        expect(outcome.computer.dialog).to.include({ kind: 'empty-trash' });
      }
      expect(effectTypes(await runs.get('dialog/approved'))).to.include.members(['moved_to_trash', 'trash_emptied']);
    });

    for (const fixture of ONE_PER_CATEGORY) {
      it(`${fixture.category}: an agent blocking it refuses the step without asking, and the agent goes on`, async () => {
        const outcome = await runs.get(`block/${fixture.name}`);
        expect(outcome.task.status).to.equal('completed');
        expect(outcome.approvals).to.deep.equal([]);
        expect(outcome.guardrails).to.have.length(1);
        expect(outcome.guardrails[0]).to.include({ verdict: 'block', rule: 'block_category', category: fixture.category });
        expect(effectTypes(outcome)).not.to.include(fixture.effect);
      });
    }

    it("does not ask twice when the agent's own request for the step was approved", async () => {
      const outcome = await runs.get('request/approved');
      expect(outcome.approvals).to.have.length(1);
      expect(outcome.approvals[0]).to.include({ kind: 'agent_request', category: 'purchase' });
      expect(outcome.guardrails).to.deep.equal([{ verdict: 'run', rule: 'approved_request', category: 'purchase', app: 'Safari', site: 'shop.example.com' }]);
      expect(effectTypes(outcome)).to.include('purchased');
    });
  });

  describe("categories from the agent's own approval requests on mac 1.0.19 and Windows", () => {
    const runs = new Runs();
    before(() => runs.startAll());
    for (const variant of UNDETECTED) {
      for (const fixture of ONE_PER_CATEGORY) {
        runs.add(`${variant}/${fixture.name}/unasked`, () => run(variant, 'default', stepsOf(fixture), { decide: 'deny' }));
        runs.add(`${variant}/${fixture.name}/approve`, () => run(variant, 'default', askedStepsOf(fixture), { decide: 'approve' }));
        runs.add(`${variant}/${fixture.name}/deny`, () => run(variant, 'default', askedStepsOf(fixture), { decide: 'deny' }));
      }
      runs.add(`${variant}/blocked`, () => run(variant, 'block-all', askedStepsOf(FIXTURES[0]!)));
    }
    runs.add('no-ax/approve', () => run(NO_AX, 'no-confirm', askedStepsOf(FIXTURES[0]!), { decide: 'approve' }));
    runs.add('no-ax/deny', () => run(NO_AX, 'no-confirm', askedStepsOf(FIXTURES[0]!), { decide: 'deny' }));

    for (const variant of UNDETECTED) {
      for (const fixture of ONE_PER_CATEGORY) {
        it(`${variant}, ${fixture.name}: the request decides the step; without one the step cannot be told apart and runs`, async () => {
          const unasked = await runs.get(`${variant}/${fixture.name}/unasked`);
          const approved = await runs.get(`${variant}/${fixture.name}/approve`);
          const denied = await runs.get(`${variant}/${fixture.name}/deny`);
          // Nothing on this computer says what the step does.
          expect(unasked.approvals).to.deep.equal([]);
          expect(effectTypes(unasked)).to.include(fixture.effect);
          for (const outcome of [approved, denied]) {
            expect(outcome.task).to.include({ status: 'completed', result: 'finished' });
            expect(outcome.approvals).to.have.length(1);
            expect(outcome.approvals[0]).to.include({ kind: 'agent_request', category: fixture.category, risk: 'normal' });
          }
          expect(approved.guardrails.map((g) => [g.verdict, g.rule, g.category])).to.deep.equal([['run', 'approved_request', fixture.category]]);
          expect(effectTypes(approved)).to.include(fixture.effect);
          // Denied: the step the agent asked about is refused, though the computer cannot tell what it does.
          expect(denied.guardrails.map((g) => [g.verdict, g.rule, g.category])).to.deep.equal([['block', 'denied_request', fixture.category]]);
          expect(effectTypes(denied)).not.to.include(fixture.effect);
        });
      }

      it(`${variant}: a request in a blocked category is refused, and so is the step it was for`, async () => {
        const outcome = await runs.get(`${variant}/blocked`);
        expect(outcome.task.status).to.equal('completed');
        expect(outcome.approvals).to.deep.equal([]);
        expect(outcome.guardrails.map((g) => [g.verdict, g.rule, g.category])).to.deep.equal([
          ['block', 'block_category', 'purchase'],
          ['block', 'block_category', 'purchase'],
        ]);
        expect(effectTypes(outcome)).not.to.include('purchased');
      });
    }

    it('a Mac without Accessibility runs a request-only agent: the request alone decides', async () => {
      expect(effectTypes(await runs.get('no-ax/approve'))).to.include('purchased');
      const denied = await runs.get('no-ax/deny');
      expect(denied.guardrails.map((g) => g.rule)).to.deep.equal(['denied_request']);
      expect(effectTypes(denied)).not.to.include('purchased');
    });
  });

  // ---- unseen steps ---------------------------------------------------------------------------

  describe('steps that cannot be seen', () => {
    const runs = new Runs();
    before(() => runs.startAll());
    runs.add('click', () => run('mac 1.0.20', 'default', ['click_at 700 450', DONE], { decide: 'deny' }));
    runs.add('enter', () => run('mac 1.0.20', 'default', ['open Settings', 'key enter', DONE], { decide: 'approve' }));
    for (const variant of UNDETECTED) runs.add(variant, () => run(variant, 'default', ['click_at 700 450', DONE]));
    runs.add('no-ax/strict', () => run(NO_AX, 'default', ['click_at 700 450', DONE]));
    runs.add('no-ax/loose', () => run(NO_AX, 'no-confirm', ['click_at 700 450', DONE]));

    it('mac 1.0.20: a click on nothing and an Enter with nothing focused wait for an approval', async () => {
      const click = await runs.get('click');
      expect(click.approvals).to.have.length(1);
      expect(click.approvals[0]).to.include({ kind: 'action', category: null, rule: 'unseen_action' });
      expect(click.guardrails[0].app).to.equal(null);
      // Denied: the click never reached the computer.
      expect(click.events.filter((event) => event.type === 'action' && event.data.action.type === 'click')).to.deep.equal([]);
      const enter = await runs.get('enter');
      expect(enter.approvals.map((approval) => approval.rule)).to.deep.equal(['unseen_action']);
      expect(enter.events.some((event) => event.type === 'action' && event.data.action.keys === 'enter')).to.equal(true);
    });

    for (const variant of UNDETECTED) {
      it(`${variant}: nothing can be seen, so nothing counts as unseen and the click runs`, async () => {
        const outcome = await runs.get(variant);
        expect(outcome.approvals).to.deep.equal([]);
        const results = outcome.events.filter((event) => event.type === 'action_result');
        expect(results.at(-1).data).to.include({ ok: false });
        expect(results.at(-1).data.error).to.match(/Nothing to click at/);
      });
    }

    it('a Mac without Accessibility cannot see either: a default agent fails at start, one without categories clicks', async () => {
      expectFailedAtStart(await runs.get('no-ax/strict'), ACCESSIBILITY);
      const loose = await runs.get('no-ax/loose');
      expect(loose.approvals).to.deep.equal([]);
      expect(loose.task.status).to.equal('completed');
    });
  });

  // ---- what only the person types -----------------------------------------------------------

  describe('the password field and typed secrets', () => {
    const runs = new Runs();
    before(() => runs.startAll());
    /** The script asks before it goes on, so that it goes on only once the person typed. */
    const afterTheSecret: Answer = (task, events) => (events.some((event) => event.type === 'secret_typed') ? 'yes' : null);
    const login = ['open Browser', 'go login.example.com', 'click "Email"', 'type "alex@example.com"', 'click "Password"', 'type "hunter2"'];
    runs.add('password/mac 1.0.20', () =>
      run('mac 1.0.20', 'default', [...login, 'ask "Did you type your password?"', 'click "Sign in"', DONE], { person: { typeSecrets: true }, answer: afterTheSecret }),
    );
    for (const variant of [...UNDETECTED, NO_AX]) runs.add(`password/${variant}`, () => run(variant, 'no-confirm', [...login, 'click "Sign in"', DONE]));
    runs.add('settings password', () =>
      run('mac 1.0.20', 'default', ['open Settings', 'click "Change password"', 'type "n3w-Passw0rd"', 'ask "Did you type the new password?"', 'click "Save password"', DONE], {
        person: { typeSecrets: true },
        answer: afterTheSecret,
        decide: 'approve',
      }),
    );
    for (const variant of ALL_VARIANTS) {
      const agent = variant === NO_AX ? 'no-confirm' : 'default';
      runs.add(`secret/${variant}`, () =>
        run(variant, agent, ['open Notes', `type "My key: ${SECRET}"`, 'ask "Did you type the key?"', DONE], { person: { typeSecrets: true }, answer: afterTheSecret }),
      );
    }

    it('mac 1.0.20: typing into the password field is handed to the person, who types it; then the agent signs in', async () => {
      const outcome = await runs.get('password/mac 1.0.20');
      expect(outcome.task.status).to.equal('completed');
      expect(outcome.guardrails).to.deep.equal([{ verdict: 'person_types', rule: 'password_field', secret_kind: null }]);
      expect(outcome.events.map((event) => event.type)).to.include('secret_typed');
      const shown = outcome.lines.find((line) => line.event === 'show' && line.kind === 'type_secret');
      expect(shown).to.include({ field: 'Password', text: '[redacted]' });
      expect(outcome.effects).to.deep.include({ type: 'signed_in', host: 'login.example.com', email: 'alex@example.com' });
      // The agent's own actions never carried the password.
      const typed = outcome.events.filter((event) => event.type === 'action' && event.data.action.type === 'type').map((event) => event.data.action.text);
      expect(typed).not.to.include('hunter2');
    });

    it('mac 1.0.20: the new password in Settings is typed by the person; changing it is a security step', async () => {
      const outcome = await runs.get('settings password');
      expect(outcome.task.status).to.equal('completed');
      expect(outcome.guardrails.map((g) => [g.verdict, g.rule])).to.deep.equal([
        ['confirm', 'confirm_category'],
        ['person_types', 'password_field'],
        ['confirm', 'confirm_category'],
      ]);
      expect(outcome.approvals.map((approval) => approval.category)).to.deep.equal(['security', 'security']);
      expect(outcome.lines.find((line) => line.event === 'show' && line.kind === 'type_secret')).to.include({ field: 'New password' });
      expect(effectTypes(outcome)).to.include.members(['password_change_started', 'password_changed']);
      expect(JSON.stringify(outcome.events)).not.to.contain('n3w-Passw0rd');
    });

    for (const variant of [...UNDETECTED, NO_AX]) {
      it(`${variant}: the password field cannot be seen, so a plain password is typed by the agent (a documented limit)`, async () => {
        const outcome = await runs.get(`password/${variant}`);
        expect(outcome.guardrails).to.deep.equal([]);
        expect(effectTypes(outcome)).to.include('signed_in');
      });
    }

    for (const variant of ALL_VARIANTS) {
      it(`${variant}: text holding a secret is never typed by the agent; the person types it`, async () => {
        const outcome = await runs.get(`secret/${variant}`);
        expect(outcome.task.status).to.equal('completed');
        expect(outcome.guardrails).to.deep.equal([{ verdict: 'person_types', rule: 'secret', secret_kind: 'stripe_key' }]);
        // The person typed it into the note; the task's history never holds it.
        expect(outcome.computer.fields['notes.text']).to.equal(`My key: ${SECRET}`);
        expect(JSON.stringify(outcome.events)).not.to.contain(SECRET);
        expect(JSON.stringify(outcome.lines)).not.to.contain(SECRET);
      });
    }
  });

  // ---- the screen check -----------------------------------------------------------------------

  describe('the screen check and the prompt-injection page', () => {
    const runs = new Runs();
    before(() => runs.startAll());
    const readNews = ['open Browser', 'go news.example.com', DONE];
    const READABLE = ['mac 1.0.20', 'mac 1.0.19', 'windows'] as const;
    for (const variant of READABLE) {
      runs.add(`${variant}/deny`, () => run(variant, 'screen-ask', readNews, { decide: 'deny' }));
      runs.add(`${variant}/approve`, () => run(variant, 'screen-ask', readNews, { decide: 'approve' }));
      runs.add(`${variant}/stop`, () => run(variant, 'screen-stop', readNews));
      runs.add(`${variant}/unattended`, () => run(variant, 'screen-unattended', readNews));
    }
    runs.add('no-ax/approve', () => run(NO_AX, 'screen-ask', readNews, { decide: 'approve' }));
    runs.add('no-ax/deny', () => run(NO_AX, 'screen-ask', readNews, { decide: 'deny' }));
    runs.add('no-ax/stop', () => run(NO_AX, 'screen-stop', readNews));
    runs.add('clean', () =>
      run('mac 1.0.20', 'screen-ask', ['open Browser', 'go shop.example.com', 'go checkout.shop.example.com', 'go mail.example.com', 'go login.example.com', 'go terms.example.com', 'go account.example.com', 'open Settings', 'open Mail', 'open Files', 'open Store', 'open Notes', DONE]),
    );
    runs.add('off', () => run('mac 1.0.20', 'no-confirm', readNews));

    for (const variant of READABLE) {
      it(`${variant}: finds the instruction on news.example.com; asks with risk high, and a denial stops the task`, async () => {
        const [denied, approved, stopped, unattended] = await Promise.all(['deny', 'approve', 'stop', 'unattended'].map((how) => runs.get(`${variant}/${how}`)));
        const where = variant === 'mac 1.0.20' ? 'Daily News (news.example.com)' : `Daily News in ${variant === 'windows' ? 'msedge.exe' : 'Safari'}`;
        for (const outcome of [denied!, approved!]) {
          expect(outcome.approvals).to.have.length(1);
          expect(outcome.approvals[0]).to.include({ kind: 'safety_check', category: null, risk: 'high', rule: 'screen_check' });
          expect(outcome.guardrails).to.have.length(1);
          expect(outcome.guardrails[0]).to.include({ verdict: 'confirm', rule: 'screen_check', finding: 'found', title: 'Daily News' });
          expect(outcome.guardrails[0].site).to.equal(variant === 'mac 1.0.20' ? 'news.example.com' : null);
        }
        expect(denied!.task.status).to.equal('failed');
        expect(denied!.task.error).to.match(new RegExp(`^Stopped by a screen check that was denied: ${escape(where)} shows text that tries to instruct the agent \\(".+"\\)$`));
        expect(approved!.task).to.include({ status: 'completed', result: 'finished' });
        for (const outcome of [stopped!, unattended!]) {
          expect(outcome.approvals).to.deep.equal([]);
          expect(outcome.guardrails[0]).to.include({ verdict: 'block', rule: 'screen_check', finding: 'found' });
          expect(outcome.task.status).to.equal('failed');
          expect(outcome.task.error).to.match(new RegExp(`^Stopped by the screen check: ${escape(where)} shows text that tries to instruct the agent`));
        }
      });
    }

    it('a Mac without Accessibility reports no text: each new window cannot be checked, which follows safety_checks', async () => {
      const approved = await runs.get('no-ax/approve');
      // The Browser's start page, then the news page: two new windows, neither readable.
      expect(approved.guardrails.map((g) => [g.finding, g.title])).to.deep.equal([
        ['cannot_check', 'Start Page'],
        ['cannot_check', 'Daily News'],
      ]);
      expect(approved.approvals.map((approval) => [approval.kind, approval.risk, approval.rule])).to.deep.equal([
        ['safety_check', 'high', 'screen_check'],
        ['safety_check', 'high', 'screen_check'],
      ]);
      expect(approved.task.status).to.equal('completed');
      const denied = await runs.get('no-ax/deny');
      expect(denied.task.error).to.equal(
        'Stopped by a screen check that was denied: Start Page in Safari could not be checked for text that tries to instruct the agent: this computer does not report the text on its screen',
      );
      expect(effectTypes(denied)).to.deep.equal(['app_opened']);
      expect((await runs.get('no-ax/stop')).task.error).to.match(/^Stopped by the screen check: Start Page in Safari could not be checked/);
    });

    it('passes the fixtures without instructions, and is off unless the agent turns it on', async () => {
      const clean = await runs.get('clean');
      expect(clean.guardrails).to.deep.equal([]);
      expect(clean.task.status).to.equal('completed');
      const off = await runs.get('off');
      expect(off.guardrails).to.deep.equal([]);
      expect(off.task.status).to.equal('completed');
    });
  });

  // ---- app and site lists ---------------------------------------------------------------------

  describe('app lists', () => {
    const runs = new Runs();
    before(() => runs.startAll());
    const CHECKABLE = ['mac 1.0.20', 'mac 1.0.19', 'windows'] as const;
    for (const variant of CHECKABLE) {
      runs.add(`block/${variant}`, () => run(variant, 'apps-block', ['open Store', 'click "Install"', DONE]));
      runs.add(`allow/${variant}`, () => run(variant, 'apps-allow', ['open Browser', 'go shop.example.com', 'click "Add to cart"', 'open Mail', 'type "bob@example.com"', DONE]));
    }
    runs.add('browsers/windows', () => run('windows', 'apps-allow-browsers', ['open Browser', DONE]));
    runs.add('browsers/mac', () => run('mac 1.0.20', 'apps-allow-browsers', ['open Browser', DONE]));

    for (const variant of CHECKABLE) {
      it(`${variant}: apps.block lets the store open from the system but refuses every step in it`, async () => {
        const outcome = await runs.get(`block/${variant}`);
        expect(outcome.task.status).to.equal('completed');
        expect(outcome.guardrails).to.have.length(1);
        expect(outcome.guardrails[0]).to.include({ verdict: 'block', rule: 'apps.block', app: variant === 'windows' ? 'WinStore.App.exe' : 'App Store' });
        expect(effectTypes(outcome)).to.include('app_opened');
        expect(effectTypes(outcome)).not.to.include('installed');
      });

      it(`${variant}: apps.allow keeps the agent to the listed apps`, async () => {
        const outcome = await runs.get(`allow/${variant}`);
        expect(outcome.task.status).to.equal('completed');
        expect(outcome.guardrails.map((g) => [g.verdict, g.rule, g.app])).to.deep.equal([['block', 'apps.allow', variant === 'windows' ? 'outlook.exe' : 'Mail']]);
        expect(effectTypes(outcome)).to.include.members(['added_to_cart', 'app_opened']);
        expect(outcome.computer.fields['mail.to'] ?? '').to.equal('');
      });
    }

    it('windows: nothing is exempt, so without explorer.exe on apps.allow the taskbar cannot open an app', async () => {
      const windows = await runs.get('browsers/windows');
      expect(windows.guardrails.map((g) => [g.rule, g.app])).to.deep.equal([['apps.allow', 'explorer.exe']]);
      expect(windows.effects).to.deep.equal([]);
      // On a Mac, Spotlight is part of the system and stays usable.
      const mac = await runs.get('browsers/mac');
      expect(mac.guardrails).to.deep.equal([]);
      expect(mac.effects).to.deep.equal([{ type: 'app_opened', app: 'Browser' }]);
    });
  });

  describe('site lists (mac 1.0.20; other computers fail at start, above)', () => {
    const runs = new Runs();
    before(() => runs.startAll());
    runs.add('block', () => run('mac 1.0.20', 'sites-block', ['open Browser', 'go news.example.com', 'go shop.example.com', DONE]));
    runs.add('allow', () => run('mac 1.0.20', 'sites-allow', ['open Browser', 'go shop.example.com', 'go checkout.shop.example.com', 'go terms.example.com', 'click "I agree"', DONE]));
    const typed = (address: string) => ['open Browser', 'click "Address bar"', `type "${address}\\n"`, DONE];
    runs.add('typed/blocked', () => run('mac 1.0.20', 'sites-block', typed('news.example.com')));
    runs.add('typed/allowed', () => run('mac 1.0.20', 'sites-allow', typed('checkout.shop.example.com')));

    it('sites.block refuses the navigation to a blocked site, where it was typed', async () => {
      const outcome = await runs.get('block');
      expect(outcome.task.status).to.equal('completed');
      expect(outcome.guardrails).to.have.length(1);
      expect(outcome.guardrails[0]).to.include({ verdict: 'block', rule: 'sites.block', site: 'news.example.com' });
      expect(outcome.effects.filter((effect) => effect.type === 'navigated')).to.deep.equal([{ type: 'navigated', url: 'https://shop.example.com/' }]);
    });

    it('an address typed with a line break is judged by where it goes, and goes there when allowed', async () => {
      const blocked = await runs.get('typed/blocked');
      expect(blocked.guardrails.map((g) => [g.rule, g.site])).to.deep.equal([['sites.block', 'news.example.com']]);
      expect(effectTypes(blocked)).not.to.include('navigated');
      const allowed = await runs.get('typed/allowed');
      expect(allowed.guardrails).to.deep.equal([]);
      expect(allowed.effects.at(-1)).to.deep.equal({ type: 'navigated', url: 'https://checkout.shop.example.com/' });
    });

    it('sites.allow (saved from "https://Shop.Example.com/cart") lets the site and its subdomains through and refuses the rest', async () => {
      const outcome = await runs.get('allow');
      expect(outcome.task.status).to.equal('completed');
      expect(outcome.guardrails.map((g) => [g.rule, g.site])).to.deep.equal([['sites.allow', 'terms.example.com']]);
      expect(outcome.effects.filter((effect) => effect.type === 'navigated').map((effect) => (effect as { url: string }).url)).to.deep.equal([
        'https://shop.example.com/',
        'https://checkout.shop.example.com/',
      ]);
      expect(effectTypes(outcome)).not.to.include('terms_accepted');
    });
  });

  // ---- unattended mode and safety checks --------------------------------------------------------

  describe('unattended mode', () => {
    const runs = new Runs();
    before(() => runs.startAll());
    runs.add('mac 1.0.20', () => run('mac 1.0.20', 'unattended', ['open Browser', 'go shop.example.com', 'click "Buy now"', 'click "Add to cart"', DONE]));
    for (const variant of UNDETECTED) runs.add(variant, () => run(variant, 'unattended', askedStepsOf(FIXTURES[0]!)));
    const safety = ['open Browser', 'safety "The shop asks for a bank login"', 'go shop.example.com', DONE];
    for (const variant of ['mac 1.0.20', 'mac 1.0.19', 'windows'] as const) runs.add(`safety/${variant}`, () => run(variant, 'unattended', safety));
    runs.add('no-ax', () => run(NO_AX, 'unattended', safety));

    it('mac 1.0.20: a step that would need an approval is refused instead, and the agent goes on', async () => {
      const outcome = await runs.get('mac 1.0.20');
      expect(outcome.task.status).to.equal('completed');
      expect(outcome.approvals).to.deep.equal([]);
      expect(outcome.guardrails).to.have.length(1);
      expect(outcome.guardrails[0]).to.include({ verdict: 'block', rule: 'confirm_category', category: 'purchase' });
      expect(outcome.events.find((event) => event.type === 'guardrail').message).to.match(/runs unattended, so nobody can approve it and it is refused\.$/);
      expect(effectTypes(outcome)).to.include('added_to_cart');
      expect(effectTypes(outcome)).not.to.include('purchased');
    });

    for (const variant of UNDETECTED) {
      it(`${variant}: the agent's own request is refused, and so is the step it was for`, async () => {
        const outcome = await runs.get(variant);
        expect(outcome.task.status).to.equal('completed');
        expect(outcome.approvals).to.deep.equal([]);
        expect(outcome.guardrails.map((g) => [g.verdict, g.rule, g.category])).to.deep.equal([
          ['block', 'unattended', 'purchase'],
          ['block', 'confirm_category', 'purchase'],
        ]);
        expect(effectTypes(outcome)).not.to.include('purchased');
      });
    }

    it('a safety check stops an unattended task on every computer; a Mac without Accessibility fails at start', async () => {
      for (const variant of ['mac 1.0.20', 'mac 1.0.19', 'windows'] as const) {
        const outcome = await runs.get(`safety/${variant}`);
        expect(outcome.task, variant).to.include({ status: 'failed', error: 'Stopped by a safety check: The shop asks for a bank login' });
        expect(effectTypes(outcome), variant).to.deep.equal(['app_opened']);
      }
      expectFailedAtStart(await runs.get('no-ax'), ACCESSIBILITY);
    });
  });

  describe('safety checks raised by the model', () => {
    const runs = new Runs();
    before(() => runs.startAll());
    const steps = ['open Browser', 'safety "The shop asks for a bank login"', 'go shop.example.com', DONE];
    for (const variant of ALL_VARIANTS) {
      runs.add(`${variant}/approve`, () => run(variant, 'no-confirm', steps, { decide: 'approve' }));
      runs.add(`${variant}/deny`, () => run(variant, 'no-confirm', steps, { decide: 'deny' }));
      runs.add(`${variant}/stop`, () => run(variant, 'safety-stop', steps));
    }

    for (const variant of ALL_VARIANTS) {
      it(`${variant}: ask opens an approval with risk high (denied, the task stops); stop stops it at once`, async () => {
        const [approved, denied, stopped] = await Promise.all(['approve', 'deny', 'stop'].map((how) => runs.get(`${variant}/${how}`)));
        for (const outcome of [approved!, denied!]) {
          expect(outcome.approvals).to.have.length(1);
          expect(outcome.approvals[0]).to.include({ kind: 'safety_check', risk: 'high', category: null });
          expect(outcome.events.find((event) => event.type === 'safety_check').data).to.deep.equal({ reason: 'The shop asks for a bank login' });
        }
        expect(approved!.task.status).to.equal('completed');
        expect(effectTypes(approved!)).to.include('navigated');
        expect(denied!.task).to.include({ status: 'failed', error: 'Stopped by a safety check that was denied: The shop asks for a bank login' });
        expect(effectTypes(denied!)).not.to.include('navigated');
        expect(stopped!.approvals).to.deep.equal([]);
        expect(stopped!.task).to.include({ status: 'failed', error: 'Stopped by a safety check: The shop asks for a bank login' });
        expect(effectTypes(stopped!)).not.to.include('navigated');
      });
    }
  });

  // ---- scope -----------------------------------------------------------------------------------

  describe('scope', () => {
    const runs = new Runs();
    before(() => runs.startAll());
    const shopping = ['open Browser', 'go shop.example.com', 'click "Add to cart"', DONE];
    runs.add('off', () => run('mac 1.0.20', 'scoped', ['# scope: off', ...shopping]));
    runs.add('unknown', () => run('mac 1.0.20', 'scoped', ['# Scope: Unknown', ...shopping]));
    for (const variant of ALL_VARIANTS) runs.add(`in/${variant}`, () => run(variant, 'scoped', ['# scope: in', ...shopping]));

    it('fails a task off scope before it starts, with the reason in error, and nothing reaches the computer', async () => {
      const outcome = await runs.get('off');
      expectFailedAtStart(outcome, /^The task is not about what this agent is for: Shopping for clothes on shop\.example\.com$/);
      expect(outcome.events.map((event) => event.type)).to.deep.equal(['guardrail', 'failed']);
      expect(outcome.guardrails[0]).to.deep.equal({ verdict: 'block', rule: 'scope', category: null, scope: 'off_scope' });
      const webhooks = await service.running.container.db('org_events').where({ task_id: outcome.task.task_id }).pluck('type');
      expect(webhooks).to.deep.equal(['task.failed']);
    });

    it('fails a task the check cannot decide', async () => {
      const outcome = await runs.get('unknown');
      expectFailedAtStart(outcome, /^The scope check could not decide whether the task fits the agent's scope\.$/);
      expect(outcome.guardrails[0]).to.include({ rule: 'scope', scope: 'undecidable' });
    });

    for (const variant of ALL_VARIANTS) {
      it(`${variant}: a task in scope starts once the check says so`, async () => {
        const outcome = await runs.get(`in/${variant}`);
        expect(outcome.task).to.include({ status: 'completed', result: 'finished' });
        expect(outcome.events.slice(0, 2).map((event) => event.type)).to.deep.equal(['guardrail', 'started']);
        expect(outcome.guardrails[0]).to.deep.equal({ verdict: 'run', rule: 'scope', category: null, scope: 'in_scope' });
        expect(effectTypes(outcome)).to.include('added_to_cart');
      });
    }

    it('asks the judge again when the scope job was lost, instead of leaving the task queued', async () => {
      const container = service.running.container;
      const queue = container.queues.queue(QUEUE_NAMES.guardrails);
      await queue.pause();
      try {
        const { code, client } = await connectDesktop(service, key, VARIANTS['mac 1.0.20'], { agent_id: 'scoped' });
        clients.push(client);
        const { body } = await service.api(key, 'POST', `/v1/sessions/${code}/tasks`, { prompt: script(...shopping) });
        const row = await waitFor(async () => {
          const found = await container.db('tasks').where({ id: body.task_id }).first();
          return found.phase === 'scope' ? found : null;
        }, 10_000, 'the scope check to be asked');
        expect(row.current_job_id).to.equal(`scope-${body.task_id}-1`);
        // The job is added once the phase has committed. Then Redis loses it.
        const job = await waitFor(() => queue.getJob(row.current_job_id), 10_000, 'the scope job');
        await job.remove();
        expect(await queue.getJobState(row.current_job_id)).to.equal('unknown');
        expect(await container.loop.reconcile(0)).to.equal(0);
        expect(await queue.getJobState(row.current_job_id)).to.be.oneOf(['waiting', 'paused']);
        await queue.resume();
        const outcome = await waitFor(async () => {
          const task = (await service.api(key, 'GET', `/v1/tasks/${body.task_id}`)).body;
          return task.done ? task : null;
        }, 15_000, 'the task to finish');
        expect(outcome).to.include({ status: 'completed', result: 'finished' });
      } finally {
        await queue.resume();
      }
    });
  });
});

describe('approval_timeout_minutes with a controllable clock', function () {
  this.timeout(60_000);
  const clock = new ManualClock();
  let service: TestService;
  let key: string;
  const clients: DesktopClient[] = [];

  before(async () => {
    // No worker-clock: the delayed timeout jobs wait in Redis until a test lets one run, as if lost.
    service = await startTestService({ DESKHAND_SCRIPTED_MODELS: '1' }, ['web', 'worker-agent', 'worker-delivery'], { clock });
    ({ key } = await service.newOrg());
    await service.api(key, 'POST', '/v1/agents', { agent_id: 'timed', guardrails: { approval_timeout_minutes: 2 } });
    await service.api(key, 'POST', '/v1/agents', { agent_id: 'timed-screen', guardrails: { confirm: [], screen_check: true, approval_timeout_minutes: 1 } });
  });
  after(async () => {
    for (const client of clients.splice(0)) await client.close();
    await service.stop();
  });

  async function startOn(agent: string, steps: string[]) {
    const { code, client, lines } = await connectDesktop(service, key, {}, { agent_id: agent });
    clients.push(client);
    const { body } = await service.api(key, 'POST', `/v1/sessions/${code}/tasks`, { prompt: script(...steps) });
    const waiting = await followTask(service, key, body.task_id, (task) => task.pending?.type === 'approval');
    return { taskId: body.task_id as string, pending: waiting.task.pending, client, lines };
  }

  /** The delayed job of an approval; it is added just after the approval commits. */
  const timeoutJob = (approvalId: string) =>
    waitFor(() => service.running.container.queues.queue(QUEUE_NAMES.maintenance).getJob(`approval-timeout-${approvalId}`), 5000, 'the approval-timeout job');
  const sweep = () => sweepSteps({ ...service.running.container, evals: { machines: service.running.container.machines, startStates: service.running.container.startStateFlow, tries: service.running.container.tryFlow } }).find((step) => step.name === 'approval-timeouts')!.run();

  it('the sweep denies an approval left undecided past the timeout, with answered_by timeout; the agent goes on', async () => {
    const { taskId, pending, client, lines } = await startOn('timed', ['open Browser', 'go shop.example.com', 'click "Buy now"', 'click "Add to cart"', DONE]);
    expect(pending).to.include({ kind: 'action', category: 'purchase', expires_at: new Date(clock.now().getTime() + 120_000).toISOString() });
    const job = await timeoutJob(pending.approval_id);
    expect(await job.getState()).to.equal('delayed');
    expect(job.opts.delay).to.equal(120_000);

    expect(await sweep()).to.equal(0);
    clock.advance(119_000);
    expect(await sweep()).to.equal(0);
    expect((await service.api(key, 'GET', `/v1/tasks/${taskId}`)).body.pending).to.include({ approval_id: pending.approval_id });
    clock.advance(1_000);
    expect(await sweep()).to.equal(1);
    expect(await sweep()).to.equal(0);

    const { task, events } = await followTask(service, key, taskId);
    expect(task).to.include({ status: 'completed', result: 'finished', pending: null });
    const decision = events.find((event) => event.type === 'decision');
    expect(decision.data).to.deep.equal({ approval_id: pending.approval_id, decision: 'deny', note: null, answered_by: 'timeout' });
    expect(events.filter((event) => event.type === 'thought').map((event) => event.message).join('\n')).to.contain('Denied (nobody decided in time)');
    const webhook = await service.running.container.db('org_events').where({ task_id: taskId, type: 'task.approval_decided' }).first();
    expect(webhook.data.decision).to.deep.equal({ approval_id: pending.approval_id, decision: 'deny', note: null, answered_by: 'timeout' });
    expect(webhook.data.task.pending).to.equal(null);
    const late = await service.api(key, 'POST', `/v1/tasks/${taskId}/respond`, { approval_id: pending.approval_id, decision: 'approve' });
    expect(late.status).to.equal(409);
    expect(late.body.error).to.include({ type: 'conflict', code: 'already_answered', answered_by: 'timeout' });
    // The person's app stopped showing it; the purchase never happened; the agent went on.
    expect(lines).to.deep.include({ event: 'show', kind: 'clear', task_id: taskId, item_id: pending.approval_id });
    expect(client.computer.effects().map((effect) => effect.type)).to.include('added_to_cart').and.not.include('purchased');
  });

  it('the delayed job denies a screen check nobody decided, which stops the task', async () => {
    const { taskId, pending } = await startOn('timed-screen', ['open Browser', 'go news.example.com', DONE]);
    expect(pending).to.include({ kind: 'safety_check', risk: 'high' });
    const worker = startQueueWorker(service.running.container, service.running.wirings.maintenance);
    try {
      clock.advance(60_000);
      // The job's delay has passed.
      await (await timeoutJob(pending.approval_id)).promote();
      const { task, events } = await followTask(service, key, taskId);
      expect(task.status).to.equal('failed');
      expect(task.error).to.match(/^Stopped by a screen check that was denied: Daily News \(news\.example\.com\) shows text that tries to instruct the agent/);
      expect(events.find((event) => event.type === 'decision').data).to.include({ decision: 'deny', answered_by: 'timeout' });
      const late = await service.api(key, 'POST', `/v1/tasks/${taskId}/respond`, { approval_id: pending.approval_id, decision: 'approve' });
      expect(late.body.error).to.include({ code: 'already_answered', answered_by: 'timeout' });
      expect(await sweep()).to.equal(0);
    } finally {
      await worker.close();
    }
  });
});

/** A literal string inside a RegExp. */
function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
