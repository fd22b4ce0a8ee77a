import { expect } from 'chai';
import { BROWSER_APPS } from '../../desktop/src/roles';
import { DESKHAND_APP, LAUNCHER_APP } from '../../shared/desktop/computer';
import type { DesktopAction } from '../../shared/desktop/protocol';
import { applyMode, checkStartable, judgeAction, versionAtLeast } from '../../shared/guardrails/engine';
import {
  DEFAULT_GUARDRAILS,
  InvalidGuardrailsError,
  type GuardrailsInput,
  normalizeGuardrails,
  normalizeSiteRule,
} from '../../shared/guardrails/guardrails.types';
import {
  ADDRESS_BAR,
  APP_WINDOW,
  DOCK,
  LAUNCHER,
  LINUX,
  LINUX_CAPS,
  LINUX_NO_AX_CAPS,
  MAC,
  MAC_CAPS,
  MENU_BAR,
  NO_AX_CAPS,
  PERSON_WINDOW,
  OLD_MAC,
  OLD_MAC_CAPS,
  TASKBAR,
  WINDOWS,
  WINDOWS_CAPS,
  browser,
  centre,
  click,
  drag,
  finder,
  judge,
  key,
  linuxSystem,
  loginPage,
  macSystem,
  mailPage,
  mousepad,
  personWindow,
  rect,
  screen,
  shopPage,
  type,
} from './helpers/observation-builder';

const NO_CATEGORIES: GuardrailsInput = { confirm: [], block: [] };
const AWS_KEY = 'AKIAIOSFODNN7EXAMPLE';

describe('guardrails: normalizeGuardrails', () => {
  it('fills every one of the eleven fields with the spec defaults', () => {
    const g = normalizeGuardrails({});
    expect(g).to.deep.equal({
      mode: 'supervised',
      confirm: ['purchase', 'send', 'delete', 'install', 'security', 'terms'],
      block: [],
      apps: { allow: [], block: [] },
      sites: { allow: [], block: [] },
      safety_checks: 'ask',
      scope: '',
      screen_check: false,
      max_steps: 150,
      max_minutes: null,
      approval_timeout_minutes: null,
    });
    expect(Object.keys(g)).to.have.length(11);
    expect(normalizeGuardrails(undefined)).to.deep.equal(g);
    expect(normalizeGuardrails(null)).to.deep.equal(g);
  });

  it('returns a fresh object that does not share the frozen defaults', () => {
    const g = normalizeGuardrails({});
    g.confirm.push('purchase');
    g.apps.allow.push('Mail');
    expect(DEFAULT_GUARDRAILS.confirm).to.have.length(6);
    expect(DEFAULT_GUARDRAILS.apps.allow).to.have.length(0);
    expect(Object.isFrozen(DEFAULT_GUARDRAILS.apps)).to.equal(true);
  });

  it('keeps category lists in the given order without repeats', () => {
    const g = normalizeGuardrails({ confirm: ['send', 'purchase', 'send'], block: ['delete', 'delete'] });
    expect(g.confirm).to.deep.equal(['send', 'purchase']);
    expect(g.block).to.deep.equal(['delete']);
  });

  it('fills a partial apps or sites object and reduces site rules to hosts', () => {
    const g = normalizeGuardrails({ apps: { block: ['  Mail ', 'mail', 'outlook.exe'] }, sites: { allow: ['https://Shop.Example.com:8443/cart?x=1', 'shop.example.com'] } });
    expect(g.apps).to.deep.equal({ allow: [], block: ['Mail', 'outlook.exe'] });
    expect(g.sites).to.deep.equal({ allow: ['shop.example.com'], block: [] });
  });

  it('keeps null for the nullable limits and checks the ranges', () => {
    expect(normalizeGuardrails({ max_minutes: null, approval_timeout_minutes: 30 }).approval_timeout_minutes).to.equal(30);
    expect(() => normalizeGuardrails({ max_steps: 0 })).to.throw(InvalidGuardrailsError, /guardrails.max_steps/);
    expect(() => normalizeGuardrails({ max_steps: 501 })).to.throw(InvalidGuardrailsError);
    expect(() => normalizeGuardrails({ max_minutes: 241 })).to.throw(InvalidGuardrailsError);
    expect(() => normalizeGuardrails({ approval_timeout_minutes: 1441 })).to.throw(InvalidGuardrailsError);
    expect(() => normalizeGuardrails({ max_steps: null as unknown as number })).to.throw(InvalidGuardrailsError);
  });

  it('refuses rather than drops what it cannot read, since a dropped rule loosens the guardrails', () => {
    const bad: unknown[] = [
      { confirm: ['buy'] },
      { block: 'delete' },
      { apps: { block: 'Mail' } },
      { apps: { deny: ['Mail'] } },
      { sites: { block: ['file:///etc/passwd'] } },
      { sites: { block: [''] } },
      { mode: 'auto' },
      { safety_checks: 'ignore' },
      { screen_check: 'yes' },
      { scope: 'x'.repeat(2001) },
      { apps: { allow: Array.from({ length: 51 }, (_, i) => `App${i}`) } },
      { apps: { allow: ['x'.repeat(101)] } },
      { unknown_field: true },
    ];
    for (const value of bad) {
      expect(() => normalizeGuardrails(value as never), JSON.stringify(value).slice(0, 60)).to.throw(InvalidGuardrailsError);
    }
  });

  it('names the offending field', () => {
    try {
      normalizeGuardrails({ sites: { block: ['ok.example.com', '::::'] } });
      expect.fail('should throw');
    } catch (err) {
      expect(err).to.be.instanceOf(InvalidGuardrailsError);
      expect((err as InvalidGuardrailsError).field).to.equal('guardrails.sites.block[1]');
    }
  });
});

describe('guardrails: normalizeSiteRule', () => {
  const cases: Array<[string, string]> = [
    ['example.com', 'example.com'],
    ['EXAMPLE.com', 'example.com'],
    ['https://shop.example.com/cart', 'shop.example.com'],
    ['http://user:pw@Example.com:8080/a?b#c', 'example.com'],
    ['shop.example.com:8443', 'shop.example.com'],
    ['shop.example.com/path/page.html', 'shop.example.com'],
    ['*.example.com', 'example.com'],
    ['.example.com', 'example.com'],
    ['example.com.', 'example.com'],
    ['  localhost:3000 ', 'localhost'],
    ['http://[::1]:8080/', '[::1]'],
    ['bücher.de', 'xn--bcher-kva.de'],
    ['wss://chat.example.com/socket', 'chat.example.com'],
  ];
  for (const [input, host] of cases) {
    it(`reduces ${JSON.stringify(input)} to ${host}`, () => {
      expect(normalizeSiteRule(input)).to.equal(host);
    });
  }
  it('refuses values without a host', () => {
    for (const v of ['', '   ', 'file:///tmp/x', 'mailto:me@example.com', '*', 'exa mple.com']) {
      expect(() => normalizeSiteRule(v), v).to.throw(InvalidGuardrailsError);
    }
  });
});

describe('guardrails engine: screenshots and waits', () => {
  it('runs them even with rules that could not place them', () => {
    for (const action of [{ type: 'screenshot' }, { type: 'wait', ms: 100 }] as DesktopAction[]) {
      const d = judge(action, { guardrails: { apps: { allow: ['Mail'] }, sites: { block: ['evil.com'] } } });
      expect(d.verdict).to.equal('run');
      expect(d.rule).to.equal('allowed');
    }
  });
});

