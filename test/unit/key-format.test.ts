import { expect } from 'chai';
import { displayPrefix, generateApiKey, generateRunnerToken, generateSessionToken, isWellFormedApiKey, isWellFormedRunnerToken } from '../../shared/api-keys/key-format';

describe('API key format', () => {
  it('makes development keys with the test prefix and production keys with the live prefix', () => {
    expect(generateApiKey('development')).to.match(/^dh_test_[0-9A-Za-z]{38}$/);
    expect(generateApiKey('production')).to.match(/^dh_live_[0-9A-Za-z]{38}$/);
  });

  it('accepts its own keys and refuses a key of the other environment', () => {
    const key = generateApiKey('development');
    expect(isWellFormedApiKey(key, 'development')).to.equal(true);
    expect(isWellFormedApiKey(key, 'production')).to.equal(false);
  });

  it('refuses a key with one character changed by its checksum', () => {
    const key = generateApiKey('production');
    for (const index of [8, 20, 39, key.length - 1]) {
      const char = key[index] === 'a' ? 'b' : 'a';
      const altered = key.slice(0, index) + char + key.slice(index + 1);
      expect(isWellFormedApiKey(altered, 'production'), altered).to.equal(false);
    }
  });

  it('never repeats a key and shows only a short prefix', () => {
    const keys = new Set(Array.from({ length: 2000 }, () => generateApiKey('development')));
    expect(keys.size).to.equal(2000);
    expect(displayPrefix([...keys][0]!)).to.have.length(12);
  });

  it('gives session tokens their own prefix, never a valid API key', () => {
    const token = generateSessionToken();
    expect(token).to.match(/^dh_sess_/);
    expect(isWellFormedApiKey(token, 'development')).to.equal(false);
  });
});

describe('runner token format', () => {
  it('has a prefix of its own, apart from API keys and session tokens, and a checksum', () => {
    const token = generateRunnerToken();
    expect(token).to.match(/^dhr_[0-9A-Za-z]{38}$/);
    expect(isWellFormedRunnerToken(token)).to.equal(true);
    expect(isWellFormedRunnerToken(generateApiKey('development'))).to.equal(false);
    expect(isWellFormedRunnerToken(generateSessionToken())).to.equal(false);
    expect(isWellFormedApiKey(token, 'development')).to.equal(false);
    const altered = token.slice(0, 10) + (token[10] === 'a' ? 'b' : 'a') + token.slice(11);
    expect(isWellFormedRunnerToken(altered)).to.equal(false);
  });
});
