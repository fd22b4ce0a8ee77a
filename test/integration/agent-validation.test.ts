import { expect } from 'chai';
import { MODEL_IDS } from '../../shared/models/catalog';
import { startTestService, type TestService } from '../support/service';
import { ACME_DNS, tableResolver } from '../support/table-resolver';

/**
 * Every validation rule of an agent, at its limit (accepted) and one past it (400
 * invalid_request with a message naming the field). Most cases go through the draft save, which
 * shares its schema and checks with create and PATCH; those two are checked as well.
 */
describe('agent validation', () => {
  let service: TestService;
  let key: string;
  const agentId = 'validated';

  before(async () => {
    service = await startTestService({}, ['web'], { hostResolver: tableResolver(ACME_DNS) });
    ({ key } = await service.newOrg());
    const created = await service.api(key, 'POST', '/v1/agents', { agent_id: agentId });
    expect(created.status).to.equal(200);
  });
  after(async () => service.stop());

  const saveDraft = (body: unknown) => service.api(key, 'PATCH', `/v1/agents/${agentId}/draft`, body);
  const tool = (overrides: Record<string, unknown> = {}) => ({ name: 'lookup', description: 'Finds an order', url: 'https://api.acme.com/x', ...overrides });
  const tools = (count: number) => Array.from({ length: count }, (_, i) => tool({ name: `tool_${i}` }));
  const list = (count: number, item = (i: number) => `app-${i}`) => Array.from({ length: count }, (_, i) => item(i));
  const url = (length: number) => {
    const base = 'https://api.acme.com/';
    return base + 'p'.repeat(length - base.length);
  };
  const template = (length: number) => {
    const base = 'https://acme.com/{code}/';
    return base + 't'.repeat(length - base.length);
  };

  async function expectAccepted(body: Record<string, unknown>) {
    const response = await saveDraft(body);
    expect(response.status, JSON.stringify(response.body)).to.equal(200);
    return response.body;
  }
  async function expectRefused(body: unknown, message: string | RegExp, send = saveDraft) {
    const response = await send(body);
    expect(response.status, JSON.stringify(response.body)).to.equal(400);
    expect(response.body.error.type).to.equal('invalid_request');
    if (typeof message === 'string') expect(response.body.error.message).to.equal(message);
    else expect(response.body.error.message).to.match(message);
  }

  interface Rule {
    rule: string;
    accepted: Array<Record<string, unknown>>;
    refused: Array<[Record<string, unknown>, string | RegExp]>;
  }

  const rules: Rule[] = [
    {
      rule: 'name: 1 to 100 characters',
      accepted: [{ name: 'n'.repeat(100) }, { name: 'n' }],
      refused: [
        [{ name: 'n'.repeat(101) }, 'name must be at most 100 characters'],
        [{ name: '' }, 'name must not be empty'],
        [{ name: 5 }, 'name must be of type string'],
      ],
    },
    {
      rule: 'instructions: at most 50,000 characters',
      accepted: [{ instructions: 'i'.repeat(50_000) }, { instructions: '' }],
      refused: [[{ instructions: 'i'.repeat(50_001) }, 'instructions must be at most 50000 characters']],
    },
    {
      rule: 'greeting: at most 2,000 characters',
      accepted: [{ greeting: 'g'.repeat(2000) }],
      refused: [[{ greeting: 'g'.repeat(2001) }, 'greeting must be at most 2000 characters']],
    },
    {
      rule: 'display_name: at most 80 characters, empty allowed',
      accepted: [{ display_name: 'd'.repeat(80) }, { display_name: '' }],
      refused: [[{ display_name: 'd'.repeat(81) }, 'display_name must be at most 80 characters']],
    },
    {
      rule: 'model: one of the six ids, or null',
      accepted: [...MODEL_IDS.map((model) => ({ model })), { model: null }],
      refused: [
        [{ model: 'gpt-4o' }, /^model must be one of: .*null$/],
        [{ model: MODEL_IDS[0]!.toUpperCase() }, /^model must be one of/],
        [{ model: 3 }, /^model must be one of/],
      ],
    },
    {
      rule: 'effort: low, medium, high or null',
      accepted: [{ effort: 'low' }, { effort: 'medium' }, { effort: 'high' }, { effort: null }],
      refused: [
        [{ effort: 'max' }, 'effort must be one of: "low", "medium", "high", null'],
        [{ effort: '' }, 'effort must be one of: "low", "medium", "high", null'],
      ],
    },
    {
      rule: 'narration, customer_answers, customer_approvals: booleans',
      accepted: [{ narration: false, customer_answers: false, customer_approvals: false }],
      refused: [
        [{ narration: 'yes' }, 'narration must be of type boolean'],
        [{ customer_answers: 1 }, 'customer_answers must be of type boolean'],
        [{ customer_approvals: null }, 'customer_approvals must be of type boolean'],
      ],
    },
    {
      rule: 'invite_url_template: an http(s) address with {code}, at most 2,000 characters, or null',
      accepted: [{ invite_url_template: template(2000) }, { invite_url_template: 'http://acme.com/?c={code}' }, { invite_url_template: null }],
      refused: [
        [{ invite_url_template: template(2001) }, 'invite_url_template must be at most 2000 characters'],
        [{ invite_url_template: 'https://acme.com/join' }, 'invite_url_template must contain the placeholder {code}'],
        [{ invite_url_template: '{code}' }, /^invite_url_template must be an absolute http or https address/],
        [{ invite_url_template: 'ftp://acme.com/{code}' }, /^invite_url_template must be an absolute http or https address/],
        [{ invite_url_template: '' }, 'invite_url_template must not be empty'],
      ],
    },
    {
      rule: 'guardrails.mode: supervised or unattended',
      accepted: [{ guardrails: { mode: 'unattended' } }, { guardrails: { mode: 'supervised' } }],
      refused: [[{ guardrails: { mode: 'auto' } }, 'guardrails.mode must be one of: "supervised", "unattended"']],
    },
    {
      rule: 'guardrails.confirm: unique categories',
      accepted: [{ guardrails: { confirm: ['purchase', 'send', 'delete', 'install', 'security', 'terms'] } }, { guardrails: { confirm: [] } }],
      refused: [
        [{ guardrails: { confirm: ['send', 'send'] } }, 'guardrails.confirm must not repeat items'],
        [{ guardrails: { confirm: ['shopping'] } }, /^guardrails\.confirm\[0\] must be one of: "purchase"/],
        [{ guardrails: { confirm: 'send' } }, 'guardrails.confirm must be of type array'],
      ],
    },
    {
      rule: 'guardrails.block: unique categories',
      accepted: [{ guardrails: { block: ['purchase', 'send', 'delete', 'install', 'security', 'terms'] } }],
      refused: [
        [{ guardrails: { block: ['terms', 'delete', 'terms'] } }, 'guardrails.block must not repeat items'],
        [{ guardrails: { block: ['send', 'nuke'] } }, /^guardrails\.block\[1\] must be one of/],
      ],
    },
    ...(['apps', 'sites'] as const).flatMap((kind) =>
      (['allow', 'block'] as const).map(
        (which): Rule => ({
          rule: `guardrails.${kind}.${which}: at most 50 items of at most 100 characters`,
          accepted: [
            { guardrails: { [kind]: { [which]: list(50, (i) => `item${i}.example.com`) } } },
            { guardrails: { [kind]: { [which]: [`${'a'.repeat(96)}.com`] } } },
          ],
          refused: [
            [{ guardrails: { [kind]: { [which]: list(51, (i) => `item${i}.example.com`) } } }, `guardrails.${kind}.${which} must have at most 50 items`],
            [{ guardrails: { [kind]: { [which]: [`${'a'.repeat(97)}.com`] } } }, `guardrails.${kind}.${which}[0] must be at most 100 characters`],
            [{ guardrails: { [kind]: { [which]: [7] } } }, `guardrails.${kind}.${which}[0] must be of type string`],
          ],
        }),
      ),
    ),
    {
      rule: 'guardrails.sites: each rule names a host',
      accepted: [{ guardrails: { sites: { allow: ['https://acme.com/path', 'acme.org:8080', '*.acme.net'] } } }],
      refused: [
        [{ guardrails: { sites: { allow: ['acme.com', 'not a host'] } } }, 'guardrails.sites.allow[1] must be a host name or a web address'],
        [{ guardrails: { sites: { block: ['mailto:x@acme.com'] } } }, 'guardrails.sites.block[0] must be a host name or a web address'],
        [{ guardrails: { sites: { block: [''] } } }, 'guardrails.sites.block[0] must be a host name or a web address'],
      ],
    },
    {
      rule: 'guardrails.apps: rules are not empty',
      accepted: [{ guardrails: { apps: { block: ['x'] } } }],
      refused: [[{ guardrails: { apps: { block: ['  '] } } }, 'guardrails.apps.block[0] must not be empty']],
    },
    {
      rule: 'guardrails.safety_checks: ask or stop',
      accepted: [{ guardrails: { safety_checks: 'stop' } }, { guardrails: { safety_checks: 'ask' } }],
      refused: [[{ guardrails: { safety_checks: 'ignore' } }, 'guardrails.safety_checks must be one of: "ask", "stop"']],
    },
    {
      rule: 'guardrails.scope: at most 2,000 characters',
      accepted: [{ guardrails: { scope: 's'.repeat(2000) } }, { guardrails: { scope: '' } }],
      refused: [[{ guardrails: { scope: 's'.repeat(2001) } }, 'guardrails.scope must be at most 2000 characters']],
    },
    {
      rule: 'guardrails.screen_check: boolean',
      accepted: [{ guardrails: { screen_check: true } }],
      refused: [[{ guardrails: { screen_check: 'on' } }, 'guardrails.screen_check must be of type boolean']],
    },
    {
      rule: 'guardrails.max_steps: integer 1..500',
      accepted: [{ guardrails: { max_steps: 1 } }, { guardrails: { max_steps: 500 } }],
      refused: [
        [{ guardrails: { max_steps: 0 } }, 'guardrails.max_steps must be at least 1'],
        [{ guardrails: { max_steps: 501 } }, 'guardrails.max_steps must be at most 500'],
        [{ guardrails: { max_steps: 1.5 } }, 'guardrails.max_steps must be an integer'],
        [{ guardrails: { max_steps: null } }, 'guardrails.max_steps must be an integer'],
      ],
    },
    {
      rule: 'guardrails.max_minutes: integer 1..240 or null',
      accepted: [{ guardrails: { max_minutes: 1 } }, { guardrails: { max_minutes: 240 } }, { guardrails: { max_minutes: null } }],
      refused: [
        [{ guardrails: { max_minutes: 0 } }, 'guardrails.max_minutes must be at least 1'],
        [{ guardrails: { max_minutes: 241 } }, 'guardrails.max_minutes must be at most 240'],
        [{ guardrails: { max_minutes: '10' } }, 'guardrails.max_minutes must be an integer'],
      ],
    },
    {
      rule: 'guardrails.approval_timeout_minutes: integer 1..1440 or null',
      accepted: [
        { guardrails: { approval_timeout_minutes: 1 } },
        { guardrails: { approval_timeout_minutes: 1440 } },
        { guardrails: { approval_timeout_minutes: null } },
      ],
      refused: [
        [{ guardrails: { approval_timeout_minutes: 0 } }, 'guardrails.approval_timeout_minutes must be at least 1'],
        [{ guardrails: { approval_timeout_minutes: 1441 } }, 'guardrails.approval_timeout_minutes must be at most 1440'],
      ],
    },
    {
      rule: 'guardrails: known fields only',
      accepted: [{ guardrails: {} }],
      refused: [
        [{ guardrails: { max_turns: 3 } }, 'guardrails has an unknown field "max_turns"'],
        [{ guardrails: { apps: { deny: [] } } }, 'guardrails.apps has an unknown field "deny"'],
        [{ guardrails: [] }, 'guardrails must be of type object'],
      ],
    },
    {
      rule: 'tools.http: at most 20 tools',
      accepted: [{ tools: { http: tools(20) } }, { tools: { http: [] } }],
      refused: [[{ tools: { http: tools(21) } }, 'tools.http must have at most 20 items']],
    },
    {
      rule: 'tools.http: name, description and url are required',
      accepted: [{ tools: { http: [tool()] } }],
      refused: [
        [{ tools: { http: [{ description: 'd', url: 'https://api.acme.com/x' }] } }, 'tools.http[0].name is required'],
        [{ tools: { http: [{ name: 'n', url: 'https://api.acme.com/x' }] } }, 'tools.http[0].description is required'],
        [{ tools: { http: [{ name: 'n', description: 'd' }] } }, 'tools.http[0].url is required'],
        [{ tools: { http: [tool({ colour: 'red' })] } }, 'tools.http[0] has an unknown field "colour"'],
      ],
    },
    {
      rule: 'tools.http[].name: 1 to 64 letters, digits, _ or -, starting with a letter, unique',
      accepted: [{ tools: { http: [tool({ name: `a${'b'.repeat(63)}` })] } }, { tools: { http: [tool({ name: 'a' }), tool({ name: 'Get-order_2' })] } }],
      refused: [
        [{ tools: { http: [tool({ name: `a${'b'.repeat(64)}` })] } }, 'tools.http[0].name must be at most 64 characters'],
        [{ tools: { http: [tool({ name: '' })] } }, 'tools.http[0].name must not be empty'],
        [{ tools: { http: [tool({ name: '9lives' })] } }, 'tools.http[0].name must be a letter followed by up to 63 letters, digits, dashes and underscores'],
        [{ tools: { http: [tool({ name: 'has space' })] } }, 'tools.http[0].name must be a letter followed by up to 63 letters, digits, dashes and underscores'],
        [{ tools: { http: [tool({ name: 'lookup' }), tool({ name: 'Lookup' })] } }, 'tools.http[1].name "Lookup" is already the name of tools.http[0]'],
      ],
    },
    {
      rule: 'tools.http[].description: 1 to 1,000 characters',
      accepted: [{ tools: { http: [tool({ description: 'd'.repeat(1000) })] } }],
      refused: [
        [{ tools: { http: [tool({ description: 'd'.repeat(1001) })] } }, 'tools.http[0].description must be at most 1000 characters'],
        [{ tools: { http: [tool({ description: '' })] } }, 'tools.http[0].description must not be empty'],
      ],
    },
    {
      rule: 'tools.http[].url: an https address of a public host, at most 2,000 characters',
      accepted: [{ tools: { http: [tool({ url: url(2000) })] } }, { tools: { http: [tool({ url: 'https://8.8.8.8/hook' })] } }],
      refused: [
        [{ tools: { http: [tool({ url: url(2001) })] } }, 'tools.http[0].url must be at most 2000 characters'],
        [{ tools: { http: [tool({ url: 'http://api.acme.com/x' })] } }, 'tools.http[0].url is refused: the URL must use https (in development, DESKHAND_ALLOW_PRIVATE_URLS=1 allows plain http and local or private addresses)'],
        [{ tools: { http: [tool({ url: 'https://localhost/x' })] } }, 'tools.http[0].url is refused: the host is a local or internal name (in development, DESKHAND_ALLOW_PRIVATE_URLS=1 allows plain http and local or private addresses)'],
        [{ tools: { http: [tool({ url: 'https://10.0.0.5/x' })] } }, 'tools.http[0].url is refused: the host is a private, local or reserved address (in development, DESKHAND_ALLOW_PRIVATE_URLS=1 allows plain http and local or private addresses)'],
        [{ tools: { http: [tool({ url: 'https://user:pw@api.acme.com/x' })] } }, /^tools\.http\[0\]\.url is refused: .*user name or password/],
        [{ tools: { http: [tool({ url: 'not a url' })] } }, 'tools.http[0].url is refused: the URL is not a valid absolute URL'],
      ],
    },
    {
      rule: 'tools.http[].approval: never or always',
      accepted: [{ tools: { http: [tool({ approval: 'always' })] } }, { tools: { http: [tool({ approval: 'never' })] } }],
      refused: [[{ tools: { http: [tool({ approval: 'sometimes' })] } }, 'tools.http[0].approval must be one of: "never", "always"']],
    },
    {
      rule: 'tools.files: enabled boolean, access read_write or read_only',
      accepted: [{ tools: { files: { enabled: false, access: 'read_only' } } }, { tools: { files: { enabled: true, access: 'read_write' } } }],
      refused: [
        [{ tools: { files: { access: 'write' } } }, 'tools.files.access must be one of: "read_write", "read_only"'],
        [{ tools: { files: { enabled: 'yes' } } }, 'tools.files.enabled must be of type boolean'],
        [{ tools: { mcp: [] } }, 'tools has an unknown field "mcp"'],
      ],
    },
    {
      rule: 'the draft holds versioned fields only',
      accepted: [{}],
      refused: [
        [{ is_default: true }, 'body has an unknown field "is_default"'],
        [{ version: 3 }, 'body has an unknown field "version"'],
        [{ agent_id: 'other' }, 'body has an unknown field "agent_id"'],
      ],
    },
  ];

  for (const { rule, accepted, refused } of rules) {
    describe(rule, () => {
      it('accepts values at the limit', async () => {
        for (const body of accepted) await expectAccepted(body);
      });
      it('refuses values past the limit with 400 invalid_request naming the field', async () => {
        for (const [body, message] of refused) await expectRefused(body, message);
      });
    });
  }

  it('stores what it accepts at the limit', async () => {
    const draft = await expectAccepted({ name: 'n'.repeat(100), guardrails: { max_steps: 500, max_minutes: 240, approval_timeout_minutes: 1440 } });
    expect(draft.name).to.equal('n'.repeat(100));
    expect(draft.guardrails).to.deep.include({ max_steps: 500, max_minutes: 240, approval_timeout_minutes: 1440 });
  });

  it('changes nothing when a save is refused', async () => {
    const before = await expectAccepted({ name: 'Kept', guardrails: { max_steps: 12 } });
    await expectRefused({ name: 'Lost', guardrails: { max_steps: 501 } }, 'guardrails.max_steps must be at most 500');
    await expectRefused({ name: 'Lost', tools: { http: [tool({ url: 'http://x.acme.com' })] } }, /url is refused/);
    const after = (await service.api(key, 'GET', `/v1/agents/${agentId}/draft`)).body;
    expect(after).to.deep.equal(before);
  });

  describe('POST /v1/agents', () => {
    const create = (body: unknown) => service.api(key, 'POST', '/v1/agents', body);

    it('accepts agent_id of 2 and of 40 lowercase letters, digits and dashes', async () => {
      for (const agentIdOk of ['ab', `a${'-'.repeat(38)}9`, '42', 'default-2']) {
        const response = await create({ agent_id: agentIdOk });
        expect(response.status, agentIdOk).to.equal(200);
        expect(response.body.agent_id).to.equal(agentIdOk);
      }
    });

    it('refuses agent_id of 1 or 41 characters, or with other characters, naming agent_id', async () => {
      await expectRefused({ agent_id: 'a' }, 'agent_id must be at least 2 characters', create);
      await expectRefused({ agent_id: 'a'.repeat(41) }, 'agent_id must be at most 40 characters', create);
      for (const bad of ['Support', 'sup_port', 'sup port', 'agent.1', 'ágent']) {
        await expectRefused({ agent_id: bad }, /^agent_id /, create);
      }
      await expectRefused({ name: 'No id' }, 'agent_id is required', create);
      await expectRefused({ agent_id: 12 }, 'agent_id must be of type string', create);
    });

    it('checks config fields as the draft does', async () => {
      await expectRefused({ agent_id: 'checked-1', guardrails: { max_steps: 501 } }, 'guardrails.max_steps must be at most 500', create);
      await expectRefused({ agent_id: 'checked-1', invite_url_template: 'https://acme.com' }, 'invite_url_template must contain the placeholder {code}', create);
      await expectRefused({ agent_id: 'checked-1', tools: { http: tools(21) } }, 'tools.http must have at most 20 items', create);
      await expectRefused({ agent_id: 'checked-1', effort: 'extreme' }, /^effort must be one of/, create);
      expect((await service.api(key, 'GET', '/v1/agents/checked-1')).status).to.equal(404);
    });
  });

  describe('PATCH /v1/agents/{agent_id}', () => {
    const patch = (body: unknown) => service.api(key, 'PATCH', `/v1/agents/${agentId}`, body);

    it('checks config fields as the draft does and publishes nothing when refused', async () => {
      const before = (await service.api(key, 'GET', `/v1/agents/${agentId}`)).body;
      await expectRefused({ guardrails: { max_minutes: 241 } }, 'guardrails.max_minutes must be at most 240', patch);
      await expectRefused({ guardrails: { sites: { allow: ['bad host'] } } }, 'guardrails.sites.allow[0] must be a host name or a web address', patch);
      await expectRefused({ model: 'gpt-5' }, /^model must be one of/, patch);
      await expectRefused({ is_default: 'yes' }, 'is_default must be of type boolean', patch);
      await expectRefused({ agent_id: 'renamed' }, 'body has an unknown field "agent_id"', patch);
      const after = (await service.api(key, 'GET', `/v1/agents/${agentId}`)).body;
      expect(after.version).to.equal(before.version);
    });

    it('refuses a body with nothing to change', async () => {
      await expectRefused({}, 'body must hold at least one field to change', patch);
    });

    it('needs a JSON body', async () => {
      const response = await service.api(key, 'PATCH', `/v1/agents/${agentId}`);
      expect(response.status).to.equal(400);
      expect(response.body.error.message).to.equal('Request body is required (JSON)');
    });
  });

  describe('guardrails.sites: the length is checked on what is stored (the host in its ASCII form)', () => {
    // 95 é are 95 characters as sent, but their host is stored as xn--… of 101; 94 make exactly 100.
    const longest = 'é'.repeat(94);
    const tooLong = 'é'.repeat(95);
    const stored = (host: string) => new URL(`http://${host}`).hostname;
    const refusal = /^guardrails\.sites\.block\[1\] must be at most 100 characters as stored/;

    it('POST /v1/agents: 400 naming the entry past 100 in ASCII form; the longest that fits is stored and reads back', async () => {
      const create = (body: unknown) => service.api(key, 'POST', '/v1/agents', body);
      await expectRefused({ agent_id: 'idn-sites-1', guardrails: { sites: { block: ['acme.com', tooLong] } } }, refusal, create);
      expect((await service.api(key, 'GET', '/v1/agents/idn-sites-1')).status).to.equal(404);
      const made = await create({ agent_id: 'idn-sites-2', guardrails: { sites: { block: ['acme.com', longest] } } });
      expect(made.status, JSON.stringify(made.body)).to.equal(200);
      expect(stored(longest)).to.have.length(100);
      const read = await service.api(key, 'GET', '/v1/agents/idn-sites-2');
      expect(read.status, JSON.stringify(read.body)).to.equal(200);
      expect(read.body.guardrails.sites.block).to.deep.equal(['acme.com', stored(longest)]);
    });

    it('PATCH /v1/agents/{agent_id}: 400 naming the entry, nothing published; the agent still reads', async () => {
      const before = (await service.api(key, 'GET', `/v1/agents/${agentId}`)).body;
      await expectRefused({ guardrails: { sites: { block: ['acme.com', tooLong] } } }, refusal, (body) => service.api(key, 'PATCH', `/v1/agents/${agentId}`, body));
      const after = await service.api(key, 'GET', `/v1/agents/${agentId}`);
      expect(after.status).to.equal(200);
      expect(after.body.version).to.equal(before.version);
    });

    it('PATCH /v1/agents/{agent_id}/draft: 400 naming the entry, the draft unchanged; also in allow', async () => {
      const before = (await service.api(key, 'GET', `/v1/agents/${agentId}/draft`)).body;
      await expectRefused({ guardrails: { sites: { block: ['acme.com', tooLong] } } }, refusal);
      await expectRefused({ guardrails: { sites: { allow: [tooLong] } } }, /^guardrails\.sites\.allow\[0\] must be at most 100 characters as stored/);
      const after = await service.api(key, 'GET', `/v1/agents/${agentId}/draft`);
      expect(after.status).to.equal(200);
      expect(after.body).to.deep.equal(before);
    });
  });
});
