import type { DesktopAction } from './protocol';

/**
 * A short human description of one desktop action: a task's `action` events and the `step` of a
 * model's move both read it. Typed text is never shown, only its length (it may be a secret;
 * shared/tasks/typed-text.ts words a typing event with its target).
 */
export function describeAction(action: DesktopAction): string {
  switch (action.type) {
    case 'screenshot':
      return 'Look at the screen';
    case 'click':
      return `${action.double ? 'Double-click' : action.button === 'right' ? 'Right-click' : 'Click'} at ${action.x}, ${action.y}`;
    case 'type':
      return `Type ${action.text.length} characters`;
    case 'key':
      return `Press ${action.keys}`;
    case 'drag':
      return `Drag from ${action.from.x}, ${action.from.y} to ${action.to.x}, ${action.to.y}`;
    case 'scroll':
      return `Scroll at ${action.x}, ${action.y}`;
    case 'wait':
      return `Wait ${Math.round(action.ms / 100) / 10} s`;
  }
}

/** The actions of one move, described in order ("Nothing" for none). */
export function describeActions(actions: readonly DesktopAction[]): string {
  return actions.map(describeAction).join(', ') || 'Nothing';
}
