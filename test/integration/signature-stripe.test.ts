import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import Stripe from 'stripe';
import { createSafeHttpClient, type SafeHttpClient } from '../../shared/http/safe-post';
import { generateSecret, SIGNATURE_HEADER, signPayload, verifySignature } from '../../shared/http/signature';

// Stripe's library is never asked to talk to Stripe here: only its offline webhook helpers run.
const stripe = new Stripe('sk_test_offline_only');

const ENVELOPE = {
  id: 'evt_01HZX',
  type: 'task.completed',
  created_at: '2025-10-09T08:00:00.000Z',
  org_id: 'org_1',
  data: { task: { id: 'task_1', status: 'completed', result: { summary: 'Done – naïve café ✓' } } },
};

interface Receipt {
  verifiedBy: 'stripe' | 'refused';
  event?: unknown;
  reason?: string;
}

/** A receiver written the way an integrator using stripe-node would write it. */
async function startStripeReceiver(secret: string): Promise<{ url: string; receipts: Receipt[]; close(): Promise<void> }> {
  const receipts: Receipt[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const rawBody = Buffer.concat(chunks);
      // Stripe only needs the header VALUE; the name differs (Service-Signature, not Stripe-Signature).
      const header = req.headers[SIGNATURE_HEADER.toLowerCase()];
      try {
        const event = stripe.webhooks.constructEvent(rawBody, header as string, secret);
        receipts.push({ verifiedBy: 'stripe', event });
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"received":true}');
      } catch (err) {
        receipts.push({ verifiedBy: 'refused', reason: (err as Error).message });
        res.writeHead(400).end('bad signature');
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hooks/deskhand`,
    receipts,
    close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}

describe('signatures interoperate with stripe-node', () => {
  const secret = generateSecret();
  const rawBody = JSON.stringify(ENVELOPE);
  let receiver: Awaited<ReturnType<typeof startStripeReceiver>>;
  let client: SafeHttpClient;

  before(async () => {
    receiver = await startStripeReceiver(secret);
    client = createSafeHttpClient({ allowPrivate: true });
  });

  after(async () => {
    await client.close();
    await receiver.close();
  });

  it('a receiver using stripe.webhooks.constructEvent accepts a request we signed and sent', async () => {
    const result = await client.post(receiver.url, rawBody, {
      headers: { [SIGNATURE_HEADER]: signPayload(rawBody, secret) },
      timeoutMs: 5000,
      maxResponseBytes: 65536,
    });
    expect(result).to.include({ ok: true, status: 200, bodyText: '{"received":true}' });
    expect(receiver.receipts.at(-1)).to.deep.equal({ verifiedBy: 'stripe', event: ENVELOPE });
  });

  it('the same receiver refuses a body changed after signing', async () => {
    const header = signPayload(rawBody, secret);
    const tampered = rawBody.replace('completed', 'failed');
    const result = await client.post(receiver.url, tampered, {
      headers: { [SIGNATURE_HEADER]: header },
      timeoutMs: 5000,
      maxResponseBytes: 65536,
    });
    expect(result).to.include({ ok: false, status: 400 });
    expect(receiver.receipts.at(-1)?.verifiedBy).to.equal('refused');
  });

  it('constructEvent accepts our header for string and Buffer bodies and returns the parsed envelope', () => {
    const header = signPayload(rawBody, secret);
    expect(stripe.webhooks.constructEvent(rawBody, header, secret)).to.deep.equal(ENVELOPE);
    expect(stripe.webhooks.constructEvent(Buffer.from(rawBody), header, secret)).to.deep.equal(ENVELOPE);
  });

  it('constructEvent refuses our header with another secret, and an old timestamp', () => {
    const header = signPayload(rawBody, secret);
    expect(() => stripe.webhooks.constructEvent(rawBody, header, generateSecret())).to.throw(/No signatures found/);
    const old = signPayload(rawBody, secret, Math.floor(Date.now() / 1000) - 301);
    expect(() => stripe.webhooks.constructEvent(rawBody, old, secret)).to.throw(/tolerance/);
  });

  it('constructEvent accepts a header carrying several v1 values when one is ours', () => {
    const ours = signPayload(rawBody, secret);
    const t = /^t=(\d+)/.exec(ours)![1];
    const foreign = signPayload(rawBody, generateSecret(), Number(t)).split(',')[1];
    expect(stripe.webhooks.constructEvent(rawBody, `${ours},${foreign}`, secret)).to.deep.equal(ENVELOPE);
    expect(stripe.webhooks.constructEvent(rawBody, `t=${t},${foreign},${ours.split(',')[1]}`, secret)).to.deep.equal(ENVELOPE);
  });

  it('verifySignature accepts headers made by stripe.webhooks.generateTestHeaderString', () => {
    const header = stripe.webhooks.generateTestHeaderString({ payload: rawBody, secret });
    expect(header).to.match(/^t=\d+,v1=[0-9a-f]{64}$/);
    expect(verifySignature(rawBody, header, secret)).to.equal(true);

    const timestamp = 1_760_000_000;
    const fixed = stripe.webhooks.generateTestHeaderString({ payload: rawBody, secret, timestamp });
    expect(fixed).to.equal(signPayload(rawBody, secret, timestamp));
    expect(verifySignature(rawBody, fixed, secret, { now: timestamp + 299 })).to.equal(true);
    expect(verifySignature(rawBody, fixed, secret, { now: timestamp + 301 })).to.equal(false);
  });

  it('verifySignature refuses a Stripe-made header for another body or secret', () => {
    const header = stripe.webhooks.generateTestHeaderString({ payload: rawBody, secret });
    expect(verifySignature(`${rawBody}\n`, header, secret)).to.equal(false);
    expect(verifySignature(rawBody, header, generateSecret())).to.equal(false);
  });
});
