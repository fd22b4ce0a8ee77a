import { expect } from 'chai';
import { invalidAction } from '../../desktop/src/linux-computer';
import { parseCombo } from '../../desktop/src/input';
import { KEY_NAMES } from '../../shared/desktop/keys';
import { desktopOs, osOfImage } from '../../shared/desktop/os';
import { osOfImage as machineOsOfImage } from '../../shared/machines/machine-rows';
import { historyKeys, normalizeCombo, openAppActions, primaryModifier, systemAppName } from '../../shared/models/desktop-helpers';
import { DEFAULT_MODEL } from '../../shared/models/catalog';
import { scriptedTurn } from '../../shared/models/scripted';
import type { Observation } from '../../shared/desktop/protocol';
import { APP_WINDOW, browser, centre, linuxSystem, mousepad, rect, screen } from './helpers/observation-builder';

// Linux as a first-class system: one rule for an image's OS and a device's, keys placed per
// system (cmd is Ctrl, super the system key), and the Linux computer's own check of a step.

describe('the systems a desktop app runs on', () => {
  it('reads an image\'s OS with one rule, the machines\' rows and the simulated hypervisor alike', () => {
    expect(machineOsOfImage).to.equal(osOfImage);
    expect(osOfImage('macos-15')).to.equal('mac');
    expect(osOfImage('windows-11')).to.equal('windows');
    expect(osOfImage('debian-12')).to.equal('linux');
    expect(osOfImage('ubuntu-24')).to.equal('linux');
    expect(osOfImage('Fedora_40')).to.equal('linux');
    expect(osOfImage('haiku-r1')).to.equal('haiku');
    expect(osOfImage('script-image')).to.equal('script');
  });

  it('places a device on mac, windows or linux, anything unknown on mac as before', () => {
    expect(desktopOs('linux')).to.equal('linux');
    expect(desktopOs(' Linux ')).to.equal('linux');
    expect(desktopOs('debian')).to.equal('linux');
    expect(desktopOs('windows')).to.equal('windows');
    expect(desktopOs('mac')).to.equal('mac');
    expect(desktopOs('macos')).to.equal('mac');
    expect(desktopOs('plan9')).to.equal('mac');
  });

  it('writes keys for Linux: cmd is ctrl, the system key is super, and the Linux input presses each', () => {
    expect(normalizeCombo('cmd+s', 'linux')).to.equal('ctrl+s');
    expect(normalizeCombo('Command+Shift+Return', 'linux')).to.equal('ctrl+shift+enter');
    expect(normalizeCombo('Super_L', 'linux')).to.equal('super');
    expect(normalizeCombo('win+e', 'linux')).to.equal('super+e');
    expect(normalizeCombo('Meta+space', 'mac')).to.equal('cmd+space');
    expect(normalizeCombo('Super_L+l', 'windows')).to.equal('win+l');
    for (const [spelling, name] of Object.entries(KEY_NAMES)) {
      if (spelling.trim() === '') continue;
      const written = normalizeCombo(`Control_L+${spelling.toUpperCase()}`, 'linux')!;
      expect(written, spelling).to.equal(`ctrl+${name}`);
      expect(() => parseCombo(written), written).to.not.throw();
    }
    expect(() => parseCombo(normalizeCombo('super+l', 'linux')!)).to.not.throw();
    expect(primaryModifier('linux')).to.equal('ctrl');
    expect(historyKeys('back', 'linux')).to.equal('alt+left');
  });

  it('names Linux apps as the window list does, Terminal on every system', () => {
    expect(systemAppName('Browser', 'linux')).to.equal('chromium');
    expect(systemAppName('Notes', 'linux')).to.equal('mousepad');
    expect(systemAppName('xterm', 'linux')).to.equal('xterm');
    expect(systemAppName('terminal', 'linux')).to.equal('xterm');
    expect(systemAppName('Terminal', 'mac')).to.equal('Terminal');
    expect(systemAppName('Terminal', 'windows')).to.equal('WindowsTerminal.exe');
  });
});

