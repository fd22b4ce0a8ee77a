import { runPrepared, type Knex, type PreparedStatement } from '../db/knex';
import { rowFromJson } from '../db/timestamps';
import { LIVE_MACHINE_STATUSES, machineEnded, type CommandRow, type CommandType, type MachineRow, type MachineStatus } from './machine-rows';

type Db = Knex | Knex.Transaction;

const json = (value: unknown) => JSON.stringify(value) as never;

/**
 * Whether runner `r` could make machine `m`: online (seen within the milliseconds in parameter
 * `offlineAfterMs`), the machine's org's or a cloud runner, with its image, and the runner it is
 * pinned to if it is.
 */
const couldMake = (offlineAfterMs: string) => `r.revoked_at is null and r.connection_id is not null and r.last_seen_at > now() - (${offlineAfterMs} * interval '1 millisecond')
        and (r.org_id = m.org_id or r.scope = 'cloud') and r.images ? m.image
        and (m.pinned_runner_id is null or m.pinned_runner_id = r.id)`;

/** A new machine's row: waiting for a slot. */
export type NewMachineRow = Pick<MachineRow, 'id' | 'org_id' | 'owner_kind' | 'owner_id' | 'disk' | 'image' | 'os' | 'pinned_runner_id' | 'session_code' | 'tell_owner_when_running'>;

export async function insertMachine(db: Db, row: NewMachineRow): Promise<MachineRow> {
  const [inserted] = await runPrepared<{ machine: MachineJson }>(db, INSERT_MACHINE, newMachineValues(row));
  return machineFromJson(inserted!.machine);
}

/** The insert of a new machine (`m`), waiting for a slot, its values $1–$10 (`newMachineValues`). */
const INSERT_MACHINE_INTO = `insert into machines as m (id, org_id, owner_kind, owner_id, disk, image, os, pinned_runner_id, session_code, tell_owner_when_running, status)
     values ($1, $2, $3, $4, $5::jsonb, $6, $7, $8, $9, $10, 'waiting')`;

function newMachineValues(row: NewMachineRow): unknown[] {
  return [row.id, row.org_id, row.owner_kind, row.owner_id, JSON.stringify(row.disk), row.image, row.os, row.pinned_runner_id, row.session_code, row.tell_owner_when_running];
}

/** A machine recorded, waiting for a slot (prepared, see `CommandJson`). */
const INSERT_MACHINE: PreparedStatement = {
  name: 'machines:insert',
  text: `${INSERT_MACHINE_INTO}
     returning row_to_json(m) as machine`,
};

/**
 * `insertMachine` with the runners that could make the new machine locked by the same statement
 * (`lockCandidateRunners`), for a caller that places it next in its transaction
 * (`placeOnFreeRunner`, a statement of its own, whose count then sees every placement on them).
 * Nobody else can lock a machine before its transaction commits, so taking the runners with it
 * keeps the order a slot's hand-over takes them in (runners, then the machine).
 */
export async function insertMachineLockingRunners(db: Knex.Transaction, row: NewMachineRow, offlineAfterMs: number): Promise<{ machine: MachineRow; runnerIds: string[] }> {
  const [inserted] = await runPrepared<{ machine: MachineJson; runner_ids: string[] }>(db, INSERT_MACHINE_LOCKING_RUNNERS, [...newMachineValues(row), offlineAfterMs]);
  return { machine: machineFromJson(inserted!.machine), runnerIds: inserted!.runner_ids };
}

const INSERT_MACHINE_LOCKING_RUNNERS: PreparedStatement = {
  name: 'machines:insert-locking-runners',
  text: `with m as (${INSERT_MACHINE_INTO} returning m.*),
     locked as (select r.id from runners r cross join m where ${couldMake('$11')} order by r.id for update of r)
     select row_to_json(m) as machine, array(select id from locked) as runner_ids from m`,
};

