import { expect } from 'chai';
import type { Observation } from '../../shared/desktop/protocol';
import { DEFAULT_MODEL, MODEL_CATALOG, MODEL_IDS, vendorOf } from '../../shared/models/catalog';
import { createModelRegistry, modelRegistryConfigFromEnv } from '../../shared/models/registry';
import { ModelError, type ModelTurnInput, type ModelTurnOutput, type TurnOutcome } from '../../shared/models/model.types';
import { judgeScopeScripted, parseScript, ScriptedBackend, ScriptParseError, scriptedTurn } from '../../shared/models/scripted';

const label = (text: string, x: number, y: number, width = 100, height = 20) => ({ label: text, bounds: { x, y, width, height } });

function screen(labels: Array<{ label: string; bounds: { x: number; y: number; width: number; height: number } }> = []): Observation {
  return {
    width: 1440,
    height: 900,
    windows: [],
    focused_app: null,
    focused: null,
    elements: null,
    dialog: null,
    text: null,
    visible_labels: labels,
  };
}

function input(prompt: string, overrides: Partial<ModelTurnInput> = {}): ModelTurnInput {
  return {
    model: DEFAULT_MODEL,
    effort: 'low',
    system: 'Rules.',
    prompt,
    state: null,
    observation: screen(),
    screenshot: null,
    lastOutcome: null,
    tools: { http: [], files: { enabled: true, read_only: false } },
    display: { width: 1440, height: 900, os: 'mac' },
    ...overrides,
  };
}

const OK: TurnOutcome = { kind: 'actions', results: [{ ok: true }] };

/** Runs a script turn by turn, answering each move the way `reply` says; stops at done/fail. */
function run(
  prompt: string,
  options: { overrides?: Partial<ModelTurnInput>; reply?: (out: ModelTurnOutput) => TurnOutcome | null; max?: number } = {},
): ModelTurnOutput[] {
  const outputs: ModelTurnOutput[] = [];
  let state: unknown = null;
  let lastOutcome: TurnOutcome | null = null;
  for (let i = 0; i < (options.max ?? 50); i++) {
    const out = scriptedTurn(input(prompt, { ...options.overrides, state, lastOutcome }));
    outputs.push(out);
    if (out.move.kind === 'done' || out.move.kind === 'fail') break;
    state = JSON.parse(JSON.stringify(out.state));
    lastOutcome = options.reply ? options.reply(out) : OK;
  }
  return outputs;
}

