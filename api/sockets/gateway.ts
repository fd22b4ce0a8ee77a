import type http from 'node:http';
import { Server, type Namespace, type Socket } from 'socket.io';
import type { TSchema } from '@sinclair/typebox';
import { Ajv, type ValidateFunction } from 'ajv';
import { subscriberLike, type Redis } from '../../shared/redis';
import { socketIoAdapter } from '../../shared/socket-io-redis';
import type { Logger } from '../../shared/logger';
import { ApiError } from '../../shared/errors';
import { unstorableValueAt, withStorableStrings } from '../../shared/validation/storable';

/** A hello refused for a reason the client is told (`code` is the protocol's, e.g. `expired`). */
export interface HelloRefusal {
  ok: false;
  code: string;
  message: string;
}

/** A hello taken: what the socket carries from now on, and the reply the client hears. */
export interface HelloAccepted<Data> {
  ok: true;
  data: Data;
  reply: { readonly ok: true };
}

/** A socket that said a hello its gateway accepted. */
export interface AdmittedSocket<Data> {
  readonly socket: Socket;
  readonly data: Data;
  /** Sends to this socket only. */
  send(event: string, payload: unknown): void;
}

/**
 * One socket.io namespace (computers of one kind: desktop apps, runners): its hello,
 * who may connect, and what its clients send once they have. The composition root builds the
 * list; the web process attaches every one to its one socket.io server (`attachGateways`).
 * A client must say hello first: a malformed one is refused naming the field, and messages
 * before an accepted hello are ignored.
 */
export interface Gateway<Data extends object = object> {
  /** `/desktop`, … */
  readonly namespace: string;
  /** Names the gateway in logs (`desktop` logs as `desktop-gateway`). */
  readonly name: string;
  /** Who speaks on this namespace, as a refusal names them: "The app sent a malformed hello…". */
  readonly peer: string;
  readonly helloEvent: string;
  /** JSON Schema of the hello; checked before `authenticate` sees it. */
  readonly helloSchema: TSchema;
  /** Who said hello (its credentials are in the hello); throws only for what the client cannot fix. */
  authenticate(hello: unknown): Promise<HelloAccepted<Data> | HelloRefusal>;
  /**
   * The room that holds one client at a time (its session, its runner): the connection joins it
   * when its hello is accepted, and an older connection in it (a zombie after a network drop, a
   * second process with the same credentials) is closed, on whichever web process holds it.
   */
  room?(data: Data): string;
  /**
   * Once the connection is in its room, before the accepted reply goes out. A refusal returned
   * here is the reply instead (the client was refused meanwhile, e.g. its credentials revoked
   * while it joined), and its `gone` still runs.
   */
  admit?(admitted: AdmittedSocket<Data>): Promise<void | HelloRefusal>;
  /** After the accepted reply: what the client missed meanwhile (shutdown waits for it). */
  welcome?(admitted: AdmittedSocket<Data>): Promise<void>;
  /** Events an admitted client may send, each answered through its acknowledgement. */
  readonly events: readonly string[];
  /** `payload` is unchecked input, with characters PostgreSQL cannot store already replaced. */
  receive(data: Data, event: string, payload: unknown): Promise<unknown>;
  /** The admitted client's connection closed (shutdown waits for it). */
  gone?(data: Data): Promise<void>;
  /** Listeners on the namespace itself (messages relayed between web processes). */
  setUp?(namespace: Namespace): void;
  /** What the log says about a client (its session, its runner). */
  logFields(data: Data): Record<string, unknown>;
}

export interface AttachedGateways {
  io: Server;
  /** Closes this process's connections on every namespace and waits for what is being handled and written. */
  close(): Promise<void>;
}

const HELLO_TIMEOUT_MS = 10_000;

/** A JSON pointer into a client's message as the field's name (`/device/name` is `device.name`). */
const fieldAt = (pointer: string, message: string) =>
  pointer ? pointer.slice(1).split('/').map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~')).join('.') : message;

/** Why a hello cannot be taken, naming the field; null when it can. */
function helloProblem(validate: ValidateFunction, message: unknown): string | null {
  if (!validate(message)) {
    const error = validate.errors?.[0];
    return `${fieldAt(error?.instancePath ?? '', 'hello')} ${error?.message ?? 'is invalid'}`;
  }
  // PostgreSQL stores neither NUL nor a lone surrogate (a session's device is jsonb): refused
  // here, naming the field, rather than failing in the database with "try again", which never helps.
  const at = unstorableValueAt(message);
  if (at === null) return null;
  if (at.endsWith('#key')) return `${fieldAt(at.slice(0, at.lastIndexOf('/')), 'hello')} has a key with a NUL character (\\u0000) or an unpaired surrogate`;
  return `${fieldAt(at.replace(/#number$/, ''), 'hello')} must not contain a NUL character (\\u0000) or an unpaired surrogate`;
}

/**
 * The web process's socket.io server with every gateway's namespace on it. Several web
 * processes share rooms through the Redis adapter (on a Redis Cluster, the sharded one:
 * shared/socket-io-redis.ts), so a worker's emitter reaches a client whichever web process holds
 * its connection.
 */