export async function findMachine(db: Db, id: string, lock = false): Promise<MachineRow | undefined> {
  const query = db<MachineRow>('machines').where({ id }).first();
  return lock ? query.forUpdate() : query;
}

/** A machine row as PostgreSQL's `row_to_json` writes it (read beside another row). */
export type MachineJson = Omit<MachineRow, 'created_at' | 'updated_at' | 'ended_at'> & { created_at: string; updated_at: string; ended_at: string | null };

/** A machine row as PostgreSQL's `row_to_json` writes it, with its timestamps as `Date`s again. */
export function machineFromJson(json: MachineJson): MachineRow {
  return rowFromJson<MachineRow>(json, ['created_at', 'updated_at', 'ended_at']);
}

/**
 * A command row as PostgreSQL's `row_to_json` writes it. The statements every machine goes
 * through (its placement, its release, a runner's answers) are prepared (`runPrepared`): planning
 * them cost PostgreSQL more than running them (docs/benchmarks.md, machines). Their rows come back
 * as JSON, so a migration that adds a column under a running process changes nothing of their
 * results (a prepared statement whose result columns change fails).
 */
type CommandJson = Omit<CommandRow, 'sent_at' | 'deadline_at' | 'finished_at'> & { sent_at: string; deadline_at: string; finished_at: string | null };

/** A command row from `row_to_json`, with its timestamps as `Date`s again. */
function commandFromJson(json: CommandJson): CommandRow {
  return rowFromJson<CommandRow>(json, ['sent_at', 'deadline_at', 'finished_at']);
}

/** The machine's owner is to hear when it runs (`MachinesService.tellOwnerWhenRunning`); its row stays locked by the caller's transaction. */
export async function setTellOwnerWhenRunning(db: Knex.Transaction, id: string): Promise<void> {
  await db('machines').where({ id, tell_owner_when_running: false }).update({ tell_owner_when_running: true, updated_at: db.fn.now() });
}

export async function updateMachine(db: Db, id: string, changes: Partial<MachineRow>): Promise<MachineRow> {
  const [row] = await db<MachineRow>('machines').where({ id }).update({ ...changes, updated_at: db.fn.now() as never }).returning('*');
  return row!;
}

/**
 * Locks the runners that could take the machine now, while it waits (online, not revoked, the
 * org's own or cloud, with its image, the one it is pinned to if any), in id order so that two
 * placements never wait on each other in a circle. Their live machines are counted by the next
 * statement (`lockWaitingWithCandidates`), which sees every placement committed before the locks
 * were granted.
 */
export async function lockCandidateRunners(db: Knex.Transaction, machineId: string, offlineAfterMs: number): Promise<string[]> {
  const rows = await runPrepared<{ id: string }>(db, LOCK_CANDIDATE_RUNNERS, [machineId, offlineAfterMs]);
  return rows.map((row) => row.id);
}

const LOCK_CANDIDATE_RUNNERS: PreparedStatement = {
  name: 'machines:lock-candidate-runners',
  text: `select r.id from runners r join machines m on m.id = $1 and m.status = 'waiting'
      where ${couldMake('$2')}
      order by r.id for update of r`,
};

/**
 * The waiting machine goes to the best of the runners `runnerIds` that has a free slot (the org's
 * own first, then the one with most free slots): it is starting there and its make command is
 * recorded, in one statement. The caller holds those runners locked (`lockCandidateRunners`), so
 * that this statement's count of their live machines sees every placement on them. Returns the
 * make; undefined when the machine no longer waits or none of the runners has a free slot.
 */
export async function placeOnFreeRunner(db: Knex.Transaction, machineId: string, runnerIds: string[], make: Pick<CommandRow, 'id'> & { deadlineMs: number }): Promise<CommandRow | undefined> {
  const [inserted] = await runPrepared<{ command: CommandJson }>(db, PLACE_ON_FREE_RUNNER, [LIVE_MACHINE_STATUSES, runnerIds, machineId, make.id, make.deadlineMs]);
  return inserted && commandFromJson(inserted.command);
}

