/**
 * The secret detector: decides whether text the agent wants to type looks like a secret, so
 * that the guardrail engine hands it to the person instead (service rule 1 of the spec's
 * evaluation order). It is a pure function over the text; it never logs or returns the secret,
 * only what kind of secret it found and where.
 *
 * Five detectors run over the whole text and the earliest match wins:
 *
 * 1. Explicit values: strings the caller marks secret (a test case's `{ secret }` facts),
 *    matched exactly, anywhere in the text.
 * 2. Well-known token formats: PEM private keys, AWS access key ids, GitHub, Slack, Stripe,
 *    OpenAI and Anthropic keys, Google API keys, JWTs, Deskhand's own `dh_live_`/`dh_test_`
 *    keys and `whsec_` signing secrets, and URLs carrying a password (`https://user:pw@host`).
 * 3. Labelled values: `password: …`, `api_key=…`, `aws_secret_access_key = …` and the like,
 *    when the value holds a digit or a symbol (so "Password: Required" stays ordinary text).
 * 4. Payment card numbers: 13 to 19 digits, written together or in the usual groups, starting
 *    with a major network's digit (2 to 6) and passing the Luhn check.
 * 5. High-entropy strings: long runs that look machine-made. See {@link HIGH_ENTROPY} for the
 *    thresholds and why ordinary words, identifiers, URLs and emails stay below them.
 *
 * docs/guardrails.md describes the choices in prose.
 */

export type SecretKind =
  | 'explicit'
  | 'private_key'
  | 'aws_access_key'
  | 'github_token'
  | 'slack_token'
  | 'stripe_key'
  | 'anthropic_key'
  | 'openai_key'
  | 'google_api_key'
  | 'jwt'
  | 'deskhand_key'
  | 'webhook_secret'
  | 'url_credentials'
  | 'labelled_secret'
  | 'card_number'
  | 'high_entropy';

/** Where a secret starts in the text and how long it is; never the secret itself. */
export interface SecretMatch {
  kind: SecretKind;
  /** UTF-16 offset of the first character of the secret in the text. */
  index: number;
  /** Length of the matched secret in UTF-16 units. */
  length: number;
}

/** People-readable names of the kinds, for reasons shown to the agent and in history. */
export const SECRET_KIND_LABELS: Readonly<Record<SecretKind, string>> = Object.freeze({
  explicit: 'a value marked secret',
  private_key: 'a private key',
  aws_access_key: 'an AWS access key',
  github_token: 'a GitHub token',
  slack_token: 'a Slack token',
  stripe_key: 'a Stripe secret key',
  anthropic_key: 'an Anthropic API key',
  openai_key: 'an OpenAI API key',
  google_api_key: 'a Google API key',
  jwt: 'a JSON Web Token',
  deskhand_key: 'a Deskhand API key',
  webhook_secret: 'a webhook signing secret',
  url_credentials: 'a password inside an address',
  labelled_secret: 'a value labelled as a password, secret, token or key',
  card_number: 'a payment card number',
  high_entropy: 'a random-looking key or password',
});

interface TokenPattern {
  kind: SecretKind;
  /** Non-global: `exec` returns the first match. */
  pattern: RegExp;
  /** Extra check on the match, to keep look-alike words out. */
  accept?: (match: string) => boolean;
}

