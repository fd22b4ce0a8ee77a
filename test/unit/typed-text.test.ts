import { expect } from 'chai';
import type { DesktopAction } from '../../shared/desktop/protocol';
import type { ModelMove } from '../../shared/models/model.types';
import { actionToRun, describeTyping, maskTypedText, moveToApply, moveWithoutTypedText, typedTexts, withoutTypedText } from '../../shared/tasks/typed-text';

describe('typed text outside queued_actions', () => {
  const typing: DesktopAction = { type: 'type', text: 'hunter2 please' };
  const click: DesktopAction = { type: 'click', x: 1, y: 2 };

  it('records a type action as its length and leaves other actions as they are', () => {
    expect(withoutTypedText(typing)).to.deep.equal({ type: 'type', chars: 14 });
    expect(withoutTypedText(withoutTypedText(typing))).to.deep.equal({ type: 'type', chars: 14 });
    expect(withoutTypedText(click)).to.equal(click);
  });

  it('says how much was typed and where', () => {
    expect(describeTyping(8, { app: 'Safari', field: 'Password', role: 'password_field' })).to.equal('Type 8 characters into Password (Safari)');
    expect(describeTyping(1, { app: null, field: null, role: null })).to.equal('Type 1 character');
  });

  it('runs an approved typing with the text held in queued_actions, and nothing when it does not match', () => {
    expect(actionToRun(withoutTypedText(typing), [typing])).to.equal(typing);
    expect(actionToRun(withoutTypedText(typing), [{ type: 'type', text: 'other' }])).to.equal(null);
    expect(actionToRun(withoutTypedText(typing), [])).to.equal(null);
    // An item written before typed text was kept out of items still has its text.
    expect(actionToRun(typing, [])).to.equal(typing);
    expect(actionToRun(click, [])).to.equal(click);
  });

  it('gives an approved safety check\'s move its texts back from queued_actions, in order', () => {
    const move: ModelMove = { kind: 'actions', step: 'Sign in', actions: [click, typing, { type: 'type', text: 'second' }] };
    const recorded = moveWithoutTypedText(move);
    expect(JSON.stringify(recorded)).to.not.include('hunter2');
    expect(moveToApply(recorded, move.kind === 'actions' ? move.actions : [])).to.deep.equal(move);
    expect(moveToApply(recorded, [click, typing])).to.equal(null);
    const ask: ModelMove = { kind: 'ask', question: 'Which?', options: [] };
    expect(moveToApply(moveWithoutTypedText(ask), [])).to.deep.equal(ask);
  });

  it('hides what a move types from what the model says about it, but not a character or two', () => {
    const move: ModelMove = { kind: 'actions', step: 'Type the password', actions: [typing, { type: 'type', text: '\n' }, { type: 'type', text: 'ab' }] };
    const texts = typedTexts(move);
    expect(maskTypedText('I will type hunter2 please into the field', texts)).to.equal('I will type ••• into the field');
    expect(maskTypedText('A cab and a tab', texts)).to.equal('A cab and a tab');
  });
});