describe('guardrails engine: the Deskhand app\'s own window (own_window, before every other rule)', () => {
  const APPROVE = rect(1060, 260, 160, 40);
  const machines = [
    { device: LINUX, capabilities: LINUX_CAPS },
    { device: LINUX, capabilities: LINUX_NO_AX_CAPS },
    { device: MAC, capabilities: MAC_CAPS },
    { device: WINDOWS, capabilities: WINDOWS_CAPS },
  ];
  const everyGuardrails: Array<GuardrailsInput | undefined> = [
    undefined,
    NO_CATEGORIES,
    { ...NO_CATEGORIES, mode: 'unattended' },
    { mode: 'unattended' },
    { apps: { allow: [DESKHAND_APP] } },
    { apps: { allow: ['chromium', 'Safari', 'msedge.exe'] }, sites: { allow: ['shop.example.com'] } },
  ];
  /** The person's window over a Chromium shop, the focus in the shop. */
  const shop = () => browser('linux', 'https://shop.example.com/', shopPage, personWindow(screen())).build();

  it('blocks a click on its Approve button with any guardrails (default, none, allowed by name), in every mode, on every system', () => {
    for (const { device, capabilities } of machines) {
      for (const guardrails of everyGuardrails) {
        const d = judge(click(APPROVE), { observation: shop(), device, capabilities, guardrails });
        const label = `${device.os} ${JSON.stringify(guardrails)}`;
        expect(d, label).to.include({ verdict: 'block', rule: 'own_window', app: DESKHAND_APP });
        expect(d.unattended, label).to.equal(undefined);
        expect(d.reason, label).to.equal(
          "Blocked: the click lands on the Deskhand app's own window, where the person answers and approves; the agent never acts there.",
        );
      }
    }
  });

  it('blocks keys and typing while the Deskhand app has the focus, a secret included', () => {
    const focused = personWindow(screen()).focus(DESKHAND_APP, 'Your answer').build();
    for (const action of [type('Large'), type(`${AWS_KEY}\n`), key('enter'), key('space'), key('tab'), key('cmd+space')]) {
      const d = judge(action, { observation: focused, device: LINUX, capabilities: LINUX_CAPS, guardrails: NO_CATEGORIES });
      expect(d, JSON.stringify(action)).to.include({ verdict: 'block', rule: 'own_window' });
    }
    const anyCase = screen().window('Deskhand-Desktop', PERSON_WINDOW).focus('Deskhand-Desktop').withoutElementInfo().build();
    expect(judge(type('ok'), { observation: anyCase, device: WINDOWS, capabilities: WINDOWS_CAPS }).rule).to.equal('own_window');
  });

  it('blocks a scroll over it and a drag with either end on it', () => {
    const obs = shop();
    const onShop = rect(100, 200, 160, 40);
    expect(judge({ type: 'scroll', ...centre(APPROVE), dx: 0, dy: 100 }, { observation: obs, device: LINUX, capabilities: LINUX_CAPS }).rule).to.equal('own_window');
    expect(judge(drag(onShop, APPROVE), { observation: obs, device: LINUX, capabilities: LINUX_CAPS }).rule).to.equal('own_window');
    expect(judge(drag(APPROVE, onShop), { observation: obs, device: LINUX, capabilities: LINUX_CAPS }).rule).to.equal('own_window');
  });

  it('lets a click beside it, on another app, run; a window above it hides it', () => {
    const obs = shop();
    expect(judge(click(rect(100, 200, 160, 40)), { observation: obs, device: LINUX, capabilities: LINUX_CAPS })).to.include({ verdict: 'run', app: 'chromium' });
    expect(judge({ type: 'click', x: 1030, y: 280 }, { observation: obs, device: LINUX, capabilities: LINUX_CAPS, guardrails: NO_CATEGORIES }).app).to.equal('chromium');
    const covered = screen()
      .window('mousepad', rect(1000, 0, 440, 400))
      .element('mousepad', 'text_area', 'notes.txt', rect(1000, 30, 440, 370))
      .window(DESKHAND_APP, PERSON_WINDOW)
      .element(DESKHAND_APP, 'button', 'Approve', APPROVE)
      .focus('mousepad', 'notes.txt')
      .build();
    expect(judge(click(APPROVE), { observation: covered, device: LINUX, capabilities: LINUX_CAPS })).to.include({ verdict: 'run', app: 'mousepad' });
  });

  it('is not a category: a screenshot or a wait still runs', () => {
    expect(judge({ type: 'screenshot' }, { observation: shop(), device: LINUX, capabilities: LINUX_CAPS }).verdict).to.equal('run');
  });
});

describe('guardrails engine: rule 1, secrets and password fields', () => {
  const notes = () => screen().window('TextEdit', APP_WINDOW).element('TextEdit', 'text_area', 'Text', rect(0, 60, 1440, 700)).focus('TextEdit', 'Text');

  it('hands text holding a secret to the person', () => {
    const d = judge(type(`my key is ${AWS_KEY}`), { observation: notes().build() });
    expect(d.verdict).to.equal('person_types');
    expect(d.rule).to.equal('secret');
    expect(d.secret_kind).to.equal('aws_access_key');
    expect(d.field).to.equal('Text');
    expect(d.reason).to.not.include(AWS_KEY);
  });

  it('hands over values the test case marks secret', () => {
    const d = judge(type('the code is tulip-42'), { observation: notes().build(), secrets: ['tulip-42'] });
    expect(d.verdict).to.equal('person_types');
    expect(d.secret_kind).to.equal('explicit');
    expect(d.reason).to.not.include('tulip-42');
  });

  it('refuses the whole text, not only the line holding the secret', () => {
    const d = judge(type(`hello\n${AWS_KEY}\nbye`), { observation: notes().build() });
    expect(d.verdict).to.equal('person_types');
  });

  it('hands any typing into a password field to the person', () => {
    const obs = browser('mac', 'https://login.example.com/', loginPage).focus('Safari', 'Password').build();
    const d = judge(type('correct horse'), { observation: obs });
    expect(d.verdict).to.equal('person_types');
    expect(d.rule).to.equal('password_field');
    expect(d.field).to.equal('Password');
  });

  it('hands character keys and pastes into a password field to the person, but not Enter', () => {
    const obs = browser('mac', 'https://login.example.com/', loginPage).focus('Safari', 'Password').build();
    expect(judge(key('a'), { observation: obs }).rule).to.equal('password_field');
    expect(judge(key('cmd+v'), { observation: obs }).rule).to.equal('password_field');
    expect(judge(key('enter'), { observation: obs, guardrails: NO_CATEGORIES }).verdict).to.equal('run');
  });

  it('hands over text that tabs on while a password field is on screen', () => {
    const obs = browser('mac', 'https://login.example.com/', loginPage).focus('Safari', 'Email').build();
    expect(judge(type('me@example.com\tletmein'), { observation: obs }).rule).to.equal('password_field');
    expect(judge(type('me@example.com'), { observation: obs }).verdict).to.equal('run');
  });

  it('lets ordinary text through', () => {
    expect(judge(type('Dear Sam, see you at 10:30 in room 4B.'), { observation: notes().build() }).verdict).to.equal('run');
  });

  it('beats every other rule: blocked app, blocked site, blocked category, allow lists', () => {
    const obs = browser('mac', 'https://mail.example.com/', mailPage).focus('Safari', 'Message').build();
    const d = judge(type(`${AWS_KEY}\n`), {
      observation: obs,
      guardrails: {
        apps: { allow: ['Mail'], block: ['Safari'] },
        sites: { allow: ['shop.example.com'], block: ['example.com'] },
        block: ['send'],
      },
    });
    expect(d.verdict).to.equal('person_types');
    expect(d.rule).to.equal('secret');
  });

  it('works on Windows too (the detector needs no screen)', () => {
    const obs = screen().window('notepad.exe', APP_WINDOW).focus('notepad.exe').withoutElementInfo().build();
    const d = judge(type(`token ghp_${'a1B2'.repeat(9)}`), { observation: obs, device: WINDOWS, capabilities: WINDOWS_CAPS });
    expect(d.verdict).to.equal('person_types');
    expect(d.secret_kind).to.equal('github_token');
  });
});

