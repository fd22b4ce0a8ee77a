import type { ElementRole, GuardrailCategory } from '../desktop/protocol';

/**
 * The element classifier (issue 38): what pressing an element would do, as a guardrail
 * category. One classifier for the service's own screens (the simulator) and the Linux app's
 * AT-SPI elements, so that both call the same button the same thing (docs/guardrails.md,
 * "Categories").
 *
 * How an element is judged, the first step that answers deciding:
 *
 * 1. Only roles a person presses can act (ACTING_ROLES); text fields, static text and the
 *    address bar are null whatever they say.
 * 2. The label is normalised (`normalise`): case, a leading icon glyph, a mnemonic underscore,
 *    punctuation, a trailing count or shortcut in brackets ("Checkout (3)", "Send (Ctrl-Enter)"),
 *    and prices, which read as the word `price` ("Pay $20.00" is "pay price").
 * 3. A label that backs out ("Cancel", "No", "Undo delete", "Don't send"; BACKING_OUT) or names
 *    something to read ("Purchase history", "Installation guide"; READING_MATTER, RECORDS) is
 *    null. This is why Cancel, No and Close in a dialog never take the dialog's category.
 * 4. The whole label and each of its clauses (cut at "and", "&", "then" and commas: "Agree and
 *    install", "Yes, delete"), each without its lead-in words ("Confirm purchase", "Permanently
 *    delete"; LEAD_IN), are matched against the rule table (RULES). Rules are anchored at the
 *    start of a clause, where a button names its act: "Delete" is delete, "Undo delete" and
 *    "Deleted items" are not. When clauses name several acts, the first in CATEGORY_ORDER wins
 *    ("Submit order" pays before it sends; "Delete account" deletes before it is a setting).
 * 5. A button in a dialog that only confirms ("OK", "Yes", "Continue"; CONFIRMING) or repeats
 *    the verb the title asks about ("Format" in "Format the disk?") takes the category of the
 *    dialog's title, judged like a label plus a few title-only rules (TITLE_RULES): "OK" in
 *    "Delete 3 files?" is delete, "Continue" in "Confirm purchase" is purchase. A title reporting
 *    a failure or an outcome ("Could not delete", "Message sent") gives nothing: its OK only
 *    dismisses.
 *
 * The look-alike rules, each written beside the rule it narrows:
 * - A link navigates: it leads to a form and does not submit one, so `send` needs a role that
 *   presses (a link "Send feedback form" is null, a button "Send" is send). Other categories hold
 *   for links too: a web list's "Delete" link often deletes at once, and a "Buy now" link at worst
 *   leads to the checkout, which errs on the strict side.
 * - The Trash as an `icon` is delete: it is a drop target, and the engine judges both ends of a
 *   drag. A Trash folder in a sidebar (`item`, `link`) only opens.
 * - An `item` or `icon` labelled with a file name ("report.txt", "Delete me.txt") is a file:
 *   pressing it selects or opens it, whatever it is called.
 * - A bare price ("$4.99") is a purchase only on a button or menu item (an app store's price
 *   button); a link with a price is a product card.
 */

/** What the classifier reads of an element. */
export interface ElementToClassify {
  role: ElementRole;
  /** Its accessible name or visible text. */
  label: string;
  /** The title of the dialog it is in, when it is in one. */
  dialog?: string | null;
}

/** Roles a person presses; everything else (fields, static text, the address bar) acts by typing or not at all. */
const ACTING_ROLES: ReadonlySet<ElementRole> = new Set<ElementRole>(['button', 'link', 'menu_item', 'item', 'icon']);

/** Which category wins when a label names several acts: the one with the most at stake first. */
const CATEGORY_ORDER: readonly GuardrailCategory[] = ['purchase', 'delete', 'install', 'security', 'send', 'terms'];