const PLACE_ON_FREE_RUNNER: PreparedStatement = {
  name: 'machines:place-on-free-runner',
  text: `with m as (select * from machines where id = $3 and status = 'waiting' for update),
       free as (
         select r.id, r.scope, r.slots - (select count(*) from machines l where l.runner_id = r.id and l.status = any($1::text[])) as slots
           from runners r where r.id = any($2::text[])),
       best as (select id from free where slots > 0 order by scope = 'org' desc, slots desc, id limit 1),
       starting as (
         update machines set runner_id = best.id, status = 'starting', placements = m.placements + 1, updated_at = now()
           from m, best where machines.id = m.id)
     insert into runner_commands as c (id, runner_id, machine_id, type, args, status, deadline_at)
     select $4, best.id, m.id, 'machine.make', jsonb_build_object('disk', m.disk, 'os', m.os, 'session', jsonb_build_object('code', m.session_code)),
            'sent', now() + ($5 * interval '1 millisecond')
       from m, best
     returning row_to_json(c) as command`,
};

/**
 * Locks the runner when it is online (not revoked, connected, heard from within
 * `offlineAfterMs`); false when it is not. The lock a placement on it takes (`lockCandidateRunners`).
 */
export async function lockRunnerIfOnline(db: Knex.Transaction, runnerId: string, offlineAfterMs: number): Promise<boolean> {
  const row = await db('runners')
    .where({ id: runnerId })
    .whereNull('revoked_at')
    .whereNotNull('connection_id')
    .andWhereRaw("last_seen_at > now() - (? * interval '1 millisecond')", [offlineAfterMs])
    .forUpdate()
    .first('id');
  return row !== undefined;
}

/**
 * When the runner has a free slot (its live machines fewer than its slots: lock the runner
 * first, `lockRunnerIfOnline`, so that the count sees every placement on it), the oldest waiting
 * machine that it could take (of the runner's org, or any org's on a cloud runner; an image it
 * has; pinned to it or to none), locked; one that another placement holds is skipped, not waited for.
 */
export async function lockOldestWaitingFor(db: Knex.Transaction, runnerId: string): Promise<MachineRow | undefined> {
  const { rows } = await db.raw<{ rows: MachineRow[] }>(
    `select m.* from machines m join runners r on r.id = ?
      where (select count(*) from machines l where l.runner_id = r.id and l.status = any(?)) < r.slots
        and m.status = 'waiting' and (m.org_id = r.org_id or r.scope = 'cloud') and r.images \\? m.image
        and (m.pinned_runner_id is null or m.pinned_runner_id = r.id)
      order by m.seq limit 1
        for update of m skip locked`,
    [runnerId, LIVE_MACHINE_STATUSES as string[]],
  );
  return rows[0];
}

/** The oldest waiting machines, for placement. */
export async function waitingMachineIds(db: Db, limit: number): Promise<string[]> {
  const rows = await db('machines').where({ status: 'waiting' }).orderBy('seq').limit(limit).select('id');
  return rows.map((row: { id: string }) => row.id);
}

/** The machines a runner holds a slot for. */
export async function liveMachinesOn(db: Db, runnerId: string, lock = false): Promise<MachineRow[]> {
  const query = db<MachineRow>('machines').where({ runner_id: runnerId }).whereIn('status', LIVE_MACHINE_STATUSES as MachineStatus[]).orderBy('seq');
  return lock ? query.forUpdate() : query;
}

/**
 * A machine is let go, in one statement: one on its runner (starting or running) is stopping
 * there, its destroy command recorded; one waiting for a slot is destroyed at once (no command).
 * Undefined when it was neither (stopping or ended already). One statement, so that a placement
 * committed while it waited for the machine's row (waiting, then starting) is stopped, not missed.
 */
