import type { Clock } from '../clock';
import type { Knex } from '../db/knex';
import type { Caller } from '../audit/actor';
import { ApiError, conflict, invalidRequest, notFound } from '../errors';
import { newId, randomString } from '../ids';
import type { Page, PageRequest } from '../pagination';
import type { AgentService } from '../agents/agents.service';
import type { MachinesService } from '../machines/machines.service';
import { osOfImage, type Disk } from '../machines/machine-rows';
import { isRunnerOnline } from '../machines/machines.repository';
import type { ConsoleInput, ConsoleScreen, RunnerConsole } from '../runners/runner-console';
import type { StartStateFlow } from './start-state-flow';
import { imageStartState, toStartState, type StartState } from './start-state-object';
import { stateDisk, type StartStateMethod, type StartStateRow } from './start-state-rows';
import { deleteStartStateUnlessUsed, findStartState, findStartStateByViewToken, imageAvailability, insertStartState, listStartStates, updateStartState, visibleImages } from './start-states.repository';

export interface StartStatesDeps {
  db: Knex;
  /** Now, for a live view's time (when it closes, whether it still may be seen), as the start state flow reads it. */
  clock: Clock;
  baseUrl: string;
  machines: MachinesService;
  flow: StartStateFlow;
  console: RunnerConsole;
  agents: Pick<AgentService, 'resolveForTask'>;
  offlineAfterMs: number;
  /** How long an open machine stays open unless saved, when the request does not say. */
  openForMs: number;
}

export interface CreateStartStateInput {
  name: string;
  from: string;
  method: StartStateMethod;
  script?: string;
  instruction?: string;
  agent_id?: string;
  description?: string;
  metadata?: Record<string, string>;
  open_minutes?: number;
}

/** Where a new machine comes from: an image or a state's latest version, and the runner that must make it. */
interface Source {
  fromId: string;
  image: string;
  disk: Disk;
  pinnedRunnerId: string | null;
}

/**
 * Start states (spec: Start state; docs/evals.md): the images runners report and the org's own
 * states, made by hand on an open machine, by a script or by an agent's instruction, opened,
 * saved as versions, changed and deleted. Everything that changes one is audited in its
 * transaction; what happens on machines is `StartStateFlow`'s, in worker-evals.
 */
export class StartStatesService {
  constructor(private readonly deps: StartStatesDeps) {}

  /** The images of the org's runners (own and cloud) first, then the org's states, newest first. */
  async list(orgId: string, page: PageRequest): Promise<Page<StartState>> {
    const states = await listStartStates(this.deps.db, orgId, page, (row) => toStartState(row, this.deps.baseUrl));
    if (page.cursor !== null) return states;
    const images = (await visibleImages(this.deps.db, orgId)).map(imageStartState);
    return { ...states, data: [...images, ...states.data] };
  }

  /** A state of the org's, or an image one of its runners reports (by its name). */
  async get(orgId: string, id: string): Promise<StartState> {
    if (id.startsWith('ss_')) return toStartState(await this.row(orgId, id), this.deps.baseUrl);
    const image = (await visibleImages(this.deps.db, orgId)).find((candidate) => candidate.image === id);
    if (!image) throw notFound(`No start state ${id}`);
    return imageStartState(image);
  }