interface LabelRule {
  category: GuardrailCategory;
  /** Matched against a normalised clause: lowercase words joined by single spaces, a price as `price`. */
  pattern: RegExp;
  /** The roles it holds for; every acting role when absent. */
  roles?: ReadonlySet<ElementRole>;
}

/** Roles that press rather than navigate: what `send` needs. */
const PRESSING: ReadonlySet<ElementRole> = new Set<ElementRole>(['button', 'menu_item', 'item', 'icon']);
const BUTTONS: ReadonlySet<ElementRole> = new Set<ElementRole>(['button', 'menu_item']);
const TRASH_VERB_ROLES: ReadonlySet<ElementRole> = new Set<ElementRole>(['button', 'menu_item', 'icon']);
const ICONS: ReadonlySet<ElementRole> = new Set<ElementRole>(['icon']);

const TRASH = '(?:trash|bin|recycle bin|wastebasket|rubbish bin|trash can)';
/** Names of a security setting, after a verb ("Change password") or alone ("Passkeys"). */
const SECURITY_SETTING =
  '(?:passwords?|passkeys?|two factor(?: authentication)?|2fa|two step verification|2 step verification|multi factor authentication|mfa|' +
  'authenticator(?: app)?|security keys?|recovery (?:codes?|email|phone|key)|backup codes|firewall|encryption|filevault|bitlocker|' +
  'screen lock|security questions?|ssh keys?|gpg keys?|api keys?|(?:personal )?access tokens?|app passwords?)';
/** Verbs that change a security setting; a PIN or passcode only counts after one ("Pin tab" pins a tab). */
const SECURITY_VERB =
  '(?:change|reset|set|set up|setup|update|create|save|edit|manage|enable|disable|turn on|turn off|add|use|require|configure|generate|regenerate)';

const rule = (category: GuardrailCategory, pattern: RegExp, roles?: ReadonlySet<ElementRole>): LabelRule => ({ category, pattern, roles });