// Lookbehinds instead of \b: several formats start or end with `_` or `-`, which \b treats
// inconsistently, and a token glued to a longer word is not that token.
const TOKEN_PATTERNS: readonly TokenPattern[] = [
  { kind: 'private_key', pattern: /-----BEGIN (?:[A-Z0-9]+ ){0,3}PRIVATE KEY(?: BLOCK)?-----/ },
  {
    kind: 'aws_access_key',
    pattern: /(?<![A-Za-z0-9])(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|APKA|AROA)[A-Z0-9]{16}(?![A-Za-z0-9])/,
  },
  {
    kind: 'github_token',
    pattern: /(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{30,251}|github_pat_[A-Za-z0-9_]{22,251})(?![A-Za-z0-9_])/,
  },
  { kind: 'slack_token', pattern: /(?<![A-Za-z0-9])xox[abposre]-[A-Za-z0-9-]{10,}/ },
  { kind: 'stripe_key', pattern: /(?<![A-Za-z0-9_])(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{10,}/ },
  { kind: 'webhook_secret', pattern: /(?<![A-Za-z0-9_])whsec_[A-Za-z0-9+/=_-]{10,}/ },
  { kind: 'deskhand_key', pattern: /(?<![A-Za-z0-9_])dh_(?:live|test)_[A-Za-z0-9_-]{8,}/ },
  { kind: 'anthropic_key', pattern: /(?<![A-Za-z0-9_-])sk-ant-[A-Za-z0-9_-]{20,}/ },
  {
    kind: 'openai_key',
    pattern: /(?<![A-Za-z0-9_-])sk-(?!ant-)[A-Za-z0-9_-]{20,}/,
    // Real keys are random base62: they always hold a digit and an upper-case letter, which
    // keeps words such as "sk-learn-preprocessing-guide" out.
    accept: (m) => /[0-9]/.test(m) && /[A-Z]/.test(m),
  },
  { kind: 'google_api_key', pattern: /(?<![A-Za-z0-9_-])AIza[0-9A-Za-z_-]{35}(?![A-Za-z0-9_-])/ },
  { kind: 'jwt', pattern: /(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*/ },
  { kind: 'url_credentials', pattern: /[a-z][a-z0-9+.-]*:\/\/[^\s/?#@:]+:[^\s/?#@]+@[^\s/?#@]/i },
];

/**
 * Thresholds of the high-entropy detector.
 *
 * A candidate is a run of base64/base64url characters (letters, digits, `+`, `/`, `_`, `-`,
 * with `=` padding only at its end) of at least `minLength` characters that holds an
 * upper-case letter, a lower-case letter and a digit, or a run of at least `minHexLength`
 * hexadecimal characters holding both digits and letters. Words never qualify (no digits),
 * nor do snake_case or SHOUTING identifiers (one case only), UUIDs (hex groups of at most 12)
 * or dates and phone numbers (too short, no letters).
 *
 * Its Shannon entropy in bits per character, H = -Σ p·log2 p over the characters of the run,
 * must then reach a threshold that grows with the run's length, because a short string cannot
 * have high entropy however random it is (at most log2(n) bits for n distinct characters):
 * `threshold(n) = min(maxBits, log2(n) - slack)`. With the values below a random 20-character
 * base62 string scores about 4.0 (threshold 3.42), a 40-character one about 4.8 (4.12), while
 * 99% of random strings clear it.
 *
 * Entropy alone cannot tell `TheQuickBrownFox42JumpsOver` (4.46 bits) from a random string, so
 * a second measure looks at how the run is made: split it into segments (a capitalised or
 * lower-case word, an upper-case run, a digit run), and take the mean segment length. Names
 * made of words have long segments (`MyDocumentVersion2Final`: 4.6, `getElementById2AndMore`:
 * 3.1); random strings change character class every other character (median 1.8 to 1.9 at
 * every length). A run counts as random below `maxMeanSegment` (2.75), which lets through about
 * 3% of random 20-character strings, 1% at 32 and 0.2% at 64, and flags product codes such as
 * `MacBookPro16-M3Max-2023` (2.6), a price paid knowingly: the person then types it.
 *
 * Hex runs have 16 symbols, so their ceiling is 4 bits: random 32 or 40 hex digits score 3.6 to
 * 3.9, against `hexThreshold`. This flags full commit hashes and checksums too (they are long
 * random hex); they are rarely typed and the person can type them.
 *
 * Web addresses are read as addresses: the host and path are not checked for entropy (document
 * ids in paths are not secrets), the query values, fragment and any password are.
 * Email addresses are skipped whole.
 */
export const HIGH_ENTROPY = Object.freeze({
  minLength: 20,
  minHexLength: 32,
  slack: 0.9,
  maxBits: 4.5,
  maxMeanSegment: 2.75,
  hexThreshold: 3.3,
});

/**
 * Finds the first thing in `text` that looks like a secret.
 *
 * @param text what the agent wants to type.
 * @param extra values marked secret by the caller (test case facts); matched exactly. Empty
 *   strings are ignored.
 * @returns the kind and position of the earliest secret, or null when the text holds none.
 */
export function findSecret(text: string, extra?: readonly string[]): SecretMatch | null {
  if (typeof text !== 'string' || text.length === 0) return null;
  let best: SecretMatch | null = null;
  const consider = (found: SecretMatch | null): void => {
    if (found && (best === null || found.index < best.index)) best = found;
  };

  if (extra) {
    for (const value of extra) {
      if (typeof value !== 'string' || value.length === 0) continue;
      const index = text.indexOf(value);
      if (index >= 0) consider({ kind: 'explicit', index, length: value.length });
    }
  }
  for (const { kind, pattern, accept } of TOKEN_PATTERNS) {
    const m = pattern.exec(text);
    if (m && (!accept || accept(m[0]))) consider({ kind, index: m.index, length: m[0].length });
  }
  consider(findLabelledSecret(text));
  consider(findCardNumber(text));
  consider(findHighEntropy(text));
  return best;
}

// ---------------------------------------------------------------------------------------------
// Labelled values

const LABELLED =
  /(?<![A-Za-z])(?:[A-Za-z]+[_-])*(?:password|passwd|passphrase|pwd|secret|token|api[_-]?key|access[_-]?key|private[_-]?key)(?:[_-][A-Za-z]+)*["']?[ \t]*[:=][ \t]*["']?([^\s"',;]{6,})/gi;

function findLabelledSecret(text: string): SecretMatch | null {
  LABELLED.lastIndex = 0;
  for (let m = LABELLED.exec(text); m !== null; m = LABELLED.exec(text)) {
    const value = m[1];
    if (!/[^A-Za-z]/.test(value) || /^(.)\1+$/.test(value)) continue;
    return { kind: 'labelled_secret', index: m.index + m[0].length - value.length, length: value.length };
  }
  return null;
}

// ---------------------------------------------------------------------------------------------
// Card numbers

// 13 to 19 digits: together, in groups of four (the last group may be shorter), or in the
// American Express (4-6-5) and Diners (4-6-4) layouts, with one kind of separator throughout.
const CARD_CANDIDATE = /(?<!\d)(?<!\d[ -])(?:\d{13,19}|\d{4}([ -])\d{4}(?:\1\d{4}){1,2}(?:\1\d{1,4})?|\d{4}([ -])\d{6}\2\d{4,5})(?!\d)/g;

function findCardNumber(text: string): SecretMatch | null {
  CARD_CANDIDATE.lastIndex = 0;
  for (let m = CARD_CANDIDATE.exec(text); m !== null; m = CARD_CANDIDATE.exec(text)) {
    const digits = m[0].replace(/[ -]/g, '');
    if (digits.length < 13 || digits.length > 19) continue;
    // Major networks start with 2 to 6 (Mastercard 2/5, Amex/JCB/Diners 3, Visa 4, Discover
    // and UnionPay 6); order numbers and phone numbers seldom do and pass Luhn 1 in 10.
    if (digits[0] < '2' || digits[0] > '6') continue;
    if (/^(\d)\1+$/.test(digits)) continue;
    if (luhnValid(digits)) return { kind: 'card_number', index: m.index, length: m[0].length };
  }
  return null;
}

/** The Luhn (mod 10) check used by payment cards. */
export function luhnValid(digits: string): boolean {
  let sum = 0;
  let double = false;
  for (let i = digits.length - 1; i >= 0; i--) {
    let d = digits.charCodeAt(i) - 48;
    if (d < 0 || d > 9) return false;
    if (double) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
    double = !double;
  }
  return sum % 10 === 0;
}

// ---------------------------------------------------------------------------------------------
// High entropy

const WORD = /[^\s"'`<>()[\]{},;|]+/g;
const URL_LIKE = /^(?:[a-z][a-z0-9+.-]*:\/\/|www\.)/i;
const BARE_URL = /^[a-z0-9-]+(?:\.[a-z0-9-]+)*\.[a-z]{2,}(?::\d+)?\//i;
const EMAIL = /^[^@\s]+@[a-z0-9-]+(?:\.[a-z0-9-]+)+$/i;
const RUN = /[A-Za-z0-9+/_-]+={0,2}/g;
const HEX_RUN = /[0-9a-fA-F]+/g;

/** Shannon entropy of `s` in bits per character. */
export function shannonEntropy(s: string): number {
  if (s.length === 0) return 0;
  const counts = new Map<number, number>();
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    counts.set(c, (counts.get(c) ?? 0) + 1);
  }
  let h = 0;
  for (const n of counts.values()) {
    const p = n / s.length;
    h -= p * Math.log2(p);
  }
  return h;
}

function findHighEntropy(text: string): SecretMatch | null {
  WORD.lastIndex = 0;
  for (let w = WORD.exec(text); w !== null; w = WORD.exec(text)) {
    const word = w[0];
    if (word.length < HIGH_ENTROPY.minLength) continue;
    if (EMAIL.test(word)) continue;
    let scanFrom = 0;
    if (URL_LIKE.test(word) || BARE_URL.test(word)) {
      // Host and path are an address, not a secret: look at the query and fragment only.
      const q = word.search(/[?#]/);
      if (q < 0) continue;
      scanFrom = q + 1;
    }
    const found = scanRuns(word, scanFrom);
    if (found) return { kind: 'high_entropy', index: w.index + found.index, length: found.length };
  }
  return null;
}

function scanRuns(word: string, from: number): { index: number; length: number } | null {
  RUN.lastIndex = from;
  for (let r = RUN.exec(word); r !== null; r = RUN.exec(word)) {
    const run = r[0].replace(/=+$/, '');
    if (run.length >= HIGH_ENTROPY.minLength && looksRandomBase64(run)) return { index: r.index, length: r[0].length };
  }
  HEX_RUN.lastIndex = from;
  for (let r = HEX_RUN.exec(word); r !== null; r = HEX_RUN.exec(word)) {
    const run = r[0];
    if (run.length >= HIGH_ENTROPY.minHexLength && looksRandomHex(run)) return { index: r.index, length: run.length };
  }
  return null;
}

const SEGMENT = /[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+/g;

function looksRandomBase64(run: string): boolean {
  if (!/[A-Z]/.test(run) || !/[a-z]/.test(run) || !/[0-9]/.test(run)) return false;
  const threshold = Math.min(HIGH_ENTROPY.maxBits, Math.log2(run.length) - HIGH_ENTROPY.slack);
  if (shannonEntropy(run) < threshold) return false;
  return meanSegmentLength(run) < HIGH_ENTROPY.maxMeanSegment;
}

/** Mean length of the word, upper-case and digit segments of `run` (symbols not counted). */
export function meanSegmentLength(run: string): number {
  let segments = 0;
  let chars = 0;
  SEGMENT.lastIndex = 0;
  for (let m = SEGMENT.exec(run); m !== null; m = SEGMENT.exec(run)) {
    segments++;
    chars += m[0].length;
  }
  return segments === 0 ? 0 : chars / segments;
}

function looksRandomHex(run: string): boolean {
  if (!/[0-9]/.test(run) || !/[a-fA-F]/.test(run)) return false;
  return shannonEntropy(run) >= HIGH_ENTROPY.hexThreshold;
}