export async function letGoMachine(db: Knex.Transaction, machineId: string, destroy: Pick<CommandRow, 'id' | 'args'> & { deadlineMs: number }): Promise<{ machine: MachineRow; command: CommandRow | null } | undefined> {
  const [row] = await runPrepared<{ command: CommandJson | null; machine: MachineJson }>(db, LET_GO_MACHINE, [machineId, destroy.id, JSON.stringify(destroy.args), destroy.deadlineMs]);
  return row && { machine: machineFromJson(row.machine), command: row.command && commandFromJson(row.command) };
}

const LET_GO_MACHINE: PreparedStatement = {
  name: 'machines:let-go',
  text: `with m as (
       update machines
          set status = case when status = 'waiting' then 'destroyed' else 'stopping' end,
              ended_at = case when status = 'waiting' then now() else ended_at end,
              updated_at = now()
        where id = $1 and status in ('waiting', 'starting', 'running')
        returning *),
     c as (insert into runner_commands (id, runner_id, machine_id, type, args, status, deadline_at)
           select $2, m.runner_id, m.id, 'machine.destroy', $3::jsonb, 'sent', now() + ($4 * interval '1 millisecond') from m where m.status = 'stopping'
           returning *)
     select row_to_json(m) as machine, (select row_to_json(c) from c) as command from m`,
};

export async function insertCommand(db: Db, row: NewCommand): Promise<CommandRow> {
  const [inserted] = await db<CommandRow>('runner_commands').insert(commandRow(db, row)).returning('*');
  return inserted!;
}

type NewCommand = Pick<CommandRow, 'id' | 'runner_id' | 'machine_id' | 'type' | 'args'> & { deadlineMs: number };

/** A command's row as sent: its deadline `deadlineMs` from now, by PostgreSQL's clock. */
function commandRow(db: Db, row: NewCommand) {
  const { deadlineMs, ...fields } = row;
  return { ...fields, args: json(fields.args), status: 'sent' as const, deadline_at: db.raw("now() + (? * interval '1 millisecond')", [deadlineMs]) as never };
}

/** A command just settled, its machine (moved, or as it was), and whether any machine waits for a slot. */
export interface Settled {
  command: CommandRow;
  machine: MachineRow | undefined;
  /** The machine as the command moved it; undefined when it did not move it. */
  moved: MachineRow | undefined;
  /** A machine of any org waited for a slot when the command settled (the slot it frees may be handed over). */
  machinesWait: boolean;
}

/** What an answer to a command of `type` does to its machine (a move from one status). */
export type CommandMove = { type: CommandType; from: MachineStatus; to: MachineStatus; error?: string };

/**
 * Settles a command still waiting for its answer (and, given `runnerId`, sent to that runner)
 * and applies it to its machine, in one statement: of `moves`, the one for the command's type
 * moves the machine when it is in that move's `from` status. Returns the command, its machine
 * (as moved, or as it was) and whether machines wait for a slot; undefined when there is no such
 * command. With `unlessSlotWanted`, a command whose move would end its machine (freeing a slot)
 * while machines wait for one is left unsettled too: the caller settles it in a transaction that
 * hands the slot over.
 */
export async function settleCommand(
  db: Db,
  id: string,
  outcome: Pick<CommandRow, 'status' | 'result' | 'error_code' | 'error'>,
  runnerId: string | undefined,
  moves: readonly CommandMove[],
  options: { unlessSlotWanted: boolean },
): Promise<Settled | undefined> {
  const moveRows = moves.map((move) => ({ ...move, error: move.error ?? null, ended: machineEnded(move.to) }));
  const [settled] = await runPrepared<{ command: CommandJson; moved: MachineJson | null; machine: MachineJson | null; machines_wait: boolean }>(db, SETTLE_COMMAND, [
    outcome.status,
    outcome.result === null ? null : JSON.stringify(outcome.result),
    outcome.error_code,
    outcome.error,
    id,
    runnerId ?? null,
    JSON.stringify(moveRows),
    options.unlessSlotWanted,
  ]);
  if (!settled) return undefined;
  const moved = settled.moved ? machineFromJson(settled.moved) : undefined;
  return { command: commandFromJson(settled.command), moved, machine: moved ?? (settled.machine ? machineFromJson(settled.machine) : undefined), machinesWait: settled.machines_wait };
}

