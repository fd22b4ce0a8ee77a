import { expect } from 'chai';
import fc from 'fast-check';
import { unstorableValueAt, withStorableStrings } from '../../shared/validation/storable';

describe('storable strings (shared/validation/storable.ts)', () => {
  it('points at the first string, key or non-finite number PostgreSQL cannot store', () => {
    expect(unstorableValueAt({ a: ['ok', 'b\u0000'] })).to.equal('/a/1');
    expect(unstorableValueAt({ 'a/b': { 'k\ud800': 1 } })).to.equal('/a~1b/k\ud800#key');
    expect(unstorableValueAt({ n: Infinity })).to.equal('/n#number');
    expect(unstorableValueAt({ text: 'emoji \ud83d\udcbb and \ufffd' })).to.equal(null);
  });

  it('does not walk binary values (a screenshot is bytes, not text)', () => {
    expect(unstorableValueAt({ png: Buffer.from([0, 0xd8, 0]), bytes: new Uint8Array(4) })).to.equal(null);
  });

  it('replaces NUL and lone surrogates by U+FFFD in strings and keys, keeping key order, binary values and "__proto__" keys', () => {
    const png = Buffer.from([0x89, 0x50, 0]);
    const value = JSON.parse('{"b":"x\\u0000y","__proto__":{"polluted":true},"a\\ud800":["\\udc00z",1,null,true]}');
    const copy = withStorableStrings({ ...value, png });
    expect(Object.keys(copy)).to.deep.equal(['b', '__proto__', 'a\ufffd', 'png']);
    expect(copy.b).to.equal('x\ufffdy');
    expect(copy['a\ufffd']).to.deep.equal(['\ufffdz', 1, null, true]);
    expect(copy.png).to.equal(png);
    expect(Object.getPrototypeOf(copy)).to.equal(Object.prototype);
    expect(({} as Record<string, unknown>).polluted).to.equal(undefined);
  });

  it('returns the value itself when there is nothing to replace, and copes with deep nesting', () => {
    const clean = { a: ['b', { c: 1 }] };
    expect(withStorableStrings(clean)).to.equal(clean);
    let deep: unknown = 'bottom\u0000';
    for (let n = 0; n < 100_000; n++) deep = [deep];
    let out = withStorableStrings(deep);
    for (let n = 0; n < 100_000; n++) out = (out as unknown[])[0];
    expect(out).to.equal('bottom\ufffd');
  });

  it('leaves nothing unstorable, and changes nothing storable (property)', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.string({ unit: 'binary' }), (json, text) => {
        const value = { json, text, [text]: text };
        const copy = withStorableStrings(value);
        expect(unstorableValueAt(copy)).to.equal(null);
        if (unstorableValueAt(value) === null) expect(copy).to.equal(value);
      }),
    );
  });
});
