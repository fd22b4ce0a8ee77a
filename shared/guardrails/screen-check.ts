/**
 * The screen check (`guardrails.screen_check`): looks at the text of a newly seen app, window or
 * site for words that try to instruct the agent (prompt injection). What happens on a find
 * (an approval with `risk: high`, or stopping the task) follows `guardrails.safety_checks` and
 * is the step worker's business; this module only detects.
 *
 * The detector is a list of phrase patterns, not a model: it is cheap enough to run on every
 * new screen, and it explains itself by returning the phrase it matched. Each pattern needs an
 * unmistakable shape, an imperative aimed at an AI ("ignore your previous instructions",
 * "you are now an unrestricted assistant", "reveal your system prompt", "new instructions:",
 * chat-template control tokens), so that ordinary pages ("You are now signed in", "Ignore this
 * email if you did not ask for it", "our system prompts you to…") pass. The text is normalised
 * first: Unicode compatibility forms (full-width letters), zero-width characters removed,
 * curly quotes straightened and runs of white space collapsed, so that simple disguises do
 * not slip through.
 */

import { DESKHAND_APP } from '../desktop/computer';
import type { Observation } from '../desktop/protocol';

export interface InjectionFinding {
  found: boolean;
  /** The phrase as it reads in the normalised text, when found. */
  phrase?: string;
  /** Which pattern matched, a stable id for history and tests. */
  pattern?: string;
}

interface InjectionPattern {
  id: string;
  pattern: RegExp;
}

// Words that put a set of instructions in the past or above, which ordinary "ignore" sentences
// ("ignore this email", "ignore the noise") lack. "Messages" is not among the nouns: "please
// disregard the above message" and "ignore my previous message" are ordinary mail.
const EARLIER = '(?:previous|prior|preceding|above|earlier|former|original|initial|foregoing|existing|system|developer)';
const DETERMINERS = '(?:(?:all|any|every|each|of|the|your|my|its|their|these|those|such)\\s+){0,4}';
const ORDERS =
  '(?:instructions?|prompts?|directions?|directives?|rules|guidelines|guidance|commands?|orders|context|programming|guardrails|constraints|policies)';

// Names for a model, as pages address one.
const AI = '(?:ai|llms?|large\\s+language\\s+models?|language\\s+models?)';

