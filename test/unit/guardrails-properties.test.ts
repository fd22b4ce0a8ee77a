/**
 * Property tests of the guardrail engine: random rule sets, screens and steps, checked against
 * the spec's evaluation order computed independently here.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import { DESKHAND_APP, LAUNCHER_APP } from '../../shared/desktop/computer';
import {
  GUARDRAIL_CATEGORIES,
  type Capabilities,
  type DesktopAction,
  type DeviceInfo,
  type ElementInfo,
  type ElementRole,
  type Observation,
  type Point,
  type Rect,
  type WindowInfo,
} from '../../shared/desktop/protocol';
import { judgeAction, type AddressBarBuffer, type Decision, type JudgeInput } from '../../shared/guardrails/engine';
import { normalizeGuardrails, type Guardrails } from '../../shared/guardrails/guardrails.types';
import { LINUX, LINUX_CAPS, LINUX_NO_AX_CAPS, MAC, MAC_CAPS, OLD_MAC, OLD_MAC_CAPS, WINDOWS, WINDOWS_CAPS } from './helpers/observation-builder';

const RUNS = { numRuns: 400 };

// Mac, Windows and Linux apps (Linux by WM_CLASS), the system parts, and the Deskhand app's own window.
const APPS = ['Safari', 'Mail', 'Finder', 'TextEdit', 'msedge.exe', 'explorer.exe', 'outlook.exe', 'Dock', 'Spotlight', 'chromium', 'mousepad', 'xterm', LAUNCHER_APP, DESKHAND_APP];
const BROWSERS = new Set(['Safari', 'msedge.exe', 'chromium']);
const SYSTEM = new Set(['Dock', 'Spotlight', LAUNCHER_APP]);
const URLS = [
  'https://shop.example.com/',
  'https://checkout.shop.example.com/pay',
  'https://mail.example.com/inbox',
  'https://news.example.com/',
  'https://evil.com/',
  'https://www.evil.com/login',
  'https://example.org/',
  'about:blank',
  'file:///Users/me/report.html',
];
const SITE_RULES = ['example.com', 'shop.example.com', 'mail.example.com', 'evil.com', 'example.org', 'other.net'];
const ROLES: ElementRole[] = ['button', 'link', 'text_field', 'password_field', 'text_area', 'address_bar', 'item', 'icon', 'menu_item', 'static_text'];
const SECRETS = [
  'AKIAIOSFODNN7EXAMPLE',
  'ghp_0123456789abcdefghijABCDEFGHIJ012345',
  'sk_live_4eC39HqLyjWDarjtT1zdp7dc',
  'xoxb-2048-1234567890-abcdefghijklmnop',
  'sk-ant-api03-abcdefghijklmnopqrstuvwxyz012345',
  'dh_live_9f8e7d6c5b4a3210fedc',
  'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  '4242 4242 4242 4242',
  'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U',
  '-----BEGIN OPENSSH PRIVATE KEY-----',
];
const PLAIN_TEXTS = ['hello', 'Dear Sam,\nsee you soon', 'shop.example.com', 'evil.com\n', 'a b c', '', 'Size M', 'line one\tline two', 'https://evil.com/x\n'];
const KEYS = ['enter', 'return', 'space', 'cmd+enter', 'ctrl+enter', 'delete', 'backspace', 'tab', 'escape', 'cmd+a', 'cmd+v', 'down', 'a', 'shift+enter', 'cmd+l'];

const VERDICT_RANK: Record<Decision['verdict'], number> = { run: 0, confirm: 1, block: 2, person_types: 3 };

// ---------------------------------------------------------------------------------------------
// Arbitraries

const rectArb = (minSize: number): fc.Arbitrary<Rect> =>
  fc.record({
    x: fc.integer({ min: 0, max: 1300 }),
    y: fc.integer({ min: 0, max: 800 }),
    width: fc.integer({ min: minSize, max: 900 }),
    height: fc.integer({ min: minSize, max: 600 }),
  });

const pointArb: fc.Arbitrary<Point> = fc.record({ x: fc.integer({ min: 0, max: 1439 }), y: fc.integer({ min: 0, max: 899 }) });

const categoryArb = fc.option(fc.constantFrom(...GUARDRAIL_CATEGORIES), { nil: null });

const windowArb: fc.Arbitrary<WindowInfo> = fc
  .record({ app: fc.constantFrom(...APPS), bounds: rectArb(20), url: fc.option(fc.constantFrom(...URLS), { nil: null }) })
  .map(({ app, bounds, url }) => {
    const w: WindowInfo = { app, title: app, bounds, system: SYSTEM.has(app) };
    if (BROWSERS.has(app) && url !== null) w.url = url;
    return w;
  });

const elementArb: fc.Arbitrary<ElementInfo> = fc.record({
  app: fc.constantFrom(...APPS),
  role: fc.constantFrom(...ROLES),
  label: fc.constantFrom('Send', 'Message', 'Buy now', 'Trash', 'Password', 'Address', 'OK', 'Text'),
  category: categoryArb,
  is_default: fc.boolean(),
  bounds: rectArb(10),
});

const observationArb: fc.Arbitrary<Observation> = fc
  .record({
    windows: fc.array(windowArb, { minLength: 0, maxLength: 6 }),
    elements: fc.option(fc.array(elementArb, { maxLength: 12 }), { nil: null }),
    focusedApp: fc.option(fc.constantFrom(...APPS), { nil: null }),
    focusedIndex: fc.option(fc.nat(), { nil: null }),
    dialog: fc.option(fc.record({ title: fc.constant('Confirm'), app: fc.constantFrom(...APPS) }), { nil: null }),
  })
  .map(({ windows, elements, focusedApp, focusedIndex, dialog }) => ({
    width: 1440,
    height: 900,
    windows,
    focused_app: focusedApp,
    focused: elements && elements.length > 0 && focusedIndex !== null ? elements[focusedIndex % elements.length] : null,
    elements,
    dialog,
    text: null,
  }));

interface Machine {
  device: DeviceInfo;
  capabilities: Capabilities;
}
const machineArb: fc.Arbitrary<Machine> = fc.constantFrom(
  { device: MAC, capabilities: MAC_CAPS },
  { device: OLD_MAC, capabilities: OLD_MAC_CAPS },
  { device: WINDOWS, capabilities: WINDOWS_CAPS },
  { device: LINUX, capabilities: LINUX_CAPS },
  { device: LINUX, capabilities: LINUX_NO_AX_CAPS },
);

const guardrailsArb: fc.Arbitrary<Guardrails> = fc
  .record({
    mode: fc.constantFrom('supervised' as const, 'unattended' as const),
    confirm: fc.subarray([...GUARDRAIL_CATEGORIES]),
    block: fc.subarray([...GUARDRAIL_CATEGORIES]),
    apps: fc.record({ allow: fc.subarray(APPS, { maxLength: 3 }), block: fc.subarray(APPS, { maxLength: 2 }) }),
    sites: fc.record({ allow: fc.subarray(SITE_RULES, { maxLength: 3 }), block: fc.subarray(SITE_RULES, { maxLength: 2 }) }),
  })
  .map((g) => normalizeGuardrails(g));

const textArb = fc.oneof(
  fc.constantFrom(...PLAIN_TEXTS),
  fc.tuple(fc.constantFrom(...PLAIN_TEXTS), fc.constantFrom(...SECRETS)).map(([a, b]) => `${a} ${b}`),
);

const actionArb: fc.Arbitrary<DesktopAction> = fc.oneof(
  pointArb.map((p) => ({ type: 'click' as const, ...p })),
  fc.tuple(pointArb, pointArb).map(([from, to]) => ({ type: 'drag' as const, from, to })),
  fc.constantFrom(...KEYS).map((keys) => ({ type: 'key' as const, keys })),
  textArb.map((text) => ({ type: 'type' as const, text })),
  pointArb.map((p) => ({ type: 'scroll' as const, ...p, dx: 0, dy: 50 })),
);

const bufferArb: fc.Arbitrary<AddressBarBuffer | null> = fc.option(
  fc.record({ typed: fc.constantFrom('', 'evil.com', 'shop.example.com/cart', 'cheap flights'), unseen: fc.boolean() }).map((b) => (b.unseen ? b : { typed: b.typed })),
  { nil: null },
);

const inputArb: fc.Arbitrary<JudgeInput> = fc
  .record({
    guardrails: guardrailsArb,
    machine: machineArb,
    observation: fc.option(observationArb, { freq: 8, nil: null }),
    action: actionArb,
    addressBar: bufferArb,
    declaredCategory: categoryArb,
  })
  .map(({ guardrails, machine, observation, action, addressBar, declaredCategory }) => {
    // Windows and older apps report no elements.
    const obs = observation && !machine.capabilities.element_info ? { ...observation, elements: null, focused: null } : observation;
    return { guardrails, ...machine, observation: obs, action, addressBar, declaredCategory };
  });

// ---------------------------------------------------------------------------------------------
// Independent oracles

const contains = (r: Rect, p: Point): boolean => p.x >= r.x && p.y >= r.y && p.x < r.x + r.width && p.y < r.y + r.height;

/** The apps a step lands in, computed from the spec's wording. */
function appsOfAction(input: JudgeInput): Array<string | null> {
  const obs = input.observation;
  const at = (p: Point): string | null => obs?.windows.find((w) => contains(w.bounds, p))?.app ?? null;
  switch (input.action.type) {
    case 'click':
    case 'scroll':
      return [at(input.action)];
    case 'drag':
      return [at(input.action.from), at(input.action.to)];
    case 'key':
    case 'type':
      return [obs?.focused_app ?? null];
    default:
      return [];
  }
}

