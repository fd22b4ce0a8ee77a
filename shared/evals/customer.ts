/**
 * The simulated customer of a test case (spec: "Simulated customer"): the person at the
 * machine during a try. The try lifecycle asks it what the customer does when the task shows
 * them something: a question (`answer`), an approval (`approves`), a request to type a secret
 * (`secretToType`) or to click something (`stepToClick`). Nothing here knows tries or tasks.
 *
 * The scripted rules (docs/evals.md, "The simulated customer and the judge"), in order:
 * 1. A question is answered with the value of the first non-secret fact whose label stands in
 *    the question as a word (case-insensitive); facts are tried in the order they were written.
 * 2. With options, that value is the answer only when it is one of them (case-insensitive; the
 *    option is answered as written), else the first option.
 * 3. No fact matches: "I don't know" (options or not).
 * 4. A secret fact is never an answer; it is typed when the agent asks for it by its label.
 */
import { containsWord } from './text-match';

/** A fact's value: said aloud when asked, or a secret that is only ever typed. */
export type CustomerFact = string | { secret: string };

export interface SimulatedCustomer {
  persona?: string;
  /** Label → value, in the order the case author wrote them (the first match wins). */
  facts?: Record<string, CustomerFact>;
  /** Approvals shown to the customer are approved by them. */
  clicks_admin_prompts?: boolean;
  /** The customer clicks a quoted label when a question asks them to. */
  does_steps?: boolean;
}

export interface CustomerQuestion {
  customer: SimulatedCustomer;
  question: string;
  /** Empty: a free answer. */
  options: string[];
}

export interface CustomerAnswer {
  answer: string;
  /** Who answered: `scripted`, or the vendor model's id. */
  model: string;
}

/** Answers questions shown to the customer (`customer_can_answer`). */
export interface CustomerModel {
  answer(input: CustomerQuestion, signal?: AbortSignal): Promise<CustomerAnswer>;
}

export const DONT_KNOW = "I don't know";
/** What the customer answers after clicking what a question asked them to (`does_steps`). */
export const STEP_DONE = 'Done';
export const SCRIPTED_CUSTOMER_MODEL = 'scripted';
/** What the customer says instead of an answer that would give a secret away. */
export const CANNOT_SHARE = "I can't share that.";

export function isSecret(value: CustomerFact): value is { secret: string } {
  return typeof value === 'object' && value !== null && typeof value.secret === 'string';
}

/** The facts the customer may say aloud, in order. */
export function spokenFacts(customer: SimulatedCustomer): Array<[label: string, value: string]> {
  return Object.entries(customer.facts ?? {}).flatMap(([label, value]): Array<[string, string]> => (typeof value === 'string' ? [[label, value]] : []));
}

/** The secret facts, in order (label and value). */
export function secretFacts(customer: SimulatedCustomer): Array<[label: string, value: string]> {
  return Object.entries(customer.facts ?? {}).flatMap(([label, value]): Array<[string, string]> => (isSecret(value) ? [[label, value.secret]] : []));
}

/** The scripted answer to a question (rules 1 to 3 above). */
export function scriptedAnswer(customer: SimulatedCustomer, question: string, options: readonly string[]): string {
  const fact = spokenFacts(customer).find(([label]) => containsWord(question, label));
  if (!fact) return DONT_KNOW;
  if (options.length === 0) return fact[1];
  const wanted = fact[1].trim().toLowerCase();
  return options.find((option) => option.trim().toLowerCase() === wanted) ?? options[0]!;
}

/** The deterministic customer of `DESKHAND_SCRIPTED_MODELS=1` and of deployments without vendor keys. */
export const scriptedCustomer: CustomerModel = Object.freeze({
  async answer(input: CustomerQuestion): Promise<CustomerAnswer> {
    return { answer: scriptedAnswer(input.customer, input.question, input.options), model: SCRIPTED_CUSTOMER_MODEL };
  },
});

/**
 * When the agent asks the customer to type a secret (the secret's label stands in the request
 * as a word, case-insensitive), the value the customer types into the focused field; else null.
 * The first secret named wins.
 */
export function secretToType(customer: SimulatedCustomer, requestText: string): string | null {
  return secretFacts(customer).find(([label]) => containsWord(requestText, label))?.[1] ?? null;
}

/** Whether the customer approves approvals shown to them (`customer_can_approve`); else they leave them. */
export function approves(customer: SimulatedCustomer): boolean {
  return customer.clicks_admin_prompts === true;
}

/** "click", then anything but a quote, then the quoted label (straight or curly quotes). */
const CLICK_REQUEST = /\bclick\b[^"“”]*["“]([^"“”]+)["”]/i;

/**
 * With `does_steps`, the label a question asks the customer to click (`Please click "Install"`
 * → `Install`); null when the customer does not do steps or the question asks for no click.
 * After clicking, the customer answers `STEP_DONE`.
 */
export function stepToClick(customer: SimulatedCustomer, question: string): string | null {
  if (customer.does_steps !== true) return null;
  const label = CLICK_REQUEST.exec(question)?.[1]?.trim();
  return label ? label : null;
}

/**
 * Never say a secret aloud: an answer holding any secret's value (case-insensitive) is replaced
 * by `CANNOT_SHARE`. Used on every answer a vendor model gives.
 */
export function withoutSecrets(customer: SimulatedCustomer, answer: string): string {
  const leaks = secretFacts(customer).some(([, secret]) => secret.trim() !== '' && answer.toLowerCase().includes(secret.trim().toLowerCase()));
  return leaks ? CANNOT_SHARE : answer;
}

