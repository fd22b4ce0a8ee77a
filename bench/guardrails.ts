/**
 * `npm run bench -- guardrails`: decisions per second and time per decision of the guardrail
 * engine over a realistic mix of steps (clicks, typing, keys, drags, scrolls) on screens of
 * six windows and about twenty elements, with 50 rules in each app and site list, beside a
 * no-op decision measured the same way in the same run. Target: p99 <= 50 µs per decision.
 *
 * Two engine figures: with one guardrails object for every decision (the actions of one model
 * turn share it, so its compiled rules are reused), and with a freshly loaded copy for every
 * decision (the worst case: a step that reloads the agent from the database, every rule string
 * a new object), which compiles the rules each time.
 */
import { performance } from 'node:perf_hooks';
import type { DesktopAction, ElementInfo, GuardrailCategory, Observation, Rect, WindowInfo } from '../shared/desktop/protocol';
import { judgeAction, type Decision, type JudgeInput } from '../shared/guardrails/engine';
import { normalizeGuardrails } from '../shared/guardrails/guardrails.types';

const INPUTS = 4000;
const FRESH_INPUTS = 20000;
const WARMUP_ROUNDS = 5;
const MEASURED_ROUNDS = 50;
const TARGET_P99_US = 50;

/** A deterministic generator, so that every run measures the same mix. */
function prng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 0x100000000;
  };
}

const rect = (x: number, y: number, width: number, height: number): Rect => ({ x, y, width, height });

function buildGuardrails() {
  const apps = ['Safari', 'Mail', 'Finder', 'TextEdit', 'System Settings'];
  const sites = ['shop.example.com', 'mail.example.com', 'login.example.com', 'terms.example.com'];
  return normalizeGuardrails({
    confirm: ['purchase', 'send', 'delete', 'install', 'security'],
    block: ['terms'],
    apps: {
      allow: [...apps, ...Array.from({ length: 50 - apps.length }, (_, i) => `Allowed App ${i}`)],
      block: Array.from({ length: 50 }, (_, i) => (i % 2 === 0 ? `Blocked App ${i}` : `blocked${i}.exe`)),
    },
    sites: {
      allow: [...sites, ...Array.from({ length: 50 - sites.length }, (_, i) => `allowed-${i}.example.net`)],
      block: Array.from({ length: 50 }, (_, i) => `https://blocked-${i}.example.org/path`),
    },
  });
}

const PAGES: Array<{ url: string; elements: Array<[ElementInfo['role'], string, GuardrailCategory | null]> }> = [
  { url: 'https://shop.example.com/mug', elements: [['button', 'Add to cart', null], ['button', 'Buy now', 'purchase'], ['link', 'Reviews', null], ['static_text', 'Handmade mug', null]] },
  { url: 'https://checkout.shop.example.com/', elements: [['button', 'Pay', 'purchase'], ['text_field', 'Card holder', null], ['static_text', 'Total', null], ['link', 'Back', null]] },
  { url: 'https://mail.example.com/compose', elements: [['text_field', 'To', null], ['text_area', 'Message', null], ['button', 'Send', 'send'], ['link', 'Inbox', null]] },
  { url: 'https://login.example.com/', elements: [['text_field', 'Email', null], ['password_field', 'Password', null], ['button', 'Sign in', null], ['link', 'Forgot?', null]] },
  { url: 'https://terms.example.com/', elements: [['static_text', 'Terms', null], ['button', 'I agree', 'terms'], ['link', 'Print', null], ['button', 'Decline', null]] },
];