describe('opening an app on Linux: the session\'s launcher', () => {
  const NOTES = rect(130, 865, 110, 30);
  const TERMINAL = rect(250, 865, 110, 30);
  const clickOn = (r: ReturnType<typeof rect>) => ({ ok: true, actions: [{ type: 'click', ...centre(r) }] });

  it('clicks the launcher button labelled with the generic name, in any case', () => {
    const obs = mousepad().build();
    expect(openAppActions('Notes', 'linux', obs)).to.deep.equal(clickOn(NOTES));
    expect(openAppActions('notes', 'linux', obs)).to.deep.equal(clickOn(NOTES));
    expect(openAppActions('TERMINAL', 'linux', obs)).to.deep.equal(clickOn(TERMINAL));
  });

  it('finds the button by the Linux app\'s name too: open xterm clicks Terminal, open chromium Browser', () => {
    const obs = mousepad().build();
    expect(openAppActions('xterm', 'linux', obs)).to.deep.equal(clickOn(TERMINAL));
    expect(openAppActions('Chromium', 'linux', obs)).to.deep.equal(clickOn(rect(10, 865, 110, 30)));
  });

  it('takes the launcher\'s button over a page\'s element of the same name, and never a page\'s alone', () => {
    const withLink = linuxSystem(screen().window('chromium', APP_WINDOW, { url: 'https://docs.example.com/' }).element('chromium', 'link', 'Terminal', rect(100, 100, 120, 30)));
    expect(openAppActions('Terminal', 'linux', withLink.focus('chromium').build())).to.deep.equal(clickOn(TERMINAL));
    const pageOnly = screen().window('chromium', APP_WINDOW).element('chromium', 'link', 'Terminal', rect(100, 100, 120, 30)).focus('chromium').build();
    expect(openAppActions('Terminal', 'linux', pageOnly)).to.deep.equal({
      ok: false,
      error: 'No launcher button "Terminal" on the screen (the Linux session\'s launcher, docs/linux-desktop.md)',
    });
  });

  it('falls back to a button of another system panel', () => {
    const panel = screen()
      .window('chromium', APP_WINDOW)
      .window('xfce4-panel', rect(0, 0, 1440, 24), { system: true })
      .element('xfce4-panel', 'button', 'Browser', rect(40, 0, 24, 24))
      .focus('chromium')
      .build();
    expect(openAppActions('Browser', 'linux', panel)).to.deep.equal(clickOn(rect(40, 0, 24, 24)));
  });

  it('fails saying so when no launcher is on the screen', () => {
    const noLauncher = browser('linux', 'https://shop.example.com/').build();
    const without: Observation = { ...noLauncher, windows: noLauncher.windows.filter((w) => !w.system), elements: (noLauncher.elements ?? []).filter((e) => e.app === 'chromium') };
    for (const obs of [without, null]) {
      expect(openAppActions('Browser', 'linux', obs)).to.deep.equal({
        ok: false,
        error: 'No launcher button "Browser" on the screen (the Linux session\'s launcher, docs/linux-desktop.md)',
      });
    }
  });

  it('is what the scripted model does for open APP on a Linux computer', () => {
    const turn = (observation: Observation | null) =>
      scriptedTurn({
        model: DEFAULT_MODEL,
        effort: 'low',
        system: 'Rules.',
        prompt: 'open Notes\ndone "ok"',
        state: null,
        observation,
        screenshot: null,
        lastOutcome: null,
        tools: { http: [], files: { enabled: false, read_only: true } },
        display: { width: 1440, height: 900, os: 'linux' },
      });
    expect(turn(mousepad().build()).move).to.deep.equal({ kind: 'actions', actions: [{ type: 'click', ...centre(NOTES) }], step: 'Open Notes' });
    expect(turn(null).move).to.deep.equal({
      kind: 'actions',
      actions: [{ type: 'screenshot' }],
      step: 'Open Notes (failed: No launcher button "Notes" on the screen (the Linux session\'s launcher, docs/linux-desktop.md))',
    });
  });
});

describe('the Linux computer\'s check of a step', () => {
  const check = (action: unknown): string | null => invalidAction(action, 1280, 800);

  it('lets every well-formed step through', () => {
    for (const action of [
      { type: 'screenshot' },
      { type: 'click', x: 0, y: 0 },
      { type: 'click', x: 1279, y: 799, button: 'right', double: true },
      { type: 'type', text: '' },
      { type: 'key', keys: 'ctrl+s' },
      { type: 'drag', from: { x: 1, y: 1 }, to: { x: 100, y: 100 } },
      { type: 'scroll', x: 10, y: 10, dx: 0, dy: -100 },
      { type: 'wait', ms: 0 },
    ]) {
      expect(check(action), JSON.stringify(action)).to.equal(null);
    }
  });

  it('refuses a point off the screen, a missing field and an unknown type, saying why', () => {
    expect(check({ type: 'click', x: 1280, y: 10 })).to.match(/outside the screen \(1280×800\)/);
    expect(check({ type: 'click', x: -1, y: 10 })).to.match(/outside the screen/);
    expect(check({ type: 'click', x: 5, y: 5, button: 'middle' })).to.match(/left or right/);
    expect(check({ type: 'drag', from: { x: 1, y: 1 }, to: { x: 5000, y: 1 } })).to.match(/drag's end/);
    expect(check({ type: 'type' })).to.match(/needs text/);
    expect(check({ type: 'key', keys: ' ' })).to.match(/needs keys/);
    expect(check({ type: 'scroll', x: 1, y: 1, dx: 'a', dy: 0 })).to.match(/dx and dy/);
    expect(check({ type: 'wait', ms: -1 })).to.match(/needs ms/);
    expect(check({ type: 'teleport' })).to.match(/Unknown step type "teleport"/);
    expect(check(null)).to.match(/object with a type/);
  });
});
