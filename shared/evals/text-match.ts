/**
 * The text matching the scripted customer and judge share. Both rules in docs/evals.md are
 * about people's words, so they ignore case, and a fact's label counts only as a whole word
 * ("name" is in "Your name?" but not in "username").
 */

/** Escapes a string for use inside a regular expression (Node 20 has no `RegExp.escape`); only syntax characters, as the `u` flag refuses other escapes. */
function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}

/**
 * Whether `phrase` stands in `text` as a word: case-insensitive, with no letter, digit or
 * underscore right before or after it. A phrase of several words ("card number") matches with
 * any run of spaces between them. An empty phrase is never found.
 */
export function containsWord(text: string, phrase: string): boolean {
  const words = phrase.trim().split(/\s+/).filter((w) => w !== '');
  if (words.length === 0) return false;
  const body = words.map(escapeRegExp).join('\\s+');
  return new RegExp(`(?<![\\p{L}\\p{N}_])${body}(?![\\p{L}\\p{N}_])`, 'iu').test(text);
}

/** Whether `needle` appears anywhere in `text`, ignoring case. An empty needle is never found. */
export function containsText(text: string | null | undefined, needle: string): boolean {
  if (!text || needle === '') return false;
  return text.toLowerCase().includes(needle.toLowerCase());
}
