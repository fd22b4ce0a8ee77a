import { expect } from 'chai';
import { KEY_NAMES, MODIFIER_NAMES } from '../../shared/desktop/keys';
import { normalizeCombo } from '../../shared/models/desktop-helpers';
import { parseKeyCombo } from '../../shared/simulator/key-combos';

/** One table of key spellings serves the models' backends, the guardrail engine and the simulated computer. */
describe('key names', () => {
  it('a model backend writes every spelling of a key as the protocol name the simulated computer presses', () => {
    for (const [spelling, name] of Object.entries(KEY_NAMES)) {
      if (spelling.trim() === '') continue;
      const written = normalizeCombo(`Control_L+${spelling.toUpperCase()}`, 'mac');
      expect(written, spelling).to.equal(`ctrl+${name}`);
      const pressed = parseKeyCombo(written!);
      expect(pressed, spelling).to.deep.equal({ modifiers: new Set(['ctrl']), key: name });
    }
  });

  it('folds every spelling of a modifier, and places the system key per system', () => {
    for (const [spelling, modifier] of Object.entries(MODIFIER_NAMES)) {
      if (modifier === 'fn') continue;
      const pressed = parseKeyCombo(`${spelling}+a`);
      expect(pressed, spelling).to.deep.equal({ modifiers: new Set([modifier]), key: 'a' });
    }
    expect(normalizeCombo('Super_L+l', 'windows')).to.equal('win+l');
    expect(normalizeCombo('Meta+space', 'mac')).to.equal('cmd+space');
    expect(normalizeCombo('Command+Opt+Return', 'windows')).to.equal('ctrl+alt+enter');
  });
});