  async create(caller: Caller, input: CreateStartStateInput, requestId?: string): Promise<StartState> {
    checkMethodFields(input);
    if (input.method === 'instruction') await this.deps.agents.resolveForTask(caller.orgId, input.agent_id ?? 'default', 'published');
    const source = await this.source(caller.orgId, input.from);
    const id = newId('ss');
    const open = input.method === 'hand';
    const row = await this.deps.db.transaction(async (trx) => {
      const { machine, make } = await this.deps.machines.requestPlaced(trx, {
        orgId: caller.orgId,
        owner: { kind: 'start_state', id },
        disk: source.disk,
        os: osOfImage(source.image),
        pinnedRunnerId: source.pinnedRunnerId,
        label: `start state ${id} (${input.method})`,
        // An open state waits for a person, not for its machine: it closes at its time (`StartStateFlow.closeExpired`).
        tellOwnerWhenRunning: !open,
      });
      // Placed, it is on an online runner with the image; otherwise one must be online for it to wait for.
      if (!make && !source.pinnedRunnerId) await this.assertImageOnline(trx, caller.orgId, source.image);
      const inserted = await insertStartState(trx, {
        id,
        org_id: caller.orgId,
        name: input.name.trim(),
        description: input.description ?? '',
        from_id: source.fromId,
        method: input.method,
        script: input.script ?? null,
        instruction: input.instruction ?? null,
        agent_id: input.method === 'instruction' ? (input.agent_id ?? 'default') : null,
        status: open ? 'open' : 'building',
        image: source.image,
        from_disk: source.disk,
        os: osOfImage(source.image),
        runner_id: source.pinnedRunnerId,
        metadata: input.metadata ?? {},
        machine_id: machine.id,
        ...(open ? this.newView(input.open_minutes) : { view_token: null, view_expires_at: null }),
      }, { orgId: caller.orgId, actor: caller.actor, action: 'start_state.created', objectType: 'start_state', objectId: id, data: { name: input.name.trim(), from: source.fromId, method: input.method }, requestId });
      return { state: inserted, make };
    });
    // Placed at once, its make goes out now (otherwise it waits for a slot to free).
    if (row.make) this.deps.machines.send(row.make);
    return toStartState(row.state, this.deps.baseUrl);
  }

  /** A ready state gets a machine from its latest version, open with a live view. */
  async open(caller: Caller, id: string, input: { open_minutes?: number }, requestId?: string): Promise<StartState> {
    const current = await this.row(caller.orgId, id);
    if (current.status !== 'ready') throw conflict(`Start state ${id} is ${current.status}; only a ready one can be opened`, 'not_ready');
    const source = this.latestVersionOf(current);
    await this.assertRunnerFor(source);
    const row = await this.deps.db.transaction(async (trx) => {
      const locked = await findStartState(trx, caller.orgId, id, true);
      if (locked?.status !== 'ready') throw conflict(`Start state ${id} is ${locked?.status ?? 'gone'}; only a ready one can be opened`, 'not_ready');
      const { machine, make } = await this.deps.machines.requestPlaced(trx, {
        orgId: caller.orgId,
        owner: { kind: 'start_state', id },
        disk: source.disk,
        os: locked.os,
        pinnedRunnerId: source.pinnedRunnerId,
        label: `start state ${id} opened`,
        tellOwnerWhenRunning: false,
      });
      const updated = await updateStartState(trx, id, { status: 'open', error: null, machine_id: machine.id, machine_attempts: 1, ...this.newView(input.open_minutes) }, { orgId: caller.orgId, actor: caller.actor, action: 'start_state.opened', objectType: 'start_state', objectId: id, data: { version: locked.version }, requestId });
      return { state: updated, make };
    });
    if (row.make) this.deps.machines.send(row.make);
    return toStartState(row.state, this.deps.baseUrl);
  }

  /** Shuts the open machine down and keeps its disk as the next version: `saving`, then `ready`. */
  async save(caller: Caller, id: string, requestId?: string): Promise<StartState> {
    if (!id.startsWith('ss_')) throw imageReadOnly(id);
    const row = await this.deps.db.transaction(async (trx) => {
      const current = await findStartState(trx, caller.orgId, id, true);
      if (!current) throw notFound(`No start state ${id}`);
      if (current.status !== 'open') throw conflict(`Start state ${id} is ${current.status}; only an open one can be saved`, 'not_open');
      // Saving waits for the machine to run: one still starting tells the flow when it does.
      if (current.machine_id) await this.deps.machines.tellOwnerWhenRunning(trx, current.machine_id);
      return updateStartState(trx, id, { status: 'saving', view_token: null, view_expires_at: null }, { orgId: caller.orgId, actor: caller.actor, action: 'start_state.save_requested', objectType: 'start_state', objectId: id, data: { version: current.version + 1 }, requestId });
    });
    await this.deps.flow.advanceSoon(id, 'save');
    return toStartState(row, this.deps.baseUrl);
  }