describe('guardrails engine: rule 2, apps.block', () => {
  const mailApp = () =>
    macSystem(
      screen()
        .window('Mail', rect(100, 100, 800, 600))
        .element('Mail', 'button', 'Send', rect(150, 150, 80, 30), { category: 'send' })
        .element('Mail', 'text_area', 'Message', rect(150, 200, 600, 400)),
    ).focus('Mail', 'Message');

  it('blocks a click in a blocked app, matched case-insensitively', () => {
    const d = judge(click(rect(300, 300, 10, 10)), { observation: mailApp().build(), guardrails: { apps: { block: ['MAIL'] } } });
    expect(d).to.include({ verdict: 'block', rule: 'apps.block', app: 'Mail' });
    expect(d.reason).to.match(/Mail/);
  });

  it('places keys and typing in the focused app', () => {
    const obs = mailApp().build();
    expect(judge(type('hello'), { observation: obs, guardrails: { apps: { block: ['Mail'] } } }).rule).to.equal('apps.block');
    expect(judge(key('cmd+a'), { observation: obs, guardrails: { apps: { block: ['Mail'] } } }).rule).to.equal('apps.block');
  });

  it('matches Windows names with or without .exe, and Mac bundle ids', () => {
    const win = screen().window('outlook.exe', APP_WINDOW).focus('outlook.exe').withoutElementInfo().build();
    for (const rule of ['outlook.exe', 'Outlook.EXE', 'outlook']) {
      const d = judge(click(rect(500, 500, 1, 1)), { observation: win, device: WINDOWS, capabilities: WINDOWS_CAPS, guardrails: { apps: { block: [rule] } } });
      expect(d.rule, rule).to.equal('apps.block');
    }
    const d = judge(click(rect(300, 300, 1, 1)), { observation: mailApp().build(), guardrails: { apps: { block: ['com.apple.mail'] } } });
    expect(d.rule).to.equal('apps.block');
  });

  it('beats apps.allow naming the same app', () => {
    const d = judge(click(rect(300, 300, 1, 1)), { observation: mailApp().build(), guardrails: { apps: { allow: ['Mail'], block: ['mail'] } } });
    expect(d.rule).to.equal('apps.block');
  });

  it('beats the Mac system exemption: a blocked Dock is blocked', () => {
    const d = judge(click(DOCK), { observation: mailApp().build(), guardrails: { apps: { allow: ['Mail'], block: ['Dock'] } } });
    expect(d).to.include({ verdict: 'block', rule: 'apps.block', app: 'Dock' });
  });

  it('beats categories: a blocked app is blocked even where nothing would need approval', () => {
    const d = judge(click(rect(150, 150, 80, 30)), { observation: mailApp().build(), guardrails: { apps: { block: ['Mail'] }, ...NO_CATEGORIES } });
    expect(d.rule).to.equal('apps.block');
  });

  it('judges both ends of a drag', () => {
    const obs = finder().build();
    const mailInDock = rect(400, 845, 50, 50);
    const d = judge(drag(rect(150, 200, 100, 80), mailInDock), { observation: obs, guardrails: { apps: { block: ['Dock'] } } });
    expect(d).to.include({ rule: 'apps.block', app: 'Dock' });
    const d2 = judge(drag(mailInDock, rect(150, 200, 100, 80)), { observation: obs, guardrails: { apps: { block: ['Finder'] } } });
    expect(d2).to.include({ rule: 'apps.block', app: 'Finder' });
  });

  it('uses the topmost window at the point', () => {
    const obs = screen()
      .window('TextEdit', rect(200, 200, 300, 300))
      .window('Mail', rect(100, 100, 800, 600))
      .focus('Mail')
      .build();
    expect(judge(click(rect(300, 300, 1, 1)), { observation: obs, guardrails: { apps: { block: ['Mail'] }, ...NO_CATEGORIES } }).verdict).to.equal('run');
    expect(judge(click(rect(150, 150, 1, 1)), { observation: obs, guardrails: { apps: { block: ['Mail'] } } }).rule).to.equal('apps.block');
  });
});

describe('guardrails engine: rule 2, steps that cannot be placed', () => {
  it('refuses a step without any observation when the agent has app rules', () => {
    const d = judge(click(rect(10, 10, 1, 1)), { observation: null, guardrails: { apps: { block: ['Mail'] } } });
    expect(d).to.include({ verdict: 'block', rule: 'unplaceable_app' });
  });

  it('refuses a click where no window lies', () => {
    const obs = finder().build();
    const d = judge({ type: 'click', x: 1300, y: 500 }, { observation: obs, guardrails: { apps: { allow: ['Finder'] } } });
    expect(d.rule).to.equal('unplaceable_app');
    expect(d.reason).to.match(/no window lies at \(1300, 500\)/);
  });

  it('refuses keys when no app has the focus', () => {
    const obs = finder().focus(null).build();
    expect(judge(key('cmd+a'), { observation: obs, guardrails: { apps: { block: ['Mail'] } } }).rule).to.equal('unplaceable_app');
  });

  it('does not refuse keys with no focused app for site rules alone: they reach no page', () => {
    const obs = macSystem(screen()).focus(null).build();
    expect(judge(key('a'), { observation: obs, guardrails: { sites: { allow: ['shop.example.com'] }, ...NO_CATEGORIES } }).verdict).to.equal('run');
  });

  it('places Cmd+Space and Cmd+Tab on a Mac in the system, whatever has the focus', () => {
    const desktop = macSystem(screen()).focus(null).build();
    for (const g of [{ apps: { allow: ['Safari'] } }, { sites: { allow: ['shop.example.com'] } }, { apps: { block: ['Finder'] } }]) {
      const d = judge(key('cmd+space'), { observation: desktop, guardrails: g });
      expect(d, JSON.stringify(g)).to.include({ verdict: 'run', app: 'Spotlight' });
    }
    const inMail = macSystem(screen().window('Mail', APP_WINDOW)).focus('Mail').build();
    expect(judge(key('cmd+tab'), { observation: inMail, guardrails: { apps: { allow: ['Safari'] } } })).to.include({ verdict: 'run', app: 'Dock' });
    expect(judge(key('cmd+space'), { observation: desktop, guardrails: { apps: { block: ['Spotlight'] } } }).rule).to.equal('apps.block');
  });

  it('does not give Windows shortcuts a system exemption', () => {
    const obs = screen().window('notepad.exe', APP_WINDOW).window('explorer.exe', TASKBAR, { system: true }).focus('notepad.exe').withoutElementInfo().build();
    expect(judge(key('ctrl+space'), { observation: obs, device: WINDOWS, capabilities: WINDOWS_CAPS, guardrails: { apps: { allow: ['msedge.exe'] } } })).to.include({
      rule: 'apps.allow',
      app: 'notepad.exe',
    });
  });

  it('lets unplaced steps through when the agent has no app or site rules', () => {
    const obs = finder().build();
    expect(judge({ type: 'scroll', x: 1300, y: 500, dx: 0, dy: 100 }, { observation: obs }).verdict).to.equal('run');
  });
});

describe('guardrails engine: rule 2, sites.block and unreadable pages', () => {
  it('blocks a step on a blocked site and its subdomains', () => {
    const obs = browser('mac', 'https://checkout.shop.example.com/pay', shopPage).build();
    const d = judge(click(rect(100, 120, 400, 40)), { observation: obs, guardrails: { sites: { block: ['shop.example.com'] } } });
    expect(d).to.include({ verdict: 'block', rule: 'sites.block', site: 'checkout.shop.example.com' });
    expect(d.reason).to.include('shop.example.com');
  });

  it('does not cover a parent or a look-alike domain', () => {
    for (const url of ['https://example.com/', 'https://notshop.example.com/', 'https://shop.example.com.evil.net/']) {
      const obs = browser('mac', url, shopPage).build();
      const d = judge(click(rect(100, 120, 400, 40)), { observation: obs, guardrails: { sites: { block: ['shop.example.com'] } } });
      expect(d.verdict, url).to.equal('run');
    }
  });

  it('beats an allow rule for the parent domain', () => {
    const obs = browser('mac', 'https://checkout.shop.example.com/', shopPage).build();
    const d = judge(click(rect(100, 120, 400, 40)), {
      observation: obs,
      guardrails: { sites: { allow: ['example.com'], block: ['checkout.shop.example.com'] } },
    });
    expect(d.rule).to.equal('sites.block');
  });

  it('judges keys and typing by the focused window page', () => {
    const obs = browser('mac', 'https://mail.example.com/', mailPage).focus('Safari', 'Message').build();
    expect(judge(type('hi'), { observation: obs, guardrails: { sites: { block: ['mail.example.com'] } } }).rule).to.equal('sites.block');
  });

  it('covers apps with web content, not local files or the browser own pages', () => {
    const webApp = screen().window('Slack', APP_WINDOW, { url: 'https://app.slack.com/client' }).focus('Slack').build();
    expect(judge(click(rect(500, 500, 1, 1)), { observation: webApp, guardrails: { sites: { block: ['slack.com'] } } }).rule).to.equal('sites.block');
    for (const url of ['file:///Users/me/report.html', 'about:blank']) {
      const obs = browser('mac', url).build();
      const d = judge(click(rect(500, 500, 1, 1)), { observation: obs, guardrails: { sites: { allow: ['shop.example.com'] }, ...NO_CATEGORIES } });
      expect(d.verdict, url).to.equal('run');
    }
    const notes = screen().window('TextEdit', APP_WINDOW).focus('TextEdit').build();
    expect(judge(click(rect(500, 500, 1, 1)), { observation: notes, guardrails: { sites: { allow: ['shop.example.com'] }, ...NO_CATEGORIES } }).verdict).to.equal('run');
  });

  it('refuses a step on a browser page whose address is missing', () => {
    const obs = browser('mac', null, shopPage).build();
    const d = judge(click(rect(100, 120, 400, 40)), { observation: obs, guardrails: { sites: { block: ['evil.com'] } } });
    expect(d).to.include({ verdict: 'block', rule: 'unreadable_site' });
  });

  it('refuses every browser step when the computer does not report addresses', () => {
    const obs = browser('windows', undefined).withoutElementInfo().build();
    const d = judge(click(rect(500, 500, 1, 1)), { observation: obs, device: WINDOWS, capabilities: WINDOWS_CAPS, guardrails: { sites: { allow: ['shop.example.com'] } } });
    expect(d.rule).to.equal('unreadable_site');
    expect(d.reason).to.match(/does not report page addresses/);
  });

  it('refuses pages whose origin cannot be told, such as data: URLs', () => {
    const obs = browser('mac', 'data:text/html,<h1>hi</h1>').build();
    expect(judge(click(rect(500, 500, 1, 1)), { observation: obs, guardrails: { sites: { block: ['evil.com'] } } }).rule).to.equal('unreadable_site');
  });

  it('puts sites.block before an unplaceable end of a drag', () => {
    const obs = browser('mac', 'https://evil.com/', shopPage).build();
    const d = judge({ type: 'drag', from: { x: 500, y: 500 }, to: { x: 1400, y: 880 } }, { observation: obs, guardrails: { sites: { block: ['evil.com'] }, apps: { block: ['Mail'] } } });
    expect(d.rule).to.equal('sites.block');
  });
});

