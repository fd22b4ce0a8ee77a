import { randomInt } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Stripe from 'stripe';

/**
 * A local stand-in for the part of Stripe's HTTP API that billing uses: customers,
 * setup_intents and payment_intents (off-session, confirmed at once), with Stripe's
 * `Idempotency-Key` semantics and a switch to decline the next payment the way Stripe does
 * (402, a `card_error` carrying the failed PaymentIntent). The service reaches it through the
 * SDK's host and port (`STRIPE_API_BASE`); `webhook` sends events signed with Stripe's own
 * scheme (the SDK's test header), as Stripe would.
 */
export interface StripeStandIn {
  url: string;
  /** Every request: method, path, form fields. */
  requests: Array<{ method: string; path: string; fields: Record<string, string> }>;
  /** Payment intents made, by id. */
  paymentIntents: Map<string, Record<string, unknown>>;
  /** The next payment intent is declined (card_declined). */
  declineNext(): void;
  close(): Promise<void>;
}

export async function startStripeStandIn(): Promise<StripeStandIn> {
  const requests: StripeStandIn['requests'] = [];
  const paymentIntents = new Map<string, Record<string, unknown>>();
  const idempotent = new Map<string, { status: number; body: unknown }>();
  let declines = 0;
  let counter = 0;
  // Unique across stand-ins, as Stripe's ids are: every test file's stand-in writes to the run's one database.
  const run = String(randomInt(100_000_000)).padStart(8, '0');
  const next = (prefix: string) => `${prefix}_${run}${(++counter).toString().padStart(6, '0')}`;

  function handle(method: string, path: string, fields: Record<string, string>): { status: number; body: unknown } {
    const metadata = Object.fromEntries(Object.entries(fields).filter(([key]) => key.startsWith('metadata[')).map(([key, value]) => [key.slice(9, -1), value]));
    if (method === 'POST' && path === '/v1/customers') return { status: 200, body: { id: next('cus'), object: 'customer', metadata } };
    if (method === 'POST' && path === '/v1/setup_intents') {
      const id = next('seti');
      return { status: 200, body: { id, object: 'setup_intent', client_secret: `${id}_secret_standin`, customer: fields.customer ?? null, usage: fields.usage ?? 'off_session', status: 'requires_payment_method', metadata } };
    }
    if (method === 'POST' && path === '/v1/payment_intents') {
      const id = next('pi');
      const declined = declines > 0;
      if (declined) declines--;
      const intent = {
        id,
        object: 'payment_intent',
        amount: Number(fields.amount),
        amount_received: declined ? 0 : Number(fields.amount),
        currency: fields.currency,
        customer: fields.customer ?? null,
        payment_method: fields.payment_method ?? null,
        status: declined ? 'requires_payment_method' : 'succeeded',
        metadata,
        last_payment_error: declined ? { type: 'card_error', code: 'card_declined', message: 'Your card was declined.' } : null,
      };
      paymentIntents.set(id, intent);
      if (declined) {
        return { status: 402, body: { error: { type: 'card_error', code: 'card_declined', decline_code: 'generic_decline', message: 'Your card was declined.', payment_intent: intent } } };
      }
      return { status: 200, body: intent };
    }
    return { status: 404, body: { error: { type: 'invalid_request_error', message: `Unrecognized request URL (${method}: ${path}).` } } };
  }

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const fields = Object.fromEntries(new URLSearchParams(Buffer.concat(chunks).toString('utf8')));
      const path = (req.url ?? '/').split('?')[0]!;
      requests.push({ method: req.method ?? 'GET', path, fields });
      const authorized = (req.headers.authorization ?? '').startsWith('Bearer sk_test_');
      const key = req.headers['idempotency-key'];
      let answer: { status: number; body: unknown };
      if (!authorized) answer = { status: 401, body: { error: { type: 'invalid_request_error', message: 'Invalid API Key provided' } } };
      else if (typeof key === 'string' && idempotent.has(`${req.method} ${path} ${key}`)) answer = idempotent.get(`${req.method} ${path} ${key}`)!;
      else {
        answer = handle(req.method ?? 'GET', path, fields);
        if (typeof key === 'string') idempotent.set(`${req.method} ${path} ${key}`, answer);
      }
      res.writeHead(answer.status, { 'content-type': 'application/json', 'request-id': `req_${counter}` }).end(JSON.stringify(answer.body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    paymentIntents,
    declineNext: () => {
      declines++;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const offline = new Stripe('sk_test_offline_only');
let eventCounter = 0;

/** A Stripe event envelope of `type` about `object`, as Stripe sends it. */
export function stripeEvent(type: string, object: Record<string, unknown>): Record<string, unknown> {
  return { id: `evt_standin_${Date.now()}_${++eventCounter}`, object: 'event', type, api_version: '2025-01-01', created: Math.floor(Date.now() / 1000), data: { object }, livemode: false };
}

/** POSTs `event` to the service's provider webhook, signed with `secret` by Stripe's scheme (or with `signature` as given). */
export async function sendStripeWebhook(baseUrl: string, event: Record<string, unknown>, secret: string, signature?: string): Promise<{ status: number; body: any }> {
  const payload = JSON.stringify(event);
  const header = signature ?? offline.webhooks.generateTestHeaderString({ payload, secret });
  const response = await fetch(`${baseUrl}/billing/stripe/webhook`, { method: 'POST', headers: { 'content-type': 'application/json', 'stripe-signature': header }, body: payload });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : null };
}
