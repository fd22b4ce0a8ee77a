/**
 * Gathers calls made in the same turn of the event loop into one batch (the DataLoader
 * pattern), so that a hundred deliveries in flight share one SQL statement and one commit
 * instead of a hundred. At low load a batch holds one item and waits for nothing but the
 * current turn to end.
 */
export class MicroBatcher<I, O> {
  private pending: Array<{ item: I; resolve: (value: O) => void; reject: (error: unknown) => void }> = [];
  private scheduled = false;

  /**
   * @param run - handles a batch; returns one result per item, in order
   * @param key - items with the same key never share a batch (a later one waits for the next)
   */
  constructor(
    private readonly run: (items: I[]) => Promise<O[]>,
    private readonly options: { maxBatch: number; key?: (item: I) => string },
  ) {}

  add(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.pending.push({ item, resolve, reject });
      if (this.pending.length >= this.options.maxBatch) this.flush();
      else if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    this.scheduled = false;
    const batch: typeof this.pending = [];
    const later: typeof this.pending = [];
    const seen = new Set<string>();
    for (const entry of this.pending.splice(0)) {
      const key = this.options.key?.(entry.item);
      if (key !== undefined && seen.has(key)) later.push(entry);
      else {
        if (key !== undefined) seen.add(key);
        batch.push(entry);
      }
    }
    if (later.length) {
      this.pending.push(...later);
      this.scheduled = true;
      setImmediate(() => this.flush());
    }
    if (batch.length) void this.settle(batch);
  }

  private async settle(batch: typeof this.pending): Promise<void> {
    try {
      const results = await this.run(batch.map((entry) => entry.item));
      batch.forEach((entry, i) => entry.resolve(results[i] as O));
    } catch (error) {
      if (batch.length === 1) {
        batch[0]!.reject(error);
        return;
      }
      // One bad item must not fail its neighbours: each is tried alone.
      await Promise.all(batch.map((entry) => this.settle([entry])));
    }
  }
}
