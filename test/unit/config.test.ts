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

  it('starts new orgs on the free plan in production and on the unlimited internal plan in development, unless told', () => {
    expect(loadConfig({}).defaultPlanId).to.equal('internal');
    expect(loadConfig({ DESKHAND_ENV: 'production', DESKHAND_ADMIN_TOKEN: 'a-long-enough-admin-token-0123456789' }).defaultPlanId).to.equal('free');
    expect(loadConfig({ DESKHAND_DEFAULT_PLAN: 'free' }).defaultPlanId).to.equal('free');
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

  it('payments: test-mode keys only in development, live keys only in production; none is the free plan only', () => {
    expect(loadConfig({}).payments).to.equal(null);
    expect(() => loadConfig({ STRIPE_SECRET_KEY: 'sk_live_abc' })).to.throw(ConfigError, /live key .*development takes test-mode keys/);
    expect(() => loadConfig({ DESKHAND_ENV: 'production', STRIPE_SECRET_KEY: 'sk_test_abc' })).to.throw(ConfigError, /test-mode key .*production takes live keys/);
    expect(() => loadConfig({ STRIPE_SECRET_KEY: 'pk_test_abc' })).to.throw(ConfigError, /STRIPE_SECRET_KEY must be a secret key/);
    expect(() => loadConfig({ STRIPE_SECRET_KEY: 'sk_test_abc', STRIPE_WEBHOOK_SECRET: 'nope' })).to.throw(ConfigError, /STRIPE_WEBHOOK_SECRET/);
    expect(loadConfig({ DESKHAND_ENV: 'production', STRIPE_SECRET_KEY: 'sk_live_abc' }).payments).to.deep.equal({ secretKey: 'sk_live_abc', webhookSecret: null, apiBase: null });
    const local = loadConfig({ STRIPE_SECRET_KEY: 'sk_test_abc', STRIPE_WEBHOOK_SECRET: 'whsec_x', STRIPE_API_BASE: 'http://127.0.0.1:12111' }).payments;
    expect(local).to.deep.equal({ secretKey: 'sk_test_abc', webhookSecret: 'whsec_x', apiBase: { host: '127.0.0.1', port: 12111, protocol: 'http' } });
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
