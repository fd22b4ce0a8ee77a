import type http from 'node:http';
import { Server, type Socket } from 'socket.io';
import { createAdapter } from '@socket.io/redis-adapter';
import { Type, type Static } from '@sinclair/typebox';
import { Ajv } from 'ajv';
import type { Container } from '../../shared/container';
import { DESKTOP_NAMESPACE, RELAY_EVENT, sessionRoom, socketIoKey } from '../../shared/desktop/computer-link';
import { DesktopEvents, type HelloReply } from '../../shared/desktop/protocol';
import { ConnectRefused } from '../../shared/sessions/sessions.service';
import { ApiError } from '../../shared/errors';
import type { DesktopInbox, DesktopSocketData } from '../../shared/desktop/inbox';
import { unstorableValueAt, withStorableStrings } from '../../shared/validation/storable';

const Hello = Type.Object({
  code: Type.String({ minLength: 1, maxLength: 20 }),
  device: Type.Object({
    os: Type.String({ minLength: 1, maxLength: 20 }),
    name: Type.String({ maxLength: 200 }),
    width: Type.Integer({ minimum: 1, maximum: 16384 }),
    height: Type.Integer({ minimum: 1, maximum: 16384 }),
    app_version: Type.String({ pattern: '^\\d+\\.\\d+\\.\\d+$' }),
  }),
  capabilities: Type.Object({
    accessibility: Type.Boolean(),
    page_addresses: Type.Boolean(),
    element_info: Type.Boolean(),
  }),
});
const validateHello = new Ajv({ strict: false }).compile<Static<typeof Hello>>(Hello);

/** A JSON pointer into an app's message as the field's name (`/device/name` is `device.name`). */
const fieldAt = (pointer: string, message: string) =>
  pointer ? pointer.slice(1).split('/').map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~')).join('.') : message;

/** Why a hello cannot be taken, naming the field; null when it can. */
function helloProblem(message: unknown): string | null {
  if (!validateHello(message)) {
    const error = validateHello.errors?.[0];
    return `${fieldAt(error?.instancePath ?? '', 'hello')} ${error?.message ?? 'is invalid'}`;
  }
  // PostgreSQL stores neither NUL nor a lone surrogate (the session's device is jsonb): refused
  // here, naming the field, rather than failing in the database with "try again", which never helps.
  const at = unstorableValueAt(message);
  if (at === null) return null;
  if (at.endsWith('#key')) return `${fieldAt(at.slice(0, at.lastIndexOf('/')), 'hello')} has a key with a NUL character (\\u0000) or an unpaired surrogate`;
  return `${fieldAt(at.replace(/#number$/, ''), 'hello')} must not contain a NUL character (\\u0000) or an unpaired surrogate`;
}

const HELLO_TIMEOUT_MS = 10_000;

/**
 * The socket.io gateway for desktop apps, on the web process. Several web processes share
 * rooms through the Redis adapter, so a worker's emitter reaches a computer whichever web
 * process holds its connection.
 */
