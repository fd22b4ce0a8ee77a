/** SQL for `plans`, `billing_accounts`, `billing_ledger` and `billing_provider_events`. */
import type { Knex } from '../db/knex';
import { newId } from '../ids';
import { paginate, type Page, type PageRequest } from '../pagination';

export interface PlanRow {
  id: string;
  name: string;
  description: string;
  free_minutes: number;
  price_per_minute_cents: number | null;
  concurrent_tasks: number;
  self_serve: boolean;
  listed: boolean;
  position: number;
}

export type CardStatus = 'none' | 'ok' | 'needs_attention';

export interface AccountRow {
  org_id: string;
  plan_id: string;
  balance_cents: number;
  provider_customer_id: string | null;
  card_status: CardStatus;
  payment_method_id: string | null;
  card_version: number;
  auto_topup_enabled: boolean;
  auto_topup_amount_cents: number;
  auto_topup_threshold_cents: number;
  auto_topup_monthly_limit_cents: number;
  updated_at: Date;
}

export type LedgerKind = 'credit' | 'top_up' | 'auto_top_up' | 'task_minute' | 'machine_minute';

export interface LedgerRow extends Record<string, unknown> {
  seq: number;
  id: string;
  org_id: string;
  kind: LedgerKind;
  amount_cents: number;
  balance_after_cents: number;
  task_id: string | null;
  try_id: string | null;
  minute: number | null;
  free: boolean;
  payment_id: string | null;
  description: string;
  created_at: Date;
}

export interface NewLedgerEntry {
  kind: LedgerKind;
  amount_cents: number;
  task_id?: string | null;
  try_id?: string | null;
  minute?: number | null;
  free?: boolean;
  payment_id?: string | null;
  description: string;
}

/** bigint columns come back from pg as text; money here stays far below 2^53. */
function account(row: Record<string, unknown> | undefined): AccountRow | undefined {
  if (!row) return undefined;
  return { ...(row as unknown as AccountRow), balance_cents: Number(row.balance_cents) };
}

function ledger(row: Record<string, unknown>): LedgerRow {
  return { ...(row as LedgerRow), seq: Number(row.seq), amount_cents: Number(row.amount_cents), balance_after_cents: Number(row.balance_after_cents) };
}

/** The listed plans and `alsoId` (the org's own plan, listed or not), in the order offered. */
export async function listPlans(db: Knex | Knex.Transaction, alsoId: string): Promise<PlanRow[]> {
  return db<PlanRow>('plans').where({ listed: true }).orWhere({ id: alsoId }).select('*').orderBy('position');
}

export async function findPlan(db: Knex | Knex.Transaction, planId: string): Promise<PlanRow | undefined> {
  return db<PlanRow>('plans').where({ id: planId }).first();
}

/** Makes the org's account on `planId` unless it has one (orgs made before billing get theirs on first use). */
export async function ensureAccount(db: Knex | Knex.Transaction, orgId: string, planId: string): Promise<void> {
  await db('billing_accounts').insert({ org_id: orgId, plan_id: planId }).onConflict('org_id').ignore();
}

export async function findAccount(db: Knex | Knex.Transaction, orgId: string): Promise<AccountRow | undefined> {
  return account(await db('billing_accounts').where({ org_id: orgId }).first());
}

/**
 * The org's account under its row lock, made first when missing. Every change of the balance
 * and every task start of the org takes this lock, so they happen one after another.
 */
export async function lockAccount(trx: Knex.Transaction, orgId: string, defaultPlanId = 'free'): Promise<AccountRow> {
  const locked = async () => account(await trx('billing_accounts').where({ org_id: orgId }).forUpdate().first());
  // One statement when the account exists (every time but the org's first).
  let row = await locked();
  if (!row) {
    await ensureAccount(trx, orgId, defaultPlanId);
    row = await locked();
  }
  if (!row) throw new Error(`no billing account for ${orgId}`);
  return row;
}