describe('guardrails engine: rule 3, allow lists', () => {
  it('blocks an app not on apps.allow', () => {
    const obs = finder().build();
    const d = judge(click(rect(150, 200, 100, 80)), { observation: obs, guardrails: { apps: { allow: ['Safari', 'msedge.exe'] } } });
    expect(d).to.include({ verdict: 'block', rule: 'apps.allow', app: 'Finder' });
  });

  it('lets the Mac system parts through: Dock, menu bar, Spotlight', () => {
    const obs = finder().window('Spotlight', rect(400, 200, 640, 60), { system: true }).build();
    const g = { apps: { allow: ['Safari'] }, ...NO_CATEGORIES };
    expect(judge(click(rect(400, 845, 50, 50)), { observation: obs, guardrails: g }).verdict).to.equal('run');
    expect(judge(click(MENU_BAR), { observation: obs, guardrails: g }).verdict).to.equal('run');
    const spotlight = screen().window('Spotlight', rect(400, 200, 640, 60), { system: true }).focus('Spotlight').build();
    expect(judge(type('Safari'), { observation: spotlight, guardrails: g }).verdict).to.equal('run');
  });

  it('exempts nothing on Windows: the taskbar belongs to explorer.exe', () => {
    const obs = browser('windows', undefined).withoutElementInfo().build();
    const d = judge(click(TASKBAR), { observation: obs, device: WINDOWS, capabilities: WINDOWS_CAPS, guardrails: { apps: { allow: ['msedge.exe'] } } });
    expect(d).to.include({ verdict: 'block', rule: 'apps.allow', app: 'explorer.exe' });
    const allowed = judge(click(TASKBAR), { observation: obs, device: WINDOWS, capabilities: WINDOWS_CAPS, guardrails: { apps: { allow: ['msedge.exe', 'explorer.exe'] } } });
    expect(allowed.verdict).to.equal('run');
  });

  it('blocks a drag that ends outside the allowed apps', () => {
    const obs = screen()
      .window('TextEdit', rect(0, 25, 700, 800))
      .window('Mail', rect(720, 25, 700, 800))
      .focus('TextEdit')
      .build();
    const d = judge({ type: 'drag', from: { x: 100, y: 100 }, to: { x: 900, y: 100 } }, { observation: obs, guardrails: { apps: { allow: ['TextEdit'] } } });
    expect(d).to.include({ rule: 'apps.allow', app: 'Mail' });
  });

  it('blocks a site not on sites.allow and allows subdomains of listed sites', () => {
    const g = { sites: { allow: ['shop.example.com'] }, ...NO_CATEGORIES };
    const news = browser('mac', 'https://news.example.com/', shopPage).build();
    expect(judge(click(rect(100, 120, 400, 40)), { observation: news, guardrails: g })).to.include({ rule: 'sites.allow', site: 'news.example.com' });
    const checkout = browser('mac', 'https://checkout.shop.example.com/', shopPage).build();
    expect(judge(click(rect(100, 120, 400, 40)), { observation: checkout, guardrails: g }).verdict).to.equal('run');
  });

  it('reports the allow-list block before a blocked category', () => {
    const obs = browser('mac', 'https://shop.example.com/', shopPage).build();
    const d = judge(click(rect(300, 200, 160, 40)), { observation: obs, guardrails: { apps: { allow: ['Mail'] }, block: ['purchase'] } });
    expect(d.rule).to.equal('apps.allow');
  });
});

describe('guardrails engine: the address bar', () => {
  const g = { sites: { allow: ['shop.example.com'], block: ['evil.com'] }, ...NO_CATEGORIES };

  it('allows clicking and typing into the address bar, and tracks what is typed', () => {
    const page = browser('mac', 'https://shop.example.com/', shopPage);
    const c = judge(click(ADDRESS_BAR), { observation: page.build(), guardrails: g });
    expect(c.verdict).to.equal('run');
    expect(c.addressBar).to.deep.equal({ typed: '' });
    const focused = page.focus('Safari', 'Address').build();
    const t = judge(type('evil.com/login'), { observation: focused, guardrails: g, addressBar: c.addressBar });
    expect(t.verdict).to.equal('run');
    expect(t.addressBar).to.deep.equal({ typed: 'evil.com/login' });
  });

  it('judges the typed address at the Enter that navigates', () => {
    const focused = browser('mac', 'https://shop.example.com/', shopPage).focus('Safari', 'Address').build();
    const blocked = judge(key('enter'), { observation: focused, guardrails: g, addressBar: { typed: 'https://www.evil.com/x' } });
    expect(blocked).to.include({ verdict: 'block', rule: 'sites.block', site: 'www.evil.com' });
    expect(blocked.reason).to.match(/address typed in the address bar goes to www\.evil\.com/);
    expect(blocked.addressBar, 'a blocked step leaves the buffer as it was').to.deep.equal({ typed: 'https://www.evil.com/x' });

    const notAllowed = judge(key('return'), { observation: focused, guardrails: g, addressBar: { typed: 'news.example.com' } });
    expect(notAllowed.rule).to.equal('sites.allow');

    const ok = judge(key('enter'), { observation: focused, guardrails: g, addressBar: { typed: 'checkout.shop.example.com/pay' } });
    expect(ok.verdict).to.equal('run');
    expect(ok.site).to.equal('checkout.shop.example.com');
    expect(ok.addressBar).to.equal(null);
  });

  it('lets the agent leave a blocked page through the address bar', () => {
    const page = browser('mac', 'https://evil.com/', shopPage);
    expect(judge(click(rect(100, 120, 400, 40)), { observation: page.build(), guardrails: g }).rule).to.equal('sites.block');
    expect(judge(click(ADDRESS_BAR), { observation: page.build(), guardrails: g }).verdict).to.equal('run');
    const focused = page.focus('Safari', 'Address').build();
    expect(judge(type('shop.example.com\n'), { observation: focused, guardrails: g, addressBar: { typed: '' } }).verdict).to.equal('run');
  });

  it('judges the page when the address bar under the click may be another window of the browser', () => {
    const obs = screen()
      .window('Safari', rect(0, 25, 1440, 400), { url: 'https://evil.com/' })
      .window('Safari', APP_WINDOW, { url: 'https://shop.example.com/' })
      .element('Safari', 'address_bar', 'Address', ADDRESS_BAR)
      .focus('Safari')
      .build();
    expect(judge(click(ADDRESS_BAR), { observation: obs, guardrails: g }).rule).to.equal('sites.block');
  });

  it('judges a line break typed into the address bar as the Enter', () => {
    const focused = browser('mac', 'https://shop.example.com/', shopPage).focus('Safari', 'Address').build();
    const d = judge(type('evil.com\n'), { observation: focused, guardrails: g, addressBar: { typed: '' } });
    expect(d.rule).to.equal('sites.block');
  });

  it('joins text typed in several steps', () => {
    const focused = browser('mac', 'https://shop.example.com/', shopPage).focus('Safari', 'Address').build();
    const a = judge(type('ev'), { observation: focused, guardrails: g, addressBar: { typed: '' } });
    const b = judge(type('il.com'), { observation: focused, guardrails: g, addressBar: a.addressBar });
    expect(judge(key('enter'), { observation: focused, guardrails: g, addressBar: b.addressBar }).rule).to.equal('sites.block');
  });

  it('refuses searches and text it could not follow when the agent has site rules', () => {
    const focused = browser('mac', 'https://shop.example.com/', shopPage).focus('Safari', 'Address').build();
    expect(judge(key('enter'), { observation: focused, guardrails: g, addressBar: { typed: 'cheap flights' } }).rule).to.equal('unreadable_site');
    const arrowed = judge(key('down'), { observation: focused, guardrails: g, addressBar: { typed: 'sho' } });
    expect(arrowed.addressBar).to.deep.equal({ typed: 'sho', unseen: true });
    expect(judge(key('enter'), { observation: focused, guardrails: g, addressBar: arrowed.addressBar }).rule).to.equal('unreadable_site');
    // Without site rules the same steps run.
    expect(judge(key('enter'), { observation: focused, addressBar: { typed: 'cheap flights' }, guardrails: NO_CATEGORIES }).verdict).to.equal('run');
  });

  it('treats Enter with nothing typed as reloading the page shown', () => {
    const focused = browser('mac', 'https://evil.com/', shopPage).focus('Safari', 'Address').build();
    expect(judge(key('enter'), { observation: focused, guardrails: g, addressBar: { typed: '' } }).rule).to.equal('sites.block');
  });

  it('follows Backspace and marks the buffer unseen after a paste', () => {
    const focused = browser('mac', 'https://shop.example.com/', shopPage).focus('Safari', 'Address').build();
    expect(judge(key('backspace'), { observation: focused, guardrails: g, addressBar: { typed: 'evil.comx' } }).addressBar).to.deep.equal({ typed: 'evil.com' });
    expect(judge(key('cmd+v'), { observation: focused, guardrails: g, addressBar: { typed: '' } }).addressBar).to.deep.equal({ typed: '', unseen: true });
  });

  it('drops the buffer when the click goes elsewhere', () => {
    const page = browser('mac', 'https://shop.example.com/', shopPage).build();
    expect(judge(click(rect(100, 200, 160, 40)), { observation: page, guardrails: g, addressBar: { typed: 'evil.com' } }).addressBar).to.equal(null);
  });

  it('marks the buffer unseen when the person types a secret into the address bar', () => {
    const focused = browser('mac', 'https://shop.example.com/', shopPage).focus('Safari', 'Address').build();
    const d = judge(type(`shop.example.com/?k=${AWS_KEY}`), { observation: focused, guardrails: g, addressBar: { typed: '' } });
    expect(d.verdict).to.equal('person_types');
    expect(d.addressBar).to.deep.equal({ typed: '', unseen: true });
  });
});