/** The rule table, by category. Each pattern is anchored at the start of a clause. */
const RULES: readonly LabelRule[] = [
  // purchase: buying or paying.
  // "Buy now", "Buy it now", "Buy for $9.99", "Purchase", "Pre-order", "Rent HD $3.99"; not "Buyer protection".
  rule('purchase', /^(?:buy|purchase|pre ?order|preorder|rent)\b/),
  // "Pay", "Pay now", "Pay $20.00", "Pay with PayPal"; not "Payment methods" or "PayPal".
  rule('purchase', /^pay\b/),
  // "Place order", "Place your order", "Submit order", "Complete purchase", "Order now", "Confirm order" (as "order").
  rule('purchase', /^(?:place|submit|complete|finish) (?:my |your |the )?(?:order|purchase|payment|booking|reservation)\b/),
  rule('purchase', /^order(?: now| it)?$/),
  rule('purchase', /^(?:book|reserve)(?: now| it)?$/),
  // Checkout is where the money goes, one click away: "Checkout (3)", "Proceed to checkout". Not "Check out our deals".
  rule('purchase', /^(?:secure )?(?:checkout|check out)(?: now| securely| as guest)?$/),
  rule('purchase', /^(?:proceed|continue|go) to (?:checkout|check out|payment)\b/),
  rule('purchase', /^donate\b/),
  // Money sent is paid: "Send money", "Send $20.00", "Transfer funds".
  rule('purchase', /^(?:send|transfer) (?:money|funds|payment|price)\b/),
  // A paid plan: "Subscribe for $9.99/month", "Get Premium for $4.99", "Upgrade to Premium". A bare
  // "Subscribe" (a channel, a newsletter) costs nothing, nor does "Add to cart – $20.00".
  rule('purchase', /^(?:subscribe|upgrade|get|start|try|join|renew|unlock)\b.*\bprice\b/),
  rule('purchase', /^upgrade (?:now|plan|account|subscription|to (?:pro|premium|plus|business|team|teams|enterprise|paid|a paid plan))\b/),
  // An app store's price button ("$4.99") buys; a link with a price is a product card.
  rule('purchase', /^price$/, BUTTONS),

  // delete: deleting or removing.
  // "Delete", "Delete 3 files", "Delete forever", "Remove", "Erase disk", "Uninstall"; not "Deleted items".
  rule('delete', /^(?:delete|remove|erase|wipe|destroy|purge|shred|uninstall)\b/),
  // "Move to Trash", "Move to Bin", "Move conversation to trash".
  rule('delete', new RegExp(`^move (?:\\w+ )?(?:\\d+ items? )?to (?:the )?${TRASH}\\b`)),
  // "Empty Trash", "Empty the Recycle Bin", "Empty Deleted Items" (Outlook).
  rule('delete', new RegExp(`^empty (?:the )?(?:${TRASH}|deleted items|junk|spam)\\b`)),
  // "Clear browsing data", "Clear history"; a bare "Clear" empties a search field.
  rule('delete', /^clear (?:all )?(?:browsing data|browsing history|history|data|cache|cookies|site data|storage|conversation|chat)\b/),
  rule('delete', /^discard (?:draft|message|email|conversation)\b/),
  rule('delete', /^(?:close|deactivate|terminate) (?:my |your |the )?account\b/),
  rule('delete', /^format (?:the )?(?:disk|drive|volume|partition|usb drive|device|card|sd card)\b/),
  rule('delete', /^(?:factory reset|reset to factory|erase all content)\b/),
  // "Trash" as a verb on a button ("Trash", "Trash conversation"); a Trash folder (item, link) only opens.
  rule('delete', /^trash(?: it| this| them| conversation| message| thread| email| selected)?$/, TRASH_VERB_ROLES),
  // The Trash on a desktop or dock is a drop target: what is dropped on it is deleted.
  rule('delete', new RegExp(`^${TRASH}$`), ICONS),

  // install: installing software.
  // "Install", "Install now", "Install update", "Install anyway", "Reinstall"; not "Installed", "Installation guide".
  rule('install', /^(?:re ?)?install\b/),
  // Browser extensions and web apps: "Add to Chrome", "Add extension", "Add to Home screen".
  rule('install', /^add to (?:chrome|chromium|firefox|edge|brave|opera|vivaldi|thunderbird|home screen)$/),
  rule('install', /^add (?:extension|app|theme|add on|plugin)$/),
  // "Update all", "Upgrade packages", "Restart & update"; a bare "Update" saves a web form as often as it installs.
  rule('install', /^(?:update|upgrade) (?:all|everything|system|packages|software|apps)$/),
  rule('install', /^(?:restart|reboot) (?:and |to )?(?:update|install|upgrade)\b/),
  // A store's "Get" (Microsoft Store).
  rule('install', /^get(?: app| the app)?$/),
  rule('install', /^(?:run|open) (?:the )?installer$/),

  // security: security and account settings.
  // "Change password", "Turn off firewall", "Set up two-factor authentication", "Change PIN".
  rule('security', new RegExp(`^${SECURITY_VERB} (?:(?:a|an|the|your|my|new|account|device|login|sign in|screen) )*(?:${SECURITY_SETTING}|pin|passcode)\\b`)),
  // The setting named alone (a switch, a settings page): "Two-factor authentication", "Passkeys", "Firewall".
  rule('security', new RegExp(`^${SECURITY_SETTING}\\b`)),
  // "Security", "Privacy and security", "Sign-in & security", "Security settings"; not "Security tips".
  rule('security', /^(?:account |privacy and |login and |sign in and )?security(?: and (?:privacy|login|sign in))?(?: settings)?$/),
  // "Sign out of all other sessions", "Log out everywhere", "Revoke access".
  rule('security', /^(?:sign|log) out (?:of )?(?:all|every|everywhere|other)\b/),
  rule('security', /^revoke\b/),
  rule('security', /^(?:change|update) (?:your |my )?(?:email address|email|username|phone number)$/),

  // send: sending, posting, submitting. A link only navigates (to a form it does not submit).
  // "Send", "Send message", "Resend", "Send feedback"; not "Sent", "Send to back" (drawing apps' arranging).
  rule('send', /^(?:re ?)?send\b(?! (?:to )?(?:back|backward|backwards|background)\b)/, PRESSING),
  // "Post reply", "Publish", "Submit", "Comment" (GitHub's, which submits). "Reply" and "Forward" open a composer.
  rule('send', /^(?:post|publish|submit|tweet|retweet|repost|reblog|toot|comment)\b/, PRESSING),
  rule('send', /^schedule (?:send|post|message|email|tweet)\b/, PRESSING),
  rule('send', /^share (?:now|post)$/, PRESSING),

  // terms: accepting terms or agreements. Reading them ("Terms of service") is not accepting.
  // "Accept terms", "I agree to the Terms of Service", "I accept the terms in the License Agreement".
  rule('terms', /^(?:i )?(?:agree|accept|consent)\b.*\b(?:terms|conditions|agreement|license|licence|eula|tos|policy|policies|contract|rules)\b/),
  // "I agree", "I accept", "Agree" (an installer's licence sheet), "Agree and continue", "Agree & join".
  rule('terms', /^i (?:agree|accept|consent)$/),
  rule('terms', /^agree$/),
  rule('terms', /^(?:i )?(?:agree|accept) and (?:continue|proceed|join|sign up|get started|start|next|install)\b/),
  rule('terms', /^i (?:have read|understand|acknowledge)\b.*\b(?:agree|accept)\b/),
];

