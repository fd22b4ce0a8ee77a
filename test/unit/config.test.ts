import { expect } from 'chai';
import { ConfigError, loadConfig } from '../../shared/config';
import { OPENAI_DEFAULT_BASE_URL } from '../../shared/models/openai';

describe('configuration', () => {
  it('uses the documented defaults', () => {
    const config = loadConfig({});
    expect(config).to.include({ env: 'development', port: 8080, baseUrl: 'http://localhost:8080', redisUrl: 'redis://127.0.0.1:6379' });
    expect(config.databaseUrl).to.equal('postgres://postgres@127.0.0.1:5432/deskhand');
    expect(config.rateLimitPerHour).to.equal(30000);
    expect(config.redisCommandTimeoutMs).to.equal(2000);
    expect(Object.isFrozen(config)).to.equal(true);
  });

  it('names the variable in the message of a bad value', () => {
    expect(() => loadConfig({ PORT: 'eighty' })).to.throw(ConfigError, /PORT must be a whole number/);
    expect(() => loadConfig({ DESKHAND_ENV: 'staging' })).to.throw(ConfigError, /DESKHAND_ENV must be development or production/);
    expect(() => loadConfig({ DATABASE_URL: 'mysql://x/y' })).to.throw(ConfigError, /DATABASE_URL must start with postgres:/);
    expect(() => loadConfig({ DESKHAND_SCRIPTED_MODELS: 'yes' })).to.throw(ConfigError, /DESKHAND_SCRIPTED_MODELS must be 1 or 0/);
    expect(() => loadConfig({ DESKHAND_REDIS_COMMAND_TIMEOUT_MS: '50' })).to.throw(ConfigError, /DESKHAND_REDIS_COMMAND_TIMEOUT_MS must be between 100 and 60000/);
    expect(() => loadConfig({ DESKHAND_MODELS: 'Z9=foo' })).to.throw(ConfigError, /DESKHAND_MODELS: "Z9=foo" must be SLOT=id/);
    expect(() => loadConfig({ DESKHAND_RETIRED_MODELS: 'gpt-5.4' })).to.throw(ConfigError, /DESKHAND_RETIRED_MODELS: gpt-5.4 is still in the catalog/);
  });

  it('refuses DESKHAND_ALLOW_PRIVATE_URLS in production', () => {
    expect(() => loadConfig({ DESKHAND_ENV: 'production', DESKHAND_ALLOW_PRIVATE_URLS: '1' })).to.throw(ConfigError, /development only/);
    expect(loadConfig({ DESKHAND_ALLOW_PRIVATE_URLS: '1' }).allowPrivateUrls).to.equal(true);
  });

  it('reads a vendor only when its key is set, with its base URL', () => {
    const config = loadConfig({ ANTHROPIC_API_KEY: 'k', ANTHROPIC_BASE_URL: 'http://127.0.0.1:9/' });
    expect(config.vendors.anthropic).to.deep.equal({ apiKey: 'k', baseUrl: 'http://127.0.0.1:9' });
    expect(config.vendors.openai).to.equal(null);
  });

  it('defaults each vendor\'s base URL to what its backend expects (OpenAI\'s with /v1, as its clients take it)', () => {
    const config = loadConfig({ OPENAI_API_KEY: 'k', ANTHROPIC_API_KEY: 'k', GEMINI_API_KEY: 'k' });
    expect(config.vendors.openai!.baseUrl).to.equal(OPENAI_DEFAULT_BASE_URL);
    expect(config.vendors.anthropic!.baseUrl).to.equal('https://api.anthropic.com');
    expect(config.vendors.gemini!.baseUrl).to.equal('https://generativelanguage.googleapis.com');
  });
});
