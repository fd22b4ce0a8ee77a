import type { GuardrailCategory } from '../desktop/protocol';
import type { StatusTone } from './computer-state';

/**
 * What an app window or a web page shows, top to bottom, before it is placed on screen. Views
 * describe content with these blocks; the layout gives them bounds and the renderer draws them.
 * Element ids (`mail.send`, `page.buy-now`) tie a block back to the behaviour it triggers.
 */
export type ContentBlock =
  | { kind: 'heading'; text: string }
  | { kind: 'paragraph'; text: string; tone?: StatusTone }
  | FieldBlock
  | { kind: 'buttons'; buttons: ButtonSpec[] }
  | { kind: 'tiles'; tiles: TileSpec[]; trailing: TileSpec[] };

export interface FieldBlock {
  kind: 'field';
  id: string;
  role: 'text_field' | 'password_field' | 'text_area';
  label: string;
  value: string;
  /** Rows of a text area; `fill` stretches it to the bottom of the window. */
  rows?: number;
  fill?: boolean;
}

export interface ButtonSpec {
  id: string;
  label: string;
  /**
   * Overrules the element classifier (shared/guardrails/element-categories.ts), which otherwise
   * gives the button its category from its label, as the Linux app's buttons get theirs. Set it
   * only where this button does something other than its label says, with a comment saying what.
   */
  categoryOverride?: GuardrailCategory | null;
  /** A disabled button is drawn greyed and refuses clicks. */
  enabled?: boolean;
  primary?: boolean;
}

export interface TileSpec {
  id: string;
  label: string;
  role: 'item' | 'icon';
  /** Overrules the element classifier, as for a button (ButtonSpec.categoryOverride). */
  categoryOverride?: GuardrailCategory | null;
  selected?: boolean;
  /** Only files can be picked up; the Trash is a drop target. */
  draggable?: boolean;
  /** Small text under the label (`1 item`). */
  caption?: string;
}

/** A view: the window title and what the window shows. */
export interface View {
  title: string;
  blocks: ContentBlock[];
}

/** The status line of a scope, as a paragraph block, when there is one. */
export function statusBlock(status: { text: string; tone: StatusTone } | undefined): ContentBlock[] {
  return status ? [{ kind: 'paragraph', text: status.text, tone: status.tone }] : [];
}
