import { createHmac } from 'node:crypto';
import { expect } from 'chai';
import {
  checkSignature,
  generateSecret,
  signPayload,
  verifySignature,
} from '../../shared/http/signature';
import * as httpIndex from '../../shared/http';

const SECRET = 'whsec_test_4eC39HqLyjWDarjtT1zdp7dc';
const BODY = JSON.stringify({ id: 'evt_1', type: 'task.completed', data: { task: { id: 'task_1' } } });
const T = 1_760_000_000;

function hmacHex(secret: string, payload: string): string {
  return createHmac('sha256', secret).update(payload).digest('hex');
}

describe('shared/http/signature', () => {
  describe('signPayload', () => {
    it('produces t=<unix>,v1=<hex of HMAC-SHA256 over "<t>.<body>" keyed with the whole secret>', () => {
      const header = signPayload(BODY, SECRET, T);
      expect(header).to.equal(`t=${T},v1=${hmacHex(SECRET, `${T}.${BODY}`)}`);
    });

    it('keys the HMAC with the whsec_ prefix included', () => {
      const header = signPayload(BODY, SECRET, T);
      const withoutPrefix = hmacHex(SECRET.slice('whsec_'.length), `${T}.${BODY}`);
      expect(header).not.to.contain(withoutPrefix);
    });

    it('signs a Buffer body as its exact bytes, without re-decoding it as text', () => {
      const bytes = Buffer.from([0x7b, 0xff, 0xfe, 0x7d]); // not valid UTF-8
      const expected = createHmac('sha256', SECRET).update(`${T}.`).update(bytes).digest('hex');
      expect(signPayload(bytes, SECRET, T)).to.equal(`t=${T},v1=${expected}`);
      expect(verifySignature(bytes, signPayload(bytes, SECRET, T), SECRET, { now: T })).to.equal(true);
      expect(verifySignature(bytes.toString('utf8'), signPayload(bytes, SECRET, T), SECRET, { now: T })).to.equal(false);
    });

    it('uses the current time when no timestamp is given', () => {
      const before = Math.floor(Date.now() / 1000);
      const t = Number(/^t=(\d+),/.exec(signPayload(BODY, SECRET))?.[1]);
      expect(t).to.be.within(before, before + 2);
    });

    it('refuses an empty secret and a timestamp that is not whole seconds', () => {
      expect(() => signPayload(BODY, '', T)).to.throw(TypeError);
      expect(() => signPayload(BODY, SECRET, 1.5)).to.throw(TypeError);
      expect(() => signPayload(BODY, SECRET, -1)).to.throw(TypeError);
    });
  });

  describe('verifySignature', () => {
    it('accepts what signPayload made (string and Buffer bodies)', () => {
      expect(verifySignature(BODY, signPayload(BODY, SECRET, T), SECRET, { now: T })).to.equal(true);
      expect(verifySignature(Buffer.from(BODY), signPayload(BODY, SECRET, T), SECRET, { now: T })).to.equal(true);
    });

    it('accepts a fresh signature against the real clock', () => {
      expect(verifySignature(BODY, signPayload(BODY, SECRET), SECRET)).to.equal(true);
    });

    it('accepts the header when any one of several v1 values matches', () => {
      const good = hmacHex(SECRET, `${T}.${BODY}`);
      const other = hmacHex('whsec_previous', `${T}.${BODY}`);
      for (const header of [`t=${T},v1=${other},v1=${good}`, `t=${T},v1=${good},v1=${other}`, `v1=${other},t=${T},v1=${good}`]) {
        expect(verifySignature(BODY, header, SECRET, { now: T }), header).to.equal(true);
      }
    });

    it('ignores schemes other than v1 and tolerates spaces around items', () => {
      const good = hmacHex(SECRET, `${T}.${BODY}`);
      expect(verifySignature(BODY, `t=${T}, v0=${'0'.repeat(64)}, v1=${good}`, SECRET, { now: T })).to.equal(true);
      expect(checkSignature(BODY, `t=${T},v0=${good}`, SECRET, { now: T })).to.deep.equal({ ok: false, reason: 'no_signature' });
    });

    it('accepts t up to the tolerance in either direction and refuses it beyond', () => {
      const header = signPayload(BODY, SECRET, T);
      expect(verifySignature(BODY, header, SECRET, { now: T + 300 })).to.equal(true);
      expect(verifySignature(BODY, header, SECRET, { now: T - 300 })).to.equal(true);
      expect(checkSignature(BODY, header, SECRET, { now: T + 301 })).to.deep.equal({ ok: false, reason: 'timestamp_out_of_tolerance' });
      expect(checkSignature(BODY, header, SECRET, { now: T - 301 })).to.deep.equal({ ok: false, reason: 'timestamp_out_of_tolerance' });
    });

    it('honours a custom tolerance', () => {
      const header = signPayload(BODY, SECRET, T);
      expect(verifySignature(BODY, header, SECRET, { now: T + 30, toleranceSeconds: 30 })).to.equal(true);
      expect(verifySignature(BODY, header, SECRET, { now: T + 31, toleranceSeconds: 30 })).to.equal(false);
      expect(verifySignature(BODY, header, SECRET, { now: T - 31, toleranceSeconds: 30 })).to.equal(false);
      expect(() => verifySignature(BODY, header, SECRET, { toleranceSeconds: -1 })).to.throw(TypeError);
    });

    it('refuses a tampered body', () => {
      const header = signPayload(BODY, SECRET, T);
      const tampered = BODY.replace('task.completed', 'task.failed');
      expect(checkSignature(tampered, header, SECRET, { now: T })).to.deep.equal({ ok: false, reason: 'signature_mismatch' });
      expect(verifySignature(`${BODY} `, header, SECRET, { now: T })).to.equal(false);
    });

    it('refuses a tampered timestamp (the signature covers t)', () => {
      const header = signPayload(BODY, SECRET, T).replace(`t=${T}`, `t=${T + 1}`);
      expect(checkSignature(BODY, header, SECRET, { now: T })).to.deep.equal({ ok: false, reason: 'signature_mismatch' });
    });

    it('refuses a signature made with another secret', () => {
      const header = signPayload(BODY, 'whsec_someone_else', T);
      expect(verifySignature(BODY, header, SECRET, { now: T })).to.equal(false);
      expect(verifySignature(BODY, signPayload(BODY, SECRET.slice(6), T), SECRET, { now: T })).to.equal(false);
    });

    it('refuses malformed headers without throwing', () => {
      const good = hmacHex(SECRET, `${T}.${BODY}`);
      const cases: Array<[string | null | undefined, string]> = [
        [undefined, 'malformed_header'],
        [null, 'malformed_header'],
        ['', 'malformed_header'],
        ['garbage', 'malformed_header'],
        [`v1=${good}`, 'malformed_header'], // no t
        [`t=,v1=${good}`, 'malformed_header'],
        [`t=abc,v1=${good}`, 'malformed_header'],
        [`t=-${T},v1=${good}`, 'malformed_header'],
        [`t=${T}.5,v1=${good}`, 'malformed_header'],
        [`t=${T},t=${T},v1=${good}`, 'malformed_header'], // ambiguous t
        [`t=${T},v1=${good},`, 'malformed_header'],
        [`t=${T};v1=${good}`, 'malformed_header'],
        [`t=${T}${`,v1=${good}`.repeat(70)}`, 'malformed_header'], // over the 4096-character cap
        [`t=${T}`, 'no_signature'],
        [`t=${T},v1=`, 'signature_mismatch'],
        [`t=${T},v1=${good.slice(0, 63)}`, 'signature_mismatch'], // odd length
        [`t=${T},v1=${good.slice(0, 62)}`, 'signature_mismatch'], // short
        [`t=${T},v1=${good}00`, 'signature_mismatch'], // long
        [`t=${T},v1=${'zz'.repeat(32)}`, 'signature_mismatch'], // not hex
      ];
      for (const [header, reason] of cases) {
        expect(checkSignature(BODY, header, SECRET, { now: T }), String(header)).to.deep.equal({ ok: false, reason });
        expect(verifySignature(BODY, header, SECRET, { now: T }), String(header)).to.equal(false);
      }
    });

    it('accepts upper-case hex', () => {
      const header = signPayload(BODY, SECRET, T).toUpperCase().replace('T=', 't=').replace('V1=', 'v1=');
      expect(verifySignature(BODY, header, SECRET, { now: T })).to.equal(true);
    });

    it('reports the verified timestamp', () => {
      expect(checkSignature(BODY, signPayload(BODY, SECRET, T), SECRET, { now: T })).to.deep.equal({ ok: true, timestamp: T });
    });
  });

  describe('generateSecret', () => {
    it('returns whsec_ followed by at least 192 random bits, different every time', () => {
      const secrets = new Set(Array.from({ length: 50 }, () => generateSecret()));
      expect(secrets.size).to.equal(50);
      for (const secret of secrets) {
        expect(secret).to.match(/^whsec_[A-Za-z0-9_-]{43}$/);
        expect(Buffer.from(secret.slice(6), 'base64url').length * 8).to.be.at.least(192);
      }
    });

    it('takes another prefix', () => {
      expect(generateSecret('tsec_')).to.match(/^tsec_[A-Za-z0-9_-]{43}$/);
    });
  });

  it('is exported from shared/http for integrators', () => {
    expect(httpIndex.verifySignature).to.equal(verifySignature);
    expect(httpIndex.signPayload).to.equal(signPayload);
    expect(httpIndex.SIGNATURE_HEADER).to.equal('Service-Signature');
  });
});