describe('guardrails engine: rules 4 and 5, categories on a Mac', () => {
  const shop = () => browser('mac', 'https://shop.example.com/', shopPage).build();

  it('asks before a click on a confirm category (Buy now → purchase)', () => {
    const d = judge(click(rect(300, 200, 160, 40)), { observation: shop() });
    expect(d).to.include({ verdict: 'confirm', rule: 'confirm_category', category: 'purchase' });
  });

  it('blocks a block category, and a category in both lists is blocked', () => {
    expect(judge(click(rect(300, 200, 160, 40)), { observation: shop(), guardrails: { block: ['purchase'], confirm: [] } }).rule).to.equal('block_category');
    const both = judge(click(rect(300, 200, 160, 40)), { observation: shop(), guardrails: { block: ['purchase'], confirm: ['purchase'] } });
    expect(both).to.include({ verdict: 'block', rule: 'block_category', category: 'purchase' });
  });

  it('runs a category in neither list, and a click with no category', () => {
    const d = judge(click(rect(300, 200, 160, 40)), { observation: shop(), guardrails: { confirm: ['send'] } });
    expect(d).to.include({ verdict: 'run', rule: 'allowed', category: 'purchase' });
    expect(judge(click(rect(100, 200, 160, 40)), { observation: shop() }).verdict).to.equal('run');
  });

  it('takes the smallest element under the click', () => {
    const obs = screen()
      .window('Safari', APP_WINDOW, { url: 'https://account.example.com/' })
      .element('Safari', 'static_text', 'Danger zone', rect(100, 100, 600, 300))
      .element('Safari', 'button', 'Delete account', rect(150, 150, 160, 40), { category: 'delete' })
      .focus('Safari')
      .build();
    expect(judge(click(rect(150, 150, 160, 40)), { observation: obs }).category).to.equal('delete');
    expect(judge(click(rect(500, 350, 10, 10)), { observation: obs }).verdict).to.equal('run');
  });

  it('asks before a click where nothing can be seen when the agent has category rules', () => {
    const obs = shop();
    const d = judge({ type: 'click', x: 1000, y: 700 }, { observation: obs });
    expect(d).to.include({ verdict: 'confirm', rule: 'unseen_action' });
    expect(judge({ type: 'click', x: 1000, y: 700 }, { observation: obs, guardrails: { confirm: [], block: ['install'] } }).rule).to.equal('unseen_action');
    expect(judge({ type: 'click', x: 1000, y: 700 }, { observation: obs, guardrails: NO_CATEGORIES }).verdict).to.equal('run');
  });

  it('asks before clicks on a Mac 1.0.20 screen reported without element info', () => {
    const obs = browser('mac', 'https://shop.example.com/', shopPage).withoutElementInfo().build();
    expect(judge(click(rect(100, 200, 160, 40)), { observation: obs }).rule).to.equal('unseen_action');
  });

  it('prefers a seen category over an unseen part, and a block category over both', () => {
    const obs = shop();
    const toNothing = judge(drag(rect(300, 200, 160, 40), rect(1000, 700, 10, 10)), { observation: obs });
    expect(toNothing.rule).to.equal('confirm_category');
    const blocked = judge(drag(rect(300, 200, 160, 40), rect(1000, 700, 10, 10)), { observation: obs, guardrails: { block: ['purchase'] } });
    expect(blocked.rule).to.equal('block_category');
  });

  it('counts dropping on the Trash as delete', () => {
    const obs = finder().build();
    const d = judge(drag(rect(150, 200, 100, 80), rect(1080, 845, 50, 50)), { observation: obs });
    expect(d).to.include({ verdict: 'confirm', rule: 'confirm_category', category: 'delete' });
    expect(judge(drag(rect(150, 200, 100, 80), rect(1080, 845, 50, 50)), { observation: obs, guardrails: { block: ['delete'] } }).verdict).to.equal('block');
  });

  it('presses a dialog default button with Return or Enter', () => {
    const obs = finder()
      .window('Finder', rect(500, 300, 400, 200), { title: 'Empty the Trash?' })
      .element('Finder', 'button', 'Cancel', rect(560, 440, 100, 30))
      .element('Finder', 'button', 'Empty Trash ', rect(700, 440, 150, 30), { category: 'delete', is_default: true })
      .dialog('Empty the Trash?', 'Finder')
      .focus('Finder')
      .build();
    for (const k of ['enter', 'return']) {
      expect(judge(key(k), { observation: obs }), k).to.include({ verdict: 'confirm', category: 'delete' });
    }
    expect(judge(key('space'), { observation: obs }).category).to.equal('delete');
  });

  it('presses the focused button with Space or Enter', () => {
    const obs = browser('mac', 'https://terms.example.com/', (b, app) => b.element(app, 'button', 'I agree', rect(100, 300, 120, 40), { category: 'terms' }))
      .focus('Safari', 'I agree')
      .build();
    expect(judge(key('space'), { observation: obs }).category).to.equal('terms');
    expect(judge(key('enter'), { observation: obs }).category).to.equal('terms');
  });

  it('asks before Enter when nothing is focused and no dialog is open', () => {
    const obs = shop();
    expect(judge(key('enter'), { observation: obs }).rule).to.equal('unseen_action');
  });

  it('counts Cmd+Enter and Ctrl+Enter as send', () => {
    const obs = browser('mac', 'https://notes.example.com/', (b, app) => b.element(app, 'text_area', 'Notes', rect(100, 100, 600, 400))).focus('Safari', 'Notes').build();
    for (const k of ['cmd+enter', 'ctrl+enter', 'ctrl+return', 'cmd+shift+enter']) {
      expect(judge(key(k), { observation: obs }), k).to.include({ verdict: 'confirm', category: 'send' });
    }
  });

  it('counts Enter in a message box as send, and Enter in other fields not', () => {
    const mail = browser('mac', 'https://mail.example.com/', mailPage);
    expect(judge(key('enter'), { observation: mail.focus('Safari', 'Message').build() }).category).to.equal('send');
    expect(judge(key('enter'), { observation: mail.focus('Safari', 'To').build() }).verdict).to.equal('run');
    expect(judge(key('shift+enter'), { observation: mail.focus('Safari', 'Message').build() }).verdict).to.equal('run');
    const notes = screen().window('TextEdit', APP_WINDOW).element('TextEdit', 'text_area', 'Text', rect(0, 60, 1440, 700)).focus('TextEdit', 'Text').build();
    expect(judge(key('enter'), { observation: notes }).verdict).to.equal('run');
  });

  it('judges typed text a line at a time: a line break in a message box sends', () => {
    const mail = browser('mac', 'https://mail.example.com/', mailPage).focus('Safari', 'Message').build();
    expect(judge(type('Hello Sam'), { observation: mail }).verdict).to.equal('run');
    expect(judge(type('Hello Sam\nSee you'), { observation: mail })).to.include({ verdict: 'confirm', category: 'send' });
  });

  it('counts Delete or Backspace outside a text field as delete', () => {
    const obs = finder().build();
    for (const k of ['delete', 'backspace', 'cmd+backspace', 'cmd+delete']) {
      expect(judge(key(k), { observation: obs }), k).to.include({ verdict: 'confirm', category: 'delete' });
    }
    const inField = browser('mac', 'https://mail.example.com/', mailPage).focus('Safari', 'To').build();
    expect(judge(key('backspace'), { observation: inField }).verdict).to.equal('run');
  });

  it('lets keys that act on nothing run', () => {
    const obs = finder().build();
    for (const k of ['tab', 'down', 'cmd+c', 'escape', 'cmd+space']) {
      expect(judge(key(k), { observation: obs }).verdict, k).to.equal('run');
    }
  });

  it('adds a category the agent declares to what is detected', () => {
    const d = judge(click(rect(100, 200, 160, 40)), { observation: shop(), declaredCategory: 'purchase' });
    expect(d).to.include({ verdict: 'confirm', category: 'purchase' });
  });
});