/** Whether (a part of) the step lands on the Deskhand app's own window. */
const landsOnOwnWindow = (input: JudgeInput): boolean => appsOfAction(input).some((app) => app?.toLowerCase() === DESKHAND_APP);

const hasSecret = (input: JudgeInput): boolean => input.action.type === 'type' && SECRETS.some((s) => (input.action as { text: string }).text.includes(s));

function strengthen(g: Guardrails, op: number, pick: number): Guardrails {
  const next = normalizeGuardrails(JSON.parse(JSON.stringify(g)) as Guardrails);
  const cat = GUARDRAIL_CATEGORIES[pick % GUARDRAIL_CATEGORIES.length];
  switch (op) {
    case 0:
      if (!next.block.includes(cat)) next.block.push(cat);
      break;
    case 1:
      if (!next.confirm.includes(cat)) next.confirm.push(cat);
      break;
    case 2:
      if (!next.apps.block.includes(APPS[pick % APPS.length])) next.apps.block.push(APPS[pick % APPS.length]);
      break;
    case 3:
      if (!next.sites.block.includes(SITE_RULES[pick % SITE_RULES.length])) next.sites.block.push(SITE_RULES[pick % SITE_RULES.length]);
      break;
    case 4:
      // An allow list going from empty to non-empty only narrows what is allowed.
      if (next.apps.allow.length === 0) next.apps.allow.push(APPS[pick % APPS.length]);
      break;
    case 5:
      if (next.sites.allow.length === 0) next.sites.allow.push(SITE_RULES[pick % SITE_RULES.length]);
      break;
    default:
      next.mode = 'unattended';
  }
  return next;
}

