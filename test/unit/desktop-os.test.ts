import { expect } from 'chai';
import { invalidAction } from '../../desktop/src/linux-computer';
import { parseCombo } from '../../desktop/src/input';
import { KEY_NAMES } from '../../shared/desktop/keys';
import { desktopOs, osOfImage } from '../../shared/desktop/os';
import { osOfImage as machineOsOfImage } from '../../shared/machines/machine-rows';
import { historyKeys, normalizeCombo, openAppActions, primaryModifier, systemAppName } from '../../shared/models/desktop-helpers';

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

  it('names Linux apps as the window list does, and says opening an app is not there yet', () => {
    expect(systemAppName('Browser', 'linux')).to.equal('chromium');
    expect(systemAppName('Notes', 'linux')).to.equal('mousepad');
    expect(systemAppName('xterm', 'linux')).to.equal('xterm');
    const planned = openAppActions('Notes', 'linux', null);
    expect(planned.ok).to.equal(false);
    expect(planned.ok ? '' : planned.error).to.match(/not available on Linux/);
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