describe('scripted model', () => {
  describe('parseScript', () => {
    it('skips blank lines and # lines and keeps line numbers', () => {
      const steps = parseScript('# a comment\n\n  open Browser\n   # indented comment\nsleep 2\n');
      expect(steps).to.deep.equal([
        { line: 3, kind: 'open', app: 'Browser' },
        { line: 5, kind: 'sleep', seconds: 2 },
      ]);
    });

    it('reads quoted strings with \\" and \\\\ escapes', () => {
      const [step] = parseScript('type "say \\"hi\\" \\\\ there"');
      expect(step).to.deep.equal({ line: 1, kind: 'type', text: 'say "hi" \\ there' });
    });

    it('accepts step names in any case', () => {
      expect(parseScript('DONE "x"')[0]).to.include({ kind: 'done', summary: 'x' });
    });

    const bad: Array<[string, number, RegExp]> = [
      ['open Browser\nfly "away"', 2, /unknown step "fly"/],
      ['type "unclosed', 1, /not closed/],
      ['click Buy', 1, /click "LABEL"/],
      ['\n\nrequest_approval "Pay" shopping', 3, /unknown category "shopping"/],
      ['tool lookup {bad json}', 1, /not valid JSON/],
      ['tool lookup [1, 2]', 1, /JSON object/],
      ['sleep soon', 1, /SECONDS must be a number/],
      ['click_at 10', 1, /click_at X Y/],
      ['drag "a" onto "b"', 1, /drag "LABEL" to "LABEL"/],
      ['file rename a b', 1, /file write PATH/],
      ['repeat now', 1, /repeat takes nothing/],
      ['ask Which', 1, /ask "QUESTION"/],
    ];
    for (const [script, line, message] of bad) {
      it(`reports ${JSON.stringify(script)} as an error on line ${line}`, () => {
        let error: unknown;
        try {
          parseScript(script);
        } catch (err) {
          error = err;
        }
        expect(error).to.be.instanceOf(ScriptParseError);
        expect((error as ScriptParseError).line).to.equal(line);
        expect((error as Error).message).to.match(message).and.to.match(new RegExp(`^Script error on line ${line}:`));
      });
    }
  });

  describe('turns', () => {
    it('turns a parse error into a fail move naming the line', () => {
      const out = scriptedTurn(input('open Browser\nclick Buy now'));
      expect(out.move).to.deep.equal({ kind: 'fail', reason: 'Script error on line 2: expected click "LABEL"' });
      expect(out.safety).to.equal(null);
    });

    it('opens an app on a Mac through Spotlight with the Mac name', () => {
      const [out] = run('open Browser');
      expect(out.move).to.deep.equal({
        kind: 'actions',
        actions: [
          { type: 'key', keys: 'cmd+space' },
          { type: 'type', text: 'Safari' },
          { type: 'key', keys: 'enter' },
        ],
        step: 'Open Browser',
      });
    });

    it('maps every generic app name on a Mac', () => {
      const names: Record<string, string> = {
        Browser: 'Safari',
        Mail: 'Mail',
        Files: 'Finder',
        Settings: 'System Settings',
        Store: 'App Store',
        notes: 'TextEdit',
      };
      for (const [generic, mac] of Object.entries(names)) {
        const [out] = run(`open ${generic}`);
        expect(out.move.kind === 'actions' && out.move.actions[1]).to.deep.equal({ type: 'type', text: mac });
      }
    });

    it('opens an app on Windows by clicking its taskbar button', () => {
      const overrides = {
        display: { width: 1440, height: 900, os: 'windows' },
        observation: screen([label('outlook.exe', 400, 860, 40, 40), label('msedge.exe', 300, 860, 40, 40)]),
      };
      const [out] = run('open Browser', { overrides });
      expect(out.move).to.deep.equal({ kind: 'actions', actions: [{ type: 'click', x: 320, y: 880 }], step: 'Open Browser' });
    });

    it('also finds the taskbar button by what it shows', () => {
      const overrides = {
        display: { width: 1440, height: 900, os: 'windows' },
        observation: screen([label('Microsoft Edge', 300, 860, 40, 40)]),
      };
      const [out] = run('open browser', { overrides });
      expect(out.move).to.deep.equal({ kind: 'actions', actions: [{ type: 'click', x: 320, y: 880 }], step: 'Open browser' });
    });

    it('reports a missing taskbar button as a failed step and goes on', () => {
      const outs = run('open Mail\ndone "ok"', { overrides: { display: { width: 1440, height: 900, os: 'windows' } } });
      expect(outs[0].move).to.deep.equal({
        kind: 'actions',
        actions: [{ type: 'screenshot' }],
        step: 'Open Mail (failed: No taskbar button "Outlook" on the screen)',
      });
      expect(outs[1].move).to.deep.equal({ kind: 'done', summary: 'ok' });
    });

    it('goes to an address by clicking the address bar, typing and pressing Enter', () => {
      const overrides = { observation: screen([label('Address bar', 200, 40, 600, 30)]) };
      const [out] = run('go shop.example.com/cart', { overrides });
      expect(out.move).to.deep.equal({
        kind: 'actions',
        actions: [
          { type: 'click', x: 500, y: 55 },
          { type: 'type', text: 'shop.example.com/cart' },
          { type: 'key', keys: 'enter' },
        ],
        step: 'Go to shop.example.com/cart',
      });
    });

    it('finds the address bar by its role when the app reports elements', () => {
      const observation = screen();
      observation.elements = [
        { role: 'address_bar', label: 'Smart Search Field', category: null, is_default: false, bounds: { x: 0, y: 0, width: 100, height: 10 }, app: 'Safari' },
      ];
      const [out] = run('go mail.example.com', { overrides: { observation } });
      expect(out.move.kind === 'actions' && out.move.actions[0]).to.deep.equal({ type: 'click', x: 50, y: 5 });
    });

    it('reports go without a browser on screen as a failed step', () => {
      const [out] = run('go shop.example.com');
      expect(out.move).to.deep.include({ kind: 'actions', actions: [{ type: 'screenshot' }] });
      expect(out.thought).to.match(/No address bar/);
    });

    it('clicks the centre of a visible label, the topmost first', () => {
      const overrides = { observation: screen([label('Empty Trash', 600, 400, 120, 30), label('Empty Trash', 10, 10)]) };
      const [out] = run('click "Empty Trash"', { overrides });
      expect(out.move).to.deep.equal({ kind: 'actions', actions: [{ type: 'click', x: 660, y: 415 }], step: 'Click "Empty Trash"' });
    });

    it('matches a label case-insensitively when there is no exact match', () => {
      const [out] = run('click "buy now"', { overrides: { observation: screen([label('Buy now', 0, 0, 10, 10)]) } });
      expect(out.move.kind === 'actions' && out.move.actions[0]).to.deep.equal({ type: 'click', x: 5, y: 5 });
    });

    it('reports a label that is not on screen as a failed step and goes on', () => {
      const outs = run('click "Pay"\ndone "after"');
      expect(outs[0].move).to.deep.equal({
        kind: 'actions',
        actions: [{ type: 'screenshot' }],
        step: 'Click "Pay" (failed: no "Pay" on the screen)',
      });
      expect(outs[0].thought).to.equal('I cannot do that: no "Pay" on the screen.');
      expect(outs[1].move).to.deep.equal({ kind: 'done', summary: 'after' });
    });

    it('clicks a bare point with click_at', () => {
      const [out] = run('click_at 700 450');
      expect(out.move).to.deep.equal({ kind: 'actions', actions: [{ type: 'click', x: 700, y: 450 }], step: 'Click at 700, 450' });
    });

    it('types text without showing it in the step', () => {
      const [out] = run('type "hunter2"');
      expect(out.move).to.deep.equal({ kind: 'actions', actions: [{ type: 'type', text: 'hunter2' }], step: 'Type 7 characters' });
      expect(JSON.stringify(out.thought)).not.to.contain('hunter2');
    });

    it('presses key combos, keeping cmd on a Mac', () => {
      const [out] = run('key cmd+enter');
      expect(out.move).to.deep.equal({ kind: 'actions', actions: [{ type: 'key', keys: 'cmd+enter' }], step: 'Press cmd+enter' });
    });

    it('presses ctrl for cmd on Windows and maps key aliases', () => {
      const [out] = run('key Cmd+Return delete', { overrides: { display: { width: 1440, height: 900, os: 'windows' } } });
      expect(out.move).to.deep.equal({
        kind: 'actions',
        actions: [
          { type: 'key', keys: 'ctrl+enter' },
          { type: 'key', keys: 'delete' },
        ],
        step: 'Press ctrl+enter, delete',
      });
    });

    it('drags one label onto another', () => {
      const overrides = { observation: screen([label('report.txt', 100, 100, 40, 40), label('Trash', 1300, 800, 60, 60)]) };
      const [out] = run('drag "report.txt" to "Trash"', { overrides });
      expect(out.move).to.deep.equal({
        kind: 'actions',
        actions: [{ type: 'drag', from: { x: 120, y: 120 }, to: { x: 1330, y: 830 } }],
        step: 'Drag "report.txt" to "Trash"',
      });
    });

    it('reports a drag whose target is missing as a failed step', () => {
      const [out] = run('drag "report.txt" to "Trash"', { overrides: { observation: screen([label('report.txt', 0, 0)]) } });
      expect(out.move.kind === 'actions' && out.move.step).to.equal('Drag "report.txt" to "Trash" (failed: no "Trash" on the screen)');
    });

    it('asks a question with options, or a free one', () => {
      expect(run('ask "Which size?" "S" "M" "L"')[0].move).to.deep.equal({ kind: 'ask', question: 'Which size?', options: ['S', 'M', 'L'] });
      expect(run('ask "Anything else?"')[0].move).to.deep.equal({ kind: 'ask', question: 'Anything else?', options: [] });
    });

    it('requests approval with and without a category', () => {
      expect(run('request_approval "Pay 20 EUR" purchase')[0].move).to.deep.equal({
        kind: 'request_approval',
        what: 'Pay 20 EUR',
        category: 'purchase',
      });
      expect(run('request_approval "Go on"')[0].move).to.deep.equal({ kind: 'request_approval', what: 'Go on', category: null });
    });

    it('raises a safety check on the step after `safety`, not before and not after', () => {
      const outs = run('sleep 1\nsafety "This page looks like phishing"\nclick_at 1 2\nsleep 1');
      expect(outs.map((o) => o.safety)).to.deep.equal([null, 'This page looks like phishing', null, null]);
      expect(outs[1].move).to.deep.include({ kind: 'actions' });
    });

    it('calls an HTTP tool with its JSON arguments', () => {
      expect(run('tool lookup_order {"id": 42, "tags": ["a"]}')[0].move).to.deep.equal({
        kind: 'tool',
        name: 'lookup_order',
        arguments: { id: 42, tags: ['a'] },
      });
    });

    it('uses the file store', () => {
      const outs = run('file write notes/a.txt "hello there"\nfile read notes/a.txt\nfile delete "notes/a.txt"\nfile list\nfile search "hello"');
      expect(outs.slice(0, 5).map((o) => o.move)).to.deep.equal([
        { kind: 'file', op: 'write', path: 'notes/a.txt', text: 'hello there' },
        { kind: 'file', op: 'read', path: 'notes/a.txt' },
        { kind: 'file', op: 'delete', path: 'notes/a.txt' },
        { kind: 'file', op: 'list' },
        { kind: 'file', op: 'search', query: 'hello' },
      ]);
    });

    it('sleeps as a move, leaving the waiting to the worker', () => {
      expect(run('sleep 2.5')[0].move).to.deep.equal({ kind: 'sleep', seconds: 2.5 });
    });

    it('finishes with done and its summary, and fails with fail', () => {
      expect(run('done "Bought it"')[0].move).to.deep.equal({ kind: 'done', summary: 'Bought it' });
      expect(run('fail "No stock"')[0].move).to.deep.equal({ kind: 'fail', reason: 'No stock' });
    });

    it('finishes with "Done." when the script runs out', () => {
      const outs = run('click_at 1 1');
      expect(outs.map((o) => o.move.kind)).to.deep.equal(['actions', 'done']);
      expect(outs[1].move).to.deep.equal({ kind: 'done', summary: 'Done.' });
      expect(run('# only a comment')[0].move).to.deep.equal({ kind: 'done', summary: 'Done.' });
    });

    it('replaces {answer} with the last answer in every later step', () => {
      const overrides = { observation: screen([label('Size M', 0, 0)]) };
      const outs = run('ask "Which size?" "S" "M"\ntype "Size {answer}"\nclick "Size {answer}"\ntool note {"size": "{answer}"}\ndone "Noted size {answer}"', {
        overrides,
        reply: (out) => (out.move.kind === 'ask' ? { kind: 'answer', answer: 'M' } : OK),
      });
      expect(outs.map((o) => o.move)).to.deep.equal([
        { kind: 'ask', question: 'Which size?', options: ['S', 'M'] },
        { kind: 'actions', actions: [{ type: 'type', text: 'Size M' }], step: 'Type 6 characters' },
        { kind: 'actions', actions: [{ type: 'click', x: 50, y: 10 }], step: 'Click "Size M"' },
        { kind: 'tool', name: 'note', arguments: { size: 'M' } },
        { kind: 'done', summary: 'Noted size M' },
      ]);
    });

    it('keeps the latest of several answers, and leaves {answer} alone before any', () => {
      const answers = ['first', 'second'];
      const outs = run('done "{answer}"');
      expect(outs[0].move).to.deep.equal({ kind: 'done', summary: '{answer}' });
      const more = run('ask "A?"\nask "B?"\ndone "{answer}"', {
        reply: (out) => (out.move.kind === 'ask' ? { kind: 'answer', answer: answers.shift() as string } : OK),
      });
      expect(more[2].move).to.deep.equal({ kind: 'done', summary: 'second' });
    });

    it('repeats from the first step forever', () => {
      const outs = run('sleep 1\nclick_at 5 5\nrepeat', { max: 7 });
      expect(outs.map((o) => o.move.kind)).to.deep.equal(['sleep', 'actions', 'sleep', 'actions', 'sleep', 'actions', 'sleep']);
    });

    it('fails a script that repeats without a step', () => {
      const [out] = run('safety "x"\nrepeat');
      expect(out.move).to.deep.equal({ kind: 'fail', reason: 'Script error on line 2: repeat without any step to repeat' });
    });

    it('tells in its thought that the last step failed, and goes on', () => {
      const outs = run('click_at 1 1\ndone "ok"', {
        reply: () => ({ kind: 'actions', results: [{ ok: false, error: 'Safari is not open' }] }),
      });
      expect(outs[1].thought).to.equal('The last step failed: Safari is not open.');
      expect(outs[1].move).to.deep.equal({ kind: 'done', summary: 'ok' });
    });

    it('keeps a small JSON state: the next step and the last answer', () => {
      const outs = run('ask "Q?"\nclick_at 1 1', { reply: () => ({ kind: 'answer', answer: 'yes' }) });
      expect(outs[0].state).to.deep.equal({ v: 1, next: 1, answer: null });
      expect(outs[1].state).to.deep.equal({ v: 1, next: 2, answer: 'yes' });
      expect(JSON.stringify(outs[1].state).length).to.be.below(100);
    });

    it('refuses a state it did not write', () => {
      expect(() => scriptedTurn(input('sleep 1', { state: { messages: [] } })))
        .to.throw(ModelError)
        .with.property('code', 'invalid_input');
    });

    it('serves turns through the ModelBackend interface and honours an aborted signal', async () => {
      const backend = new ScriptedBackend();
      expect(backend.id).to.equal('scripted');
      const out = await backend.turn(input('done "x"'));
      expect(out.move).to.deep.equal({ kind: 'done', summary: 'x' });
      const controller = new AbortController();
      controller.abort();
      let error: unknown;
      try {
        await backend.turn(input('done "x"'), controller.signal);
      } catch (err) {
        error = err;
      }
      expect(error).to.be.instanceOf(ModelError).with.property('code', 'aborted');
    });
  });

  describe('judgeScopeScripted', () => {
    it('finds every task in scope unless the prompt says otherwise', () => {
      expect(judgeScopeScripted('Shopping on shop.example.com', 'open Browser')).to.include({ verdict: 'in_scope' });
      expect(judgeScopeScripted('', 'open Browser')).to.include({ verdict: 'in_scope' });
    });

    it('obeys a # scope: line', () => {
      expect(judgeScopeScripted('Shopping', '# scope: off\nopen Mail')).to.deep.equal({
        verdict: 'off_scope',
        reason: 'The task is not about what this agent is for: Shopping',
      });
      expect(judgeScopeScripted('Shopping', 'open Mail\n  #Scope:Unknown')).to.include({ verdict: 'undecidable' });
      expect(judgeScopeScripted('Shopping', '# scope: in\n# scope: off')).to.include({ verdict: 'in_scope' });
    });
  });
});

