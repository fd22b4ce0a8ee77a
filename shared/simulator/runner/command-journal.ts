import type { CommandDone } from './runner-protocol';

/**
 * The commands a runner has taken, by `command_id`, so that each is carried out once although
 * the service may send it more than once (docs/runners.md, "At least once, carried out once").
 * A command still running is not started again; a finished one's answer is sent again.
 */
export class CommandJournal {
  private readonly entries = new Map<string, { done: CommandDone | null }>();

  constructor(private readonly remembered = 1000) {}

  /**
   * Takes a command: `'new'` the first time (the caller runs it, then calls `finish`),
   * `'running'` while it runs, or its answer once it finished.
   */
  take(commandId: string): 'new' | 'running' | CommandDone {
    const known = this.entries.get(commandId);
    if (known) return known.done ?? 'running';
    this.entries.set(commandId, { done: null });
    this.forgetOldest();
    return 'new';
  }

  finish(done: CommandDone): void {
    this.entries.set(done.command_id, { done });
    this.forgetOldest();
  }

  private forgetOldest(): void {
    // Running commands are kept whatever their age: forgetting one would let a repeat start it twice.
    for (const [id, entry] of this.entries) {
      if (this.entries.size <= this.remembered) return;
      if (entry.done) this.entries.delete(id);
    }
  }
}