function deepFreeze<T>(v: T): T {
  if (v !== null && typeof v === 'object') {
    for (const x of Object.values(v)) deepFreeze(x);
    Object.freeze(v);
  }
  return v;
}

// ---------------------------------------------------------------------------------------------

describe('guardrails engine properties', () => {
  it('blocks every step landing on the Deskhand app\'s own window, before any other rule, whatever the rules, mode and system', () => {
    fc.assert(
      fc.property(inputArb, (input) => {
        const d = judgeAction(input);
        if (landsOnOwnWindow(input)) {
          expect(d).to.include({ verdict: 'block', rule: 'own_window' });
          expect(d.unattended).to.equal(undefined);
        } else {
          expect(d.rule).to.not.equal('own_window');
        }
      }),
      RUNS,
    );
  });

  it('hands every typed secret to the person, whatever the rules, and never repeats it', () => {
    fc.assert(
      fc.property(inputArb, fc.constantFrom(...SECRETS), fc.constantFrom(...PLAIN_TEXTS), fc.constantFrom(' ', '\n', '=', ': ', '"', '\t'), (input, secret, before, sep) => {
        const typing: JudgeInput = { ...input, action: { type: 'type', text: `${before}${sep}${secret}\nmore` } };
        const d = judgeAction(typing);
        expect(d.reason).to.not.include(secret);
        if (landsOnOwnWindow(typing)) {
          expect(d.rule).to.equal('own_window');
          return;
        }
        expect(d.verdict).to.equal('person_types');
        expect(d.rule).to.equal('secret');
      }),
      RUNS,
    );
  });

  it('hands over any value marked secret', () => {
    fc.assert(
      fc.property(inputArb, fc.string({ minLength: 1, maxLength: 12 }), (input, secret) => {
        const typing: JudgeInput = { ...input, action: { type: 'type', text: `x${secret}y` }, secrets: [secret] };
        const d = judgeAction(typing);
        expect(d.verdict).to.equal(landsOnOwnWindow(typing) ? 'block' : 'person_types');
      }),
      RUNS,
    );
  });

  it('blocks every step landing in an app on apps.block, whatever the other rules', () => {
    fc.assert(
      fc.property(inputArb, fc.nat(), (input, pick) => {
        const apps = appsOfAction(input).filter((a): a is string => a !== null);
        if (apps.length === 0) return;
        const blockedApp = apps[pick % apps.length];
        const g = normalizeGuardrails({ ...input.guardrails, apps: { allow: [...input.guardrails.apps.allow, blockedApp], block: [...input.guardrails.apps.block, blockedApp.toUpperCase()] } });
        const d = judgeAction({ ...input, guardrails: g });
        if (landsOnOwnWindow(input)) {
          expect(d.rule).to.equal('own_window');
          return;
        }
        if (d.verdict === 'person_types') {
          expect(input.action.type === 'type' || input.action.type === 'key').to.equal(true);
          return;
        }
        expect(d.verdict).to.equal('block');
        expect(d.rule).to.equal('apps.block');
      }),
      RUNS,
    );
  });

  it('never runs or merely confirms a click on an element whose category is blocked (Mac 1.0.20)', () => {
    fc.assert(
      fc.property(inputArb, rectArb(1), fc.constantFrom(...GUARDRAIL_CATEGORIES), fc.constantFrom<ElementRole>('button', 'link', 'menu_item', 'icon'), (input, r, cat, role) => {
        const obs = input.observation ?? { width: 1440, height: 900, windows: [], focused_app: null, focused: null, elements: [], dialog: null, text: null };
        const p = { x: r.x, y: r.y };
        const top = obs.windows.find((w) => contains(w.bounds, p));
        // A 1×1 element of the top window's app: the smallest there, so it is what is clicked.
        const target: ElementInfo = { app: top?.app ?? 'Finder', role, label: 'Target', category: cat, is_default: false, bounds: { x: p.x, y: p.y, width: 1, height: 1 } };
        const g = normalizeGuardrails({ ...input.guardrails, block: [...input.guardrails.block, cat] });
        const d = judgeAction({
          ...input,
          guardrails: g,
          device: MAC,
          capabilities: MAC_CAPS,
          observation: { ...obs, elements: [...(obs.elements ?? []), target] },
          action: { type: 'click', ...p },
        });
        expect(d.verdict).to.equal('block');
      }),
      RUNS,
    );
  });

  it('never runs a step the agent declares in a blocked category', () => {
    fc.assert(
      fc.property(inputArb, fc.constantFrom(...GUARDRAIL_CATEGORIES), (input, cat) => {
        if (input.action.type === 'screenshot' || input.action.type === 'wait') return;
        const g = normalizeGuardrails({ ...input.guardrails, block: [...input.guardrails.block, cat] });
        const d = judgeAction({ ...input, guardrails: g, declaredCategory: cat });
        expect(['block', 'person_types']).to.include(d.verdict);
      }),
      RUNS,
    );
  });

  it('never asks for approval of a category that is also blocked', () => {
    fc.assert(
      fc.property(inputArb, (input) => {
        const d = judgeAction(input);
        if (d.rule === 'confirm_category') expect(input.guardrails.block).to.not.include(d.category);
        if (d.rule === 'block_category') expect(input.guardrails.block).to.include(d.category);
      }),
      RUNS,
    );
  });

  it('never makes a decision less strict when a rule is added', () => {
    fc.assert(
      fc.property(inputArb, fc.integer({ min: 0, max: 6 }), fc.nat(), (input, op, pick) => {
        const before = judgeAction(input);
        const after = judgeAction({ ...input, guardrails: strengthen(input.guardrails, op, pick) });
        if (before.verdict === 'person_types' || after.verdict === 'person_types') {
          // Rule 1 does not depend on the agent's rules.
          expect(after.verdict).to.equal(before.verdict);
          return;
        }
        expect(VERDICT_RANK[after.verdict], `${before.rule} → ${after.rule}`).to.be.at.least(VERDICT_RANK[before.verdict]);
      }),
      RUNS,
    );
  });

  it('never asks for approval in unattended mode', () => {
    fc.assert(
      fc.property(inputArb, (input) => {
        const d = judgeAction({ ...input, guardrails: { ...input.guardrails, mode: 'unattended' } });
        expect(d.verdict).to.not.equal('confirm');
        if (d.unattended) expect(d.verdict).to.equal('block');
      }),
      RUNS,
    );
  });

  it('names a rule that fits the verdict, and blocks only with a rule that applies', () => {
    fc.assert(
      fc.property(inputArb, (input) => {
        const d = judgeAction(input);
        const g = input.guardrails;
        const byVerdict: Record<Decision['verdict'], string[]> = {
          run: ['allowed'],
          confirm: ['confirm_category', 'unseen_action'],
          person_types: ['secret', 'password_field'],
          block: ['own_window', 'apps.block', 'sites.block', 'unplaceable_app', 'unreadable_site', 'apps.allow', 'sites.allow', 'block_category', 'confirm_category', 'unseen_action'],
        };
        expect(byVerdict[d.verdict]).to.include(d.rule);
        if (d.rule === 'own_window') expect(landsOnOwnWindow(input)).to.equal(true);
        if (d.rule === 'apps.block') expect(g.apps.block.length).to.be.greaterThan(0);
        if (d.rule === 'sites.block') expect(g.sites.block.length).to.be.greaterThan(0);
        if (d.rule === 'apps.allow') expect(g.apps.allow.length).to.be.greaterThan(0);
        if (d.rule === 'sites.allow') expect(g.sites.allow.length).to.be.greaterThan(0);
        if (d.rule === 'unplaceable_app') expect(g.apps.allow.length + g.apps.block.length).to.be.greaterThan(0);
        if (d.rule === 'unreadable_site') expect(g.sites.allow.length + g.sites.block.length).to.be.greaterThan(0);
        if (d.rule === 'unseen_action') expect(g.confirm.length + g.block.length).to.be.greaterThan(0);
        if (d.verdict === 'person_types') expect(['type', 'key']).to.include(input.action.type);
        if (d.rule === 'secret') expect(hasSecret(input)).to.equal(true);
        expect(d.reason).to.be.a('string').and.match(/\.$/);
      }),
      RUNS,
    );
  });

  it('runs everything but secrets and password fields when the agent has no rules', () => {
    fc.assert(
      fc.property(inputArb, (input) => {
        const g = normalizeGuardrails({ confirm: [], block: [] });
        const d = judgeAction({ ...input, guardrails: g, declaredCategory: null });
        if (landsOnOwnWindow(input)) {
          expect(d.rule).to.equal('own_window');
          return;
        }
        expect(['run', 'person_types']).to.include(d.verdict);
      }),
      RUNS,
    );
  });

  it('judges the address typed into the address bar by where it goes', () => {
    const hosts = ['evil.com', 'www.evil.com', 'shop.example.com', 'checkout.shop.example.com', 'example.org', 'news.example.com'];
    fc.assert(
      fc.property(guardrailsArb, fc.constantFrom(...hosts), fc.constantFrom('', 'https://', 'http://'), fc.constantFrom('', '/path', ':8080/x?y=1'), (g0, host, scheme, rest) => {
        const g = normalizeGuardrails({ ...g0, apps: { allow: [], block: [] }, confirm: [], block: [], mode: 'supervised' });
        const obs: Observation = {
          width: 1440,
          height: 900,
          windows: [{ app: 'Safari', title: 'Safari', bounds: { x: 0, y: 0, width: 1440, height: 900 }, system: false, url: 'about:blank' }],
          focused_app: 'Safari',
          focused: { app: 'Safari', role: 'address_bar', label: 'Address', category: null, is_default: false, bounds: { x: 0, y: 0, width: 900, height: 30 } },
          elements: [],
          dialog: null,
          text: null,
        };
        const d = judgeAction({ guardrails: g, device: MAC, capabilities: MAC_CAPS, observation: obs, action: { type: 'key', keys: 'enter' }, addressBar: { typed: `${scheme}${host}${rest}` } });
        const covered = (rules: string[]): boolean => rules.some((r) => host === r || host.endsWith(`.${r}`));
        if (covered(g.sites.block)) expect(d.rule).to.equal('sites.block');
        else if (g.sites.allow.length > 0 && !covered(g.sites.allow)) expect(d.rule).to.equal('sites.allow');
        else expect(d.verdict).to.equal('run');
      }),
      RUNS,
    );
  });

  it('is pure: frozen inputs, same answer twice', () => {
    fc.assert(
      fc.property(inputArb, (input) => {
        const a = judgeAction(input);
        const frozen = deepFreeze(JSON.parse(JSON.stringify(input)) as JudgeInput);
        const b = judgeAction(frozen);
        expect(b).to.deep.equal(a);
      }),
      RUNS,
    );
  });
});