describe('model catalog', () => {
  it('lists six ids: three Anthropic, two OpenAI, one Gemini; the default is the second OpenAI id', () => {
    expect(MODEL_IDS).to.have.length(6);
    expect(MODEL_CATALOG.map((m) => m.vendor)).to.deep.equal(['anthropic', 'anthropic', 'anthropic', 'openai', 'openai', 'gemini']);
    expect(DEFAULT_MODEL).to.equal(MODEL_CATALOG.find((m) => m.slot === 'B2')?.id);
    expect(vendorOf('claude-sonnet-4-6')).to.equal('anthropic');
    expect(vendorOf('claude-sonnet-4-5-20250929')).to.equal(null);
    expect(vendorOf('gpt-2')).to.equal(null);
  });

  it('serves every id with the scripted model when scripted', () => {
    const registry = createModelRegistry({ scripted: true, openai: { apiKey: 'k' } });
    for (const id of [...MODEL_IDS, null]) expect(registry.backendFor(id)?.id).to.equal('scripted');
    expect(registry.backendFor('gpt-2')).to.equal(null);
  });

  it('serves a vendor only when its key is configured', () => {
    const registry = createModelRegistry({ scripted: false, anthropic: { apiKey: 'a' }, gemini: { apiKey: '' } });
    expect(registry.backendFor('claude-haiku-4-5-20251001')?.id).to.equal('anthropic');
    expect(registry.backendFor(null)).to.equal(null);
    expect(registry.isAvailable('gpt-5.4-mini')).to.equal(false);
    expect(registry.isAvailable('gemini-3.6-flash')).to.equal(false);
  });

  it('reads its config from the environment', () => {
    expect(
      modelRegistryConfigFromEnv({ DESKHAND_SCRIPTED_MODELS: '1', OPENAI_API_KEY: 'sk', OPENAI_BASE_URL: 'http://127.0.0.1:1/v1', GEMINI_API_KEY: ' ' }),
    ).to.deep.equal({
      scripted: true,
      anthropic: null,
      openai: { apiKey: 'sk', baseUrl: 'http://127.0.0.1:1/v1' },
      gemini: null,
    });
  });
});