export async function findAccountByCustomer(db: Knex | Knex.Transaction, customerId: string): Promise<AccountRow | undefined> {
  return account(await db('billing_accounts').where({ provider_customer_id: customerId }).first());
}

/** Records the org's customer at the payment provider, unless it has one already (then that one stays). */
export async function saveProviderCustomerId(db: Knex | Knex.Transaction, orgId: string, customerId: string): Promise<void> {
  await db('billing_accounts').where({ org_id: orgId }).whereNull('provider_customer_id').update({ provider_customer_id: customerId });
}

export async function updateAccount(db: Knex | Knex.Transaction, orgId: string, changes: Partial<AccountRow>, now: Date): Promise<AccountRow> {
  const [row] = await db('billing_accounts').where({ org_id: orgId }).update({ ...changes, updated_at: now }).returning('*');
  return account(row)!;
}

/**
 * Appends a ledger row and moves the balance by its amount, in the caller's transaction, which
 * must hold the account's lock (`lockAccount`) as read into `locked`. A minute or a payment
 * already in the ledger is not written again: null then, and the balance stays.
 */
export async function appendLedger(trx: Knex.Transaction, locked: AccountRow, entry: NewLedgerEntry, now: Date): Promise<LedgerRow | null> {
  const balanceAfter = locked.balance_cents + entry.amount_cents;
  const conflictTarget = entry.payment_id ? '(payment_id) where payment_id is not null' : entry.task_id ? '(task_id, minute) where task_id is not null' : entry.try_id ? '(try_id, minute) where try_id is not null' : null;
  const insert = trx('billing_ledger').insert({
    id: newId('led'),
    org_id: locked.org_id,
    kind: entry.kind,
    amount_cents: entry.amount_cents,
    balance_after_cents: balanceAfter,
    task_id: entry.task_id ?? null,
    try_id: entry.try_id ?? null,
    minute: entry.minute ?? null,
    free: entry.free ?? false,
    payment_id: entry.payment_id ?? null,
    description: entry.description,
    created_at: now,
  });
  const rows = conflictTarget
    ? await (async () => {
        const { sql, bindings } = insert.toSQL();
        return (await trx.raw(`${sql} on conflict ${conflictTarget} do nothing returning *`, bindings)).rows;
      })()
    : await insert.returning('*');
  if (rows.length === 0) return null;
  if (entry.amount_cents !== 0) {
    await trx('billing_accounts').where({ org_id: locked.org_id }).update({ balance_cents: balanceAfter, updated_at: now });
  }
  locked.balance_cents = balanceAfter;
  return ledger(rows[0]);
}

/** The first moment of `now`'s month (UTC): free minutes and the auto top-up limit count from it. */
export function monthStart(now: Date): Date {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
}

/** The ledger's free minutes of the org since `since`. */
const freeMinutesOf = (db: Knex | Knex.Transaction, orgId: string, since: Date) => db('billing_ledger').where({ org_id: orgId, free: true }).whereNotNull('minute').where('created_at', '>=', since);

/** The ledger's auto top-ups of the org since `since`. */
const autoTopUpsOf = (db: Knex | Knex.Transaction, orgId: string, since: Date) => db('billing_ledger').where({ org_id: orgId, kind: 'auto_top_up' }).where('created_at', '>=', since);

/** The org's tasks that hold a slot of the plan: queued or running, on people's computers. */
const activeTasksOf = (db: Knex | Knex.Transaction, orgId: string) =>
  db('tasks as t').join('sessions as s', 's.code', 't.session_id').where('t.org_id', orgId).whereIn('t.status', ['queued', 'running']).whereNot('s.kind', 'machine');

/** Free minutes the org has used since `since`. */
export async function freeMinutesUsed(db: Knex | Knex.Transaction, orgId: string, since: Date): Promise<number> {
  const row = await freeMinutesOf(db, orgId, since).count<{ count: string }[]>('* as count').first();
  return Number(row?.count ?? 0);
}

