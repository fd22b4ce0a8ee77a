import { expect } from 'chai';
import { signPayload } from '../../shared/http';
import { checkWebhook, constructWebhookEvent, verifyWebhook, webhooks, WebhookSignatureError } from '../../sdk/src/webhooks';

describe('SDK webhook verification (verifyWebhook)', () => {
  const secret = 'whsec_test_secret_for_the_sdk';
  const body = JSON.stringify({ id: 'evt_1', type: 'task.completed', created_at: '2026-03-02T09:14:05.000Z', org_id: 'org_1', data: {} });
  const now = 1_780_000_000;

  it('accepts what the service signs, as a string or as bytes', () => {
    const header = signPayload(body, secret, now);
    expect(verifyWebhook(body, header, secret, { now })).to.equal(true);
    expect(verifyWebhook(Buffer.from(body), header, secret, { now })).to.equal(true);
    expect(verifyWebhook(new TextEncoder().encode(body), [header], secret, { now })).to.equal(true);
    expect(webhooks.verify(body, header, secret, { now })).to.equal(true);
  });

  it('accepts a header with several v1 values when any one matches', () => {
    const good = signPayload(body, secret, now).split(',v1=')[1];
    const other = signPayload(body, 'whsec_old_secret', now).split(',v1=')[1];
    expect(verifyWebhook(body, `t=${now},v1=${other},v1=${good}`, secret, { now })).to.equal(true);
    expect(verifyWebhook(body, `t=${now},v1=${good},v1=${other}`, secret, { now })).to.equal(true);
    expect(checkWebhook(body, `t=${now},v1=${other},v1=${other}`, secret, { now })).to.deep.equal({ ok: false, reason: 'signature_mismatch' });
  });

  it('refuses a tampered body, another secret, a secret without its prefix', () => {
    const header = signPayload(body, secret, now);
    expect(checkWebhook(body.replace('task.completed', 'task.failed'), header, secret, { now })).to.deep.equal({ ok: false, reason: 'signature_mismatch' });
    expect(verifyWebhook(body, header, 'whsec_another', { now })).to.equal(false);
    expect(verifyWebhook(body, header, secret.slice('whsec_'.length), { now })).to.equal(false);
  });

  it('refuses a timestamp more than 5 minutes away, either way, and honours toleranceSeconds', () => {
    const header = signPayload(body, secret, now);
    expect(verifyWebhook(body, header, secret, { now: now + 300 })).to.equal(true);
    expect(verifyWebhook(body, header, secret, { now: now - 300 })).to.equal(true);
    expect(checkWebhook(body, header, secret, { now: now + 301 })).to.deep.equal({ ok: false, reason: 'timestamp_out_of_tolerance' });
    expect(checkWebhook(body, header, secret, { now: now - 301 })).to.deep.equal({ ok: false, reason: 'timestamp_out_of_tolerance' });
    expect(verifyWebhook(body, header, secret, { now: now + 1000, toleranceSeconds: 1000 })).to.equal(true);
    expect(verifyWebhook(body, header, secret, { now: now + 11, toleranceSeconds: 10 })).to.equal(false);
  });

  it('uses the system clock by default: a fresh signature passes, an hour-old one does not', () => {
    expect(verifyWebhook(body, signPayload(body, secret), secret)).to.equal(true);
    expect(verifyWebhook(body, signPayload(body, secret, Math.floor(Date.now() / 1000) - 3600), secret)).to.equal(false);
  });

  it('refuses malformed headers with the reason', () => {
    const v1 = signPayload(body, secret, now).split(',v1=')[1];
    const malformed = [undefined, null, '', 'garbage', `v1=${v1}`, `t=abc,v1=${v1}`, `t=${now},t=${now},v1=${v1}`, `t=${now},v1`, 'x'.repeat(5000), [], ['a', 'b']];
    for (const header of malformed) {
      expect(checkWebhook(body, header as string, secret, { now }), JSON.stringify(header)).to.deep.equal({ ok: false, reason: 'malformed_header' });
    }
    expect(checkWebhook(body, `t=${now}`, secret, { now })).to.deep.equal({ ok: false, reason: 'no_signature' });
    expect(checkWebhook(body, `t=${now},v0=${v1}`, secret, { now })).to.deep.equal({ ok: false, reason: 'no_signature' });
    expect(checkWebhook(body, `t=${now},v1=${v1.slice(2)}`, secret, { now })).to.deep.equal({ ok: false, reason: 'signature_mismatch' });
  });

  it('ignores schemes it does not know beside v1', () => {
    const header = signPayload(body, secret, now);
    expect(verifyWebhook(body, `${header},v2=abcdef`, secret, { now })).to.equal(true);
  });

  it('refuses an empty secret or a negative tolerance as a programming error', () => {
    expect(() => verifyWebhook(body, 't=1,v1=00', '')).to.throw(TypeError);
    expect(() => verifyWebhook(body, 't=1,v1=00', secret, { toleranceSeconds: -1 })).to.throw(TypeError);
  });

  it('constructWebhookEvent parses a verified body and throws the reason for a refused one', () => {
    const header = signPayload(body, secret, now);
    expect(constructWebhookEvent(body, header, secret, { now })).to.deep.include({ id: 'evt_1', type: 'task.completed' });
    expect(() => constructWebhookEvent(`${body} `, header, secret, { now }))
      .to.throw(WebhookSignatureError)
      .with.property('reason', 'signature_mismatch');
  });
});
