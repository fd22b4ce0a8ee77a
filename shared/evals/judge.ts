/**
 * The rubric judge: after a try's task ends, it reads what the task did against the test case's
 * `success.rubric` and gives one verdict per criterion. The try lifecycle calls it; nothing here
 * knows tries or tasks.
 *
 * The scripted rules (docs/evals.md, "The simulated customer and the judge"), in order:
 * 1. Each non-empty rubric line (trimmed) is a criterion; blank lines are not.
 * 2. A line with a quoted string "X" (the first one on the line) passes when X appears,
 *    case-insensitive, in the task's `result` or in the text of its last screen.
 * 3. When the word `not` (any case) stands anywhere before that quote, it passes when X
 *    appears in neither.
 * 4. A line without a quote passes.
 * 5. The rubric passes when every criterion passes (a rubric without criteria passes).
 */
import { containsText, containsWord } from './text-match';

export interface RubricJudgeInput {
  rubric: string;
  /** The task's prompt. */
  prompt: string;
  /** The task's `result` (its summary); null when it has none. */
  result: string | null;
  /** The task's final status (`completed`, `failed`, `stopped`). */
  status: string;
  /** The task's events, oldest first. */
  events: Array<{ type: string; message: string }>;
  /** The text the last screen showed (its visible labels and text), '' when unknown. */
  lastScreenText: string;
}

export interface CriterionVerdict {
  criterion: string;
  passed: boolean;
  reason: string;
}

export interface RubricVerdict {
  passed: boolean;
  criteria: CriterionVerdict[];
  /** Who judged: `scripted`, or the vendor model's id. */
  judge_model: string;
}

export interface RubricJudge {
  judge(input: RubricJudgeInput, signal?: AbortSignal): Promise<RubricVerdict>;
}

export const SCRIPTED_JUDGE_MODEL = 'scripted';

/** The rubric's criteria: its non-empty lines, trimmed, in order. */
export function rubricCriteria(rubric: string): string[] {
  return rubric
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== '');
}

/** The first quoted string of a line (straight or curly quotes) and where its opening quote is. */
function firstQuote(line: string): { text: string; at: number } | null {
  const match = /["“]([^"“”]*)["”]/.exec(line);
  return match ? { text: match[1]!, at: match.index } : null;
}

/** One criterion judged by the scripted rules 2 to 4. */
export function judgeCriterion(criterion: string, result: string | null, lastScreenText: string): CriterionVerdict {
  const quote = firstQuote(criterion);
  if (!quote) return { criterion, passed: true, reason: 'No quoted text to look for: the criterion passes.' };
  const negated = containsWord(criterion.slice(0, quote.at), 'not');
  const where = [containsText(result, quote.text) ? 'the result' : null, containsText(lastScreenText, quote.text) ? 'the last screen' : null].filter(
    (w): w is string => w !== null,
  );
  const found = where.length > 0;
  const place = where.join(' and ');
  if (negated) {
    return found
      ? { criterion, passed: false, reason: `"${quote.text}" was found in ${place}, and it must not be.` }
      : { criterion, passed: true, reason: `"${quote.text}" appears in neither the result nor the last screen, as required.` };
  }
  return found
    ? { criterion, passed: true, reason: `"${quote.text}" was found in ${place}.` }
    : { criterion, passed: false, reason: `"${quote.text}" appears in neither the result nor the last screen.` };
}

/** The verdict of the scripted rules; pure. */
export function scriptedVerdict(input: Pick<RubricJudgeInput, 'rubric' | 'result' | 'lastScreenText'>): RubricVerdict {
  const criteria = rubricCriteria(input.rubric).map((line) => judgeCriterion(line, input.result, input.lastScreenText));
  return { passed: criteria.every((c) => c.passed), criteria, judge_model: SCRIPTED_JUDGE_MODEL };
}

/** The deterministic judge of `DESKHAND_SCRIPTED_MODELS=1` and of deployments without vendor keys. */
export const scriptedJudge: RubricJudge = Object.freeze({
  async judge(input: RubricJudgeInput): Promise<RubricVerdict> {
    return scriptedVerdict(input);
  },
});
