import { Type } from '@sinclair/typebox';
import { DateTime } from './common.schemas';

/** Schemas of runners (spec: Runner; docs/runners.md). */

export const RunnerSchema = Type.Object({
  object: Type.Literal('runner'),
  runner_id: Type.String({ description: '`rn_<id>`' }),
  name: Type.String({ description: '1 to 80 characters.' }),
  scope: Type.Union([Type.Literal('org'), Type.Literal('cloud')], {
    description: 'org: the org\'s own, serving only that org. cloud: the service\'s, serving every org.',
  }),
  status: Type.Union([Type.Literal('online'), Type.Literal('offline')], {
    description: 'online while connected and heartbeating; offline until it first connects, at once when it disconnects, and within 30 s of silence.',
  }),
  provider: Type.Union([Type.String(), Type.Null()], { description: 'As the runner reports it; null until it first connects.' }),
  labels: Type.Array(Type.String(), { description: 'Where machines can run.' }),
  slots: Type.Integer({ description: 'Machines it runs at once, as it reports; the service never places more than this.' }),
  busy: Type.Integer({ description: 'Machines the service has placed on it that take a slot now (making, running or being destroyed): the service counts them, never the runner.' }),
  images: Type.Array(Type.String(), { description: 'Image ids it has.' }),
  version: Type.Union([Type.String(), Type.Null()], { description: 'As the runner reports it; null until it first connects.' }),
  last_seen_at: Type.Union([DateTime, Type.Null()], { description: 'Its last hello or heartbeat; null until it first connects.' }),
  created_at: DateTime,
}, { title: 'Runner' });

export const CreatedRunnerSchema = Type.Intersect([
  RunnerSchema,
  Type.Object({ token: Type.String({ description: 'The runner\'s token (`dhr_…`); shown only here. Start the runner with it.' }) }),
], { title: 'CreatedRunner' });

export const CreateRunnerBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 80, pattern: '\\S', description: '1 to 80 characters, not only spaces; leading and trailing spaces are trimmed.' }),
  },
  { additionalProperties: false },
);

export const RunnerParams = Type.Object({ runner_id: Type.String({ minLength: 1, maxLength: 100, description: 'A runner id (`rn_…`).' }) });
