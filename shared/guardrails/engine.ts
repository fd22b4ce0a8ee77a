/**
 * The guardrail engine: judges one action the agent asks for against the agent's guardrails
 * and the screen the computer last reported, before the action runs. It is pure (no I/O, no
 * clock, no state between calls), so the step worker can call it before every action and
 * tests can call it with hand-made screens.
 *
 * The rules are the spec's evaluation order, after one service rule of its own; the first that
 * applies decides:
 *
 * 0. a step landing on the Deskhand app's own window (the person's, where they answer and
 *    approve) → `block`, whatever the guardrails and the mode (`own_window`);
 * 1. text that looks like a secret, or typing into a password field → `person_types`;
 * 2. a match in `apps.block` or `sites.block` → `block` (and, with such rules, a step that
 *    cannot be placed in an app or on a readable page is refused);
 * 3. a non-empty `apps.allow` or `sites.allow` that does not hold the step's app or site → `block`;
 * 4. a category in `block` → `block`;
 * 5. a category in `confirm`, or an acting click or key that cannot be seen while the agent
 *    has any category rule → `confirm`;
 * 6. anything else → `run`.
 *
 * The mode is applied here too: in unattended mode a `confirm` becomes a `block` whose reason
 * says nobody can approve ({@link applyMode}, exported for approvals that do not come from the
 * engine). docs/guardrails.md lists every rule id and the decisions taken where the spec is
 * silent.
 */
import type {
  Capabilities,
  DesktopAction,
  DeviceInfo,
  ElementInfo,
  ElementRole,
  GuardrailCategory,
  Observation,
  Point,
  WindowInfo,
} from '../desktop/protocol';
import { isPlainHost, normalizeSiteRule, type Guardrails } from './guardrails.types';
import { findSecret, SECRET_KIND_LABELS, type SecretKind } from './secrets';
import { keyName, MODIFIER_NAMES, type Modifier } from '../desktop/keys';
import { DESKHAND_APP } from '../desktop/computer';
import { desktopOs } from '../desktop/os';

export type Verdict = 'run' | 'block' | 'confirm' | 'person_types';

/** Stable ids of the rule that decided, for history, metrics and tests. */
export type GuardrailRule =
  | 'own_window'
  | 'secret'
  | 'password_field'
  | 'apps.block'
  | 'sites.block'
  | 'unplaceable_app'
  | 'unreadable_site'
  | 'apps.allow'
  | 'sites.allow'
  | 'block_category'
  | 'confirm_category'
  | 'unseen_action'
  | 'allowed';

/**
 * Text typed into a browser's address bar since it was last clicked. `unseen` marks text the
 * engine could not follow (pasted, edited with arrows or selections, or typed by the person),
 * so that the Enter that navigates cannot be judged by it.
 */
export interface AddressBarBuffer {
  typed: string;
  unseen?: boolean;
}

export interface JudgeInput {
  guardrails: Guardrails;
  device: DeviceInfo;
  capabilities: Capabilities;
  /** The latest observation, or null when none has been reported yet. */
  observation: Observation | null;
  action: DesktopAction;
  /** The address-bar buffer returned with the previous decision (null when none). */
  addressBar: AddressBarBuffer | null;
  /** Values marked secret (a test case's `{ secret }` facts), matched exactly. */
  secrets?: readonly string[];
  /**
   * The category the agent named in its own approval request for this step. The only source
   * of categories on Windows, before Mac app 1.0.20 and on a Linux app without the accessibility
   * bus; elsewhere it adds to what is detected.
   */
  declaredCategory?: GuardrailCategory | null;
}

export interface Decision {
  verdict: Verdict;
  rule: GuardrailRule;
  /** The category that decided, or else the first one the step falls in; null when none. */
  category: GuardrailCategory | null;
  /** The app the step lands in (for a drag, the end that decided); null when unplaced or none. */
  app: string | null;
  /** The site the step lands on or navigates to; null when not a web page or unreadable. */
  site: string | null;
  /**
   * One sentence for the agent and the task history. It never repeats typed text (a host
   * typed into the address bar is named, as the place the step goes) nor a secret.
   */
  reason: string;
  /**
   * The address-bar buffer to pass with the next action once this step has been carried out
   * as decided: after the action for `run` and `confirm` (if approved; keep the old buffer when
   * the approval is denied), unchanged for `block`, and marked `unseen` for `person_types` in
   * the address bar.
   */
  addressBar: AddressBarBuffer | null;
  /** With `person_types` for a secret: what kind of secret was found (never the secret). */
  secret_kind?: SecretKind;
  /** With `person_types`: the label of the field the person is asked to type into, if known. */
  field?: string | null;
  /** Set when unattended mode turned a `confirm` into this `block`. */
  unattended?: true;
}

export type StartCheck =
  | { ok: true }
  | { ok: false; code: 'accessibility_required' | 'page_addresses_required'; reason: string };

// ---------------------------------------------------------------------------------------------
// Public functions

/**
 * Judges one action before it runs. See the module comment for the order of the rules and
 * docs/guardrails.md for the details of each.
 */
export function judgeAction(input: JudgeInput): Decision {
  const decision = applyMode(judgeRules(input), input.guardrails);
  if (decision.verdict === 'block') return { ...decision, addressBar: input.addressBar ?? null };
  return decision;
}

/**
 * Applies the guardrail mode to a decision: in unattended mode nobody can approve, so a
 * `confirm` becomes a `block` (rule unchanged, `unattended: true`, the reason says why).
 * `judgeAction` already applies it; the step worker uses it for approvals that do not come from
 * the engine (the agent's own approval requests, HTTP tools with `approval: always`) so that
 * they follow the same rule and wording. Other verdicts pass through unchanged; `person_types`
 * is not an approval and is kept.
 */
export function applyMode<D extends { verdict: Verdict; reason: string }>(
  decision: D,
  guardrails: Pick<Guardrails, 'mode'>,
): D & { unattended?: true } {
  if (guardrails.mode !== 'unattended' || decision.verdict !== 'confirm') return decision;
  return {
    ...decision,
    verdict: 'block',
    unattended: true,
    reason: `${asSentence(decision.reason)} The agent runs unattended, so nobody can approve it and it is refused.`,
  };
}