/** Cents of auto top-ups credited since `since` (the monthly limit counts them). */
export async function autoTopUpsSince(db: Knex | Knex.Transaction, orgId: string, since: Date): Promise<{ cents: number; count: number }> {
  const row = await autoTopUpsOf(db, orgId, since).select(db.raw('coalesce(sum(amount_cents), 0) as cents'), db.raw('count(*) as count')).first();
  return { cents: Number(row?.cents ?? 0), count: Number(row?.count ?? 0) };
}

/** How many of the org's tasks hold a slot of the plan (queued or running), on people's computers. */
export async function countActiveTasks(trx: Knex | Knex.Transaction, orgId: string): Promise<number> {
  const row = await activeTasksOf(trx, orgId).count<{ count: string }[]>('* as count').first();
  return Number(row?.count ?? 0);
}

/**
 * What a start is admitted on, in one statement (a start holds the org's account lock while it
 * reads them): the org's tasks holding a slot of the plan, its free minutes used and the cents of
 * its auto top-ups since `since`.
 */
export async function startFacts(trx: Knex.Transaction, orgId: string, since: Date): Promise<{ activeTasks: number; freeMinutesUsed: number; autoTopUpCents: number }> {
  const row = (await trx
    .select({
      active: activeTasksOf(trx, orgId).count('*'),
      free_used: freeMinutesOf(trx, orgId, since).count('*'),
      auto_cents: autoTopUpsOf(trx, orgId, since).select(trx.raw('coalesce(sum(amount_cents), 0)')),
    })
    .first()) as { active: string; free_used: string; auto_cents: string };
  return { activeTasks: Number(row.active), freeMinutesUsed: Number(row.free_used), autoTopUpCents: Number(row.auto_cents) };
}

/** The highest minute already charged of a task (0: none). */
export async function lastChargedMinute(db: Knex | Knex.Transaction, taskId: string): Promise<number> {
  const row = await db('billing_ledger').where({ task_id: taskId }).max<{ max: number | null }[]>('minute as max').first();
  return Number(row?.max ?? 0);
}

/**
 * Running tasks on people's computers with a minute begun and not charged yet at `now` (the
 * meter's work), oldest first, at most `limit`: their running time rounded up to minutes, as
 * `billed_minutes` is, is more than the last minute charged.
 */
export async function runningMeteredTaskIds(db: Knex, now: Date, limit: number): Promise<Array<{ id: string; org_id: string }>> {
  const { rows } = await db.raw(
    `select t.id, t.org_id
       from tasks t
       join sessions s on s.code = t.session_id
      where t.status = 'running' and s.kind <> 'machine'
        and ceil((t.active_ms + coalesce(greatest(0, extract(epoch from (?::timestamptz - t.running_since)) * 1000), 0)) / 60000.0)
            > coalesce((select max(l.minute) from billing_ledger l where l.task_id = t.id), 0)
      order by t.seq
      limit ?`,
    [now, limit],
  );
  return rows;
}

/**
 * Eval tries on cloud runners with machine minutes not charged yet: running ones (their minutes
 * so far) and those ended in the last day (all their minutes), with how many minutes are due,
 * counted from the try's start by the database's clock as the tries' times are.
 */
export async function machineMinutesDue(db: Knex, limit: number): Promise<Array<{ id: string; org_id: string; due: number }>> {
  const { rows } = await db.raw(
    `select t.id, t.org_id, d.due
       from tries t
       join runners r on r.id = t.runner_id and r.scope = 'cloud'
       cross join lateral (select ceil(extract(epoch from (coalesce(t.ended_at, now()) - t.started_at)) / 60)::int as due) d
      where t.started_at is not null
        and (t.status = 'running' or t.ended_at > now() - interval '1 day')
        and d.due > coalesce((select max(l.minute) from billing_ledger l where l.try_id = t.id), 0)
      order by t.seq
      limit ?`,
    [limit],
  );
  return rows.map((row: { id: string; org_id: string; due: number }) => ({ id: row.id, org_id: row.org_id, due: Number(row.due) }));
}