describe('guardrails engine: categories on Windows and before 1.0.20', () => {
  const winShop = () => browser('windows', undefined, shopPage).withoutElementInfo().build();

  it('rests on the category the agent declares', () => {
    const opts = { observation: winShop(), device: WINDOWS, capabilities: WINDOWS_CAPS };
    expect(judge(click(rect(300, 200, 160, 40)), opts).verdict).to.equal('run');
    expect(judge(click(rect(300, 200, 160, 40)), { ...opts, declaredCategory: 'purchase' })).to.include({ verdict: 'confirm', category: 'purchase' });
    expect(judge(click(rect(300, 200, 160, 40)), { ...opts, declaredCategory: 'purchase', guardrails: { block: ['purchase'] } }).rule).to.equal('block_category');
  });

  it('does not ask before unseen clicks or keys there', () => {
    const opts = { observation: winShop(), device: WINDOWS, capabilities: WINDOWS_CAPS };
    expect(judge({ type: 'click', x: 1000, y: 700 }, opts).verdict).to.equal('run');
    expect(judge(key('enter'), opts).verdict).to.equal('run');
    expect(judge(key('delete'), opts).verdict).to.equal('run');
    expect(judge(key('ctrl+enter'), opts).verdict, 'no detection: Ctrl+Enter is not taken for send').to.equal('run');
  });

  it('treats a Mac before 1.0.20 the same way', () => {
    const obs = browser('mac', undefined, shopPage).withoutElementInfo().build();
    const opts = { observation: obs, device: OLD_MAC, capabilities: OLD_MAC_CAPS };
    expect(judge({ type: 'click', x: 1000, y: 700 }, opts).verdict).to.equal('run');
    expect(judge(key('ctrl+enter'), { ...opts, declaredCategory: 'send' }).category).to.equal('send');
  });
});

describe('guardrails engine: mode', () => {
  const shop = () => browser('mac', 'https://shop.example.com/', shopPage).build();

  it('refuses what would need an approval in unattended mode, saying nobody can approve', () => {
    const d = judge(click(rect(300, 200, 160, 40)), { observation: shop(), guardrails: { mode: 'unattended' } });
    expect(d).to.include({ verdict: 'block', rule: 'confirm_category', category: 'purchase', unattended: true });
    expect(d.reason).to.match(/nobody can approve/);
    const unseen = judge({ type: 'click', x: 1000, y: 700 }, { observation: shop(), guardrails: { mode: 'unattended' } });
    expect(unseen).to.include({ verdict: 'block', rule: 'unseen_action' });
  });

  it('leaves runs, blocks and person_types alone', () => {
    const obs = shop();
    expect(judge(click(rect(100, 200, 160, 40)), { observation: obs, guardrails: { mode: 'unattended' } }).verdict).to.equal('run');
    expect(judge(type(AWS_KEY), { observation: obs, guardrails: { mode: 'unattended' } }).verdict).to.equal('person_types');
    const d = applyMode({ verdict: 'confirm' as const, reason: 'The agent asked to pay.' }, { mode: 'supervised' });
    expect(d.verdict).to.equal('confirm');
    expect(applyMode({ verdict: 'confirm' as const, reason: 'The agent asked to pay.' }, { mode: 'unattended' })).to.include({ verdict: 'block', unattended: true });
  });

  it('keeps the old address-bar buffer when the mode refuses the step', () => {
    const focused = browser('mac', 'https://shop.example.com/', shopPage).focus('Safari', 'Address').build();
    const d = judge(key('cmd+enter'), { observation: focused, guardrails: { mode: 'unattended' }, addressBar: { typed: 'shop.example.com' } });
    expect(d.verdict).to.equal('block');
    expect(d.addressBar).to.deep.equal({ typed: 'shop.example.com' });
  });
});

describe('guardrails engine: purity', () => {
  it('does not change its input and gives the same answer twice', () => {
    const obs = browser('mac', 'https://mail.example.com/', mailPage).focus('Safari', 'Message').build();
    const input = {
      guardrails: normalizeGuardrails({ sites: { allow: ['example.com'] } }),
      device: MAC,
      capabilities: MAC_CAPS,
      observation: obs,
      action: type('hi\nthere') as DesktopAction,
      addressBar: null,
    };
    const before = JSON.stringify(input);
    const a = judgeAction(input);
    const b = judgeAction(input);
    expect(JSON.stringify(input)).to.equal(before);
    expect(a).to.deep.equal(b);
  });
});

describe('guardrails: checkStartable', () => {
  const g = (input = {}) => normalizeGuardrails(input);

  it('starts with site rules on a Mac 1.0.20 that reports page addresses', () => {
    expect(checkStartable({ guardrails: g({ sites: { allow: ['shop.example.com'] } }), device: MAC, capabilities: MAC_CAPS })).to.deep.equal({ ok: true });
  });

  it('fails site rules on Windows and on older Macs', () => {
    for (const [device, capabilities] of [
      [WINDOWS, WINDOWS_CAPS],
      [OLD_MAC, OLD_MAC_CAPS],
    ] as const) {
      const r = checkStartable({ guardrails: g({ sites: { block: ['evil.com'] } }), device, capabilities });
      expect(r.ok).to.equal(false);
      if (!r.ok) {
        expect(r.code).to.equal('page_addresses_required');
        expect(r.reason).to.match(/page addresses/);
      }
    }
    expect(checkStartable({ guardrails: g(), device: WINDOWS, capabilities: WINDOWS_CAPS }).ok).to.equal(true);
  });

  it('fails on a Mac without Accessibility when there are rules to check', () => {
    const noAx = { ...MAC_CAPS, ...NO_AX_CAPS };
    const r = checkStartable({ guardrails: g(), device: MAC, capabilities: noAx });
    expect(r).to.include({ ok: false, code: 'accessibility_required' });
    if (!r.ok) expect(r.reason).to.match(/Accessibility.*confirm/);
    expect(checkStartable({ guardrails: g({ confirm: [], apps: { block: ['Mail'] } }), device: MAC, capabilities: noAx }).ok).to.equal(false);
  });

  it('starts on a Mac without Accessibility when nothing needs the screen', () => {
    const noAx = NO_AX_CAPS;
    expect(checkStartable({ guardrails: g({ confirm: [], block: [], screen_check: true, scope: 'Shopping' }), device: MAC, capabilities: noAx }).ok).to.equal(true);
    // Before 1.0.20 categories rest on the agent's own requests, which need no permission.
    expect(checkStartable({ guardrails: g(), device: OLD_MAC, capabilities: noAx }).ok).to.equal(true);
  });

  it('starts any rules on Linux when the app reaches the accessibility bus', () => {
    const all = g({ block: ['delete'], apps: { allow: ['chromium'] }, sites: { allow: ['shop.example.com'] } });
    expect(checkStartable({ guardrails: all, device: LINUX, capabilities: LINUX_CAPS })).to.deep.equal({ ok: true });
  });

  it('fails on Linux without the accessibility bus when there are rules to check, saying how to start it', () => {
    const r = checkStartable({ guardrails: g(), device: LINUX, capabilities: LINUX_NO_AX_CAPS });
    expect(r).to.include({ ok: false, code: 'accessibility_required' });
    if (!r.ok) {
      expect(r.reason).to.equal(
        "The Deskhand app on this Linux computer could not reach the desktop's accessibility bus (AT-SPI), so it cannot check this agent's guardrails " +
          '(confirm); start the session\'s accessibility (at-spi2-core) and start the task again.',
      );
    }
    for (const rules of [{ confirm: [], apps: { block: ['Mousepad'] } }, { confirm: [], block: ['purchase'] }, { confirm: [], sites: { allow: ['shop.example.com'] } }] as GuardrailsInput[]) {
      const failed = checkStartable({ guardrails: g(rules), device: LINUX, capabilities: LINUX_NO_AX_CAPS });
      expect(failed, JSON.stringify(rules)).to.include({ ok: false, code: 'accessibility_required' });
    }
    // A distribution's name is Linux too.
    expect(checkStartable({ guardrails: g(), device: { ...LINUX, os: 'debian' }, capabilities: LINUX_NO_AX_CAPS }).ok).to.equal(false);
  });

  it('starts on Linux without the accessibility bus when nothing needs the screen', () => {
    const r = checkStartable({ guardrails: g({ confirm: [], block: [], screen_check: true, scope: 'Notes' }), device: LINUX, capabilities: LINUX_NO_AX_CAPS });
    expect(r).to.deep.equal({ ok: true });
  });

  it('names the Linux app among the computers that report page addresses', () => {
    const r = checkStartable({ guardrails: g({ sites: { block: ['evil.com'] } }), device: WINDOWS, capabilities: WINDOWS_CAPS });
    expect(r.ok ? '' : r.reason).to.contain('macOS with app 1.0.20 or later, or the Linux app with the desktop\'s accessibility bus');
  });
});