/**
 * A reason as a sentence ending in exactly one stop, to set after words such as "Refused: " and
 * before the next sentence. The engine's reasons are sentences with their own full stop; an
 * agent's own words (an approval's `what`) may have none. Adding a stop to a reason that has one
 * made "…on this agent's blocked apps.. Pressing cmd+s.".
 */
export function asSentence(reason: string): string {
  const text = reason.trimEnd();
  return /[.!?…]["'”’)\]]*$/.test(text) ? text : `${text}.`;
}

/**
 * Whether a task with these guardrails can start on this computer.
 *
 * - A Mac whose app lacks Accessibility permission, or a Linux computer whose app cannot reach
 *   the desktop's accessibility bus (AT-SPI), cannot see the screen's parts, so a task with
 *   rules the app would have to check fails: app rules, site rules, and category rules
 *   (`confirm` or `block` non-empty) where the app detects categories (a Mac app 1.0.20 or
 *   later, the Linux app; on older Macs categories rest on the agent's own approval requests,
 *   which need no permission). The service's own rules (secrets, password fields),
 *   `screen_check` (whose "cannot check" outcome follows `safety_checks`) and the limits do not
 *   count.
 * - Site rules need a computer that reports page addresses (`capabilities.page_addresses`:
 *   macOS with app 1.0.20 or later, or the Linux app with the accessibility bus).
 */
export function checkStartable(input: {
  guardrails: Guardrails;
  device: DeviceInfo;
  capabilities: Capabilities;
}): StartCheck {
  const { guardrails: g, device, capabilities } = input;
  const hasSiteRules = g.sites.allow.length > 0 || g.sites.block.length > 0;
  const linux = isLinux(device);
  if ((isMac(device) || linux) && !capabilities.accessibility) {
    const rules: string[] = [];
    if (g.apps.allow.length > 0) rules.push('apps.allow');
    if (g.apps.block.length > 0) rules.push('apps.block');
    if (g.sites.allow.length > 0) rules.push('sites.allow');
    if (g.sites.block.length > 0) rules.push('sites.block');
    if (capabilities.element_info || appDetectsCategories(device)) {
      if (g.block.length > 0) rules.push('block');
      if (g.confirm.length > 0) rules.push('confirm');
    }
    if (rules.length > 0) {
      return {
        ok: false,
        code: 'accessibility_required',
        reason: linux
          ? `The Deskhand app on this Linux computer could not reach the desktop's accessibility bus (AT-SPI), so it cannot ` +
            `check this agent's guardrails (${rules.join(', ')}); start the session's accessibility (at-spi2-core) and start the task again.`
          : `The Deskhand app on this Mac lacks Accessibility permission, so it cannot check this agent's guardrails ` +
            `(${rules.join(', ')}); grant it in System Settings > Privacy & Security > Accessibility and start the task again.`,
      };
    }
  }
  if (hasSiteRules && !capabilities.page_addresses) {
    return {
      ok: false,
      code: 'page_addresses_required',
      reason:
        `This agent has site rules, which need a computer that reports page addresses (macOS with app 1.0.20 or later, ` +
        `or the Linux app with the desktop's accessibility bus); ` +
        `this computer (${device.os}, app ${device.app_version}) does not.`,
    };
  }
  return { ok: true };
}

// ---------------------------------------------------------------------------------------------
// Rule lists
//
// Lists are not compiled into sets: the step worker reloads the agent for every step, and
// turning 200 rule strings into keys costs more (10-30 µs) than the whole rest of a decision.
// Instead each list is scanned for the one or two apps and pages a step touches, with exact
// cheap checks first (a length, an exact string), so a decision touches each rule a few times.

/** A rule of `list` naming the app (or one of its aliases), or null. */
function appRuleIn(list: readonly string[], app: string): string | null {
  if (list.length === 0) return null;
  const key = appKey(app);
  const spellings = APP_SPELLINGS.get(key) ?? [key, `${key}.exe`];
  for (const rule of list) {
    const n = rule.length;
    if (n === 0) continue;
    const first = rule.charCodeAt(0);
    const last = rule.charCodeAt(n - 1);
    // Space or non-ASCII at an end may be trimmed, and U+0130 is the one character whose lower
    // case is longer: those take the slow, exact path; every other rule keeps its length.
    if (first <= 0x20 || first >= 0x80 || last <= 0x20 || last >= 0x80 || rule.includes('\u0130')) {
      if (appKey(rule) === key) return rule;
      continue;
    }
    for (const spelling of spellings) {
      if (spelling.length === n && rule.toLowerCase() === spelling) return rule;
    }
  }
  return null;
}

/** A rule of `list` covering `host` (the host itself or a parent domain), or null. */
function siteRuleIn(list: readonly string[], host: string): string | null {
  if (list.length === 0) return null;
  const domains = parentDomains(host);
  for (const rule of list) {
    // Stored rules are plain lowercase hosts; anything else is normalised as when saved.
    const key = isPlainHost(rule) ? rule : siteKey(rule);
    for (const d of domains) if (d === key) return rule;
  }
  return null;
}

/** `a.b.example.com` → itself, `b.example.com`, `example.com`, `com`. */
function parentDomains(host: string): string[] {
  const out = [host];
  if (host.startsWith('[')) return out;
  for (let i = host.indexOf('.'); i >= 0; i = host.indexOf('.', i + 1)) out.push(host.slice(i + 1));
  return out;
}

/** A hand-made value is normalised as the API would have saved it, never dropped. */
function siteKey(rule: string): string {
  try {
    return normalizeSiteRule(rule);
  } catch {
    return rule.trim().toLowerCase();
  }
}

// ---------------------------------------------------------------------------------------------
// Apps

/**
 * Names that stand for the same app: a Mac bundle id and its name, names an app has had, and on
 * Linux the WM_CLASS class and instance where they differ from the app's name (the Linux app
 * reports the class in lower case: `firefox-esr`, whose instance is `Navigator`; `google-chrome`;
 * `chromium-browser` on older Ubuntus). The protocol reports names only (`WindowInfo.app`), so ids
 * in rules are matched through this table. Windows names are not merged with the others
 * (`msedge.exe` is not `Microsoft Edge`): the spec asks for both to be listed.
 */
const APP_ALIASES: readonly (readonly string[])[] = [
  ['safari', 'com.apple.safari'],
  ['mail', 'com.apple.mail'],
  ['finder', 'com.apple.finder'],
  ['system settings', 'system preferences', 'com.apple.systempreferences', 'com.apple.systemsettings'],
  ['app store', 'com.apple.appstore'],
  ['textedit', 'com.apple.textedit'],
  ['notes', 'com.apple.notes'],
  ['messages', 'com.apple.mobilesms'],
  ['terminal', 'com.apple.terminal'],
  ['dock', 'com.apple.dock'],
  ['control center', 'control centre', 'com.apple.controlcenter'],
  ['spotlight', 'com.apple.spotlight'],
  ['google chrome', 'com.google.chrome', 'google-chrome'],
  ['chromium', 'org.chromium.chromium', 'chromium-browser'],
  ['firefox', 'org.mozilla.firefox', 'firefox-esr', 'navigator'],
  ['microsoft edge', 'com.microsoft.edgemac', 'microsoft-edge'],
  ['brave browser', 'com.brave.browser', 'brave-browser'],
  ['vivaldi', 'com.vivaldi.vivaldi', 'vivaldi-stable'],
  ['gnome web', 'epiphany', 'org.gnome.epiphany'],
  ['microsoft outlook', 'com.microsoft.outlook'],
  ['slack', 'com.tinyspeck.slackmacgap'],
  ['thunderbird', 'org.mozilla.thunderbird'],
  ['telegram', 'telegramdesktop', 'telegram-desktop', 'org.telegram.desktop'],
  ['geary', 'org.gnome.geary'],
  ['mousepad', 'org.xfce.mousepad'],
  ['gnome terminal', 'gnome-terminal', 'gnome-terminal-server', 'org.gnome.terminal'],
  ['nautilus', 'org.gnome.nautilus'],
];

const APP_CANONICAL = new Map<string, string>();
/** Every lower-case spelling of an app's key: its aliases, with and without `.exe`. */
const APP_SPELLINGS = new Map<string, string[]>();
for (const group of APP_ALIASES) {
  for (const name of group) APP_CANONICAL.set(name, group[0]);
  APP_SPELLINGS.set(group[0], [...group, ...group.map((name) => `${name}.exe`)]);
}

/** Case-insensitive, `.exe` optional, ids folded onto names. */
function appKey(name: string): string {
  let k = name.trim().toLowerCase();
  if (k.endsWith('.exe')) k = k.slice(0, -4);
  return APP_CANONICAL.get(k) ?? k;
}

const BROWSERS = new Set(
  [
    'Safari',
    'Safari Technology Preview',
    'msedge.exe',
    'Microsoft Edge',
    'Google Chrome',
    'chrome.exe',
    'Chromium',
    'Firefox',
    'firefox.exe',
    'Firefox Developer Edition',
    'Brave Browser',
    'brave.exe',
    'Arc',
    'Opera',
    'opera.exe',
    'Vivaldi',
    'vivaldi.exe',
    'Orion',
    // Linux apps as their WM_CLASS names them, those not folded onto a name above by APP_ALIASES.
    'GNOME Web',
    'Falkon',
    'LibreWolf',
    'Midori',
  ].map(appKey),
);

function isBrowser(app: string): boolean {
  return BROWSERS.has(appKey(app));
}

const MESSAGING_APPS = new Set(
  [
    'Mail',
    'outlook.exe',
    'Microsoft Outlook',
    'Outlook',
    'Thunderbird',
    'thunderbird.exe',
    'Messages',
    'Slack',
    'slack.exe',
    'Microsoft Teams',
    'ms-teams.exe',
    'Teams',
    'Discord',
    'discord.exe',
    'Telegram',
    'WhatsApp',
    'Signal',
    'Skype',
    'Evolution',
    'Geary',
  ].map(appKey),
);

// ---------------------------------------------------------------------------------------------
// Pages

/** What a step's page is, for the site rules. Steps outside web content have none. */
type Page = { kind: 'site'; host: string } | { kind: 'unreadable'; why: string };

// Browser pages that are the browser's own or the computer's, not a site.
const LOCAL_SCHEMES = new Set([
  'file:',
  'about:',
  'chrome:',
  'edge:',
  'brave:',
  'opera:',
  'vivaldi:',
  'safari-resource:',
  'favorites:',
  'chrome-extension:',
  'moz-extension:',
  'safari-web-extension:',
  'extension:',
]);

/** Classifies a page address: a site, not a site (null), or unreadable. */
function pageOfUrl(url: string): Page | null {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return { kind: 'unreadable', why: 'its address cannot be read' };
  }
  let protocol = parsed.protocol;
  if (protocol === 'blob:') {
    // A blob belongs to the page that made it.
    try {
      parsed = new URL(parsed.pathname);
      protocol = parsed.protocol;
    } catch {
      return { kind: 'unreadable', why: 'it shows a blob whose origin cannot be read' };
    }
  }
  if (protocol === 'http:' || protocol === 'https:' || protocol === 'ws:' || protocol === 'wss:') {
    const host = parsed.hostname.toLowerCase().replace(/\.$/, '');
    if (host === '') return { kind: 'unreadable', why: 'its address has no host' };
    return { kind: 'site', host };
  }
  if (LOCAL_SCHEMES.has(protocol)) return null;
  return { kind: 'unreadable', why: `its ${protocol.slice(0, -1)}: address does not say which site it comes from` };
}

