import { isCluster, withinDeadline, type Redis } from './redis';

type Listener = (message: string) => void;

/** What `unsubscribe` returns: it completes at once. */
const DONE: Promise<void> = Promise.resolve();

/** See `Notifier.observe`. */
export interface ChannelObserver {
  message(name: string, message: string): void;
  released(name: string): void;
}

interface Channel {
  id: number;
  listeners: Set<Listener>;
  /** Settles when Redis has confirmed the SUBSCRIBE. */
  ready: Promise<void>;
  confirmed: boolean;
  /** Messages received on this subscription. */
  received: number;
  /** Set while the channel has no listeners and waits to be unsubscribed. */
  linger: NodeJS.Timeout | null;
}

/** How long a channel stays subscribed after its last listener left. */
const DEFAULT_LINGER_MS = 10_000;

/** The pub/sub commands the notifier uses: plain on one Redis, sharded on a cluster. */
interface PubSub {
  publish(channel: string, message: string): Promise<unknown>;
  subscribe(channel: string): Promise<unknown>;
  unsubscribe(channel: string): Promise<unknown>;
  /** The subscriber's event that carries a message: `(channel, message)`. */
  messageEvent: 'message' | 'smessage';
  /** The subscriber's events after which messages published meanwhile may have been lost. */
  gapEvents: readonly string[];
}

/**
 * On a Redis Cluster, plain PUBLISH reaches every node of the cluster (each forwards it to its
 * subscribers), so its cost grows with the cluster; sharded pub/sub (Redis 7) keeps a channel on
 * the shard that owns its slot, and task channels spread over the shards. ioredis keeps one
 * subscriber connection per master (`shardedSubscribers`) and subscribes again on the new master
 * after a failover; messages published in between are lost, as on a reconnect: a node leaving or
 * joining the subscribers counts as a gap (`mark`).
 */
function pubSubOf(publisher: Redis, subscriber: Redis): PubSub {
  if (isCluster(subscriber)) {
    return {
      publish: (channel, message) => publisher.spublish(channel, message),
      subscribe: (channel) => subscriber.ssubscribe(channel),
      unsubscribe: (channel) => subscriber.sunsubscribe(channel),
      messageEvent: 'smessage',
      gapEvents: ['close', 'ready', '-node', '+node', '-subscriber', '+subscriber', 'subscribersReady'],
    };
  }
  return {
    publish: (channel, message) => publisher.publish(channel, message),
    subscribe: (channel) => subscriber.subscribe(channel),
    unsubscribe: (channel) => subscriber.unsubscribe(channel),
    messageEvent: 'message',
    gapEvents: ['close', 'ready'],
  };
}

/**
 * Cross-process notifications over Redis pub/sub (sharded on a Redis Cluster: `pubSubOf`):
 * "task X advanced", "key Y revoked". One subscriber connection per process, shared by every
 * listener. A notification may be lost (a failed PUBLISH, a dropped connection), so it never is
 * the record: a task's note carries a copy of what a committed change wrote, and PostgreSQL
 * answers whenever the notes heard leave a gap.
 *
 * A channel stays subscribed for a while after its last listener leaves, because a long-poller
 * asks again within milliseconds of its answer: re-subscribing each time would cost two Redis
 * round trips per poll, one of them on the way to the answer. Messages that arrive for a channel
 * nobody listens to are dropped. Every subscriber waits for Redis to confirm the SUBSCRIBE, also
 * one that joins a channel whose SUBSCRIBE is still on its way.
 */
export class Notifier {
  private readonly channels = new Map<string, Channel>();
  private lastChannelId = 0;
  /** Bumped when the subscriber connection drops or comes back: messages published in between are lost. */
  private connection = 0;
  /** Told of every message on a subscribed channel whose name starts with their prefix (before its listeners), and of its release. */
  private readonly observers: Array<{ prefix: string; observer: ChannelObserver }> = [];
  /** What every channel's name starts with: the Redis prefix, then `:notify:`. */
  private readonly channelPrefix: string;
  private readonly pubSub: PubSub;

