import { expect } from 'chai';
import fc from 'fast-check';
import { findSecret, luhnValid, meanSegmentLength, shannonEntropy } from '../../shared/guardrails/secrets';

describe('secrets: findSecret', () => {
  describe('well-known token formats', () => {
    const tokens: Array<[string, string]> = [
      ['aws_access_key', 'AKIAIOSFODNN7EXAMPLE'],
      ['aws_access_key', 'ASIAY34FZKBOKMUTVV7A'],
      ['github_token', 'ghp_0123456789abcdefghijABCDEFGHIJ012345'],
      ['github_token', 'gho_16C7e42F292c6912E7710c838347Ae178B4a'],
      ['github_token', 'github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMN'],
      ['slack_token', 'xoxb-2048-1234567890-abcdefghijklmnop'],
      ['slack_token', 'xoxp-1234567890-0987654321-abcdef'],
      ['stripe_key', 'sk_live_4eC39HqLyjWDarjtT1zdp7dc'],
      ['stripe_key', 'rk_live_51H8abcdefGHIJKLmnop'],
      ['stripe_key', 'sk_test_4eC39HqLyjWDarjtT1zdp7dc'],
      ['openai_key', 'sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUvWx'],
      ['openai_key', 'sk-T3BlbkFJabcdefGHIJKLmnop0123456789QRSTuv'],
      ['anthropic_key', 'sk-ant-api03-abcdefghijklmnopqrstuvwxyz012345'],
      ['google_api_key', 'AIzaSyA1234567890abcdefghijklmnopqrstuv'],
      ['jwt', 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U'],
      ['private_key', '-----BEGIN RSA PRIVATE KEY-----'],
      ['private_key', '-----BEGIN OPENSSH PRIVATE KEY-----'],
      ['private_key', '-----BEGIN PRIVATE KEY-----'],
      ['private_key', '-----BEGIN PGP PRIVATE KEY BLOCK-----'],
      ['deskhand_key', 'dh_live_9f8e7d6c5b4a3210fedc'],
      ['deskhand_key', 'dh_test_abcdefgh12345678'],
      ['webhook_secret', 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'],
      ['url_credentials', 'https://admin:pa55word@db.example.com/app'],
      ['labelled_secret', 'password: Hunter2!'],
      ['labelled_secret', 'aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY'],
      ['labelled_secret', 'API_KEY="abc123def456"'],
    ];
    for (const [kind, token] of tokens) {
      it(`finds ${kind}: ${token.slice(0, 24)}…`, () => {
        const found = findSecret(`here it is: ${token} thanks`);
        expect(found, token).to.not.equal(null);
        expect(found!.kind).to.equal(kind);
        expect(found!.index).to.be.at.least(12);
        expect(found!.index).to.be.at.most(12 + token.length);
      });
    }

    it('reports where the secret starts and how long it is', () => {
      expect(findSecret('key AKIAIOSFODNN7EXAMPLE')).to.deep.equal({ kind: 'aws_access_key', index: 4, length: 20 });
    });

    it('returns the earliest of several secrets', () => {
      const found = findSecret('first ghp_0123456789abcdefghijABCDEFGHIJ012345 then AKIAIOSFODNN7EXAMPLE');
      expect(found!.kind).to.equal('github_token');
    });

    it('does not take look-alike words for tokens', () => {
      for (const text of ['sk-learn-preprocessing-guide-v2', 'task-ant-colony-simulation', 'the xox pattern', 'ghp_short', 'AKIA is a prefix', 'eyJ alone', 'Password: Required', 'token: see below', 'https://example.com/login']) {
        expect(findSecret(text), text).to.equal(null);
      }
    });
  });

  describe('card numbers', () => {
    it('finds card numbers that pass Luhn, together or grouped', () => {
      for (const card of ['4242424242424242', '4242 4242 4242 4242', '4111-1111-1111-1111', '5555 5555 5555 4444', '3782 822463 10005', '378282246310005', '6011111111111117', '4000 0566 5566 5556']) {
        const found = findSecret(`card ${card} exp 12/30`);
        expect(found, card).to.deep.include({ kind: 'card_number', index: 5 });
      }
    });

    it('ignores numbers that fail Luhn, are too short or long, or are not laid out like cards', () => {
      for (const text of [
        '4242 4242 4242 4241',
        '4242 4242 424',
        '42424242424242424242424',
        '2024-01-15 2024-01-16',
        'Call +1 415 555 0100',
        'order 0000000000000',
        'invoice 9999999999999995',
        '4242-4242 4242-4242',
      ]) {
        expect(findSecret(text), text).to.equal(null);
      }
    });

    it('implements the Luhn check', () => {
      expect(luhnValid('79927398713')).to.equal(true);
      expect(luhnValid('79927398710')).to.equal(false);
      expect(luhnValid('12a4')).to.equal(false);
    });
  });

  describe('high-entropy strings', () => {
    it('finds long random strings', () => {
      for (const s of [
        '1BxiMVs0XRA5nFMdKvBdBZjgmUUqptlbs74OgvE2upms',
        'Zt4qP9xW2mK7vR3nL8cB5hJ1gF6dS0aY',
        'wJalrXUtnFEMIK7MDENGbPxRfiCY2h8Qz3Lk',
        'da39a3ee5e6b4b0d3255bfef95601890afd80709',
        'k9Xq2+Rf8/Lm3Vp7Tz1Wb6Yc4Hd0Ns5Ge=',
      ]) {
        expect(findSecret(`value ${s}`), s).to.deep.include({ kind: 'high_entropy', index: 6 });
      }
    });

    it('finds random values in the query of an address', () => {
      expect(findSecret('https://example.com/cb?sig=Zt4qP9xW2mK7vR3nL8cB5hJ1gF6dS0aY&x=1')!.kind).to.equal('high_entropy');
    });

    it('flags nearly all random base62 strings of 32 characters and more', () => {
      const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
      fc.assert(
        fc.property(fc.array(fc.integer({ min: 0, max: 61 }), { minLength: 40, maxLength: 64 }), (codes) => {
          const s = codes.map((c) => alphabet[c]).join('');
          // Without all three classes a string is not a candidate; so rare at this length it is skipped.
          fc.pre(/[A-Z]/.test(s) && /[a-z]/.test(s) && /[0-9]/.test(s));
          fc.pre(meanSegmentLength(s) < 2.75 && shannonEntropy(s) >= Math.min(4.5, Math.log2(s.length) - 0.9));
          expect(findSecret(s)).to.not.equal(null);
        }),
        { numRuns: 300 },
      );
      let found = 0;
      const trials = 2000;
      let seed = 42;
      const rand = (): number => {
        seed = (seed * 1103515245 + 12345) & 0x7fffffff;
        return seed / 0x7fffffff;
      };
      for (let i = 0; i < trials; i++) {
        let s = '';
        for (let j = 0; j < 32; j++) s += alphabet[Math.floor(rand() * alphabet.length)];
        if (findSecret(s) !== null) found++;
      }
      expect(found / trials).to.be.greaterThan(0.95);
    });
  });

  describe('ordinary text', () => {
    const ordinary = [
      'Hello, how are you today?',
      'The meeting is at 10:30 tomorrow in room 4B, bring the Q3 report.',
      'Please send the invoice to accounting@example.com before Friday.',
      'first.last+newsletter@sub.example.co.uk',
      'https://www.example.com/products/handmade-mug?color=blue&size=large#reviews',
      'https://docs.google.com/document/d/1BxiMVs0XRA5nFMdKvBdBZjgmUUqptlbs74OgvE2upms/edit',
      'https://github.com/deskhand/deskhand/commit/da39a3ee5e6b4b0d3255bfef95601890afd80709',
      'shop.example.com/cart',
      'Donaudampfschifffahrtsgesellschaftskapitän',
      'ConfigurationManagerFactory2024',
      'AbstractSingletonProxyFactoryBean1',
      'getElementById2AndMore',
      'MyDocumentVersion2Final',
      'Quarterly-Report-2024-Final-v3.pdf',
      'IMG_20240115_103045_HDR2.jpg',
      'Screenshot 2024-01-15 at 10.30.45.png',
      'iPhone15ProMaxCaseBlue2',
      'TheQuickBrownFox42JumpsOver',
      '550e8400-e29b-41d4-a716-446655440000',
      'SOME_CONSTANT_NAME_V2_FINAL',
      'my_very_long_variable_name_2',
      'Size M',
      'Order #123456 shipped on 2024-03-05, tracking 1Z999AA10123456784.',
      'Tel. +44 20 7946 0958 / +1 (415) 555-0100',
      'Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt.',
      '',
    ];
    for (const text of ordinary) {
      it(`leaves ${JSON.stringify(text.slice(0, 50))} alone`, () => {
        expect(findSecret(text)).to.equal(null);
      });
    }

    it('leaves random sentences of dictionary words alone', () => {
      const words = ['the', 'quick', 'brown', 'fox', 'report', 'Meeting', 'invoice', 'Quarterly', 'update', 'please', 'send', 'at', '10:30', 'on', 'Friday', 'mail', 'example.com', 'https://shop.example.com/cart', 'me@example.com', 'Q3', '2024', 'v2'];
      fc.assert(
        fc.property(fc.array(fc.constantFrom(...words), { minLength: 1, maxLength: 30 }), fc.constantFrom(' ', ', ', '\n'), (ws, sep) => {
          expect(findSecret(ws.join(sep))).to.equal(null);
        }),
        { numRuns: 300 },
      );
    });
  });

  describe('explicit secret values', () => {
    it('finds any marked value, exactly', () => {
      expect(findSecret('my code is tulip-42 ok', ['tulip-42'])).to.deep.equal({ kind: 'explicit', index: 11, length: 8 });
      expect(findSecret('my code is TULIP-42', ['tulip-42'])).to.equal(null);
    });

    it('ignores empty values', () => {
      expect(findSecret('anything', [''])).to.equal(null);
    });

    it('finds a marked value even when it looks ordinary', () => {
      expect(findSecret('the answer is 1234', ['1234'])!.kind).to.equal('explicit');
    });
  });

  describe('entropy', () => {
    it('computes Shannon entropy in bits per character', () => {
      expect(shannonEntropy('')).to.equal(0);
      expect(shannonEntropy('aaaa')).to.equal(0);
      expect(shannonEntropy('abab')).to.equal(1);
      expect(shannonEntropy('abcd')).to.equal(2);
    });
  });
});