  async update(caller: Caller, id: string, changes: { name?: string; description?: string; metadata?: Record<string, string> }, requestId?: string): Promise<StartState> {
    if (!id.startsWith('ss_')) await this.assertImageOrMissing(caller.orgId, id);
    if (changes.name !== undefined && !changes.name.trim()) throw invalidRequest('name must not be only spaces');
    const row = await this.deps.db.transaction(async (trx) => {
      const current = await findStartState(trx, caller.orgId, id, true);
      if (!current) throw notFound(`No start state ${id}`);
      const fields: Partial<StartStateRow> = {};
      if (changes.name !== undefined) fields.name = changes.name.trim();
      if (changes.description !== undefined) fields.description = changes.description;
      if (changes.metadata !== undefined) fields.metadata = changes.metadata;
      return updateStartState(trx, id, fields, { orgId: caller.orgId, actor: caller.actor, action: 'start_state.updated', objectType: 'start_state', objectId: id, data: { fields: Object.keys(fields) }, requestId });
    });
    return toStartState(row, this.deps.baseUrl);
  }

  /**
   * Deletes a state: its machine (if any) is let go and its saved disks are deleted on the runner
   * that keeps them. Returns it as it was; 409 `in_use` with `test_case_ids` while live test cases start from it.
   */
  async delete(caller: Caller, id: string, requestId?: string): Promise<StartState> {
    if (!id.startsWith('ss_')) await this.assertImageOrMissing(caller.orgId, id);
    const row = await this.deps.db.transaction(async (trx) => {
      const current = await findStartState(trx, caller.orgId, id, true);
      if (!current) throw notFound(`No start state ${id}`);
      // Under the state's row lock (FOR UPDATE, above): a case naming it share-locks the same row
      // first (TestCasesService, the lock order start states → test sets → test cases), so a batch
      // either committed before the next statement (its cases are seen there: 409) or waits and then
      // finds the state deleted (400). Nothing of test cases is locked here, so nothing waits in a circle.
      const usedBy = await deleteStartStateUnlessUsed(trx, caller.orgId, id, { actor: caller.actor, action: 'start_state.deleted', data: { name: current.name, version: current.version }, requestId });
      if (usedBy.length > 0) throw conflict(`Start state ${id} is used by ${usedBy.length === 100 ? 'at least 100' : usedBy.length} test case(s); change or delete them first`, 'in_use', { test_case_ids: usedBy });
      // Its machine (if any) is let go in the same transaction (the state's lock, then the machine's).
      const released = current.machine_id ? await this.deps.machines.releaseIn(trx, current.machine_id) : null;
      return { before: current, released };
    });
    await row.released?.('The start state was deleted');
    if (row.before.runner_id && row.before.version > 0) await this.deps.machines.deleteDisks(row.before.runner_id, id);
    return toStartState(row.before, this.deps.baseUrl);
  }

  /** The open state a live view's token belongs to; 404 for any other token (or once it is no longer open). */
  async viewed(token: string): Promise<StartStateRow> {
    const row = await findStartStateByViewToken(this.deps.db, token);
    if (!row || !row.view_expires_at || row.view_expires_at.getTime() <= this.deps.clock.now().getTime()) throw notFound('This live view has ended (the machine was saved, closed or deleted)');
    return row;
  }

  /** The open machine's screen, through its runner; 409 `starting` while the machine is not running yet. */
  async screen(token: string): Promise<ConsoleScreen> {
    const { runnerId, machineId } = await this.runningMachine(await this.viewed(token));
    return this.deps.console.screen(runnerId, machineId);
  }

  async input(token: string, input: ConsoleInput): Promise<{ frame: number }> {
    const { runnerId, machineId } = await this.runningMachine(await this.viewed(token));
    return this.deps.console.input(runnerId, machineId, input);
  }

  private async runningMachine(state: StartStateRow): Promise<{ runnerId: string; machineId: string }> {
    const machine = state.machine_id ? await this.deps.machines.get(state.machine_id) : undefined;
    if (!machine?.runner_id || machine.status !== 'running') throw conflict('The machine is starting; try again in a moment', 'starting');
    return { runnerId: machine.runner_id, machineId: machine.id };
  }