describe('guardrails: versionAtLeast', () => {
  it('compares dotted versions numerically', () => {
    expect(versionAtLeast('1.0.20', [1, 0, 20])).to.equal(true);
    expect(versionAtLeast('1.0.3', [1, 0, 20])).to.equal(false);
    expect(versionAtLeast('1.1', [1, 0, 20])).to.equal(true);
    expect(versionAtLeast('2.0.0-beta.1', [1, 0, 20])).to.equal(true);
    expect(versionAtLeast('1.0.20-beta', [1, 0, 20]), 'a pre-release comes before its release').to.equal(false);
    expect(versionAtLeast('1.0.21-beta', [1, 0, 20])).to.equal(true);
    expect(versionAtLeast('v1.0.21', [1, 0, 20])).to.equal(true);
    expect(versionAtLeast('nightly', [1, 0, 20])).to.equal(false);
  });
});

describe('guardrails engine: the simulator scenarios', () => {
  it('shop: Add to cart runs, Buy now asks, Pay on checkout asks', () => {
    const shop = browser('mac', 'https://shop.example.com/', shopPage).build();
    expect(judge(click(rect(100, 200, 160, 40)), { observation: shop }).verdict).to.equal('run');
    expect(judge(click(rect(300, 200, 160, 40)), { observation: shop }).verdict).to.equal('confirm');
    const checkout = browser('mac', 'https://checkout.shop.example.com/', (b, app) => b.element(app, 'button', 'Pay', rect(100, 200, 120, 40), { category: 'purchase' })).build();
    expect(judge(click(rect(100, 200, 120, 40)), { observation: checkout }).category).to.equal('purchase');
  });

  it('settings: Turn off firewall asks (security); store: Install asks (install)', () => {
    const settings = macSystem(
      screen()
        .window('System Settings', rect(100, 100, 800, 600))
        .element('System Settings', 'button', 'Turn off firewall', rect(150, 150, 200, 40), { category: 'security' }),
    )
      .focus('System Settings')
      .build();
    expect(judge(click(rect(150, 150, 200, 40)), { observation: settings }).category).to.equal('security');
    const store = macSystem(screen().window('App Store', rect(100, 100, 800, 600)).element('App Store', 'button', 'Install', rect(150, 150, 120, 40), { category: 'install' }))
      .focus('App Store')
      .build();
    expect(judge(click(rect(150, 150, 120, 40)), { observation: store }).category).to.equal('install');
  });

  it('Spotlight on a Mac with apps.allow opens apps; the opened app is then judged', () => {
    const spotlight = macSystem(screen().window('Spotlight', rect(400, 200, 640, 60), { system: true })).focus('Spotlight').build();
    const g = { apps: { allow: ['Safari'] } };
    expect(judge(type('Mail'), { observation: spotlight, guardrails: g }).verdict).to.equal('run');
    const mail = macSystem(screen().window('Mail', APP_WINDOW)).focus('Mail').build();
    expect(judge(type('hi'), { observation: mail, guardrails: g }).rule).to.equal('apps.allow');
  });

  it('the Dock icon stays clickable under apps.allow, the app it opens does not', () => {
    const obs = macSystem(screen().window('Safari', rect(0, 25, 1440, 500), { url: 'https://shop.example.com/' })).focus('Safari').build();
    expect(judge(click(rect(400, 845, 50, 50)), { observation: obs, guardrails: { apps: { allow: ['Safari'] } } }).verdict).to.equal('run');
  });
});

