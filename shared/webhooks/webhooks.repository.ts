import { isTransaction, type Knex } from '../db/knex';
import { listReader } from '../db/batched-reads';
import { paginate, type Page, type PageRequest } from '../pagination';
import { TEST_EVENT_TYPE } from './webhook-events';

/**
 * SQL for the webhook tables: `webhook_endpoints` (one per org), `webhook_deliveries` (one per
 * event sent to it, an explicit state) and `webhook_attempts` (one per HTTP attempt).
 */

type Db = Knex | Knex.Transaction;

export interface EndpointRow {
  org_id: string;
  url: string | null;
  events: string[];
  secret: string | null;
  secret_created_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

export type DeliveryStatus = 'pending' | 'succeeded' | 'failed';

export interface DeliveryRow extends Record<string, unknown> {
  seq: number;
  id: string;
  event_id: string;
  org_id: string;
  event_type: string;
  status: DeliveryStatus;
  attempts: number;
  schedule_base: number;
  next_attempt_at: Date | null;
  last_error: string | null;
  last_status_code: number | null;
  created_at: Date;
  updated_at: Date;
}

export interface AttemptRow {
  delivery_id: string;
  n: number;
  url: string;
  started_at: Date;
  duration_ms: number;
  status_code: number | null;
  ok: boolean;
  error: string | null;
  error_code: string | null;
  response_body: string | null;
}

/** An org event with what delivering it needs: the org's endpoint (columns null without one). */
export interface DeliveryTarget {
  event_id: string;
  org_id: string;
  type: string;
  data: Record<string, unknown>;
  created_at: Date;
  url: string | null;
  events: string[] | null;
  secret: string | null;
}

/**
 * The org's endpoint row, null when it has none. Outside a transaction (the API's read) one
 * prepared statement, shared with the other such reads of the same turn (shared/db/batched-reads.ts).
 */
export async function findEndpoint(db: Db, orgId: string): Promise<EndpointRow | null> {
  if (!isTransaction(db)) {
    const reader = listReader<EndpointRow>(db, 'webhook-endpoint', [{ name: 'org_id', type: 'text' }], 'select org_id, url, events, secret, secret_created_at, created_at, updated_at from webhook_endpoints where org_id = k.org_id');
    return (await reader.read([orgId]))[0] ?? null;
  }
  return ((await db('webhook_endpoints').where({ org_id: orgId }).first()) as EndpointRow | undefined) ?? null;
}

/** The org's endpoint row, made empty if missing, locked for the rest of `trx`. */
export async function lockEndpoint(trx: Knex.Transaction, orgId: string): Promise<EndpointRow> {
  await trx.raw('insert into webhook_endpoints (org_id) values (?) on conflict (org_id) do nothing', [orgId]);
  return (await trx('webhook_endpoints').where({ org_id: orgId }).forUpdate().first()) as EndpointRow;
}

export async function saveEndpoint(
  trx: Knex.Transaction,
  orgId: string,
  fields: { url: string | null; events: string[]; secret: string | null; secretChanged: boolean },
): Promise<EndpointRow> {
  const [row] = (await trx('webhook_endpoints')
    .where({ org_id: orgId })
    .update({
      url: fields.url,
      events: fields.events,
      secret: fields.secret,
      ...(fields.secretChanged ? { secret_created_at: fields.secret === null ? null : trx.fn.now() } : {}),
      updated_at: trx.fn.now(),
    })
    .returning('*')) as EndpointRow[];
  return row!;
}

export async function loadDeliveryTarget(db: Db, eventId: string): Promise<DeliveryTarget | null> {
  const { rows } = await db.raw(
    `select e.id as event_id, e.org_id, e.type, e.data, e.created_at, w.url, w.events, w.secret
       from org_events e left join webhook_endpoints w on w.org_id = e.org_id
      where e.id = ?`,
    [eventId],
  );
  return rows[0] ?? null;
}

export async function markEventDispatched(db: Db, eventId: string): Promise<void> {
  await db('org_events').where({ id: eventId }).whereNull('dispatched_at').update({ dispatched_at: db.fn.now() });
}

/** What dispatching one event found and did. */
export interface DispatchRow extends DeliveryTarget {
  /** The delivery made now, already leased to the first attempt; null when none was made. */
  created_id: string | null;
  /** The delivery made by an earlier run (a stalled job, the sweep). */
  existing_id: string | null;
}

/**
 * Dispatches a batch of events in one statement: reads each event with its org's endpoint and
 * any delivery it already has; makes a delivery, leased to the first attempt (its
 * `next_attempt_at` is the end of the lease), for each event the endpoint wants and that has
 * none; marks every event dispatched. Returns one row per event found.
 */
export async function dispatchEvents(
  db: Db,
  items: Array<{ eventId: string; newDeliveryId: string }>,
  leaseMs: number,
): Promise<DispatchRow[]> {
  const { rows } = await db.raw(
    `with input as (
       select * from unnest(?::text[], ?::text[]) as i(event_id, new_id)
     ), t as (
       select i.event_id, i.new_id, e.org_id, e.type, e.data, e.created_at,
              w.url, w.events, w.secret, d.id as existing_id,
              (w.url is not null and w.secret is not null
                and (cardinality(w.events) = 0 or e.type = any(w.events) or e.type = ?)) as wanted
         from input i
         join org_events e on e.id = i.event_id
         left join webhook_endpoints w on w.org_id = e.org_id
         left join webhook_deliveries d on d.event_id = e.id
     ), ins as (
       insert into webhook_deliveries (id, event_id, org_id, event_type, status, next_attempt_at)
       select new_id, event_id, org_id, type, 'pending', now() + ? * interval '1 millisecond'
         from t where wanted and existing_id is null
       on conflict (event_id) do nothing
       returning id, event_id
     ), upd as (
       update org_events set dispatched_at = now()
        where id in (select event_id from t) and dispatched_at is null
     )
     select t.event_id, t.org_id, t.type, t.data, t.created_at, t.url, t.events, t.secret, t.existing_id,
            ins.id as created_id
       from t left join ins on ins.event_id = t.event_id`,
    [items.map((item) => item.eventId), items.map((item) => item.newDeliveryId), TEST_EVENT_TYPE, leaseMs],
  );
  return rows;
}

/**
 * Takes the lease of a pending delivery whose attempt is due (up to `earlyMs` early, for clock
 * differences between workers and the database): its `next_attempt_at` moves to the end of the
 * lease, so that no other job attempts it meanwhile, and a worker that dies leaves it due again.
 */
export async function leaseDueDelivery(db: Db, deliveryId: string, leaseMs: number, earlyMs: number): Promise<DeliveryRow | null> {
  const { rows } = await db.raw(
    `update webhook_deliveries
        set next_attempt_at = now() + ? * interval '1 millisecond', updated_at = now()
      where id = ? and status = 'pending' and next_attempt_at <= now() + ? * interval '1 millisecond'
      returning *`,
    [leaseMs, deliveryId, earlyMs],
  );
  return rows[0] ?? null;
}

export async function findDelivery(db: Db, deliveryId: string): Promise<DeliveryRow | null> {
  return ((await db('webhook_deliveries').where({ id: deliveryId }).first()) as DeliveryRow | undefined) ?? null;
}

export async function findOrgDelivery(db: Db, orgId: string, deliveryId: string): Promise<DeliveryRow | null> {
  return ((await db('webhook_deliveries').where({ id: deliveryId, org_id: orgId }).first()) as DeliveryRow | undefined) ?? null;
}

export interface AttemptOutcome {
  url: string;
  startedAt: Date;
  durationMs: number;
  statusCode: number | null;
  ok: boolean;
  error: string | null;
  errorCode: string | null;
  responseBody: string | null;
}

export interface RecordedAttempt {
  attempts: number;
  status: DeliveryStatus;
  next_attempt_at: Date | null;
}

/**
 * Stores attempts and moves their deliveries on, a batch in one statement (each delivery at
 * most once per batch; the row lock orders concurrent attempts, so numbers never clash): a 2xx
 * succeeds; otherwise the next attempt is due after `scheduleMs[k]` (k = the attempt's place in
 * the current round), or, past the last entry, the delivery fails. A delivery that already
 * succeeded stays succeeded; one given up stays failed. Returns one result per item (null when
 * the delivery is gone).
 */
export async function recordAttempts(
  db: Db,
  items: Array<{ deliveryId: string; attempt: AttemptOutcome }>,
  scheduleMs: readonly number[],
): Promise<Array<RecordedAttempt | null>> {
  const column = <T>(pick: (attempt: AttemptOutcome) => T) => items.map((item) => pick(item.attempt));
  const { rows } = await db.raw(
    `with i as (
       select * from unnest(?::text[], ?::boolean[], ?::text[], ?::int[], ?::text[], ?::timestamptz[], ?::int[], ?::text[], ?::text[])
         as i(delivery_id, ok, error, status_code, url, started_at, duration_ms, error_code, response_body)
     ), p as (
       select ?::int as retries, ?::int[] as schedule
     ), d as (
       update webhook_deliveries w set
         attempts = w.attempts + 1,
         status = case
           when w.status = 'succeeded' or i.ok then 'succeeded'
           when w.status = 'failed' or w.attempts + 1 - w.schedule_base > p.retries then 'failed'
           else 'pending' end,
         next_attempt_at = case
           when w.status <> 'pending' or i.ok or w.attempts + 1 - w.schedule_base > p.retries then null
           else now() + p.schedule[w.attempts + 1 - w.schedule_base] * interval '1 millisecond' end,
         last_error = i.error,
         last_status_code = i.status_code,
         updated_at = now()
       from i, p
       where w.id = i.delivery_id
       returning w.id, w.attempts, w.status, w.next_attempt_at
     ), a as (
       insert into webhook_attempts (delivery_id, n, url, started_at, duration_ms, status_code, ok, error, error_code, response_body)
       select d.id, d.attempts, i.url, i.started_at, i.duration_ms, i.status_code, i.ok, i.error, i.error_code, i.response_body
         from d join i on i.delivery_id = d.id
     )
     select id, attempts, status, next_attempt_at from d`,
    [
      items.map((item) => item.deliveryId),
      column((a) => a.ok),
      column((a) => a.error),
      column((a) => a.statusCode),
      column((a) => a.url),
      column((a) => a.startedAt.toISOString()),
      column((a) => a.durationMs),
      column((a) => a.errorCode),
      column((a) => a.responseBody),
      scheduleMs.length,
      `{${scheduleMs.join(',')}}`,
    ] as unknown as Knex.RawBinding[],
  );
  const byId = new Map<string, RecordedAttempt>((rows as Array<RecordedAttempt & { id: string }>).map((row) => [row.id, row]));
  return items.map((item) => byId.get(item.deliveryId) ?? null);
}

/** Gives up a pending delivery without an attempt (the endpoint went away or stopped wanting it). */
export async function failDelivery(db: Db, deliveryId: string, reason: string): Promise<void> {
  await db('webhook_deliveries')
    .where({ id: deliveryId, status: 'pending' })
    .update({ status: 'failed', next_attempt_at: null, last_error: reason, updated_at: db.fn.now() });
}

/**
 * Puts a delivery back to pending, due now, as a new round of the retry schedule. Returns the
 * row as it now is.
 */
export async function restartDelivery(trx: Knex.Transaction, deliveryId: string): Promise<DeliveryRow> {
  const [row] = (await trx('webhook_deliveries')
    .where({ id: deliveryId })
    .update({
      status: 'pending',
      schedule_base: trx.raw('??', ['attempts']),
      next_attempt_at: trx.fn.now(),
      updated_at: trx.fn.now(),
    })
    .returning('*')) as DeliveryRow[];
  return row!;
}

/** A delivery made directly (the test event), due now. */
export async function insertDelivery(
  trx: Knex.Transaction,
  delivery: { id: string; eventId: string; orgId: string; eventType: string },
): Promise<DeliveryRow> {
  const [row] = (await trx('webhook_deliveries')
    .insert({
      id: delivery.id,
      event_id: delivery.eventId,
      org_id: delivery.orgId,
      event_type: delivery.eventType,
      status: 'pending',
      next_attempt_at: trx.fn.now(),
    })
    .returning('*')) as DeliveryRow[];
  return row!;
}

/** An event outside the ten filterable types (the test event), stored already dispatched. */
export async function insertUndispatchableEvent(
  trx: Knex.Transaction,
  event: { id: string; orgId: string; type: string; data: Record<string, unknown> },
): Promise<void> {
  await trx('org_events').insert({
    id: event.id,
    org_id: event.orgId,
    type: event.type,
    data: JSON.stringify(event.data),
    dispatched_at: trx.fn.now(),
  });
}

export interface DeliveryFilter {
  status?: DeliveryStatus;
  eventId?: string;
  eventType?: string;
}

/** A page of the org's deliveries that pass `filter`, newest first. */
export function listDeliveries(db: Db, orgId: string, filter: DeliveryFilter, page: PageRequest): Promise<Page<DeliveryRow>> {
  const query = db('webhook_deliveries').where({ org_id: orgId });
  if (filter.status) query.where({ status: filter.status });
  if (filter.eventId) query.where({ event_id: filter.eventId });
  if (filter.eventType) query.where({ event_type: filter.eventType });
  return paginate<DeliveryRow, DeliveryRow>(query, page, (row) => row);
}

/** Attempts of the given deliveries, oldest first. */
export async function attemptsOf(db: Db, deliveryIds: string[]): Promise<Map<string, AttemptRow[]>> {
  const byDelivery = new Map<string, AttemptRow[]>(deliveryIds.map((id) => [id, []]));
  if (deliveryIds.length === 0) return byDelivery;
  const rows = (await db('webhook_attempts').whereIn('delivery_id', deliveryIds).orderBy(['delivery_id', 'n'])) as AttemptRow[];
  for (const row of rows) byDelivery.get(row.delivery_id)!.push(row);
  return byDelivery;
}

/** Events whose dispatch job should have run long ago: still undispatched after `olderThanMs`. */
export async function undispatchedEvents(db: Db, olderThanMs: number, limit: number): Promise<string[]> {
  const rows = (await db('org_events')
    .whereNull('dispatched_at')
    .where('created_at', '<', db.raw("now() - ? * interval '1 millisecond'", [olderThanMs]))
    .orderBy('created_at')
    .limit(limit)
    .select('id')) as Array<{ id: string }>;
  return rows.map((row) => row.id);
}

/** Pending deliveries whose attempt has been due for more than `overdueMs` (their job was lost). */
export async function overdueDeliveries(db: Db, overdueMs: number, limit: number): Promise<string[]> {
  const rows = (await db('webhook_deliveries')
    .where({ status: 'pending' })
    .where('next_attempt_at', '<', db.raw("now() - ? * interval '1 millisecond'", [overdueMs]))
    .orderBy('next_attempt_at')
    .limit(limit)
    .select('id')) as Array<{ id: string }>;
  return rows.map((row) => row.id);
}