  private async row(orgId: string, id: string): Promise<StartStateRow> {
    const row = id.startsWith('ss_') ? await findStartState(this.deps.db, orgId, id) : undefined;
    if (!row) {
      if (!id.startsWith('ss_')) await this.assertImageOrMissing(orgId, id);
      throw notFound(`No start state ${id}`);
    }
    return row;
  }

  /**
   * `from`: an image, or a ready state of the org's (its latest version). A state's runner must
   * be online now (409 `no_runner`); an image is checked by `create` (`assertImageOnline`) when
   * no runner could take the machine at once.
   */
  private async source(orgId: string, from: string): Promise<Source> {
    if (from.startsWith('ss_')) {
      const state = await findStartState(this.deps.db, orgId, from);
      if (!state) throw invalidRequest(`from: no start state ${from}`);
      if (state.version < 1) throw invalidRequest(`from: start state ${from} has no saved version yet (it is ${state.status})`);
      const source = { ...this.latestVersionOf(state), fromId: from };
      await this.assertRunnerFor(source);
      return source;
    }
    return { fromId: from, image: from, disk: { image: from }, pinnedRunnerId: null };
  }

  /**
   * 400 unless a runner of the org's (or a cloud runner) reports the image; 409 `no_runner` unless
   * one of them is online now (its slots may all be busy: the machine then waits).
   */
  private async assertImageOnline(db: Knex | Knex.Transaction, orgId: string, image: string): Promise<void> {
    const availability = await imageAvailability(db, orgId, image, this.deps.offlineAfterMs);
    if (!availability.known) throw invalidRequest(`from: no runner of this org (or cloud runner) has an image ${image}; GET /v1/start_states lists the images`);
    if (!availability.online) throw conflict(`No online runner has the image ${image}; start a runner that has it`, 'no_runner');
  }

  private latestVersionOf(state: StartStateRow): Source {
    return { fromId: state.id, image: state.image, disk: stateDisk(state, state.version), pinnedRunnerId: state.runner_id };
  }

  /** 409 `no_runner` unless the runner that keeps the state's disks is online now. */
  private async assertRunnerFor(source: Source): Promise<void> {
    if (!source.pinnedRunnerId || (await isRunnerOnline(this.deps.db, source.pinnedRunnerId, this.deps.offlineAfterMs))) return;
    throw conflict(`Runner ${source.pinnedRunnerId}, which keeps this start state's disks, is offline`, 'no_runner');
  }

  /** A new live view: a capability token and when the open machine closes unless saved. */
  private newView(openMinutes: number | undefined): Pick<StartStateRow, 'view_token' | 'view_expires_at'> {
    const ms = openMinutes !== undefined ? openMinutes * 60_000 : this.deps.openForMs;
    return { view_token: `dhv_${randomString(32)}`, view_expires_at: new Date(this.deps.clock.now().getTime() + ms) };
  }

  /** An image cannot be changed or deleted (403 `image`); an id that is neither is 404. */
  private async assertImageOrMissing(orgId: string, id: string): Promise<void> {
    const images = await visibleImages(this.deps.db, orgId);
    if (images.some((image) => image.image === id)) throw imageReadOnly(id);
  }
}

function imageReadOnly(id: string): ApiError {
  return new ApiError('permission', `${id} is an image: a runner's base install, which cannot be changed, saved or deleted`, { code: 'image' });
}

/** `script` goes with method script only, `instruction` (and `agent_id`) with method instruction only. */
function checkMethodFields(input: CreateStartStateInput): void {
  if (input.method === 'script' && !input.script?.trim()) throw invalidRequest('script is required with method script');
  if (input.method === 'instruction' && !input.instruction?.trim()) throw invalidRequest('instruction is required with method instruction');
  if (input.method !== 'script' && input.script !== undefined) throw invalidRequest('script goes with method script only');
  if (input.method !== 'instruction' && input.instruction !== undefined) throw invalidRequest('instruction goes with method instruction only');
  if (input.method !== 'instruction' && input.agent_id !== undefined) throw invalidRequest('agent_id goes with method instruction only');
  if (input.method !== 'hand' && input.open_minutes !== undefined) throw invalidRequest('open_minutes goes with method hand only');
}