/**
 * Labels that back out or undo (checked on the whole label, before any rule): pressing them
 * leaves things as they were. "Cancel order" cancels; "Undo delete" restores.
 */
const BACKING_OUT =
  /^(?:cancel|undo|no|not|don't|dont|do not|never|dismiss|skip|back|go back|keep|restore|recover|disagree|decline|reject|i disagree|i do not|i don't|i dont|maybe later|later|remind me later)\b|^close(?: window| tab| dialog| all| others)?$/;

/**
 * Labels that name something to read rather than an act: a help page or a guide ("Delete account
 * help", "Installation guide", "Security tips"), or a lead-in that looks ("How to delete files",
 * "View order", "Show password").
 */
const READING_MATTER =
  /\b(?:help|guide|guides|tips|faq|faqs|documentation|docs|instructions|tutorial|tutorials|overview|requirements)$|^(?:learn|about|how|what|why|view|show|more about|more info)\b/;

/**
 * Labels that name a record ("Purchase history", "Order details"): opening it is reading it,
 * except where the label clears or deletes it ("Clear history").
 */
const RECORDS = /^(?!(?:clear|delete|remove|erase|wipe|purge)\b).*\b(?:history|details|info|information|status|notes)$/;

const isReading = (text: string): boolean => READING_MATTER.test(text) || RECORDS.test(text);

/** Words that lead into an act without changing it: "Yes delete", "Confirm purchase", "Permanently delete". */
const LEAD_IN = /^(?:yes|ok|okay|sure|please|confirm|permanently|force|securely|really|instantly) /;

