import type { Redis } from './redis';

type Listener = (message: string) => void;

/**
 * Cross-process notifications over Redis pub/sub: "task X advanced", "key Y revoked". One
 * subscriber connection per process, shared by every listener. Notifications are a wake-up
 * signal only; the record is always re-read from PostgreSQL.
 */
export class Notifier {
  private readonly listeners = new Map<string, Set<Listener>>();

  constructor(
    private readonly publisher: Redis,
    private readonly subscriber: Redis,
    private readonly prefix: string,
  ) {
    subscriber.on('message', (channel: string, message: string) => {
      const set = this.listeners.get(channel);
      if (set) for (const listener of set) listener(message);
    });
  }

  private channel(name: string): string {
    return `${this.prefix}:notify:${name}`;
  }

  async publish(name: string, message = ''): Promise<void> {
    await this.publisher.publish(this.channel(name), message);
  }

  /** Listens on `name` until the returned function is called. */
  async subscribe(name: string, listener: Listener): Promise<() => Promise<void>> {
    const channel = this.channel(name);
    let set = this.listeners.get(channel);
    if (!set) {
      set = new Set();
      this.listeners.set(channel, set);
      await this.subscriber.subscribe(channel);
    }
    set.add(listener);
    return async () => {
      const current = this.listeners.get(channel);
      if (!current) return;
      current.delete(listener);
      if (current.size === 0) {
        this.listeners.delete(channel);
        await this.subscriber.unsubscribe(channel);
      }
    };
  }
}