export function attachGateways(server: http.Server, deps: { redis: Redis; redisPrefixKey: string; logger: Logger }, gateways: readonly Gateway[]): AttachedGateways {
  const subscriber = subscriberLike(deps.redis);
  const io = new Server(server, {
    serveClient: false,
    // Screenshots travel in results: allow up to 16 MB a message.
    maxHttpBufferSize: 16 * 1024 * 1024,
    adapter: socketIoAdapter(deps.redis, subscriber, deps.redisPrefixKey),
  });
  const ajv = new Ajv({ strict: false });
  const attached = gateways.map((gateway) => attachGateway(io, ajv, gateway, deps.logger.child({ scope: `${gateway.name}-gateway` })));
  return {
    io,
    async close() {
      await Promise.all(attached.map((close) => close()));
      subscriber.disconnect();
    },
  };
}

/** One namespace's connections; returns how to close them. */
function attachGateway<Data extends object>(io: Server, ajv: Ajv, gateway: Gateway<Data>, log: Logger): () => Promise<void> {
  const validateHello = ajv.compile(gateway.helloSchema);
  const namespace = io.of(gateway.namespace);
  // Offline marks and the clients' messages still being handled; shutdown waits for them before
  // the database closes.
  const inFlight = new Set<Promise<unknown>>();
  const track = <T>(work: Promise<T>): Promise<T> => {
    const tracked = work.finally(() => inFlight.delete(tracked));
    inFlight.add(tracked);
    return tracked;
  };
  gateway.setUp?.(namespace);

  namespace.on('connection', (socket: Socket) => {
    // Set once the hello is authenticated (the same object as `socket.data`, which relays may
    // annotate): from then on its messages are taken, and its leaving is `gone`.
    let admitted: Data | null = null;
    const helloTimer = setTimeout(() => {
      log.info({ socket: socket.id }, 'no hello in time; closing');
      socket.disconnect(true);
    }, HELLO_TIMEOUT_MS);

    socket.once(gateway.helloEvent, async (message: unknown, ack?: (reply: unknown) => void) => {
      clearTimeout(helloTimer);
      const reply = (answer: unknown) => (typeof ack === 'function' ? ack(answer) : socket.emit(gateway.helloEvent, answer));
      /** Answers with the refusal, then closes the connection (a moment later, so that the answer goes out first). */
      const refuse = (refusal: HelloRefusal) => {
        reply(refusal);
        setTimeout(() => socket.disconnect(true), 50);
      };
      const problem = helloProblem(validateHello, message);
      if (problem !== null) {
        reply({ ok: false, code: 'invalid', message: `${gateway.peer} sent a malformed hello: ${problem}` });
        socket.disconnect(true);
        return;
      }
      try {
        const answer = await gateway.authenticate(message);
        if (!answer.ok) return refuse(answer);
        socket.data = answer.data;
        admitted = answer.data;
        const client: AdmittedSocket<Data> = { socket, data: answer.data, send: (event, payload) => socket.emit(event, payload) };
        const room = gateway.room?.(answer.data);
        if (room) {
          await socket.join(room);
          namespace.in(room).except(socket.id).disconnectSockets(true);
        }
        const refused = await gateway.admit?.(client);
        if (refused) return refuse(refused);
        reply(answer.reply);
        if (gateway.welcome) await track(gateway.welcome(client)).catch((error) => log.error({ err: error, ...gateway.logFields(answer.data) }, 'could not welcome the client'));
      } catch (error) {
        log.error({ err: error }, 'hello failed');
        refuse({ ok: false, code: 'invalid', message: 'The service could not take the connection; try again.' });
      }
    });

    for (const event of gateway.events) {
      socket.on(event, async (received: unknown, ack?: (answer: unknown) => void) => {
        const data = admitted;
        if (!data) return;
        // A result reports whatever the screen shows (a window title, a page's text), which the
        // client does not choose: characters PostgreSQL cannot store become U+FFFD rather than
        // fail the step (docs/desktop-protocol.md). Bytes (a screenshot) are not text and stay.
        const unstorable = unstorableValueAt(received);
        const payload = unstorable === null ? received : withStorableStrings(received);
        if (unstorable !== null) log.warn({ event, ...gateway.logFields(data), at: unstorable }, `NUL or unpaired surrogate in a ${gateway.name} message replaced by U+FFFD`);
        try {
          const answer = await track(gateway.receive(data, event, payload));
          if (typeof ack === 'function') ack(answer ?? { ok: true });
        } catch (error) {
          // The client hears why, with the service's code (customer_answers_off, already_answered…);
          // anything unexpected (a database error, a bug) only as a generic refusal: its text is
          // the service's, not the client's to read.
          if (error instanceof ApiError) {
            log.warn({ err: error, event, ...gateway.logFields(data) }, `${gateway.name} message refused`);
            if (typeof ack === 'function') ack({ ok: false, message: error.message, code: error.code, ...error.extra });
          } else {
            log.error({ err: error, event, ...gateway.logFields(data) }, `${gateway.name} message failed`);
            if (typeof ack === 'function') ack({ ok: false, message: 'The service could not take this message; send it again.' });
          }
        }
      });
    }

    socket.on('disconnect', () => {
      clearTimeout(helloTimer);
      if (admitted && gateway.gone) void track(gateway.gone(admitted));
    });
  });

  return async () => {
    // `local`: through the Redis adapter, a plain disconnectSockets reaches every web process,
    // and stopping one would drop every client (and fail every running task) of the others.
    namespace.local.disconnectSockets(true);
    // A socket leaves once its connection has closed (a round trip to the client later), and its
    // leaving starts its `gone`: wait until every socket has left and nothing is in flight.
    while (namespace.sockets.size > 0 || inFlight.size > 0) {
      await Promise.allSettled([...inFlight]);
      if (namespace.sockets.size > 0) await new Promise((resolve) => setTimeout(resolve, 10));
    }
  };
}