/** Buttons that confirm whatever their dialog asks: alone they do nothing in particular. */
const CONFIRMING = /^(?:(?:yes|ok|okay|sure|continue|confirm|proceed|apply|accept|allow|next|go ahead|do it|save|i'm sure|i am sure|anyway) ?)+$/;

/** A dialog title reporting a failure or an outcome: its OK only dismisses it. */
const TITLE_OUTCOME = /\b(?:error|failed|failure|unable|could not|couldn't|cannot|can't|not enough)\b|\b(?:sent|complete|completed|successful|successfully|done|finished|installed|deleted|removed|purchased|confirmed)$/;

/** Question lead-ins of dialog titles: "Are you sure you want to delete…?", "Do you really want to…". */
const TITLE_QUESTION = /^(?:are you sure(?: you want)?(?: to)?|do you (?:really )?want to|would you like to|really|confirm|permanently) /;

/**
 * What a dialog title names that a button label would not, anywhere in the title rather than at
 * its start: the act further into the sentence, or the agreement itself.
 */
const TITLE_RULES: readonly LabelRule[] = [
  rule('purchase', /\b(?:purchase|payment|pay|checkout|buy)\b/),
  rule('delete', new RegExp(`\\b(?:delete|remove|erase|empty (?:the )?${TRASH}|move (?:\\w+ )?to (?:the )?${TRASH})\\b`)),
  rule('install', /\b(?:install|installation)\b/),
  rule('send', /\b(?:send|post|publish|submit)\b/),
  // "License Agreement", "Terms of Service", "End User License Agreement": the dialog's Accept or OK accepts them.
  rule('terms', /\b(?:license agreement|licence agreement|terms of service|terms of use|terms and conditions|user agreement|eula|subscriber agreement)\b/),
];

/** A file's name ("report.txt", "Delete me.txt"): an item or icon so named is a file, not a command. */
const FILE_NAME = /^[^\\/]+\.[A-Za-z][A-Za-z0-9]{0,5}$/;
const FILE_ROLES: ReadonlySet<ElementRole> = new Set<ElementRole>(['item', 'icon']);

/**
 * What pressing an element would do (clicking it, Enter or Space on it, or Enter on a dialog
 * whose default button it is), as a guardrail category, judged from its role, label and
 * dialog; null when none. One classifier for the service's own code and the Linux app; the
 * rules and their order are at the top of this file and in docs/guardrails.md ("Categories").
 */
export function elementCategory(element: ElementToClassify): GuardrailCategory | null {
  const { role, label, dialog } = element;
  if (!ACTING_ROLES.has(role)) return null;
  if (FILE_ROLES.has(role) && FILE_NAME.test(label.trim())) return null;
  const text = normalise(label);
  if (!text.whole || BACKING_OUT.test(text.whole) || isReading(text.whole)) return null;
  return categoryOfClauses(text, role, LABEL_RULES) ?? (dialog ? dialogCategory(dialog, text.whole) : null);
}

/**
 * The category a button takes from its dialog's title: when it only confirms ("OK", "Yes") or
 * repeats the verb the title asks about ("Format" in "Are you sure you want to format the
 * disk?"). Null for any other button, and for a title reporting a failure or an outcome.
 */
function dialogCategory(title: string, buttonWords: string): GuardrailCategory | null {
  const text = normalise(title);
  if (!text.whole || TITLE_OUTCOME.test(text.whole) || BACKING_OUT.test(text.whole) || isReading(text.whole)) return null;
  const asked = { whole: stripLeads(text.whole, TITLE_QUESTION), clauses: text.clauses.map((clause) => stripLeads(clause, TITLE_QUESTION)) };
  const confirms = CONFIRMING.test(buttonWords) || `${asked.whole} `.startsWith(`${buttonWords} `);
  return confirms ? categoryOfClauses(asked, 'button', DIALOG_TITLE_RULES) : null;
}

/**
 * A rule table as one alternation per category and role set, in CATEGORY_ORDER: the same
 * patterns, tested a few times per label instead of fifty (the simulator lays out every screen
 * it shows, classifying each element).
 */
interface CompiledRules {
  category: GuardrailCategory;
  pattern: RegExp;
  roles?: ReadonlySet<ElementRole>;
}

function compile(rules: readonly LabelRule[]): readonly CompiledRules[] {
  return CATEGORY_ORDER.flatMap((category) => {
    const ofCategory = rules.filter((candidate) => candidate.category === category);
    const roleSets = [...new Set(ofCategory.map((candidate) => candidate.roles))];
    return roleSets.map((roles) => ({
      category,
      roles,
      pattern: new RegExp(ofCategory.filter((candidate) => candidate.roles === roles).map((candidate) => `(?:${candidate.pattern.source})`).join('|')),
    }));
  });
}

const LABEL_RULES = compile(RULES);
const DIALOG_TITLE_RULES = compile([...RULES, ...TITLE_RULES]);

/** The first category in CATEGORY_ORDER that a rule gives the whole text or one of its clauses. */
function categoryOfClauses(text: NormalisedText, role: ElementRole, rules: readonly CompiledRules[]): GuardrailCategory | null {
  const candidates = [text.whole, ...text.clauses].map((clause) => stripLeads(clause, LEAD_IN)).filter((clause) => clause && !BACKING_OUT.test(clause));
  const found = rules.find(({ pattern, roles }) => (!roles || roles.has(role)) && candidates.some((clause) => pattern.test(clause)));
  return found?.category ?? null;
}

/** Drops lead-in words while something is left after them. */
function stripLeads(clause: string, leads: RegExp): string {
  let rest = clause;
  while (leads.test(rest)) rest = rest.replace(leads, '');
  return rest;
}

interface NormalisedText {
  /** The whole label as words. */
  whole: string;
  /** Its clauses as words, when it has more than one. */
  clauses: string[];
}

/** Currency amounts: "$20.00", "€ 5", "20,00 €", "20 USD". */
const PRICE = /[$€£¥₹]\s?\d[\d.,]*|\b\d[\d.,]*\s?(?:[$€£¥₹]|(?:usd|eur|gbp|chf|sek|nok|dkk|pln|kr)\b)/g;
/** A trailing count, shortcut or note in brackets: "(3)", "(Ctrl-Enter)", "[2]". */
const TRAILING_BRACKETS = /\s*[([{][^()[\]{}]*[)\]}]\s*$/;
const PLAIN_ASCII = /^[\x20-\x7e]*$/;
/** A mnemonic marker before a letter: GTK's `_Delete`, Windows' `&Delete` (not "Terms & Conditions"). */
const MNEMONIC = /(^|[^\p{L}\p{N}])[_&](?=[\p{L}\p{N}])/gu;
/** Where a label divides into clauses: commas, semicolons, "&", "+", "and", "then". */
const CLAUSE_BREAK = /\s*(?:[,;&+]|\band\b|\bthen\b)\s*/;

/**
 * A label as lowercase words joined by single spaces: invisible format characters, mnemonic
 * markers (GTK's `_Delete`, Windows' `&Delete`), trailing bracketed counts or shortcuts,
 * punctuation and icon glyphs removed, prices read as `price`, a trailing bare count dropped.
 */
function normalise(label: string): NormalisedText {
  // Most labels are plain ASCII; the Unicode steps are for the rest (Gmail's direction marks,
  // curly apostrophes, full-width letters).
  let text = PLAIN_ASCII.test(label)
    ? label.toLowerCase()
    : label.normalize('NFKC').replace(/\p{Cf}/gu, '').toLowerCase().replace(/[’‘`´]/g, "'");
  if (text.includes('_') || text.includes('&')) text = text.replace(MNEMONIC, '$1');
  while (TRAILING_BRACKETS.test(text)) text = text.replace(TRAILING_BRACKETS, '');
  text = text.replace(PRICE, ' price ');
  const clauses = text.split(CLAUSE_BREAK);
  return { whole: words(text.replace(/&/g, ' and ')), clauses: clauses.length > 1 ? clauses.map(words).filter(Boolean) : [] };
}

/** Letters, digits and in-word apostrophes; anything else separates words. */
function words(text: string): string {
  let spaced = text.replace(/[^\p{L}\p{N}']+/gu, ' ');
  if (spaced.includes("'")) spaced = spaced.replace(/(^|\s)'+|'+(?=\s|$)/g, '$1').replace(/\s+/g, ' ');
  return spaced.trim().replace(/(?: \d+)+$/, '');
}