/** The highest machine minute already charged of a try (0: none). */
export async function lastChargedMachineMinute(db: Knex | Knex.Transaction, tryId: string): Promise<number> {
  const row = await db('billing_ledger').where({ try_id: tryId }).max<{ max: number | null }[]>('minute as max').first();
  return Number(row?.max ?? 0);
}

/** Whether the task runs on a person's computer (task minutes), not on an eval machine. */
export async function isMeteredTask(db: Knex | Knex.Transaction, sessionCode: string): Promise<boolean> {
  const row = await db('sessions').where({ code: sessionCode }).first('kind');
  return row !== undefined && row.kind !== 'machine';
}

/** The ledger row that credited a payment (at most one: the ledger's unique payment id). */
export async function findLedgerEntryOfPayment(db: Knex | Knex.Transaction, paymentId: string): Promise<LedgerRow | undefined> {
  const row = await db('billing_ledger').where({ payment_id: paymentId }).first();
  return row ? ledger(row) : undefined;
}

/** A page of the org's ledger, newest first; `kinds` narrows it. */
export async function listLedger(db: Knex, orgId: string, kinds: readonly LedgerKind[] | null, page: PageRequest): Promise<Page<LedgerRow>> {
  const query = db('billing_ledger').where({ org_id: orgId }).select('*');
  if (kinds) query.whereIn('kind', kinds);
  return paginate(query, page, ledger);
}

export interface MinutesOfMonth {
  byDay: Array<{ date: string; minutes: number }>;
  byAgent: Array<{ agent_id: string; minutes: number }>;
  taskMinutes: number;
  machineMinutes: number;
  freeMinutes: number;
  spentCents: number;
}

/** The org's minutes since `since`: by UTC day, by agent, free ones, and cents spent on them. */
export async function minutesSince(db: Knex, orgId: string, since: Date): Promise<MinutesOfMonth> {
  const base = () => db('billing_ledger as l').where('l.org_id', orgId).whereNotNull('l.minute').where('l.created_at', '>=', since);
  const [byDay, byAgent, totals] = await Promise.all([
    base().select(db.raw(`to_char(l.created_at at time zone 'UTC', 'YYYY-MM-DD') as date`), db.raw('count(*) as minutes')).groupBy('date').orderBy('date'),
    base().join('tasks as t', 't.id', 'l.task_id').select('t.agent_id', db.raw('count(*) as minutes')).groupBy('t.agent_id').orderBy('t.agent_id'),
    base()
      .select(
        db.raw("count(*) filter (where l.kind = 'task_minute') as task_minutes"),
        db.raw("count(*) filter (where l.kind = 'machine_minute') as machine_minutes"),
        db.raw('count(*) filter (where l.free) as free_minutes'),
        db.raw('coalesce(-sum(l.amount_cents), 0) as spent'),
      )
      .first(),
  ]);
  return {
    byDay: byDay.map((row: { date: string; minutes: string }) => ({ date: row.date, minutes: Number(row.minutes) })),
    byAgent: byAgent.map((row: { agent_id: string; minutes: string }) => ({ agent_id: row.agent_id, minutes: Number(row.minutes) })),
    taskMinutes: Number(totals?.task_minutes ?? 0),
    machineMinutes: Number(totals?.machine_minutes ?? 0),
    freeMinutes: Number(totals?.free_minutes ?? 0),
    spentCents: Number(totals?.spent ?? 0),
  };
}

/** Records a provider event as handled; false when it was already (a redelivery). */
export async function recordProviderEvent(trx: Knex.Transaction, id: string, type: string): Promise<boolean> {
  const rows = await trx('billing_provider_events').insert({ id, type }).onConflict('id').ignore().returning('id');
  return rows.length > 0;
}

/** Forgets that a provider event was handled (its handling failed: the provider sends it again, and it is handled then). */
export async function forgetProviderEvent(db: Knex | Knex.Transaction, id: string): Promise<void> {
  await db('billing_provider_events').where({ id }).delete();
}