  constructor(
    publisher: Redis,
    private readonly subscriber: Redis,
    prefix: string,
    private readonly lingerMs = DEFAULT_LINGER_MS,
    /** How long a new subscription may wait for Redis (the subscriber waits forever otherwise); unset: no bound. */
    private readonly subscribeTimeoutMs?: number,
  ) {
    this.channelPrefix = `${prefix}:notify:`;
    this.pubSub = pubSubOf(publisher, subscriber);
    subscriber.on(this.pubSub.messageEvent, (channel: string, message: string) => {
      const state = this.channels.get(channel);
      if (!state) return;
      state.received++;
      if (this.observers.length) {
        const name = this.nameOf(channel);
        for (const { prefix, observer } of this.observers) if (name.startsWith(prefix)) observer.message(name, message);
      }
      for (const listener of state.listeners) listener(message);
    });
    const reconnected = () => {
      this.connection++;
    };
    for (const event of this.pubSub.gapEvents) subscriber.on(event, reconnected);
  }

  /** The name `channel` was made from (the reverse of `channel`). */
  private nameOf(channel: string): string {
    return channel.slice(this.channelPrefix.length);
  }

  private channel(name: string): string {
    return this.channelPrefix + name;
  }

  async publish(name: string, message = ''): Promise<void> {
    await this.pubSub.publish(this.channel(name), message);
  }

  /**
   * Hears every message on the subscribed channels whose names start with `prefix`, also while
   * they linger with no listener, and is told when such a channel is released: from then on its
   * messages are no longer heard, so what was kept from them is out of date.
   */
  observe(prefix: string, observer: ChannelObserver): void {
    this.observers.push({ prefix, observer });
  }

  /**
   * Listens on `name` until the returned function is called. Resolves once Redis has confirmed
   * the subscription, so that anything published after that reaches `listener`.
   */
  subscribe(name: string, listener: Listener): Promise<() => Promise<void>> {
    const channel = this.channel(name);
    let state = this.channels.get(channel);
    if (!state) {
      const created: Channel = { id: ++this.lastChannelId, listeners: new Set(), ready: Promise.resolve(), confirmed: false, received: 0, linger: null };
      // Bounded: a long poll whose subscription Redis does not confirm (down or stalled) fails
      // and answers 503 `unavailable` instead of hanging past its wait.
      const subscribing = this.pubSub.subscribe(channel);
      const confirmedInTime = this.subscribeTimeoutMs ? withinDeadline(subscribing, this.subscribeTimeoutMs, 'a subscription') : subscribing;
      created.ready = confirmedInTime.then(() => {
        created.confirmed = true;
      });
      created.ready.catch(() => {
        if (this.channels.get(channel) === created) this.channels.delete(channel);
      });
      this.channels.set(channel, (state = created));
    }
    if (state.linger) {
      clearTimeout(state.linger);
      state.linger = null;
    }
    const current = state;
    current.listeners.add(listener);
    let listening = true;
    const unsubscribe = () => {
      if (!listening) return DONE;
      listening = false;
      current.listeners.delete(listener);
      if (current.listeners.size === 0 && !current.linger && this.channels.get(channel) === current) {
        current.linger = setTimeout(() => this.release(channel, current), this.lingerMs);
        current.linger.unref();
      }
      return DONE;
    };
    // Not an async function: every long poll subscribes, and most find the channel confirmed.
    if (current.confirmed) return Promise.resolve(unsubscribe);
    return current.ready.then(
      () => unsubscribe,
      (error: unknown) => {
        void unsubscribe();
        throw error;
      },
    );
  }

  /**
   * Where `name` stands. Equal marks at two moments mean that it stayed subscribed on a live
   * connection and received no message in between: anything published after the first moment
   * has not arrived yet and will reach the listeners then. Null while not subscribed.
   */
  mark(name: string): string | null {
    const state = this.channels.get(this.channel(name));
    if (!state?.confirmed || this.subscriber.status !== 'ready') return null;
    return `${state.id}:${this.connection}:${state.received}`;
  }

  /** Unsubscribes a channel whose linger ran out with nobody listening. */
  private release(channel: string, state: Channel): void {
    state.linger = null;
    if (state.listeners.size > 0 || this.channels.get(channel) !== state) return;
    this.channels.delete(channel);
    // Commands on one connection run in order: a later SUBSCRIBE to this channel comes after it.
    this.pubSub.unsubscribe(channel).catch(() => undefined);
    const name = this.nameOf(channel);
    for (const { prefix, observer } of this.observers) if (name.startsWith(prefix)) observer.released(name);
  }
}