/** Settles a command and moves its machine (prepared, see `CommandJson`). */
const SETTLE_COMMAND: PreparedStatement = {
  name: 'machines:settle-command',
  text: `with x as (select * from jsonb_to_recordset($7::jsonb) as x(type text, "from" text, "to" text, error text, ended boolean)),
     c as (
       update runner_commands set status = $1, result = $2, error_code = $3, error = $4, finished_at = now()
        where id = $5 and status = 'sent' and ($6::text is null or runner_id = $6)
          and not ($8::boolean and exists (select 1 from machines w where w.status = 'waiting')
                   and exists (select 1 from x join machines f on f.id = runner_commands.machine_id and f.status = x."from"
                                where x.type = runner_commands.type and x.ended))
        returning *),
     m as (
       update machines set status = x."to", error = coalesce(x.error, machines.error), updated_at = now(),
              ended_at = case when x.ended then now() else machines.ended_at end
         from c join x on x.type = c.type
        where machines.id = c.machine_id and machines.status = x."from"
        returning machines.*)
     select row_to_json(c) as command, row_to_json(m) as moved, row_to_json(was) as machine,
            exists (select 1 from machines w where w.status = 'waiting') as machines_wait
       from c left join m on true left join machines was on was.id = c.machine_id`,
};

/** The commands a runner has not answered, oldest first (sent again when it reconnects). */
export async function unansweredCommands(db: Db, runnerId: string): Promise<CommandRow[]> {
  return db<CommandRow>('runner_commands').where({ runner_id: runnerId, status: 'sent' }).orderBy('seq');
}

/** Unanswered commands past their deadline (their timeout jobs may have been lost). */
export async function overdueCommandIds(db: Db, limit: number): Promise<string[]> {
  const rows = await db('runner_commands').where({ status: 'sent' }).andWhere('deadline_at', '<', db.fn.now()).orderBy('deadline_at').limit(limit).select('id');
  return rows.map((row: { id: string }) => row.id);
}

/** The latest command of a type about a machine. */
export async function latestCommand(db: Db, machineId: string, type: CommandType): Promise<CommandRow | undefined> {
  return db<CommandRow>('runner_commands').where({ machine_id: machineId, type }).orderBy('seq', 'desc').first();
}

/**
 * Runners that are not online (revoked, disconnected, or silent past `offlineAfterMs`) but still
 * hold machines or owe answers: the sweep treats them as lost.
 */
export async function lostRunnerIds(db: Db, offlineAfterMs: number): Promise<string[]> {
  const { rows } = await db.raw<{ rows: Array<{ id: string }> }>(
    `select r.id from runners r
      where not (r.revoked_at is null and r.connection_id is not null and r.last_seen_at > now() - (? * interval '1 millisecond'))
        and (exists (select 1 from machines m where m.runner_id = r.id and m.status = any(?))
             or exists (select 1 from runner_commands c where c.runner_id = r.id and c.status = 'sent'))`,
    [offlineAfterMs, LIVE_MACHINE_STATUSES as string[]],
  );
  return rows.map((row) => row.id);
}

/** Whether the runner is online now (the same test as its `status`). */
export async function isRunnerOnline(db: Db, runnerId: string, offlineAfterMs: number): Promise<boolean> {
  const row = await db('runners')
    .where({ id: runnerId })
    .whereNull('revoked_at')
    .whereNotNull('connection_id')
    .andWhereRaw("last_seen_at > now() - (? * interval '1 millisecond')", [offlineAfterMs])
    .first('id');
  return row !== undefined;
}