/** The page a window shows, as far as the site rules are concerned. */
function pageOfWindow(win: WindowInfo, capabilities: Capabilities): Page | null {
  const browser = isBrowser(win.app);
  if (!capabilities.page_addresses) {
    return browser ? { kind: 'unreadable', why: 'this computer does not report page addresses' } : null;
  }
  if (win.url === undefined || win.url === null || win.url === '') {
    return browser ? { kind: 'unreadable', why: `${win.app} did not report the page's address` } : null;
  }
  return pageOfUrl(win.url);
}

const IPV4 = /^\d{1,3}(?:\.\d{1,3}){3}$/;
const DOMAIN = /^(?:[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?\.)+(?:[a-z]{2,63}|xn--[a-z0-9-]+)\.?$/i;
const SCHEME_PREFIX = /^[a-z][a-z0-9+.-]*:/i;

/**
 * Where text typed into an address bar goes when Enter is pressed: a site, a local page
 * (null), or unreadable (a search, whose engine the computer does not report, or an address
 * that cannot be parsed).
 */
function destinationOfTyped(typed: string): Page | null {
  const text = typed.trim();
  if (/\s/.test(text)) return { kind: 'unreadable', why: 'the typed text is a search, and where searches go is not reported' };
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(text) || /^(?:about|file|javascript|data|blob|mailto|view-source):/i.test(text)) {
    return pageOfUrl(text);
  }
  const hostPort = text.split(/[/?#]/, 1)[0];
  const host = hostPort.replace(/:\d+$/, '');
  if (host === 'localhost' || IPV4.test(host) || /^\[[0-9a-f:.]+\]$/i.test(host) || DOMAIN.test(host)) {
    return pageOfUrl(`http://${text}`);
  }
  if (SCHEME_PREFIX.test(text)) return pageOfUrl(text);
  return { kind: 'unreadable', why: 'the typed text is a search, and where searches go is not reported' };
}

// ---------------------------------------------------------------------------------------------
// Keys

interface KeyCombo {
  key: string;
  mods: Set<Modifier>;
}

/** `cmd+enter`, `ctrl+shift+delete`; several combos may be separated by spaces. */
function parseKeys(keys: string): KeyCombo[] {
  const combos: KeyCombo[] = [];
  for (const combo of keys.trim().toLowerCase().split(/\s+/)) {
    if (combo === '') continue;
    const parts = combo.endsWith('++') ? [...combo.slice(0, -2).split('+'), '+'] : combo.split('+');
    const mods = new Set<Modifier>();
    let key = '';
    for (const part of parts) {
      if (part === '') continue;
      const mod = MODIFIER_NAMES[part];
      if (mod && part !== parts[parts.length - 1]) mods.add(mod);
      else key = keyName(part);
    }
    if (key === '' && mods.size > 0) key = 'modifier';
    combos.push({ key, mods });
  }
  return combos;
}

const TEXT_INPUTS: ReadonlySet<ElementRole> = new Set(['text_field', 'text_area', 'password_field', 'address_bar']);

function isTextInput(e: ElementInfo | null): boolean {
  return e !== null && TEXT_INPUTS.has(e.role);
}

const MESSAGE_LABEL = /\b(?:message|reply|comment|chat|compose|post|tweet|body|write a)/i;
const MESSAGING_HOST = /(?:^|\.)(?:mail|webmail|chat|messages|messenger|outlook|teams|slack|discord)\./i;

/**
 * A message box: a field where Enter sends (the spec's "Enter in a message box counts as
 * sending"). A text field or area labelled as a message, reply, comment, chat or post, or any
 * text area in a mail or chat app or on a mail or chat site.
 */
function isMessageBox(e: ElementInfo, site: string | null): boolean {
  if (e.role !== 'text_area' && e.role !== 'text_field') return false;
  if (MESSAGE_LABEL.test(e.label)) return true;
  if (e.role !== 'text_area') return false;
  return MESSAGING_APPS.has(appKey(e.app)) || (site !== null && MESSAGING_HOST.test(`${site}.`));
}

// ---------------------------------------------------------------------------------------------
// Geometry

function contains(r: { x: number; y: number; width: number; height: number }, p: Point): boolean {
  return p.x >= r.x && p.y >= r.y && p.x < r.x + r.width && p.y < r.y + r.height;
}

function windowAt(obs: Observation, p: Point): WindowInfo | null {
  for (const w of obs.windows) if (contains(w.bounds, p)) return w;
  return null;
}

/**
 * What lies at a point: the smallest element containing it, preferring elements of the app
 * whose window is on top there (an element of a covered window is used only when the top
 * window reports none, which errs on the strict side).
 */
function elementAt(obs: Observation, p: Point, win: WindowInfo | null): ElementInfo | null {
  if (!obs.elements) return null;
  const topApp = win ? appKey(win.app) : null;
  let best: ElementInfo | null = null;
  let bestArea = Infinity;
  let bestOnTop = false;
  for (const e of obs.elements) {
    if (!contains(e.bounds, p)) continue;
    const onTop = topApp === null || appKey(e.app) === topApp;
    const area = e.bounds.width * e.bounds.height;
    if (best === null || (onTop && !bestOnTop) || (onTop === bestOnTop && area < bestArea)) {
      best = e;
      bestArea = area;
      bestOnTop = onTop;
    }
  }
  return best;
}

function defaultButton(obs: Observation): ElementInfo | null {
  if (!obs.elements || !obs.dialog) return null;
  const dialogApp = appKey(obs.dialog.app);
  let fallback: ElementInfo | null = null;
  for (const e of obs.elements) {
    if (!e.is_default) continue;
    if (appKey(e.app) === dialogApp) return e;
    fallback ??= e;
  }
  return fallback;
}

/**
 * Whether an address bar found under a click belongs to the window on top there. Elements do
 * not say which window they belong to, so when another window of the same app also lies under
 * the point the bar may be that window's, and the click is judged as a click on the page.
 */
function ownAddressBar(obs: Observation, win: WindowInfo, bar: ElementInfo, p: Point): boolean {
  const app = appKey(win.app);
  if (appKey(bar.app) !== app) return false;
  let below = false;
  for (const w of obs.windows) {
    if (w === win) {
      below = true;
      continue;
    }
    if (below && appKey(w.app) === app && contains(w.bounds, p)) return false;
  }
  return true;
}

function focusedWindow(obs: Observation): WindowInfo | null {
  if (obs.focused_app === null) return null;
  const key = appKey(obs.focused_app);
  for (const w of obs.windows) if (appKey(w.app) === key) return w;
  return null;
}

// ---------------------------------------------------------------------------------------------
// Facts: what the action would do, gathered before any rule is applied

/** Where (part of) a step lands, for the app rules. `app` null: it cannot be placed. */
interface AppTarget {
  app: string | null;
  /** A part of the system that `apps.allow` leaves usable (see {@link systemPartsExempt}). */
  system: boolean;
  /** Why it cannot be placed, when `app` is null. */
  why?: string;
  /** Which part of the step, for reasons: "the click", "the drop". */
  part: string;
}

interface PageTarget {
  page: Page;
  /** What the page is, for reasons: "the page under the click". */
  part: string;
  /** An address typed into the address bar, judged at the Enter that navigates. */
  nav?: boolean;
}

interface Facts {
  /** Screenshots and waits: nothing on the computer changes. */
  passive: boolean;
  apps: AppTarget[];
  pages: PageTarget[];
  /** Categories the step falls in (detected and declared), without repeats. */
  categories: GuardrailCategory[];
  /** What part of an acting step could not be seen, if any. */
  unseen: string | null;
  personTypes: { rule: 'secret' | 'password_field'; kind?: SecretKind; field: string | null; why: string } | null;
  addressBar: AddressBarBuffer | null;
}

interface Context {
  input: JudgeInput;
  obs: Observation | null;
  /** Category detection is on (Mac app 1.0.20+, or any app reporting element info). */
  detects: boolean;
  /** Element info is available for this observation. */
  sees: boolean;
  facts: Facts;
}

function addCategory(facts: Facts, c: GuardrailCategory | null | undefined): void {
  if (c && !facts.categories.includes(c)) facts.categories.push(c);
}

function markUnseen(ctx: Context, what: string): void {
  if (ctx.detects && ctx.facts.unseen === null) ctx.facts.unseen = what;
}

/** Places a point: its window (topmost first), app and page. */
function placePoint(ctx: Context, p: Point, part: string): WindowInfo | null {
  const { obs, facts } = ctx;
  if (obs === null) {
    facts.apps.push({ app: null, system: false, why: 'no screen has been reported yet', part });
    facts.pages.push({ page: { kind: 'unreadable', why: 'no screen has been reported yet' }, part: `the page under ${part}` });
    return null;
  }
  const win = windowAt(obs, p);
  if (win === null) {
    const why = `no window lies at (${Math.round(p.x)}, ${Math.round(p.y)})`;
    facts.apps.push({ app: null, system: false, why, part });
    facts.pages.push({ page: { kind: 'unreadable', why }, part: `the page under ${part}` });
    return null;
  }
  facts.apps.push({ app: win.app, system: win.system && systemPartsExempt(ctx.input.device), part });
  return win;
}

function placePage(ctx: Context, win: WindowInfo, part: string): void {
  const page = pageOfWindow(win, ctx.input.capabilities);
  if (page) ctx.facts.pages.push({ page, part });
}

/** Places a key or typing step: the focused app, and its frontmost window for the page. */
function placeFocus(ctx: Context, part: string): WindowInfo | null {
  const { obs, facts } = ctx;
  if (obs === null) {
    facts.apps.push({ app: null, system: false, why: 'no screen has been reported yet', part });
    facts.pages.push({ page: { kind: 'unreadable', why: 'no screen has been reported yet' }, part: `the page ${part} goes to` });
    return null;
  }
  if (obs.focused_app === null) {
    // Keys go to no app, hence to no page: only the app rules, which need a place, refuse them.
    facts.apps.push({ app: null, system: false, why: 'no app has the keyboard focus', part });
    return null;
  }
  const win = focusedWindow(obs);
  facts.apps.push({ app: obs.focused_app, system: (win?.system ?? false) && systemPartsExempt(ctx.input.device), part });
  if (win === null && isBrowser(obs.focused_app)) {
    facts.pages.push({ page: { kind: 'unreadable', why: `no window of ${obs.focused_app} was reported` }, part: `the page ${part} goes to` });
  }
  return win;
}

function siteOf(ctx: Context, win: WindowInfo | null): string | null {
  if (win === null) return null;
  const page = pageOfWindow(win, ctx.input.capabilities);
  return page?.kind === 'site' ? page.host : null;
}

/** Is the address bar where keys go? With element info the focus says; without, the buffer. */
function addressBarActive(ctx: Context): boolean {
  const { obs } = ctx;
  if (obs !== null && obs.elements !== null) return obs.focused?.role === 'address_bar';
  return ctx.input.addressBar !== null;
}

/** What Enter or Space would press, by the focus and an open dialog. */
function judgePress(ctx: Context, key: 'enter' | 'space', site: string | null, shift: boolean): void {
  if (!ctx.detects) return;
  const { obs, facts } = ctx;
  if (!ctx.sees || obs === null) {
    markUnseen(ctx, `what ${key === 'enter' ? 'Enter' : 'Space'} would press cannot be seen`);
    return;
  }
  const focused = obs.focused;
  let seen = false;
  if (focused !== null) {
    if (isTextInput(focused)) {
      // Space types a space, Shift+Enter a new line; Enter may submit or send.
      if (key === 'space') return;
      seen = true;
      if (focused.role !== 'address_bar' && !shift) {
        if (focused.category) addCategory(facts, focused.category);
        else if (isMessageBox(focused, site)) addCategory(facts, 'send');
      }
    } else {
      seen = true;
      addCategory(facts, focused.category);
    }
  }
  // Return reaches a dialog's default button whatever is focused; Space only when nothing is.
  if (obs.dialog !== null && (key === 'enter' || focused === null)) {
    const def = defaultButton(obs);
    if (def !== null) {
      seen = true;
      addCategory(facts, def.category);
    }
  }
  if (!seen) markUnseen(ctx, `what ${key === 'enter' ? 'Enter' : 'Space'} would press cannot be seen`);
}

/** Enter in the address bar: judged by where the typed text goes. */
function judgeNavigation(ctx: Context, buffer: AddressBarBuffer | null, win: WindowInfo | null): void {
  const part = 'the address typed in the address bar';
  if (buffer?.unseen) {
    ctx.facts.pages.push({ page: { kind: 'unreadable', why: 'the address bar holds text that could not be followed' }, part, nav: true });
    return;
  }
  const typed = buffer?.typed.trim() ?? '';
  if (typed === '') {
    // Nothing typed since the click: Enter reloads the page shown.
    if (win !== null) placePage(ctx, win, 'the page reloaded from the address bar');
    return;
  }
  const page = destinationOfTyped(typed);
  if (page) ctx.facts.pages.push({ page, part, nav: true });
}

function gatherFacts(input: JudgeInput): Facts {
  const obs = input.observation;
  const facts: Facts = {
    passive: false,
    apps: [],
    pages: [],
    categories: [],
    unseen: null,
    personTypes: null,
    addressBar: input.addressBar ?? null,
  };
  const ctx: Context = {
    input,
    obs,
    detects: detectsCategories(input.device, input.capabilities),
    sees: input.capabilities.element_info && obs !== null && obs.elements !== null,
    facts,
  };
  const action = input.action;
  switch (action.type) {
    case 'screenshot':
    case 'wait':
      facts.passive = true;
      break;
    case 'scroll': {
      // Scrolling moves content and presses nothing: placed, never a category.
      const win = placePoint(ctx, action, 'the scroll');
      if (win) placePage(ctx, win, 'the page under the scroll');
      break;
    }
    case 'click':
      judgeClick(ctx, action);
      break;
    case 'drag':
      judgeDrag(ctx, action.from, action.to);
      break;
    case 'key':
      judgeKey(ctx, action.keys);
      break;
    case 'type':
      judgeType(ctx, action.text);
      break;
    default: {
      // A new action type must be taught to the engine before it can run.
      const unknown: never = action;
      facts.apps.push({ app: null, system: false, why: `the action ${String((unknown as { type?: unknown }).type)} is unknown`, part: 'the action' });
      facts.pages.push({ page: { kind: 'unreadable', why: 'the action is unknown' }, part: 'the action' });
      markUnseen(ctx, 'the action is unknown');
    }
  }
  addCategory(facts, input.declaredCategory ?? null);
  return facts;
}

function judgeClick(ctx: Context, p: Point): void {
  const { obs, facts } = ctx;
  const win = placePoint(ctx, p, 'the click');
  const el = obs !== null ? elementAt(obs, p, win) : null;
  if (el?.role === 'address_bar' && obs !== null && win !== null && ownAddressBar(obs, win, el, p)) {
    // Clicking the address bar is allowed wherever the browser is; what is typed there is
    // judged at the Enter that navigates.
    facts.addressBar = { typed: '' };
  } else {
    if (win) placePage(ctx, win, 'the page under the click');
    facts.addressBar = null;
  }
  if (!ctx.detects) return;
  if (!ctx.sees || el === null) {
    markUnseen(ctx, ctx.sees ? 'nothing that can be seen lies under the click' : 'what lies under the click cannot be seen');
    return;
  }
  addCategory(facts, el.category);
}

function judgeDrag(ctx: Context, from: Point, to: Point): void {
  const { obs, facts } = ctx;
  facts.addressBar = null;
  const ends: Array<[Point, string]> = [
    [from, 'the start of the drag'],
    [to, 'the drop'],
  ];
  for (const [p, part] of ends) {
    const win = placePoint(ctx, p, part);
    if (win) placePage(ctx, win, `the page under ${part}`);
    if (!ctx.detects) continue;
    const el = obs !== null ? elementAt(obs, p, win) : null;
    if (!ctx.sees || el === null) {
      markUnseen(ctx, ctx.sees ? `nothing that can be seen lies under ${part}` : `what lies under ${part} cannot be seen`);
      continue;
    }
    // Dropping on the Trash reports the Trash's own category (delete).
    addCategory(facts, el.category);
  }
}

const PASTE = (c: KeyCombo): boolean =>
  (c.key === 'v' && (c.mods.has('cmd') || c.mods.has('ctrl'))) || (c.key === 'insert' && c.mods.has('shift'));

const FOCUS_ADDRESS_BAR = (c: KeyCombo): boolean =>
  (c.key === 'l' && (c.mods.has('cmd') || c.mods.has('ctrl'))) || (c.key === 'd' && c.mods.has('alt')) || c.key === 'f6';

/**
 * Shortcuts a Mac's system takes whatever app has the focus: Cmd+Space opens Spotlight, Cmd+Tab
 * the app switcher (part of the Dock). They land in those system parts, not in the focused app.
 */
function macSystemShortcut(combos: KeyCombo[]): string | null {
  if (combos.length !== 1) return null;
  const { key, mods } = combos[0];
  const onlyCmd = mods.has('cmd') && !mods.has('ctrl') && !mods.has('alt');
  if (key === 'space' && onlyCmd && !mods.has('shift')) return 'Spotlight';
  if (key === 'tab' && onlyCmd) return 'Dock';
  return null;
}

function judgeKey(ctx: Context, keys: string): void {
  const { obs, facts } = ctx;
  const combos = parseKeys(keys);
  const systemPart = isMac(ctx.input.device) ? macSystemShortcut(combos) : null;
  if (systemPart !== null) {
    facts.apps.push({ app: systemPart, system: true, part: 'the key press' });
    facts.addressBar = null;
    return;
  }
  const win = placeFocus(ctx, 'the key press');
  const site = siteOf(ctx, win);
  let inAddressBar = addressBarActive(ctx);
  let buffer: AddressBarBuffer | null = inAddressBar ? (facts.addressBar ?? { typed: '' }) : null;
  let pageJudged = false;
  const judgePageOnce = (): void => {
    if (!pageJudged && win !== null) placePage(ctx, win, 'the page the keys go to');
    pageJudged = true;
  };
  let focusKnown = true;

  for (const combo of combos) {
    const { key, mods } = combo;
    const command = mods.has('cmd') || mods.has('ctrl');
    const isDelete = key === 'delete' || key === 'backspace';

    // Rule 1: keys that put characters into a password field are the person's to press.
    if (
      focusKnown &&
      !inAddressBar &&
      obs?.focused?.role === 'password_field' &&
      facts.personTypes === null &&
      ((!command && !mods.has('alt') && (key.length === 1 || key === 'space')) || PASTE(combo))
    ) {
      facts.personTypes = {
        rule: 'password_field',
        field: obs.focused.label || null,
        why: 'the keys would type into a password field',
      };
    }

    if (key === 'enter' && command && ctx.detects) addCategory(facts, 'send');

    if (inAddressBar) {
      if (key === 'enter') {
        judgeNavigation(ctx, buffer, win);
        buffer = null;
        inAddressBar = false;
        focusKnown = false;
      } else if (isDelete && mods.size === 0) {
        if (buffer && !buffer.unseen) buffer = { typed: buffer.typed.slice(0, -1) };
      } else if (key === 'escape') {
        buffer = { typed: '' };
      } else if (key === 'tab') {
        buffer = null;
        inAddressBar = false;
        focusKnown = false;
      } else if (FOCUS_ADDRESS_BAR(combo)) {
        buffer = { typed: '' };
      } else if (key === 'space' && mods.size === 0 && buffer && !buffer.unseen) {
        buffer = { typed: `${buffer.typed} ` };
      } else if (key.length === 1 && !command && !mods.has('alt') && buffer && !buffer.unseen) {
        buffer = { typed: buffer.typed + (mods.has('shift') ? key.toUpperCase() : key) };
      } else if (key !== 'modifier' && key !== 'shift') {
        // Arrows pick suggestions, selections and pastes change the text unseen.
        buffer = { typed: buffer?.typed ?? '', unseen: true };
      }
      continue;
    }

    judgePageOnce();
    if (!ctx.detects) {
      if (key === 'tab') focusKnown = false;
      continue;
    }
    if (key === 'enter' && !command) {
      if (!focusKnown) markUnseen(ctx, 'what Enter would press cannot be seen');
      else judgePress(ctx, 'enter', site, mods.has('shift') || mods.has('alt'));
    } else if (key === 'space' && !command && !mods.has('alt')) {
      if (!focusKnown) markUnseen(ctx, 'what Space would press cannot be seen');
      else judgePress(ctx, 'space', site, false);
    } else if (isDelete) {
      if (!focusKnown || !ctx.sees || obs === null) markUnseen(ctx, 'whether Delete lands in a text field cannot be seen');
      else if (!isTextInput(obs.focused)) addCategory(facts, 'delete');
    } else if (key === 'tab') {
      focusKnown = false;
    }
  }
  // Keys outside the address bar leave no buffer: the focus has moved on since the click.
  facts.addressBar = inAddressBar ? buffer : null;
}

function judgeType(ctx: Context, text: string): void {
  const { input, obs, facts } = ctx;
  const win = placeFocus(ctx, 'the typing');
  const site = siteOf(ctx, win);

  // Rule 1 facts first: a secret anywhere refuses the whole text.
  const secret = findSecret(text, input.secrets);
  const focused = obs?.focused ?? null;
  if (secret !== null) {
    facts.personTypes = {
      rule: 'secret',
      kind: secret.kind,
      field: focused?.label || null,
      why: `the text holds ${SECRET_KIND_LABELS[secret.kind]}`,
    };
  } else if (text.length > 0 && focused?.role === 'password_field') {
    facts.personTypes = { rule: 'password_field', field: focused.label || null, why: 'the text would go into a password field' };
  } else if (
    /\t[^\t\n]*\S/.test(text) &&
    obs?.elements?.some((e) => e.role === 'password_field') === true
  ) {
    facts.personTypes = {
      rule: 'password_field',
      field: null,
      why: 'text after a Tab may land in the password field on screen',
    };
  }

  let inAddressBar = addressBarActive(ctx);
  let buffer: AddressBarBuffer | null = inAddressBar ? (facts.addressBar ?? { typed: '' }) : null;
  let focusKnown = true;
  let pageJudged = false;
  const judgePageOnce = (): void => {
    if (!pageJudged && win !== null) placePage(ctx, win, 'the page the text goes to');
    pageJudged = true;
  };
  if (!inAddressBar) judgePageOnce();
  if (facts.personTypes !== null && inAddressBar) {
    // The person types it: the engine will not see what the address bar then holds.
    facts.addressBar = { typed: buffer?.typed ?? '', unseen: true };
    return;
  }

  // Typed text is judged a line at a time: each line break is an Enter press in the context
  // it lands in; a Tab moves the focus somewhere that cannot be seen.
  let line = '';
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (ch === '\r' || ch === '\n') {
      if (ch === '\r' && text[i + 1] === '\n') i++;
      if (inAddressBar) {
        if (buffer && !buffer.unseen) buffer = { typed: buffer.typed + line };
        judgeNavigation(ctx, buffer, win);
        buffer = null;
        inAddressBar = false;
        focusKnown = false;
      } else if (ctx.detects) {
        judgePageOnce();
        if (!focusKnown) markUnseen(ctx, 'what a typed line break would press cannot be seen');
        else judgePress(ctx, 'enter', site, false);
        // A line break in a text area stays there; anywhere else it may submit and move on.
        if (focused?.role !== 'text_area') focusKnown = false;
      }
      line = '';
    } else if (ch === '\t') {
      if (inAddressBar) {
        buffer = null;
        inAddressBar = false;
      }
      judgePageOnce();
      focusKnown = false;
      line = '';
    } else if (inAddressBar) {
      line += ch;
    } else if (ch === ' ' && ctx.detects) {
      // A space typed outside a text field presses what has the focus.
      if (!focusKnown) markUnseen(ctx, 'what a typed space would press cannot be seen');
      else if (!isTextInput(focused)) judgePress(ctx, 'space', site, false);
    }
  }
  if (inAddressBar && buffer && !buffer.unseen) buffer = { typed: buffer.typed + line };
  facts.addressBar = inAddressBar ? buffer : null;
}

// ---------------------------------------------------------------------------------------------
// Rules, in the spec's order

function judgeRules(input: JudgeInput): Decision {
  const g = input.guardrails;
  const hasAppRules = g.apps.allow.length > 0 || g.apps.block.length > 0;
  const hasSiteRules = g.sites.allow.length > 0 || g.sites.block.length > 0;
  const hasCategoryRules = g.confirm.length > 0 || g.block.length > 0;
  const facts = gatherFacts(input);
  const firstApp = facts.apps.find((a) => a.app !== null)?.app ?? null;
  const firstSite = facts.pages.find((p) => p.page.kind === 'site')?.page as { host: string } | undefined;
  const base = {
    category: facts.categories[0] ?? null,
    app: firstApp,
    site: firstSite?.host ?? null,
    addressBar: facts.addressBar,
  };
  const decide = (verdict: Verdict, rule: GuardrailRule, reason: string, extra: Partial<Decision> = {}): Decision => ({
    verdict,
    rule,
    ...base,
    reason,
    ...extra,
  });

  if (facts.passive) {
    return decide('run', 'allowed', 'Taking a screenshot or waiting does not act on the computer.');
  }

  // 0. The Deskhand app's own window, where the person answers and approves: never, whatever the
  //    guardrails and the mode (a step there could approve the agent's own request).
  for (const t of facts.apps) {
    if (t.app !== null && appKey(t.app) === DESKHAND_APP) {
      return decide(
        'block',
        'own_window',
        `Blocked: ${t.part} lands on the Deskhand app's own window, where the person answers and approves; the agent never acts there.`,
        { app: t.app },
      );
    }
  }

  // 1. Secrets and password fields: the person types.
  if (facts.personTypes !== null) {
    const pt = facts.personTypes;
    return decide(
      'person_types',
      pt.rule,
      `Not typed because ${pt.why}; the person at the computer is asked to type it.`,
      { field: pt.field, ...(pt.kind ? { secret_kind: pt.kind } : {}) },
    );
  }

  // 2. Block lists, and steps the rules cannot place.
  for (const t of facts.apps) {
    if (t.app !== null && appRuleIn(g.apps.block, t.app) !== null) {
      return decide('block', 'apps.block', `Blocked: ${t.part} lands in ${t.app}, which is on this agent's blocked apps.`, { app: t.app });
    }
  }
  for (const t of facts.pages) {
    if (t.page.kind === 'site') {
      const rule = siteRuleIn(g.sites.block, t.page.host);
      if (rule !== null) {
        const what = t.nav ? `${t.part} goes to ${t.page.host}` : `${t.part} is on ${t.page.host}`;
        return decide('block', 'sites.block', `Blocked: ${what}, which this agent's blocked sites cover (${rule}).`, { site: t.page.host });
      }
    }
  }
  if (hasAppRules) {
    for (const t of facts.apps) {
      if (t.app === null) {
        return decide('block', 'unplaceable_app', `Refused: this agent has app rules, and ${t.part} cannot be placed in an app because ${t.why}.`);
      }
    }
  }
  if (hasSiteRules) {
    for (const t of facts.pages) {
      if (t.page.kind === 'unreadable') {
        const what = t.nav ? `where ${t.part} leads` : t.part;
        return decide('block', 'unreadable_site', `Refused: this agent has site rules, and ${what} cannot be judged because ${t.page.why}.`, { site: null });
      }
    }
  }

  // 3. Allow lists.
  if (g.apps.allow.length > 0) {
    for (const t of facts.apps) {
      if (t.app === null || t.system || appRuleIn(g.apps.allow, t.app) !== null) continue;
      return decide('block', 'apps.allow', `Blocked: ${t.part} lands in ${t.app}, which is not on this agent's allowed apps.`, { app: t.app });
    }
  }
  if (g.sites.allow.length > 0) {
    for (const t of facts.pages) {
      if (t.page.kind !== 'site' || siteRuleIn(g.sites.allow, t.page.host) !== null) continue;
      const what = t.nav ? `${t.part} goes to ${t.page.host}` : `${t.part} is on ${t.page.host}`;
      return decide('block', 'sites.allow', `Blocked: ${what}, which is not on this agent's allowed sites.`, { site: t.page.host });
    }
  }

  // 4. Block categories.
  const blocked = facts.categories.find((c) => g.block.includes(c));
  if (blocked !== undefined) {
    return decide('block', 'block_category', `Blocked: this step would ${CATEGORY_VERBS[blocked]}, which this agent never does.`, { category: blocked });
  }

  // 5. Confirm categories, and acting steps that cannot be seen.
  const confirmed = facts.categories.find((c) => g.confirm.includes(c));
  if (confirmed !== undefined) {
    return decide('confirm', 'confirm_category', `Needs approval: this step would ${CATEGORY_VERBS[confirmed]}.`, { category: confirmed });
  }
  if (facts.unseen !== null && hasCategoryRules) {
    return decide('confirm', 'unseen_action', `Needs approval: ${facts.unseen}, and this agent asks before some kinds of steps.`);
  }

  // 6. Everything else runs.
  return decide('run', 'allowed', 'Allowed by this agent\'s guardrails.');
}

const CATEGORY_VERBS: Readonly<Record<GuardrailCategory, string>> = {
  purchase: 'buy or pay for something (purchase)',
  send: 'send, post or submit something (send)',
  delete: 'delete or remove something (delete)',
  install: 'install software (install)',
  security: 'change security or account settings (security)',
  terms: 'accept terms or an agreement (terms)',
};

// ---------------------------------------------------------------------------------------------
// Device

function isMac(device: DeviceInfo): boolean {
  const os = device.os.toLowerCase();
  return os === 'mac' || os === 'macos' || os === 'darwin' || os === 'osx';
}

/** `linux`, or a Linux distribution's name, by the one rule of shared/desktop/os.ts. */
function isLinux(device: DeviceInfo): boolean {
  return desktopOs(device.os) === 'linux';
}

/**
 * Whether windows reported `system: true` stay usable under `apps.allow`: on a Mac (menu bar,
 * Dock, Control Center, Spotlight) and on Linux (docks, panels, the desktop, the session's
 * launcher), which show the system's own controls. Not on Windows, where the taskbar, file
 * explorer and the Run box are one app, `explorer.exe`, that opens and deletes files.
 */
function systemPartsExempt(device: DeviceInfo): boolean {
  return isMac(device) || isLinux(device);
}

/** The first Mac app version that detects categories (the README and docs/guardrails.md say it). */
export const CATEGORY_DETECTION_SINCE = [1, 0, 20] as const;

/** Category detection: a Mac app 1.0.20 or later, or any app that reports element info (the Linux app with AT-SPI). */
function detectsCategories(device: DeviceInfo, capabilities: Capabilities): boolean {
  return capabilities.element_info || (isMac(device) && versionAtLeast(device.app_version, CATEGORY_DETECTION_SINCE));
}

/**
 * Whether the app detects categories once it can see the screen, for the start check of a
 * computer that cannot: a Mac app 1.0.20 or later, and the Linux app (through AT-SPI).
 */
function appDetectsCategories(device: DeviceInfo): boolean {
  return isLinux(device) || (isMac(device) && versionAtLeast(device.app_version, CATEGORY_DETECTION_SINCE));
}

/**
 * Compares dotted versions numerically, as semver does: a pre-release (`1.0.20-beta`) comes
 * before its release, and an unreadable version counts as older than any.
 */
export function versionAtLeast(version: string, min: readonly number[]): boolean {
  const m = /^v?(\d+(?:\.\d+)*)(-[0-9A-Za-z.-]+)?/.exec(version.trim());
  if (!m) return false;
  const parts = m[1].split('.').map(Number);
  for (let i = 0; i < min.length; i++) {
    const p = parts[i] ?? 0;
    if (p !== min[i]) return p > min[i];
  }
  const longer = parts.slice(min.length).some((p) => p > 0);
  return longer || m[2] === undefined;
}
