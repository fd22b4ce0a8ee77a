import { createAdapter, createShardedAdapter } from '@socket.io/redis-adapter';
import { Emitter } from '@socket.io/redis-emitter';
import { encode as msgpack } from 'notepack.io';
import type { Cluster } from 'ioredis';
import type { Namespace } from 'socket.io';
import { isCluster, type Redis } from './redis';

/**
 * socket.io across processes over Redis: the adapter each web process's socket.io server uses,
 * and the emitter any process (a worker) uses to reach a socket whichever web process holds it.
 * Both must agree on where messages travel, so both are made here.
 *
 * - One Redis: socket.io's Redis adapter and emitter, over plain pub/sub (every web process
 *   hears every message of a namespace through one pattern subscription).
 * - A Redis Cluster: plain pub/sub would copy every message to every node of the cluster, so the
 *   sharded adapter is used instead, over Redis 7's sharded pub/sub: a room's messages travel on
 *   a channel of its own (`{key}#{namespace}#{room}#`), which lives on one shard and reaches only
 *   the web processes that hold a socket in that room. socket.io's emitter speaks only the plain
 *   adapter's format, so `ShardedEmitter` below publishes the sharded adapter's messages itself.
 */

/** The Redis key prefix (and channel prefix) of socket.io's adapter and emitter; both must agree. */
export const socketIoKey = (prefix: string) => `${prefix}:socket.io`;

/** What the emitter offers: a room of a namespace to send to, or whose sockets to close. */
export interface NamespaceEmitter {
  to(room: string): { emit(event: string, payload: unknown): unknown };
  in(room: string): { disconnectSockets(close: boolean): unknown };
}

/**
 * The socket.io adapter of a web process: messages published on `publisher`, heard on
 * `subscriber` (a connection of its own, in subscriber mode from then on).
 */
export function socketIoAdapter(publisher: Redis, subscriber: Redis, key: string) {
  if (!isCluster(subscriber) || !isCluster(publisher)) return createAdapter(publisher, subscriber, { key });
  const sharded = createShardedAdapter(publisher, shardedSubscriptions(subscriber), { channelPrefix: key });
  // socket.io calls it with `new`; what it returns is the adapter.
  return function adapter(namespace: Namespace) {
    const made = sharded(namespace);
    made.serverCount = () => webProcessesOn(publisher, `${key}#${namespace.name}#`);
    return made;
  };
}

/**
 * How many web processes hear a namespace (an acknowledged broadcast waits for each one's
 * count): its channel's sharded subscribers, on the masters (ioredis subscribes there). The
 * adapter's own count asks every node and fails when one does not answer (a master failing
 * over), which socket.io leaves unhandled: a node that does not answer counts none.
 */
async function webProcessesOn(cluster: Cluster, channel: string): Promise<number> {
  const counts = await Promise.allSettled(cluster.nodes('master').map((node) => node.call('PUBSUB', 'SHARDNUMSUB', channel) as Promise<[string, number]>));
  return counts.reduce((sum, count) => sum + (count.status === 'fulfilled' ? Number(count.value[1]) : 0), 0);
}

/** How often a room's SSUBSCRIBE that failed is tried again. */
const SUBSCRIBE_RETRY_MS = 1_000;

/**
 * What the sharded adapter uses of its subscriber connection, with the failures it leaves
 * unhandled handled: it sends SSUBSCRIBE and SUNSUBSCRIBE without waiting for their answers, and
 * one refused while its shard fails over (the shard's subscriber connection gone) would be an
 * unhandled rejection, which ends the process. A refused SSUBSCRIBE is tried again every second
 * until it succeeds or the room's channel is let go (SUNSUBSCRIBE); ioredis itself subscribes
 * again on the new master what it had subscribed before.
 */
function shardedSubscriptions(subscriber: Cluster) {
  const wanted = new Set<string>();
  const subscribe = (channel: string): void => {
    subscriber.ssubscribe(channel).catch(() => {
      setTimeout(() => {
        if (wanted.has(channel)) subscribe(channel);
      }, SUBSCRIBE_RETRY_MS).unref();
    });
  };
  const guarded = {
    on(event: string, listener: (...args: any[]) => void) {
      subscriber.on(event, listener);
      return guarded;
    },
    ssubscribe(channel: string) {
      wanted.add(channel);
      subscribe(channel);
    },
    sunsubscribe(channel: string) {
      wanted.delete(channel);
      subscriber.sunsubscribe(channel).catch(() => undefined);
    },
  };
  return guarded;
}

/**
 * A namespace's emitter on `redis` (a commands connection). A PUBLISH that fails (Redis down, or
 * closing) must not become an unhandled rejection, which would end the process: callers say what
 * makes up for a lost message (the link classes).
 */
export function socketIoEmitter(redis: Redis, key: string, namespace: string): NamespaceEmitter {
  if (isCluster(redis)) return new ShardedEmitter((channel, message) => redis.spublish(channel, message).then(() => undefined, () => undefined), key, namespace);
  const publisher = { publish: (channel: string, message: string | Buffer) => redis.publish(channel, message).catch(() => 0) };
  return new Emitter(publisher, { key }).of(namespace);
}

/** socket.io-adapter's message types (its `MessageType`), those an emitter sends. */
const BROADCAST = 3;
const DISCONNECT_SOCKETS = 6;
/** socket.io-parser's EVENT packet. */
const EVENT_PACKET = 2;
/** The sender id socket.io's adapters give an emitter (no adapter ignores it as its own). */
const EMITTER_UID = 'emitter';

/**
 * Publishes what the sharded adapter (`createShardedAdapter`, subscription mode `dynamic`)
 * hears, as its own `doPublish` would: a broadcast to one room (not a socket id) on the room's
 * channel, anything else on the namespace's. Messages are JSON, or MessagePack when they carry
 * bytes, as the adapter encodes them.
 */
export class ShardedEmitter implements NamespaceEmitter {
  private readonly channel: string;

  constructor(
    private readonly spublish: (channel: string, message: string | Buffer) => Promise<void>,
    key: string,
    private readonly namespace: string,
  ) {
    this.channel = `${key}#${namespace}#`;
  }

  to(room: string) {
    return {
      emit: (event: string, payload: unknown) => {
        const packet = { type: EVENT_PACKET, data: [event, payload], nsp: this.namespace };
        const opts = { rooms: [room], except: [], flags: {} };
        // The adapter's own rule (`computeChannel`): a socket id (20 characters) is not a room of its own.
        const channel = room.length === 20 ? this.channel : `${this.channel}${room}#`;
        void this.spublish(channel, this.encode({ uid: EMITTER_UID, nsp: this.namespace, type: BROADCAST, data: { opts, packet } }, payload));
        return true;
      },
    };
  }

  in(room: string) {
    return {
      disconnectSockets: (close: boolean) => {
        const opts = { rooms: [room], except: [], flags: {} };
        void this.spublish(this.channel, this.encode({ uid: EMITTER_UID, nsp: this.namespace, type: DISCONNECT_SOCKETS, data: { opts, close } }, null));
      },
    };
  }

  private encode(message: object, payload: unknown): string | Buffer {
    return hasBytes(payload) ? msgpack(message) : JSON.stringify(message);
  }
}

function hasBytes(value: unknown): boolean {
  if (!value || typeof value !== 'object') return false;
  if (value instanceof ArrayBuffer || ArrayBuffer.isView(value)) return true;
  return Array.isArray(value) ? value.some(hasBytes) : Object.values(value).some(hasBytes);
}
