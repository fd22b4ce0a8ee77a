import { expect } from 'chai';
import { rubricCriteria, scriptedJudge, type RubricJudgeInput } from '../../shared/evals';

function input(rubric: string, result: string | null, lastScreenText = ''): RubricJudgeInput {
  return { rubric, prompt: 'Do the thing', result, status: 'completed', events: [], lastScreenText };
}

const judge = (rubric: string, result: string | null, screen = '') => scriptedJudge.judge(input(rubric, result, screen));

describe('scripted judge', () => {
  it('makes each non-empty line a criterion, trimmed, and skips blank lines', async () => {
    expect(rubricCriteria('  first  \n\n   \r\nsecond\n')).to.deep.equal(['first', 'second']);
    const verdict = await judge('The agent was polite\n\n  \nIt said "hello"', 'hello there');
    expect(verdict.criteria.map((c) => c.criterion)).to.deep.equal(['The agent was polite', 'It said "hello"']);
    expect(verdict.judge_model).to.equal('scripted');
  });

  it('passes a quoted criterion when the text is in the result, whatever the case, and says where', async () => {
    const verdict = await judge('The result mentions "Order Confirmed"', 'Your order confirmed: #12');
    expect(verdict.passed).to.equal(true);
    expect(verdict.criteria[0]!.passed).to.equal(true);
    expect(verdict.criteria[0]!.reason).to.contain('the result');
  });

  it('passes a quoted criterion when the text is on the last screen only', async () => {
    const verdict = await judge('Shows "Saved"', null, 'Notes — report.txt Saved');
    expect(verdict.passed).to.equal(true);
    expect(verdict.criteria[0]!.reason).to.contain('the last screen');
    expect(verdict.criteria[0]!.reason).not.to.contain('the result');
  });

  it('fails a quoted criterion when the text is in neither, and says so', async () => {
    const verdict = await judge('Says "refund issued"', 'I could not find the order', 'Orders');
    expect(verdict.passed).to.equal(false);
    expect(verdict.criteria[0]).to.deep.include({ passed: false });
    expect(verdict.criteria[0]!.reason).to.contain('neither');
  });

  it('matches the quoted text as a substring, not as a word', async () => {
    expect((await judge('"pay"', 'Payment sent')).passed).to.equal(true);
  });

  it('with "not" before the quote, passes only when the text is in neither', async () => {
    expect((await judge('Does not say "error"', 'All good', 'Done')).passed).to.equal(true);
    const inResult = await judge('Does not say "error"', 'An Error happened', 'Done');
    expect(inResult.passed).to.equal(false);
    expect(inResult.criteria[0]!.reason).to.contain('must not');
    expect((await judge('Does not say "error"', 'fine', 'ERROR 500')).passed).to.equal(false);
  });

  it('reads "not" as a word, in any case, anywhere before the quote', async () => {
    expect((await judge('NOT "error"', 'fine')).passed).to.equal(true);
    expect((await judge('It should not, at any point, show "error"', 'error')).passed).to.equal(false);
    // "nothing" and "note" are not the word "not": the line asks for the text.
    expect((await judge('Nothing but "done"', 'done')).passed).to.equal(true);
    expect((await judge('Note "done"', 'nope')).passed).to.equal(false);
    // "not" after the quote does not negate.
    expect((await judge('"done" and not more', 'done')).passed).to.equal(true);
  });

  it('passes a line without a quote', async () => {
    const verdict = await judge('The agent was polite', null);
    expect(verdict.passed).to.equal(true);
    expect(verdict.criteria).to.have.length(1);
    expect(verdict.criteria[0]!.passed).to.equal(true);
  });

  it('uses the first quote of a line', async () => {
    expect((await judge('Says "alpha" or "beta"', 'beta')).passed).to.equal(false);
    expect((await judge('Says “alpha” (curly quotes)', 'ALPHA')).passed).to.equal(true);
  });

  it('passes only when every criterion passes', async () => {
    const verdict = await judge('Says "sent"\nDoes not say "failed"\nA line without quotes', 'Mail sent, nothing failed');
    expect(verdict.criteria.map((c) => c.passed)).to.deep.equal([true, false, true]);
    expect(verdict.passed).to.equal(false);
    expect((await judge('Says "sent"\nDoes not say "failed"', 'Mail sent')).passed).to.equal(true);
  });

  it('passes an empty rubric with no criteria', async () => {
    const verdict = await judge('\n  \n', null);
    expect(verdict).to.deep.equal({ passed: true, criteria: [], judge_model: 'scripted' });
  });
});
