import { expect } from 'chai';
import type { Decision, GuardrailRule } from '../../shared/guardrails/engine';
import { applyMode, asSentence } from '../../shared/guardrails/engine';
import { outcomeText } from '../../shared/models/agent-tools';
import { scriptedTurn } from '../../shared/models/scripted';
import { DEFAULT_MODEL } from '../../shared/models/catalog';
import type { ModelTurnInput, TurnOutcome } from '../../shared/models/model.types';
import { APP_WINDOW, browser, click, DOCK, finder, judge, key, LINUX, LINUX_CAPS, loginPage, macSystem, personWindow, rect, screen, shopPage, type } from './helpers/observation-builder';

/**
 * The engine's reasons are sentences with their own full stop; everywhere one is set into other
 * words (the text a model gets back, the scripted model's thought, unattended mode) must read
 * as one sentence, without "..": "…on this agent's blocked apps.. Pressing cmd+s." was shown.
 */
describe('guardrail reasons, as people and models read them', () => {
  const mail = () =>
    macSystem(screen().window('Mail', rect(100, 100, 800, 600)).element('Mail', 'button', 'Send', rect(150, 150, 80, 30), { category: 'send' })).focus('Mail');
  const shop = () => browser('mac', 'https://shop.example.com/', shopPage).build();

  /** One example of every rule the engine decides by, with the rule it must be decided by. */
  const examples: Array<[GuardrailRule, Decision]> = [
    ['own_window', judge(click(rect(1060, 260, 160, 40)), { observation: personWindow(screen()).build(), device: LINUX, capabilities: LINUX_CAPS })],
    ['allowed', judge(click(rect(100, 200, 160, 40)), { observation: shop() })],
    ['allowed', judge({ type: 'screenshot' })],
    ['secret', judge(type('AKIAIOSFODNN7EXAMPLE'), { observation: finder().build() })],
    ['password_field', judge(type('hunter2'), { observation: browser('mac', 'https://login.example.com/', loginPage).focus('Safari', 'Password').build() })],
    ['apps.block', judge(key('cmd+s'), { observation: mail().build(), guardrails: { apps: { block: ['Mail'] } } })],
    ['apps.block', judge(click(DOCK), { observation: mail().build(), guardrails: { apps: { block: ['Dock'] } } })],
    ['sites.block', judge(click(rect(100, 200, 160, 40)), { observation: shop(), guardrails: { sites: { block: ['example.com'] } } })],
    ['unplaceable_app', judge({ type: 'click', x: 1300, y: 500 }, { observation: finder().build(), guardrails: { apps: { allow: ['Finder'] } } })],
    ['unplaceable_app', judge(click(rect(10, 10, 1, 1)), { observation: null, guardrails: { apps: { block: ['Mail'] } } })],
    ['unreadable_site', judge(click(rect(100, 120, 400, 40)), { observation: browser('mac', null, shopPage).build(), guardrails: { sites: { block: ['evil.com'] } } })],
    ['apps.allow', judge(click(rect(300, 300, 1, 1)), { observation: mail().build(), guardrails: { apps: { allow: ['Finder'] } } })],
    ['sites.allow', judge(click(rect(100, 200, 160, 40)), { observation: shop(), guardrails: { sites: { allow: ['other.example.org'] } } })],
    ['block_category', judge(click(rect(300, 200, 160, 40)), { observation: shop(), guardrails: { block: ['purchase'], confirm: [] } })],
    ['confirm_category', judge(click(rect(300, 200, 160, 40)), { observation: shop() })],
    ['confirm_category', judge(click(rect(300, 200, 160, 40)), { observation: shop(), guardrails: { mode: 'unattended' } })],
    ['unseen_action', judge({ type: 'click', x: 1000, y: 700 }, { observation: shop() })],
    ['allowed', judge(click(rect(500, 500, 1, 1)), { observation: screen().window('TextEdit', APP_WINDOW).focus('TextEdit').build(), guardrails: { confirm: [], block: [] } })],
  ];

  const turn = (lastOutcome: TurnOutcome): ModelTurnInput => ({
    model: DEFAULT_MODEL,
    effort: 'low',
    system: 'Rules.',
    prompt: 'key cmd+s\ndone "Saved"',
    state: null,
    observation: null,
    screenshot: null,
    lastOutcome,
    tools: { http: [], files: { enabled: true, read_only: false } },
    display: { width: 1440, height: 900, os: 'mac' },
  });

  it('the examples cover every rule, each decided by the rule it names', () => {
    for (const [rule, decision] of examples) expect(decision.rule, decision.reason).to.equal(rule);
    const rules: GuardrailRule[] = ['own_window', 'secret', 'password_field', 'apps.block', 'sites.block', 'unplaceable_app', 'unreadable_site', 'apps.allow', 'sites.allow', 'block_category', 'confirm_category', 'unseen_action', 'allowed'];
    expect(new Set(examples.map(([rule]) => rule))).to.deep.equal(new Set(rules));
  });

  it('every reason is a sentence with one full stop at its end, and no ".." anywhere', () => {
    for (const [rule, decision] of examples) {
      expect(decision.reason, rule).to.match(/[^.]\.$/);
      expect(decision.reason, rule).not.to.contain('..');
    }
  });

  it('set into the text a model gets back and into the scripted model\'s thought, a refusal reads without ".."', () => {
    for (const [rule, decision] of examples) {
      const refused: TurnOutcome = { kind: 'refused', reason: decision.reason, results: [] };
      const text = outcomeText(refused).text;
      expect(text, rule).not.to.contain('..');
      expect(text, rule).to.contain(`Refused by the guardrails: ${decision.reason} Do not`);
      const thought = scriptedTurn(turn(refused)).thought ?? '';
      expect(thought, rule).not.to.contain('..');
      expect(thought, rule).to.equal(`The last step was refused: ${decision.reason} Pressing cmd+s.`);
      const denied = outcomeText({ kind: 'approval', decision: 'deny', reason: decision.reason }).text;
      expect(denied, rule).not.to.contain('..');
    }
  });

  it('unattended mode adds its sentence after one full stop, also to an agent\'s own words without one', () => {
    const own = applyMode({ verdict: 'confirm' as const, reason: 'Send the weekly report' }, { mode: 'unattended' });
    expect(own.reason).to.equal('Send the weekly report. The agent runs unattended, so nobody can approve it and it is refused.');
    const engine = applyMode({ verdict: 'confirm' as const, reason: 'Needs approval: this step would buy or pay for something (purchase).' }, { mode: 'unattended' });
    expect(engine.reason).not.to.contain('..');
  });

  it('asSentence ends a text with one stop, keeping its own', () => {
    expect(asSentence('Blocked: cmd+s lands in Mail, which is on this agent\'s blocked apps.')).to.equal('Blocked: cmd+s lands in Mail, which is on this agent\'s blocked apps.');
    expect(asSentence('the note')).to.equal('the note.');
    expect(asSentence('Really?')).to.equal('Really?');
    expect(asSentence('It said "stop." ')).to.equal('It said "stop."');
  });
});