function buildObservation(rand: () => number, page: (typeof PAGES)[number]): Observation {
  const windows: WindowInfo[] = [
    { app: 'Safari', title: 'Safari', bounds: rect(0, 25, 1000, 800), system: false, url: page.url },
    { app: 'Mail', title: 'Inbox', bounds: rect(900, 60, 540, 500), system: false },
    { app: 'Finder', title: 'Documents', bounds: rect(600, 400, 700, 420), system: false },
    { app: 'TextEdit', title: 'notes.txt', bounds: rect(200, 500, 600, 320), system: false },
    { app: 'Menu Bar', title: 'Menu Bar', bounds: rect(0, 0, 1440, 25), system: true },
    { app: 'Dock', title: 'Dock', bounds: rect(300, 840, 840, 60), system: true },
  ];
  const elements: ElementInfo[] = [{ app: 'Safari', role: 'address_bar', label: 'Address', category: null, is_default: false, bounds: rect(200, 35, 600, 30) }];
  page.elements.forEach(([role, label, category], i) => {
    elements.push({ app: 'Safari', role, label, category, is_default: false, bounds: rect(60 + (i % 2) * 420, 120 + Math.floor(i / 2) * 160, 360, role === 'text_area' ? 140 : 40) });
  });
  const finder: Array<[ElementInfo['role'], string, GuardrailCategory | null]> = [
    ['item', 'report.txt', null],
    ['item', 'budget.xlsx', null],
    ['button', 'Move to Trash', 'delete'],
    ['button', 'Empty Trash', null],
    ['item', 'photos', null],
  ];
  finder.forEach(([role, label, category], i) => {
    elements.push({ app: 'Finder', role, label, category, is_default: false, bounds: rect(1020 + (i % 2) * 130, 600 + Math.floor(i / 2) * 70, 110, 60) });
  });
  const mail: Array<[ElementInfo['role'], string, GuardrailCategory | null]> = [
    ['button', 'Reply', null],
    ['button', 'Delete', 'delete'],
    ['item', 'Weekly update', null],
    ['item', 'Invoice', null],
  ];
  mail.forEach(([role, label, category], i) => {
    elements.push({ app: 'Mail', role, label, category, is_default: false, bounds: rect(1320, 80 + i * 60, 110, 40) });
  });
  elements.push({ app: 'TextEdit', role: 'text_area', label: 'Text', category: null, is_default: false, bounds: rect(210, 540, 580, 270) });
  elements.push({ app: 'Dock', role: 'icon', label: 'Trash', category: 'delete', is_default: false, bounds: rect(1080, 845, 50, 50) });
  elements.push({ app: 'Dock', role: 'icon', label: 'Safari', category: null, is_default: false, bounds: rect(320, 845, 50, 50) });
  while (elements.length < 20) {
    elements.push({ app: 'Menu Bar', role: 'menu_item', label: `Menu ${elements.length}`, category: null, is_default: false, bounds: rect(40 * elements.length, 2, 36, 20) });
  }
  const focusable = elements.filter((e) => e.app === 'Safari' && e.role !== 'static_text');
  const focused = rand() < 0.8 ? focusable[Math.floor(rand() * focusable.length)] : null;
  return { width: 1440, height: 900, windows, focused_app: 'Safari', focused, elements, dialog: null, text: null };
}

const TEXTS = [
  'Hello Sam, thanks for the update. See you on Friday at 10:30.',
  'Size M, colour blue',
  'shop.example.com/cart',
  'Dear team,\nplease find the quarterly report attached.\nBest, Alex',
  'me@example.com',
  'The order number is 123456 and the tracking code is 1Z999AA10123456784.',
  'Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua.',
];
const KEYS = ['enter', 'cmd+enter', 'tab', 'space', 'delete', 'backspace', 'escape', 'cmd+a', 'down'];

function buildAction(rand: () => number, obs: Observation): DesktopAction {
  const r = rand();
  const els = obs.elements ?? [];
  const centre = (e: ElementInfo) => ({ x: e.bounds.x + e.bounds.width / 2, y: e.bounds.y + e.bounds.height / 2 });
  if (r < 0.6) return { type: 'click', ...centre(els[Math.floor(rand() * els.length)]) };
  if (r < 0.65) return { type: 'click', x: Math.floor(rand() * 1440), y: Math.floor(rand() * 900) };
  if (r < 0.8) return { type: 'type', text: TEXTS[Math.floor(rand() * TEXTS.length)] };
  if (r < 0.92) return { type: 'key', keys: KEYS[Math.floor(rand() * KEYS.length)] };
  if (r < 0.95) return { type: 'drag', from: centre(els[Math.floor(rand() * els.length)]), to: centre(els[Math.floor(rand() * els.length)]) };
  return { type: 'scroll', x: 500, y: 400, dx: 0, dy: 120 };
}

function buildInputs(): JudgeInput[] {
  const rand = prng(20);
  const guardrails = buildGuardrails();
  const inputs: JudgeInput[] = [];
  for (let i = 0; i < INPUTS; i++) {
    const observation = buildObservation(rand, PAGES[i % PAGES.length]);
    const action = buildAction(rand, observation);
    const addressBar = observation.focused?.role === 'address_bar' ? { typed: rand() < 0.5 ? 'shop.example.com' : 'blocked-3.example.org' } : null;
    inputs.push({
      guardrails,
      device: { os: 'mac', name: 'bench', width: 1440, height: 900, app_version: '1.0.20' },
      capabilities: { accessibility: true, page_addresses: true, element_info: true },
      observation,
      action,
      addressBar,
      secrets: ['tulip-42'],
      declaredCategory: null,
    });
  }
  return inputs;
}

const NOOP_DECISION: Decision = { verdict: 'run', rule: 'allowed', category: null, app: null, site: null, reason: 'no-op', addressBar: null };
/** The baseline: a decision that looks at nothing. */
function noopDecision(input: JudgeInput): Decision {
  return input.action.type === 'screenshot' ? NOOP_DECISION : { ...NOOP_DECISION, addressBar: input.addressBar };
}

interface Figures {
  perSecond: number;
  p50: number;
  p99: number;
  max: number;
  byType: Map<string, number[]>;
}

let sink = 0;

