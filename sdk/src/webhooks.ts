/**
 * Webhook signature verification, for a receiver in any project:
 * `import { verifyWebhook } from '@deskhand/sdk/webhooks'` (no client code comes with it).
 *
 * Deskhand signs each webhook (and HTTP tool call) with the header
 * `Service-Signature: t=<unix seconds>,v1=<hex>`, where `v1` is the hex HMAC-SHA256 of
 * `<t>.<raw body>` keyed with the whole secret, `whsec_` prefix included. A receiver reads the raw
 * body before parsing it, accepts any one matching `v1` (several may be sent, e.g. while a secret
 * rotates), compares in constant time, and refuses a `t` more than 5 minutes from its clock.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { components } from './generated/openapi.js';

/** The header Deskhand puts its signature in. */
export const SIGNATURE_HEADER = 'Service-Signature';

/** How far `t` may be from the receiver's clock, either way, by default: 5 minutes. */
export const DEFAULT_TOLERANCE_SECONDS = 300;

const MAX_HEADER_LENGTH = 4096;
const HEX_DIGEST = /^[0-9a-f]{64}$/i;
const UNIX_SECONDS = /^\d{1,12}$/;

/** Why a signature was refused. */
export type WebhookFailure = 'malformed_header' | 'no_signature' | 'timestamp_out_of_tolerance' | 'signature_mismatch';

export type WebhookCheck = { ok: true; timestamp: number } | { ok: false; reason: WebhookFailure };

export interface VerifyWebhookOptions {
  /** Largest allowed distance between `t` and `now`, in seconds, either way. Default 300. */
  toleranceSeconds?: number;
  /** The receiver's clock as Unix time in SECONDS. Default: the system clock. */
  now?: number;
}

/** A header as a server framework hands it over (Node gives an array for a repeated header). */
export type SignatureHeader = string | readonly string[] | null | undefined;

/** The raw body exactly as received: a string (taken as UTF-8) or the bytes (a Buffer is a Uint8Array). */
export type RawBody = string | Uint8Array;

function parseHeader(header: string): { timestamp: number; signatures: string[] } | null {
  let timestamp: number | null = null;
  const signatures: string[] = [];
  for (const item of header.split(',')) {
    const eq = item.indexOf('=');
    if (eq <= 0) return null;
    const key = item.slice(0, eq).trim();
    const value = item.slice(eq + 1).trim();
    if (key === 't') {
      // A second `t` could smuggle a fresh timestamp past a stale signature: refuse the header.
      if (timestamp !== null || !UNIX_SECONDS.test(value)) return null;
      timestamp = Number(value);
    } else if (key === 'v1') {
      signatures.push(value);
    }
    // Other schemes are ignored, so the service can add one beside v1.
  }
  return timestamp === null ? null : { timestamp, signatures };
}

/**
 * Verifies a signature and says why it failed, for logs. Checks, in order: the header parses
 * (exactly one numeric `t`); it has a `v1`; `t` is within the tolerance of `now` either way;
 * some `v1` equals the HMAC, compared in constant time.
 */
export function checkWebhook(rawBody: RawBody, header: SignatureHeader, secret: string, options: VerifyWebhookOptions = {}): WebhookCheck {
  if (typeof secret !== 'string' || secret.length === 0) throw new TypeError('secret must be the webhook secret (whsec_...)');
  const tolerance = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  if (!Number.isFinite(tolerance) || tolerance < 0) throw new TypeError('toleranceSeconds must be a finite number >= 0');
  const value = Array.isArray(header) ? (header.length === 1 ? header[0] : undefined) : header;
  if (typeof value !== 'string' || value.length === 0 || value.length > MAX_HEADER_LENGTH) return { ok: false, reason: 'malformed_header' };
  const parsed = parseHeader(value);
  if (parsed === null) return { ok: false, reason: 'malformed_header' };
  if (parsed.signatures.length === 0) return { ok: false, reason: 'no_signature' };
  const now = options.now ?? Math.floor(Date.now() / 1000);
  if (Math.abs(now - parsed.timestamp) > tolerance) return { ok: false, reason: 'timestamp_out_of_tolerance' };

  const expected = createHmac('sha256', secret).update(`${parsed.timestamp}.`).update(rawBody).digest();
  let matched = false;
  for (const candidate of parsed.signatures) {
    // Only 64-hex values are compared, so both sides are 32 bytes; no early exit on a match.
    if (!HEX_DIGEST.test(candidate)) continue;
    if (timingSafeEqual(Buffer.from(candidate, 'hex'), expected)) matched = true;
  }
  return matched ? { ok: true, timestamp: parsed.timestamp } : { ok: false, reason: 'signature_mismatch' };
}

/**
 * True when `header` is a valid Deskhand signature of `rawBody` with `secret`. Pass the body
 * exactly as received, before any JSON parsing. Returns a boolean (not a result object, which
 * would be truthy when invalid); {@link checkWebhook} says why it failed.
 */
export function verifyWebhook(rawBody: RawBody, header: SignatureHeader, secret: string, options: VerifyWebhookOptions = {}): boolean {
  return checkWebhook(rawBody, header, secret, options).ok;
}

/** Thrown by {@link constructWebhookEvent} for a body whose signature does not verify. */
export class WebhookSignatureError extends Error {
  override readonly name = 'WebhookSignatureError';
  constructor(readonly reason: WebhookFailure) {
    super(`webhook signature refused: ${reason}`);
  }
}

/** The event types a webhook can carry (spec: Event types). */
export type WebhookEventType =
  | 'session.connected'
  | 'session.disconnected'
  | 'task.started'
  | 'task.waiting_for_user'
  | 'task.question_answered'
  | 'task.waiting_for_approval'
  | 'task.approval_decided'
  | 'task.completed'
  | 'task.failed'
  | 'task.stopped';

/** A webhook's JSON body. Dedupe by `id` (retries and redeliveries send the same one). */
export interface WebhookEvent {
  /** `evt_<id>`, the same on every retry. */
  id: string;
  /** A {@link WebhookEventType}; take one you do not know as something to ignore. */
  type: WebhookEventType | (string & {});
  created_at: string;
  org_id: string;
  data: {
    task?: components['schemas']['Task'];
    session?: components['schemas']['Session'];
    answer?: { question_id: string; answer: string; answered_by: 'customer' | 'operator' };
    decision?: { approval_id: string; decision: 'approve' | 'deny'; note: string | null; answered_by: 'customer' | 'operator' | 'timeout' };
    [other: string]: unknown;
  };
}

/** Verifies the signature, then parses the body: the event, or a {@link WebhookSignatureError}. */
export function constructWebhookEvent(rawBody: RawBody, header: SignatureHeader, secret: string, options: VerifyWebhookOptions = {}): WebhookEvent {
  const check = checkWebhook(rawBody, header, secret, options);
  if (!check.ok) throw new WebhookSignatureError(check.reason);
  return JSON.parse(typeof rawBody === 'string' ? rawBody : new TextDecoder().decode(rawBody)) as WebhookEvent;
}

/** The receiver's side of webhooks, as one object: `webhooks.verify(rawBody, header, secret)`. */
export const webhooks = Object.freeze({
  verify: verifyWebhook,
  check: checkWebhook,
  constructEvent: constructWebhookEvent,
  SIGNATURE_HEADER,
});