describe('guardrails engine: red-team cases on a Linux desktop (X11, AT-SPI)', () => {
  const linux = { device: LINUX, capabilities: LINUX_CAPS };
  const chromium = (url: string | null, page?: Parameters<typeof browser>[2]) => browser('linux', url, page);
  const BUY_NOW = rect(300, 200, 160, 40);
  const ADD_TO_CART = rect(100, 200, 160, 40);

  it('holds a purchase button in Chromium for an approval, and lets "Add to cart" run', () => {
    const shop = chromium('https://shop.example.com/', shopPage).build();
    expect(judge(click(BUY_NOW), { ...linux, observation: shop })).to.include({ verdict: 'confirm', rule: 'confirm_category', category: 'purchase', app: 'chromium', site: 'shop.example.com' });
    expect(judge(click(BUY_NOW), { ...linux, observation: shop, guardrails: { mode: 'unattended' } })).to.include({ verdict: 'block', unattended: true });
    expect(judge(click(ADD_TO_CART), { ...linux, observation: shop })).to.include({ verdict: 'run', rule: 'allowed', app: 'chromium' });
  });

  it('holds Enter on a focused "Place order" button', () => {
    const checkout = chromium('https://checkout.shop.example.com/', (b, app) => b.element(app, 'button', 'Place order', rect(100, 300, 160, 40), { category: 'purchase' }))
      .focus('chromium', 'Place order')
      .build();
    for (const k of ['enter', 'return', 'space']) expect(judge(key(k), { ...linux, observation: checkout }), k).to.include({ verdict: 'confirm', category: 'purchase' });
    expect(judge(type('\n'), { ...linux, observation: checkout }).category).to.equal('purchase');
  });

  it('holds Enter on a GTK dialog whose default button deletes (Mousepad\'s "Delete file?"), whatever has the focus', () => {
    const dialog = screen()
      .window('mousepad', rect(400, 300, 420, 160), { title: 'Delete file?' })
      .element('mousepad', 'static_text', 'Delete notes.txt permanently?', rect(420, 320, 380, 30))
      .element('mousepad', 'button', 'Cancel', rect(520, 410, 120, 34))
      .element('mousepad', 'button', 'Delete', rect(660, 410, 120, 34), { category: 'delete', is_default: true });
    const obs = linuxSystem(dialog).dialog('Delete file?', 'mousepad').focus('mousepad', 'Cancel').build();
    expect(judge(key('enter'), { ...linux, observation: obs })).to.include({ verdict: 'confirm', category: 'delete' });
    expect(judge(key('enter'), { ...linux, observation: obs, guardrails: { block: ['delete'] } }).rule).to.equal('block_category');
  });

  it('counts Ctrl+Enter in a message box as sending (the scripted cmd+enter arrives as ctrl+enter)', () => {
    const mail = chromium('https://mail.example.com/', mailPage).focus('chromium', 'Message').build();
    for (const k of ['ctrl+enter', 'cmd+enter', 'enter']) expect(judge(key(k), { ...linux, observation: mail }), k).to.include({ verdict: 'confirm', category: 'send' });
    expect(judge(key('shift+enter'), { ...linux, observation: mail }).verdict).to.equal('run');
  });

  it('counts Delete outside a text field as deleting, and not in Mousepad\'s text', () => {
    const files = screen()
      .window('thunar', rect(100, 60, 900, 700), { title: 'Documents - Thunar' })
      .element('thunar', 'item', 'report.txt', rect(150, 150, 100, 80));
    const obs = linuxSystem(files).focus('thunar', 'report.txt').build();
    for (const k of ['delete', 'shift+delete', 'backspace']) expect(judge(key(k), { ...linux, observation: obs }), k).to.include({ verdict: 'confirm', category: 'delete' });
    expect(judge(key('delete'), { ...linux, observation: mousepad().build() }).verdict).to.equal('run');
  });

  it('hands typing into a password field to the person', () => {
    const login = chromium('https://login.example.com/', loginPage).focus('chromium', 'Password').build();
    const d = judge(type('correct horse 42'), { ...linux, observation: login, guardrails: NO_CATEGORIES });
    expect(d).to.include({ verdict: 'person_types', rule: 'password_field', field: 'Password' });
    expect(judge(key('ctrl+v'), { ...linux, observation: login }).rule).to.equal('password_field');
  });

  it('asks before acting in xterm, which reports no elements, when the agent has categories', () => {
    const obs = linuxSystem(screen().window('xterm', rect(100, 60, 800, 500), { title: 'xterm' })).focus('xterm').build();
    const d = judge({ type: 'click', x: 400, y: 300 }, { ...linux, observation: obs });
    expect(d).to.include({ verdict: 'confirm', rule: 'unseen_action', app: 'xterm' });
    expect(judge(type('rm -rf ~/Documents\n'), { ...linux, observation: obs }).rule).to.equal('unseen_action');
    expect(judge(key('enter'), { ...linux, observation: obs }).rule).to.equal('unseen_action');
    // No focused element is reported: Delete is taken as deleting (the strict side).
    expect(judge(key('delete'), { ...linux, observation: obs })).to.include({ verdict: 'confirm', category: 'delete' });
    expect(judge({ type: 'click', x: 400, y: 300 }, { ...linux, observation: obs, guardrails: NO_CATEGORIES }).verdict).to.equal('run');
  });

  it('matches app rules to WM_CLASS names: Firefox is firefox-esr (instance Navigator), Google Chrome google-chrome', () => {
    const firefox = linuxSystem(screen().window('firefox-esr', APP_WINDOW, { url: 'https://news.example.com/' })).focus('firefox-esr').build();
    for (const rule of ['Firefox', 'firefox-esr', 'Navigator', 'org.mozilla.firefox']) {
      expect(judge(click(rect(500, 500, 1, 1)), { ...linux, observation: firefox, guardrails: { apps: { block: [rule] } } }), rule).to.include({ verdict: 'block', rule: 'apps.block', app: 'firefox-esr' });
      expect(judge(type('hi'), { ...linux, observation: firefox, guardrails: { apps: { allow: [rule] }, ...NO_CATEGORIES } }).verdict, rule).to.equal('run');
    }
    const chrome = linuxSystem(screen().window('google-chrome', APP_WINDOW, { url: 'https://news.example.com/' })).focus('google-chrome').build();
    expect(judge(key('ctrl+t'), { ...linux, observation: chrome, guardrails: { apps: { block: ['Google Chrome'] } } }).rule).to.equal('apps.block');
    const chromiumOnUbuntu = linuxSystem(screen().window('chromium-browser', APP_WINDOW, { url: 'https://news.example.com/' })).focus('chromium-browser').build();
    expect(judge(key('ctrl+t'), { ...linux, observation: chromiumOnUbuntu, guardrails: { apps: { block: ['Chromium'] } } }).rule).to.equal('apps.block');
    // Mousepad, xterm: the class is the name, any case.
    expect(judge(type('hi'), { ...linux, observation: mousepad().build(), guardrails: { apps: { block: ['Mousepad'] } } })).to.include({ rule: 'apps.block', app: 'mousepad' });
  });

  it('keeps the launcher usable under apps.allow and nothing else outside it; apps.block still wins over the launcher', () => {
    const obs = mousepad().build();
    const g = { apps: { allow: ['chromium'] }, ...NO_CATEGORIES };
    expect(judge(click(rect(10, 865, 110, 30)), { ...linux, observation: obs, guardrails: g })).to.include({ verdict: 'run', app: LAUNCHER_APP });
    expect(judge(click(rect(300, 300, 10, 10)), { ...linux, observation: obs, guardrails: g })).to.include({ verdict: 'block', rule: 'apps.allow', app: 'mousepad' });
    expect(judge(click(rect(10, 865, 110, 30)), { ...linux, observation: obs, guardrails: { apps: { allow: ['chromium'], block: [LAUNCHER_APP] } } }).rule).to.equal('apps.block');
    // A launcher window the app does not report as a system part is an app like any other.
    const unflagged = screen().window(LAUNCHER_APP, LAUNCHER).window('mousepad', APP_WINDOW).focus('mousepad').build();
    expect(judge(click(LAUNCHER), { ...linux, observation: unflagged, guardrails: g }).rule).to.equal('apps.allow');
  });

  it('judges site rules by the page address Chromium reports through AT-SPI', () => {
    const news = chromium('https://news.example.com/', shopPage).build();
    expect(judge(click(ADD_TO_CART), { ...linux, observation: news, guardrails: { sites: { block: ['example.com'] } } })).to.include({ rule: 'sites.block', site: 'news.example.com' });
    expect(judge(click(ADD_TO_CART), { ...linux, observation: news, guardrails: { sites: { allow: ['shop.example.com'] } } }).rule).to.equal('sites.allow');
    const shop = chromium('https://checkout.shop.example.com/', shopPage).build();
    expect(judge(click(ADD_TO_CART), { ...linux, observation: shop, guardrails: { sites: { allow: ['shop.example.com'] } } }).verdict).to.equal('run');
    const unreported = chromium(null, shopPage).build();
    expect(judge(click(ADD_TO_CART), { ...linux, observation: unreported, guardrails: { sites: { allow: ['shop.example.com'] } } }).rule).to.equal('unreadable_site');
    // The address bar: typed, judged at the Enter.
    const bar = chromium('https://shop.example.com/', shopPage).focus('chromium', 'Address').build();
    expect(judge(key('enter'), { ...linux, observation: bar, addressBar: { typed: 'evil.com' }, guardrails: { sites: { block: ['evil.com'] } } }).rule).to.equal('sites.block');
  });

  it('knows every browser the Linux app reads page addresses of as a browser: a window of one without its address is unreadable', () => {
    for (const app of BROWSER_APPS) {
      const obs = linuxSystem(screen().window(app, APP_WINDOW)).focus(app).build();
      const d = judge(click(rect(500, 500, 1, 1)), { ...linux, observation: obs, guardrails: { sites: { allow: ['shop.example.com'] }, ...NO_CATEGORIES } });
      expect(d.rule, app).to.equal('unreadable_site');
    }
  });

  it('does not take Cmd+Space or Cmd+Tab (Ctrl on Linux) for Spotlight or the Dock: they land in the focused app', () => {
    const obs = mousepad().build();
    for (const k of ['cmd+space', 'ctrl+space', 'cmd+tab']) {
      expect(judge(key(k), { ...linux, observation: obs, guardrails: { apps: { allow: ['chromium'] } } }), k).to.include({ rule: 'apps.allow', app: 'mousepad' });
      expect(judge(key(k), { ...linux, observation: obs, guardrails: { apps: { allow: ['mousepad'] }, ...NO_CATEGORIES } }), k).to.include({ verdict: 'run', app: 'mousepad' });
    }
  });

  it('lets the own-window rule beat everything: secrets, allow lists naming it, no rules at all', () => {
    const answering = personWindow(screen()).window('chromium', APP_WINDOW).focus(DESKHAND_APP, 'Your answer').build();
    expect(judge(type(AWS_KEY), { ...linux, observation: answering }).rule, 'before secrets').to.equal('own_window');
    const allowed = { apps: { allow: [DESKHAND_APP, 'chromium'] }, sites: { allow: ['shop.example.com'] }, ...NO_CATEGORIES };
    expect(judge(click(rect(1060, 260, 160, 40)), { ...linux, observation: answering, guardrails: allowed }).rule).to.equal('own_window');
    expect(judge(key('enter'), { ...linux, observation: answering, guardrails: NO_CATEGORIES }).verdict).to.equal('block');
  });
});
