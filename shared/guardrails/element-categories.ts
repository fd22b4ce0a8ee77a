import type { ElementRole, GuardrailCategory } from '../desktop/protocol';

/** What the classifier reads of an element. */
export interface ElementToClassify {
  role: ElementRole;
  /** Its accessible name or visible text. */
  label: string;
  /** The title of the dialog it is in, when it is in one. */
  dialog?: string | null;
}

/**
 * What pressing an element would do, as a guardrail category, judged from its role, label and
 * dialog; null when none. One classifier for the service's own code and the Linux app.
 * (Placeholder signature; the implementation and its corpus come with issue 38.)
 */
export function elementCategory(element: ElementToClassify): GuardrailCategory | null {
  void element;
  return null;
}