function measure(decide: (input: JudgeInput) => Decision, inputs: JudgeInput[], rounds = MEASURED_ROUNDS, latencyRounds = 10): Figures {
  for (let r = 0; r < WARMUP_ROUNDS && rounds > 1; r++) for (const input of inputs) sink += decide(input).reason.length;

  // Throughput: a tight loop without timers around each call.
  const start = performance.now();
  for (let r = 0; r < rounds; r++) for (const input of inputs) sink += decide(input).reason.length;
  const elapsedMs = performance.now() - start;

  // Latency: each call timed on its own.
  const samples = new Float64Array(inputs.length * latencyRounds);
  const byType = new Map<string, number[]>();
  let n = 0;
  for (let r = 0; r < latencyRounds; r++) {
    for (const input of inputs) {
      const t0 = process.hrtime.bigint();
      sink += decide(input).reason.length;
      const us = Number(process.hrtime.bigint() - t0) / 1000;
      samples[n++] = us;
      let list = byType.get(input.action.type);
      if (!list) byType.set(input.action.type, (list = []));
      list.push(us);
    }
  }
  samples.sort();
  const pct = (p: number) => samples[Math.min(samples.length - 1, Math.floor(samples.length * p))];
  return { perSecond: (inputs.length * rounds) / (elapsedMs / 1000), p50: pct(0.5), p99: pct(0.99), max: samples[samples.length - 1], byType };
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];
}

/**
 * Every decision with its own copy of the guardrails, parsed from JSON just before it (untimed),
 * as a step that has just loaded the agent row: the rules are compiled for each decision.
 */
function measureFresh(inputs: JudgeInput[]): Figures {
  const json = JSON.stringify(inputs[0].guardrails);
  const samples = new Float64Array(FRESH_INPUTS);
  const byType = new Map<string, number[]>();
  let total = 0;
  for (let i = -FRESH_INPUTS; i < FRESH_INPUTS; i++) {
    const input = inputs[(i + FRESH_INPUTS) % inputs.length];
    const fresh: JudgeInput = { ...input, guardrails: JSON.parse(json) as JudgeInput['guardrails'] };
    const t0 = process.hrtime.bigint();
    sink += judgeAction(fresh).reason.length;
    const us = Number(process.hrtime.bigint() - t0) / 1000;
    if (i < 0) continue; // the first half warms up
    samples[i] = us;
    total += us;
    let list = byType.get(input.action.type);
    if (!list) byType.set(input.action.type, (list = []));
    list.push(us);
  }
  samples.sort();
  const pct = (p: number) => samples[Math.min(samples.length - 1, Math.floor(samples.length * p))];
  return { perSecond: FRESH_INPUTS / (total / 1e6), p50: pct(0.5), p99: pct(0.99), max: samples[samples.length - 1], byType };
}

export async function run(): Promise<void> {
  const inputs = buildInputs();
  const verdicts = new Map<string, number>();
  for (const input of inputs) {
    const d = judgeAction(input);
    verdicts.set(`${d.verdict}/${d.rule}`, (verdicts.get(`${d.verdict}/${d.rule}`) ?? 0) + 1);
  }

  const baseline = measure(noopDecision, inputs);
  const engine = measure(judgeAction, inputs);
  const fresh = measureFresh(inputs);

  const us = (v: number) => `${v.toFixed(2).padStart(7)} µs`;
  const row = (name: string, f: Figures) =>
    `${name.padEnd(34)} ${f.perSecond.toFixed(0).padStart(10)} decisions/s   p50 ${us(f.p50)}   p99 ${us(f.p99)}   max ${us(f.max)}`;
  console.log(
    `guardrails: ${inputs.length} steps (60% clicks on elements, 5% on empty space, 15% typing, 12% keys, 3% drags, 5% scrolls), ` +
      `6 windows and ~20 elements per screen, 50 rules in each of apps.allow/block and sites.allow/block, Node ${process.version}`,
  );
  console.log(row('no-op decision (baseline)', baseline));
  console.log(row('judgeAction, guardrails reused', engine));
  for (const [type, values] of [...engine.byType.entries()].sort()) {
    console.log(`  ${type.padEnd(8)} p50 ${us(percentile(values, 0.5))}   p99 ${us(percentile(values, 0.99))}`);
  }
  console.log(row('judgeAction, guardrails reloaded', fresh));
  console.log(`  verdicts: ${[...verdicts.entries()].sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k} ${v}`).join(', ')}`);
  console.log(
    `ratio: ${(baseline.perSecond / engine.perSecond).toFixed(1)}x the cost of the no-op decision; ` +
      `p99 ${engine.p99.toFixed(2)} µs reused, ${fresh.p99.toFixed(2)} µs reloaded, against a target of ${TARGET_P99_US} µs: ` +
      `${Math.max(engine.p99, fresh.p99) <= TARGET_P99_US ? 'met' : 'NOT met'}`,
  );
  if (sink === -1) console.log('');
}
