import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * Signing of outbound webhook and HTTP-tool requests (spec: Authentication, item 6).
 *
 * Header value: `t=<unix seconds>,v1=<hex>`, where `v1` is the hex HMAC-SHA256 of
 * `<t>.<raw body>` keyed with the whole secret string, `whsec_` prefix included. This is the
 * scheme Stripe uses, so `stripe.webhooks.constructEvent` verifies our requests as well.
 */

/** Name of the request header that carries the signature. */
export const SIGNATURE_HEADER = 'Service-Signature';

/** Default prefix of secrets made by {@link generateSecret}. */
export const SECRET_PREFIX = 'whsec_';

/** How far `t` may be from the receiver's clock, either way (spec: Limits, 5 minutes). */
export const DEFAULT_TOLERANCE_SECONDS = 300;

/** The only signature scheme; other schemes in a header are ignored, as Stripe does. */
const SCHEME = 'v1';

/** Longer headers are refused before any parsing work; ours are about 80 characters. */
const MAX_HEADER_LENGTH = 4096;

/** SHA-256 output; a `v1` value of any other length cannot match. */
const DIGEST_BYTES = 32;

const HEX_DIGEST = /^[0-9a-f]{64}$/i;
const UNIX_SECONDS = /^\d{1,12}$/;

/** Why {@link checkSignature} refused a request. */
export type SignatureFailure =
  | 'malformed_header'
  | 'no_signature'
  | 'timestamp_out_of_tolerance'
  | 'signature_mismatch';

export type SignatureCheck =
  | { ok: true; timestamp: number }
  | { ok: false; reason: SignatureFailure };

export interface VerifyOptions {
  /** Largest allowed distance between `t` and `now`, in seconds, in either direction. Default 300. */
  toleranceSeconds?: number;
  /** The receiver's clock as Unix time in SECONDS (not milliseconds). Default: the system clock. */
  now?: number;
}

function computeDigest(rawBody: string | Buffer, secret: string, timestamp: number): Buffer {
  // The body is hashed as the exact bytes received: a Buffer is never re-decoded as text.
  return createHmac('sha256', secret).update(`${timestamp}.`).update(rawBody).digest();
}

function assertSecret(secret: string): void {
  if (typeof secret !== 'string' || secret.length === 0) {
    throw new TypeError('a signing secret must be a non-empty string');
  }
}

/**
 * Signs a raw request body.
 *
 * @param rawBody - the exact bytes that will be sent (a string is taken as UTF-8)
 * @param secret - the whole secret, prefix included (`whsec_...`)
 * @param timestampSeconds - Unix time in seconds; defaults to now. Retries sign afresh.
 * @returns the value for the {@link SIGNATURE_HEADER} header: `t=<unix>,v1=<hex>`
 */
export function signPayload(rawBody: string | Buffer, secret: string, timestampSeconds?: number): string {
  assertSecret(secret);
  const timestamp = timestampSeconds ?? Math.floor(Date.now() / 1000);
  if (!Number.isSafeInteger(timestamp) || timestamp < 0) {
    throw new TypeError('timestampSeconds must be a non-negative integer number of seconds');
  }
  return `t=${timestamp},${SCHEME}=${computeDigest(rawBody, secret, timestamp).toString('hex')}`;
}

/**
 * Parses `t=...,v1=...[,v1=...]`. Exactly one `t` is required; unknown keys are ignored so a
 * future scheme can be sent beside `v1`. Returns null when the header cannot be trusted as a
 * whole (duplicate or non-numeric `t`, items without `=`).
 */
function parseHeader(header: string): { timestamp: number; signatures: string[] } | null {
  let timestamp: number | null = null;
  const signatures: string[] = [];
  for (const item of header.split(',')) {
    const eq = item.indexOf('=');
    if (eq <= 0) return null;
    const key = item.slice(0, eq).trim();
    const value = item.slice(eq + 1).trim();
    if (key === 't') {
      if (timestamp !== null || !UNIX_SECONDS.test(value)) return null;
      timestamp = Number(value);
    } else if (key === SCHEME) {
      signatures.push(value);
    }
  }
  return timestamp === null ? null : { timestamp, signatures };
}

/**
 * Verifies a signature header and says why it failed. Prefer {@link verifySignature} for a
 * plain yes/no; this form is for logging and tests.
 *
 * Checks, in order: the header parses (one `t`, digits only); at least one `v1` value is
 * present; `t` is within `toleranceSeconds` of `now` in either direction (a future `t` is as
 * suspect as an old one); some `v1` equals the expected HMAC, compared in constant time.
 */
export function checkSignature(
  rawBody: string | Buffer,
  header: string | null | undefined,
  secret: string,
  options: VerifyOptions = {},
): SignatureCheck {
  assertSecret(secret);
  const tolerance = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  if (!Number.isFinite(tolerance) || tolerance < 0) {
    throw new TypeError('toleranceSeconds must be a finite number >= 0');
  }
  if (typeof header !== 'string' || header.length === 0 || header.length > MAX_HEADER_LENGTH) {
    return { ok: false, reason: 'malformed_header' };
  }
  const parsed = parseHeader(header);
  if (parsed === null) return { ok: false, reason: 'malformed_header' };
  if (parsed.signatures.length === 0) return { ok: false, reason: 'no_signature' };

  const now = options.now ?? Math.floor(Date.now() / 1000);
  if (Math.abs(now - parsed.timestamp) > tolerance) {
    return { ok: false, reason: 'timestamp_out_of_tolerance' };
  }

  const expected = computeDigest(rawBody, secret, parsed.timestamp);
  let matched = false;
  for (const candidate of parsed.signatures) {
    // Only well-formed 64-hex values are compared, so both buffers are always 32 bytes long;
    // every candidate is compared (no early exit) to keep the time independent of which matched.
    if (!HEX_DIGEST.test(candidate)) continue;
    const given = Buffer.from(candidate, 'hex');
    if (given.length === DIGEST_BYTES && timingSafeEqual(given, expected)) matched = true;
  }
  return matched ? { ok: true, timestamp: parsed.timestamp } : { ok: false, reason: 'signature_mismatch' };
}

/**
 * Verifies a `Service-Signature` header against the raw request body. For receivers: pass the
 * body exactly as received (before JSON parsing) and the header value.
 *
 * Returns a boolean on purpose: a result object would be truthy even when invalid, which makes
 * `if (!verify(...))` silently wrong. Use {@link checkSignature} to learn the reason.
 *
 * @param rawBody - raw request body bytes (string taken as UTF-8)
 * @param header - the header value, `t=<unix>,v1=<hex>[,v1=<hex>...]`
 * @param secret - the whole secret, prefix included
 * @param options - `toleranceSeconds` (default 300, applied both ways), `now` (Unix SECONDS)
 */
export function verifySignature(
  rawBody: string | Buffer,
  header: string | null | undefined,
  secret: string,
  options: VerifyOptions = {},
): boolean {
  return checkSignature(rawBody, header, secret, options).ok;
}

/**
 * Makes a new signing secret: the prefix followed by 256 random bits in base64url (43 chars).
 */
export function generateSecret(prefix: string = SECRET_PREFIX): string {
  return `${prefix}${randomBytes(32).toString('base64url')}`;
}
