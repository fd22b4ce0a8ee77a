import { expect } from 'chai';
import { NOT_CARRIED_OUT } from '../../shared/models/agent-tools';
import { answerCall, reduceCalls, trimmedTranscript, TurnTally, type CallRequest } from '../../shared/models/turn-reduction';

const click = (x: number): CallRequest => ({ kind: 'computer', actions: [{ type: 'click', x, y: 10 }] });
const ask: CallRequest = { kind: 'tool', move: { kind: 'ask', question: 'Which one?', options: [] } };
const calls = (...requests: CallRequest[]) => requests.map((request, i) => ({ call: `call_${i}`, request }));

describe('the vendor backends’ shared turn reduction', () => {
  describe('reduceCalls', () => {
    it('runs every computer call of a reply as one move when a computer call leads, and leaves the other tools unrun', () => {
      const reduced = reduceCalls(
        calls(
          { kind: 'error', error: 'no such action' },
          { ...click(1), safety: ['Check the amount.'] } as CallRequest,
          ask,
          { kind: 'computer', actions: [{ type: 'type', text: 'hi' }, { type: 'key', keys: 'enter' }], safety: ['Sends mail.'] },
        ),
      );
      expect(reduced.move).to.deep.include({ kind: 'actions', actions: [{ type: 'click', x: 1, y: 10 }, { type: 'type', text: 'hi' }, { type: 'key', keys: 'enter' }] });
      expect(reduced.calls.map((c) => c.record)).to.deep.equal([
        { handled: false, error: 'no such action' },
        { handled: true, first: 0, count: 1 },
        { handled: false },
        { handled: true, first: 1, count: 2 },
      ]);
      expect(reduced.safety).to.equal('Check the amount. Sends mail.');
    });

    it('makes only the leading tool call when a tool leads', () => {
      const reduced = reduceCalls(calls(ask, click(1)));
      expect(reduced.move).to.deep.equal({ kind: 'ask', question: 'Which one?', options: [] });
      expect(reduced.calls.map((c) => c.record)).to.deep.equal([{ handled: true }, { handled: false }]);
      expect(reduced.safety).to.equal(null);
    });

    it('keeps no calls to answer after a move that ends the task', () => {
      const reduced = reduceCalls(calls({ kind: 'tool', move: { kind: 'done', summary: 'ok' } }, click(1)));
      expect(reduced.move).to.deep.equal({ kind: 'done', summary: 'ok' });
      expect(reduced.calls).to.deep.equal([]);
    });

    it('makes no move when no call can be done, each call keeping its error', () => {
      const reduced = reduceCalls(calls({ kind: 'error', error: 'a' }, { kind: 'error', error: 'b' }));
      expect(reduced.move).to.equal(null);
      expect(reduced.calls.map((c) => c.record)).to.deep.equal([{ handled: false, error: 'a' }, { handled: false, error: 'b' }]);
    });
  });

  describe('answerCall', () => {
    it('answers a call that did not run with its error, or as not carried out', () => {
      expect(answerCall({ handled: false, error: 'bad' }, null)).to.deep.equal({ kind: 'text', text: 'bad', isError: true });
      expect(answerCall({ handled: false }, null)).to.deep.equal({ kind: 'text', text: NOT_CARRIED_OUT, isError: true });
    });

    it('answers a tool call with what the tool gave', () => {
      expect(answerCall({ handled: true }, { kind: 'tool', ok: false, text: 'timeout' })).to.deep.include({ kind: 'text', isError: true });
    });

    it('answers a computer call with the outcome of its own actions', () => {
      const outcome = { kind: 'actions' as const, results: [{ ok: true }, { ok: false, error: 'No button "Send"' }] };
      expect(answerCall({ handled: true, first: 0, count: 1 }, outcome)).to.deep.equal({ kind: 'computer', outcome: { refused: null, failures: null, ran: true } });
      const second = answerCall({ handled: true, first: 1, count: 1 }, outcome);
      expect(second.kind === 'computer' && second.outcome.failures).to.be.a('string').that.includes('No button "Send"');
    });
  });

  it('trims a transcript to its first entry and whole latest exchanges', () => {
    const entries = Array.from({ length: 8 }, (_, i) => i);
    expect(trimmedTranscript(entries, 5)).to.deep.equal([0, 5, 6, 7]);
    expect(trimmedTranscript(entries, 8)).to.equal(entries);
  });

  it('sums usage and thoughts over a turn’s requests', () => {
    const tally = new TurnTally();
    tally.count(10, 2);
    tally.heard(null);
    tally.heard('Looking.');
    tally.count(5, 1);
    tally.heard('Found it.');
    expect(tally.gaveUp({ v: 1 })).to.deep.equal({
      state: { v: 1 },
      thought: 'Looking.\nFound it.',
      move: { kind: 'fail', reason: 'The model kept asking for steps that cannot be carried out on this computer.' },
      safety: null,
      usage: { input_tokens: 15, output_tokens: 3 },
    });
  });
});
