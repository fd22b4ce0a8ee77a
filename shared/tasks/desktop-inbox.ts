import { Type, type Static } from '@sinclair/typebox';
import { Ajv } from 'ajv';
import type { DesktopInbox } from '../desktop/inbox';
import { DesktopEvents, type ResultMessage } from '../desktop/protocol';
import { invalidRequest } from '../errors';
import type { Logger } from '../logger';
import type { TaskLoop } from './loop';

const Result = Type.Object({
  task_id: Type.String({ minLength: 1, maxLength: 100 }),
  act_id: Type.String({ minLength: 1, maxLength: 100 }),
  result: Type.Object({
    ok: Type.Boolean(),
    error: Type.Optional(Type.String({ maxLength: 2000 })),
    observation: Type.Object({ width: Type.Integer({ minimum: 1 }), height: Type.Integer({ minimum: 1 }), windows: Type.Array(Type.Unknown()) }, { additionalProperties: true }),
    screenshot: Type.Unknown(),
  }),
});

const Person = Type.Union([
  Type.Object({ kind: Type.Literal('answer'), task_id: Type.String(), question_id: Type.String(), answer: Type.String({ maxLength: 10_000 }) }),
  Type.Object({ kind: Type.Literal('decision'), task_id: Type.String(), approval_id: Type.String(), decision: Type.Union([Type.Literal('approve'), Type.Literal('deny')]) }),
  Type.Object({ kind: Type.Literal('stop'), task_id: Type.String() }),
  Type.Object({ kind: Type.Literal('typed_secret'), task_id: Type.String(), request_id: Type.String() }),
]);

const ajv = new Ajv({ strict: false });
const validateResult = ajv.compile<Static<typeof Result>>(Result);
const validatePerson = ajv.compile<Static<typeof Person>>(Person);

const isPng = (bytes: unknown): bytes is Uint8Array =>
  bytes instanceof Uint8Array && bytes.length > 8 && bytes[0] === 0x89 && bytes[1] === 0x50 && bytes[2] === 0x4e && bytes[3] === 0x47;

/**
 * What the person's app sends while a task runs: results of actions (with the screen), and the
 * person's answers, decisions and Stop button. Each goes to the task loop; nothing here trusts
 * the app beyond its session: a message about another session's task is ignored.
 */
export function taskDesktopInbox(loop: TaskLoop, logger: Logger): DesktopInbox {
  return {
    events: [DesktopEvents.result, DesktopEvents.person],
    async welcomed(session, send) {
      // An act emitted while no web process held the computer (or whose result was lost with
      // the connection) is sent again; the app runs an act_id once and repeats its result.
      const { show, act } = await loop.catchUp(session.code);
      for (const message of show) send(DesktopEvents.show, message);
      if (act) {
        send(DesktopEvents.act, act);
        logger.info({ code: session.code, task_id: act.task_id, act_id: act.act_id }, 'action sent again after a reconnect');
      }
    },
    async receive(session, event, payload) {
      if (event === DesktopEvents.result) {
        if (!validateResult(payload)) throw invalidRequest(`malformed result: ${ajv.errorsText(validateResult.errors)}`);
        if (!isPng(payload.result.screenshot)) throw invalidRequest('malformed result: screenshot must be PNG bytes');
        return loop.receiveResult(session.code, payload as unknown as ResultMessage);
      }
      if (!validatePerson(payload)) throw invalidRequest(`malformed person message: ${ajv.errorsText(validatePerson.errors)}`);
      const owned = await loop.ownsTask(session.code, payload.task_id);
      if (!owned) return { ok: false, message: 'That task does not run on this computer' };
      switch (payload.kind) {
        case 'answer':
          await loop.respond(payload.task_id, null, { question_id: payload.question_id, answer: payload.answer }, 'customer');
          return { ok: true };
        case 'decision':
          await loop.respond(payload.task_id, null, { approval_id: payload.approval_id, decision: payload.decision }, 'customer');
          return { ok: true };
        case 'stop':
          await loop.stop(payload.task_id, null, 'customer');
          return { ok: true };
        case 'typed_secret':
          await loop.personTypedSecret(payload.task_id, payload.request_id);
          logger.info({ task_id: payload.task_id }, 'the person typed a secret');
          return { ok: true };
      }
    },
  };
}
