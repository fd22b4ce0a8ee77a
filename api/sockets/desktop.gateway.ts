import { Type, type Static } from '@sinclair/typebox';
import { DESKTOP_NAMESPACE, sessionRoom } from '../../shared/desktop/computer-link';
import { DesktopEvents, type HelloReply } from '../../shared/desktop/protocol';
import { ConnectRefused, type SessionsService } from '../../shared/sessions/sessions.service';
import type { DesktopInbox, DesktopSocketData } from '../../shared/desktop/inbox';
import type { Logger } from '../../shared/logger';
import type { Gateway } from './gateway';

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

/**
 * The `/desktop` namespace (docs/desktop-protocol.md): a desktop app pairs with its session's
 * code; what it sends afterwards goes to the inboxes of the domains that own it (tasks).
 */
export function desktopGateway(deps: { sessions: SessionsService; logger: Logger }, inboxes: readonly DesktopInbox[]): Gateway<DesktopSocketData> {
  const { sessions, logger: log } = deps;
  const receivers = new Map(inboxes.flatMap((inbox) => inbox.events.map((event) => [event, inbox] as const)));
  return {
    namespace: DESKTOP_NAMESPACE,
    name: 'desktop',
    peer: 'The app',
    helloEvent: DesktopEvents.hello,
    helloSchema: Hello,
    logFields: (data) => ({ code: data.code }),

    async authenticate(hello) {
      try {
        // The gateway checked it against `Hello`.
        const { session, epoch, agent } = await sessions.connect(hello as Static<typeof Hello>);
        const reply: Extract<HelloReply, { ok: true }> = { ok: true, session_id: session.code, agent: { display_name: agent.displayName, greeting: agent.greeting } };
        return { ok: true, data: { code: session.code, orgId: session.org_id, kind: session.kind, epoch }, reply };
      } catch (error) {
        if (error instanceof ConnectRefused) return { ok: false, code: error.code, message: error.message };
        throw error;
      }
    },

    // One computer per session: an older connection with this code is closed. Its late
    // "offline" carries an older epoch and is ignored.
    room: (data) => sessionRoom(data.code),

    async welcome({ data, send }) {
      log.info({ code: data.code, epoch: data.epoch }, 'computer connected');
      // After joining the room: an act committed after this read reaches the socket through the
      // room, and one committed before it (sent while no connection held the computer) is read here.
      for (const inbox of inboxes) {
        if (inbox.welcomed) await inbox.welcomed(data, send).catch((error) => log.error({ err: error, code: data.code }, 'could not catch the computer up'));
      }
    },

    events: [...receivers.keys()],
    receive: (data, event, payload) => receivers.get(event)!.receive(data, event, payload),

    gone: (data) => sessions.markOffline(data).catch((error) => log.error({ err: error, code: data.code }, 'could not mark offline')),
  };
}
