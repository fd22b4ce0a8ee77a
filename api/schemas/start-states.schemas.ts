import { Type } from '@sinclair/typebox';
import { DateTime, Metadata } from './common.schemas';

/** Schemas of start states (spec: Start state; docs/evals.md). */

const Nullable = <T extends ReturnType<typeof Type.String>>(schema: T) => Type.Union([schema, Type.Null()]);

export const StartStateSchema = Type.Object({
  object: Type.Literal('start_state'),
  start_state_id: Type.String({ description: '`ss_<id>`; an image\'s id is its name, such as `macos-15`.' }),
  kind: Type.Union([Type.Literal('image'), Type.Literal('state')], { description: 'image: a runner\'s base install, read-only, visible to every org. state: the org\'s own.' }),
  name: Type.String(),
  description: Type.String(),
  from: Type.Union([Type.String(), Type.Null()], { description: 'The image or start state it was made from (null for an image).' }),
  method: Type.Union([Type.Literal('hand'), Type.Literal('script'), Type.Literal('instruction'), Type.Null()], { description: 'How it was set up (null for an image).' }),
  script: Nullable(Type.String({ description: 'With method script.' })),
  instruction: Nullable(Type.String({ description: 'With method instruction.' })),
  agent_id: Nullable(Type.String({ description: 'With method instruction: the agent that carries it out.' })),
  task_id: Nullable(Type.String({ description: 'With method instruction: the task that set it up (follow it like any task).' })),
  status: Type.Union([Type.Literal('building'), Type.Literal('open'), Type.Literal('saving'), Type.Literal('ready'), Type.Literal('failed')], {
    description: 'building: its script or instruction runs. open: its machine runs for someone to set up (see view). saving, then ready. failed: see error.',
  }),
  version: Type.Integer({ description: '0 until first saved; up by one with each save.' }),
  os: Type.String({ description: '`mac` or `windows` (an image named `macos…` or `windows…`).' }),
  labels: Type.Array(Type.String(), { description: 'Where it can run: its runner\'s labels.' }),
  runner_id: Nullable(Type.String({ description: 'The runner that keeps its saved disks (null for an image, and until first saved).' })),
  error: Nullable(Type.String({ description: 'Why it failed (a script\'s exit status and output, a task\'s error), or why its last open machine closed.' })),
  view: Type.Union(
    [
      Type.Object({
        screen_url: Type.String({ description: 'A page showing the machine\'s screen live; click and type on it. Its token is the only key.' }),
        input_url: Type.String({ description: 'POST `{type: "click", x, y}`, `{type: "type", text}` or `{type: "key", keys}`.' }),
        expires_at: DateTime,
      }),
      Type.Null(),
    ],
    { description: 'While open: the live view, until expires_at (then the machine closes unsaved).' },
  ),
  metadata: Metadata,
  created_at: DateTime,
  updated_at: DateTime,
}, { title: 'StartState' });

const OpenMinutes = Type.Integer({ minimum: 1, maximum: 1440, description: 'How long the open machine stays open unless saved (default 60 minutes).' });

export const CreateStartStateBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200, pattern: '\\S' }),
    from: Type.String({ minLength: 1, maxLength: 200, description: 'An image id (GET /v1/start_states lists them) or a ready `ss_` state: its latest version.' }),
    method: Type.Union([Type.Literal('hand'), Type.Literal('script'), Type.Literal('instruction')], {
      description: 'hand: open with a live view, save when done. script: run `script` in the machine\'s shell, then saved. instruction: an agent task carries out `instruction`, then saved.',
    }),
    script: Type.Optional(Type.String({ minLength: 1, maxLength: 100_000, description: 'Bash, with method script (docs/reference-runner.md lists the commands).' })),
    instruction: Type.Optional(Type.String({ minLength: 1, maxLength: 20_000, description: 'With method instruction: the task\'s prompt.' })),
    agent_id: Type.Optional(Type.String({ pattern: '^[a-z0-9-]{2,40}$', description: 'With method instruction; the default agent when left out.' })),
    description: Type.Optional(Type.String({ maxLength: 2000 })),
    metadata: Type.Optional(Metadata),
    open_minutes: Type.Optional(OpenMinutes),
  },
  {
    additionalProperties: false,
    examples: [{ name: 'Mac with the printer driver', from: 'macos-15', method: 'script', script: 'install-driver hp-laserjet', description: 'macOS 15 with the HP driver installed.' }],
  },
);

export const UpdateStartStateBody = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    description: Type.Optional(Type.String({ maxLength: 2000 })),
    metadata: Type.Optional(Metadata),
  },
  { additionalProperties: false },
);

export const StartStateParams = Type.Object({ start_state_id: Type.String({ minLength: 1, maxLength: 200, description: 'An `ss_` id or an image id.' }) });

export const ViewParams = Type.Object({ token: Type.String({ minLength: 1, maxLength: 100, description: 'The live view\'s capability token.' }) });

export const ConsoleInputBody = Type.Union([
  Type.Object({ type: Type.Literal('click'), x: Type.Integer({ minimum: 0, maximum: 7680 }), y: Type.Integer({ minimum: 0, maximum: 4320 }) }, { additionalProperties: false }),
  Type.Object({ type: Type.Literal('type'), text: Type.String({ minLength: 1, maxLength: 10_000 }) }, { additionalProperties: false }),
  Type.Object({ type: Type.Literal('key'), keys: Type.String({ minLength: 1, maxLength: 100, description: 'A key or combination, e.g. `enter`, `cmd+s`.' }) }, { additionalProperties: false }),
]);

export const ConsoleInputAnswer = Type.Object({ ok: Type.Literal(true), frame: Type.Integer({ description: 'The screen\'s frame after the input.' }) });