export function attachDesktopGateway(server: http.Server, container: Container, inboxes: DesktopInbox[] = []) {
  const log = container.logger.child({ scope: 'desktop-gateway' });
  const subscriber = container.redis.duplicate();
  subscriber.on('error', () => undefined);
  const io = new Server(server, {
    serveClient: false,
    // Screenshots travel in results: allow up to 16 MB a message.
    maxHttpBufferSize: 16 * 1024 * 1024,
    adapter: createAdapter(container.redis, subscriber, { key: socketIoKey(container.config.redisPrefix) }),
  });
  const desktop = io.of(DESKTOP_NAMESPACE);
  // Offline marks and the apps' messages still being handled; shutdown waits for them before
  // the database closes.
  const inFlight = new Set<Promise<unknown>>();
  const track = <T>(work: Promise<T>): Promise<T> => {
    const tracked = work.finally(() => inFlight.delete(tracked));
    inFlight.add(tracked);
    return tracked;
  };

  // A message relayed with context: the process holding the computer's connection keeps the
  // context with the socket (the inboxes get it with the reply) and passes the message on.
  desktop.on(RELAY_EVENT, (code: string, event: string, payload: unknown, context: unknown) => {
    for (const id of desktop.adapter.rooms.get(sessionRoom(code)) ?? []) {
      const socket = desktop.sockets.get(id);
      if (!socket) continue;
      (socket.data as DesktopSocketData).context = context;
      socket.emit(event, payload);
    }
  });

  desktop.on('connection', (socket: Socket) => {
    const helloTimer = setTimeout(() => {
      log.info({ socket: socket.id }, 'no hello in time; closing');
      socket.disconnect(true);
    }, HELLO_TIMEOUT_MS);

    socket.once(DesktopEvents.hello, async (message: unknown, ack?: (reply: HelloReply) => void) => {
      clearTimeout(helloTimer);
      const reply = (answer: HelloReply) => (typeof ack === 'function' ? ack(answer) : socket.emit(DesktopEvents.hello, answer));
      const problem = helloProblem(message);
      if (problem !== null) {
        reply({ ok: false, code: 'invalid', message: `The app sent a malformed hello: ${problem}` });
        socket.disconnect(true);
        return;
      }
      try {
        // helloProblem validated it.
        const { session, epoch, agent } = await container.sessions.connect(message as Static<typeof Hello>);
        const data: DesktopSocketData = { code: session.code, orgId: session.org_id, epoch };
        socket.data = data;
        await socket.join(sessionRoom(session.code));
        // One computer per session: an older connection with this code (a zombie after a network
        // drop, or another app) is closed, on whichever web process holds it. Its late "offline"
        // carries an older epoch and is ignored.
        desktop.in(sessionRoom(session.code)).except(socket.id).disconnectSockets(true);
        reply({ ok: true, session_id: session.code, agent: { display_name: agent.displayName, greeting: agent.greeting } });
        log.info({ code: session.code, epoch }, 'computer connected');
        // After joining the room: an act committed after this read reaches the socket through the
        // room, and one committed before it (sent while no connection held the computer) is read here.
        const send = (event: string, payload: unknown) => socket.emit(event, payload);
        for (const inbox of inboxes) {
          if (inbox.welcomed) await track(inbox.welcomed(data, send)).catch((error) => log.error({ err: error, code: data.code }, 'could not catch the computer up'));
        }
      } catch (error) {
        if (error instanceof ConnectRefused) {
          reply({ ok: false, code: error.code, message: error.message });
        } else {
          log.error({ err: error }, 'hello failed');
          reply({ ok: false, code: 'invalid', message: 'The service could not take the connection; try again.' });
        }
        setTimeout(() => socket.disconnect(true), 50);
      }
    });

    for (const inbox of inboxes) {
      for (const event of inbox.events) {
        socket.on(event, async (received: unknown, ack?: (answer: unknown) => void) => {
          const data = socket.data as DesktopSocketData | undefined;
          if (!data?.code) return;
          // A result reports whatever the screen shows (a window title, a page's text), which the
          // app does not choose: characters PostgreSQL cannot store become U+FFFD rather than fail
          // the step (docs/desktop-protocol.md). The screenshot's bytes are not text and stay.
          const unstorable = unstorableValueAt(received);
          const payload = unstorable === null ? received : withStorableStrings(received);
          if (unstorable !== null) log.warn({ event, code: data.code, at: unstorable }, 'NUL or unpaired surrogate in an app message replaced by U+FFFD');
          try {
            const answer = await track(inbox.receive(data, event, payload));
            if (typeof ack === 'function') ack(answer ?? { ok: true });
          } catch (error) {
            // The app hears why, with the service's code (customer_answers_off, already_answered…);
            // anything unexpected (a database error, a bug) only as a generic refusal: its text is
            // the service's, not the app's to read.
            if (error instanceof ApiError) {
              log.warn({ err: error, event, code: data.code }, 'desktop message refused');
              if (typeof ack === 'function') ack({ ok: false, message: error.message, code: error.code, ...error.extra });
            } else {
              log.error({ err: error, event, code: data.code }, 'desktop message failed');
              if (typeof ack === 'function') ack({ ok: false, message: 'The service could not take this message; send it again.' });
            }
          }
        });
      }
    }

    socket.on('disconnect', () => {
      clearTimeout(helloTimer);
      const data = socket.data as DesktopSocketData | undefined;
      if (!data?.code) return;
      void track(container.sessions.markOffline(data.code, data.epoch).catch((error) => log.error({ err: error, code: data.code }, 'could not mark offline')));
    });
  });

  return {
    io,
    /** Closes this process's connections (each computer goes offline) and waits for what is being handled and written. */
    async close(): Promise<void> {
      // `local`: through the Redis adapter, a plain disconnectSockets reaches every web process,
      // and stopping one would drop every computer (and fail every running task) of the others.
      desktop.local.disconnectSockets(true);
      // A socket leaves once its connection has closed (a round trip to the app later), and its
      // leaving starts the offline mark: wait until every socket has left and nothing is in flight.
      while (desktop.sockets.size > 0 || inFlight.size > 0) {
        await Promise.allSettled([...inFlight]);
        if (desktop.sockets.size > 0) await new Promise((resolve) => setTimeout(resolve, 10));
      }
      subscriber.disconnect();
    },
  };
}