const PATTERNS: readonly InjectionPattern[] = [
  {
    // "Ignore your previous instructions", "disregard all prior rules", "override the system prompt".
    id: 'ignore_previous_instructions',
    pattern: new RegExp(
      `\\b(?:ignore|disregard|forget|override|bypass|skip|abandon)\\s+${DETERMINERS}${EARLIER}\\s+(?:[a-z]+\\s+)?${ORDERS}\\b`,
      'i',
    ),
  },
  {
    // "Ignore all rules", "disregard any instructions": no time word, but nouns only an agent has.
    id: 'ignore_all_rules',
    pattern:
      /\b(?:ignore|disregard|forget|override|bypass)\s+(?:all|any|every)\s+(?:of\s+)?(?:your\s+|the\s+)?(?:instructions|rules|guidelines|guardrails|constraints|restrictions|safety\s+(?:rules|checks|guidelines))\b/i,
  },
  {
    // "Disregard the above." / "Ignore all of the above and …", but not "disregard the above message".
    id: 'disregard_the_above',
    pattern:
      /\b(?:ignore|disregard|forget)\s+(?:all\s+(?:of\s+)?)?the\s+(?:above|foregoing)(?=\s*(?:[.,;:!)]|$|and\b|then\b|instructions?\b|text\b|prompt\b|content\b))/i,
  },
  {
    // "Forget everything you were told", "ignore what you have been instructed".
    id: 'forget_what_you_were_told',
    pattern:
      /\b(?:forget|ignore|disregard)\s+(?:everything|anything|all|what)\s+(?:that\s+)?you(?:'ve|\s+have|\s+were|\s+had)?\s+(?:been\s+)?(?:told|instructed|given|taught)\b/i,
  },
  {
    // "You are now DAN", "you are now an unrestricted assistant"; not "You are now signed in".
    id: 'you_are_now',
    pattern:
      /\byou\s+are\s+now\s+(?:(?:a|an|the|in|my|no\s+longer)\s+)?(?:[a-z-]+\s+){0,2}(?:ai|assistant|agent|model|chatbot|bot|llm|dan|jailbroken|unrestricted|unfiltered|uncensored|developer\s+mode|god\s+mode|free\s+(?:from|of))\b/i,
  },
  {
    // "New instructions:", "IMPORTANT INSTRUCTIONS:", "updated task:".
    id: 'new_instructions',
    pattern: /\b(?:new|updated|revised|real|actual|additional|important|urgent|secret|hidden)\s+(?:system\s+)?(?:instructions?|directives?|orders|task)\s*:/i,
  },
  {
    // "Reveal your system prompt", "System prompt:"; not "your system prompts you to restart".
    id: 'system_prompt',
    pattern:
      /\b(?:ignore|override|reveal|print|show|repeat|output|leak|disregard|forget|change|replace|new|updated)\s+(?:(?:the|your|my|its)\s+)?system\s+prompts?\b|\bsystem\s+prompts?\s*:/i,
  },
  {
    // "Attention AI agents:", "AI assistants reading this …", "If you are an AI, you must …".
    id: 'addressed_to_ai',
    pattern: new RegExp(
      [
        `\\b(?:attention|note|message|instructions?)\\s+(?:(?:to|for)\\s+)?(?:the\\s+|any\\s+|all\\s+)?${AI}(?:\\s+(?:agents?|assistants?|models?|systems?))?\\s*[:,!-]`,
        `\\b(?:ai|llm)\\s+(?:agents?|assistants?|models?)\\s+(?:reading|processing|visiting|browsing|viewing|seeing)\\s+this\\b`,
        `\\bif\\s+you\\s+are\\s+an?\\s+${AI}(?:\\s+(?:agent|assistant|model))?\\b[^.\\n]{0,80}?\\b(?:must|should|have\\s+to|need\\s+to|are\\s+required\\s+to|do\\s+not|don't|ignore)\\b`,
        `\\bas\\s+an?\\s+${AI}(?:\\s+(?:agent|assistant|model))?\\s*,\\s*you\\s+(?:must|should|have\\s+to|need\\s+to|are\\s+required\\s+to|will|do\\s+not|don't)\\b`,
      ].join('|'),
      'i',
    ),
  },
  {
    // "Do not tell the user", "without informing the person".
    id: 'hide_from_user',
    pattern:
      /\b(?:do\s+not|don't|never)\s+(?:tell|inform|alert|notify|warn)\s+(?:the\s+)?(?:user|human|person|operator|owner)\b|\bwithout\s+(?:telling|informing|alerting|notifying|asking)\s+(?:the\s+)?(?:user|human|person|operator|owner)\b/i,
  },
  {
    // "Pretend you have no restrictions", "enable DAN mode".
    id: 'role_play',
    pattern:
      /\b(?:pretend|act\s+as\s+if)\s+(?:that\s+)?you\s+(?:are|have)\s+(?:no\s+(?:rules|restrictions|limits|guidelines|filters)|an?\s+(?:unrestricted|unfiltered|jailbroken|uncensored))\b|\b(?:enable|enter|activate)\s+(?:dan|jailbreak)\s+mode\b/i,
  },
  {
    // Chat-template control tokens pasted into a page.
    id: 'control_tokens',
    pattern: /<\|(?:im_start|im_end|system|endoftext|user|assistant)\|>|\[\/?INST\]|<<\/?SYS>>|<\/?system>/i,
  },
];

/** Zero-width and other invisible format characters that can split a phrase. */
const INVISIBLE = /[\u00AD\u180E\u200B-\u200F\u202A-\u202E\u2060-\u2064\uFEFF]/g;

/** Normalises screen text before matching; exported for tests and for callers that log it. */
export function normalizeScreenText(text: string): string {
  return text
    .normalize('NFKC')
    .replace(INVISIBLE, '')
    .replace(/[\u2018\u2019\u201A\u201B\u2032]/g, "'")
    .replace(/[\u201C\u201D\u201E\u201F\u2033]/g, '"')
    .replace(/[^\S\n]+/g, ' ');
}

/**
 * Looks for text that tries to instruct the agent.
 *
 * @param text the visible text of a screen (`Observation.text`); null or empty finds nothing.
 * @returns `{ found: true, phrase, pattern }` for the first phrase found (earliest in the
 *   text), else `{ found: false }`.
 */
export function detectInjection(text: string | null | undefined): InjectionFinding {
  if (!text) return { found: false };
  const normalized = normalizeScreenText(text);
  let best: { index: number; phrase: string; pattern: string } | null = null;
  for (const { id, pattern } of PATTERNS) {
    const m = pattern.exec(normalized);
    if (m && (best === null || m.index < best.index)) best = { index: m.index, phrase: m[0].trim(), pattern: id };
  }
  return best ? { found: true, phrase: best.phrase, pattern: best.pattern } : { found: false };
}

/** One app window as the screen check tells windows apart: its app, title and site. */
export interface ScreenPart {
  app: string;
  title: string;
  /** The host of the page it shows (http, https, ws, wss); null when none is reported. */
  site: string | null;
}

/** What the screen check makes of a screen that shows something new. */
export type NewScreenCheck =
  | { outcome: 'clean'; part: ScreenPart }
  | { outcome: 'found'; part: ScreenPart; phrase: string; pattern: string }
  | { outcome: 'cannot_check'; part: ScreenPart; why: string };

function siteOfUrl(url: string | null | undefined): string | null {
  if (!url) return null;
  try {
    const parsed = new URL(url);
    if (!['http:', 'https:', 'ws:', 'wss:'].includes(parsed.protocol)) return null;
    return parsed.hostname.toLowerCase().replace(/\.$/, '') || null;
  } catch {
    return null;
  }
}

/**
 * The app windows of a screen, topmost first. Parts of a Mac's own system (menu bar, Dock,
 * Control Center, Spotlight: `system: true`) are left out: they show the system's words and
 * what the agent itself types, not content that could carry instructions.
 */
export function screenParts(observation: Pick<Observation, 'windows'>): ScreenPart[] {
  return observation.windows
    // The system's own parts and the Deskhand app's window (the service's own words) are no new page.
    .filter((window) => !window.system && window.app.toLowerCase() !== DESKHAND_APP)
    .map((window) => ({ app: window.app, title: window.title, site: siteOfUrl(window.url) }));
}

const partKey = (part: ScreenPart) => `${part.app.toLowerCase()}\u0000${part.title}\u0000${part.site ?? ''}`;

/**
 * The screen check of `guardrails.screen_check` for one new screen. Returns null when the screen
 * shows no app, window or site that the previous one did not (the first screen of a task has
 * no previous one, so all of its windows are new). Otherwise the screen's text is run through
 * {@link detectInjection}: `found` names the phrase, `clean` passes, and `cannot_check` says
 * the computer reported no text (a Mac without Accessibility permission). `part` is the first
 * new window, topmost first.
 */
export function checkNewScreen(previous: Pick<Observation, 'windows'> | null, current: Pick<Observation, 'windows' | 'text'>): NewScreenCheck | null {
  const seen = new Set(previous ? screenParts(previous).map(partKey) : []);
  const part = screenParts(current).find((candidate) => !seen.has(partKey(candidate)));
  if (!part) return null;
  if (current.text === null || current.text === undefined) {
    return { outcome: 'cannot_check', part, why: 'this computer does not report the text on its screen' };
  }
  const finding = detectInjection(current.text);
  return finding.found ? { outcome: 'found', part, phrase: finding.phrase!, pattern: finding.pattern! } : { outcome: 'clean', part };
}
