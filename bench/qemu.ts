import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createKnex, migrateLatest } from '../shared/db/knex';
import { loadConfig } from '../shared/config';
import { benchServers, PROJECT_ROOT, procfileNodeFlags } from './support/processes';
import { dropRedisPrefix } from './support/redis-prefix';
import { qemuOfRunner as qemuOf } from '../test/support/qemu-processes';

/**
 * `npm run bench -- qemu`: real machines of the QEMU provider (docs/runners.md, "The QEMU
 * provider"), through the whole service. Processes as in production: web, worker-agent,
 * worker-evals and worker-clock each in its own, and two runners as `npx deskhand runner`
 * processes: `--provider qemu` (one slot, 1 GiB: one VM at a time) and, for the baseline of the
 * second part, `--provider simulated`. The image and its running snapshot come from
 * ~/.cache/deskhand/images (the first run on a host builds them: minutes).
 *
 * 1. **A fresh machine from a start state until its hello.** A state is built by a script
 *    (`ss_…` version 1, saved with its running state); then, one at a time, `POST
 *    /v1/start_states` `{ from: ss_…, method: hand }` asks for a machine from that version and
 *    `DELETE` lets it go. A sample runs from the request to the moment the service accepted the
 *    machine's hello (the machine session's `paired_at`), split at the make command's row
 *    (`sent_at`: the service's part) and its answer (`finished_at`). Baseline in the same run: a
 *    cold boot of the same disk, the same request made after the version's running state was
 *    removed from the runner's data folder (the runner then boots the version's disk once,
 *    saves its running state and starts the machine from it: docs/runners.md, "Start states are
 *    real disks").
 * 2. **A task step's overhead inside a VM.** The scripted agent's steps on a real machine
 *    (`debian-12`): a click on the empty desktop and a look (a click on a label that is not on
 *    the screen, which the scripted model turns into a plain screenshot), against the same steps
 *    on the simulated provider's machine (`macos-15`: a click on Control Center and the same
 *    look). Each step is timed from the task's events (their `ts`, the service's clock): step →
 *    next step, and within it action → action_result (the machine's round trip: carried out, the
 *    still-screen wait, screenshot and observation, back) and action_result → next step (the
 *    next model turn). A step and its action are recorded in one change (the model's turn judges
 *    and sends it), so they share a time. The two tries run one after the other.
 *
 * Figures come from PostgreSQL's rows and the runner's JSON lines; the host's load is printed
 * beside them (other tests may share this host).
 */

const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 20);
const COLD = Number(process.env.BENCH_COLD ?? 2);
const STEPS = Number(process.env.BENCH_STEPS ?? 12);
/** Steps at the start of each task left out of the figures (the first screens of a new machine). */
const STEPS_WARM_UP = 2;
const TARGET_P50_MS = 3000;

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((sorted.length * p) / 100) - 1)] ?? NaN;
const sorted = (values: number[]) => [...values].sort((a, b) => a - b);
const p50 = (values: number[]) => percentile(sorted(values), 50);
const p95 = (values: number[]) => percentile(sorted(values), 95);
const pair = (values: number[]) => (values.length ? `${p50(values).toFixed(0).padStart(6)} / ${p95(values).toFixed(0).padStart(6)} ms` : '     - /      - ms');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const load = () => os.loadavg().map((value) => value.toFixed(1)).join(', ');

type Db = ReturnType<typeof createKnex>;

interface RunnerProcess {
  child: ChildProcessWithoutNullStreams;
  runnerId: string;
  dataDir: string;
  lines(): Array<Record<string, any>>;
}

/** One machine asked for and let go, with the moments read back from PostgreSQL (epoch ms). */
interface MadeMachine {
  requested: number;
  sent: number;
  hello: number;
  answered: number;
}

/** One step of a task, from its events. */
interface TimedStep {
  kind: 'click' | 'look';
  machine: number;
  nextTurn: number;
  whole: number;
}

export async function run(): Promise<void> {
  const databaseUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/deskhand_bench';
  const prefix = `bench-qemu-${Date.now()}`;
  const env = {
    DATABASE_URL: databaseUrl,
    DESKHAND_REDIS_PREFIX: prefix,
    DESKHAND_SCRIPTED_MODELS: '1',
    DESKHAND_RATE_LIMIT_PER_HOUR: '10000000',
    DESKHAND_SESSIONS_PER_HOUR: '10000000',
    // A cold boot under TCG on a busy host may pass the 2 minutes a make is given by default.
    DESKHAND_MACHINE_BOOT_TIMEOUT_MS: '600000',
  };
  const config = loadConfig({ ...process.env, ...env });
  await migrateLatest(databaseUrl);
  const db = createKnex(databaseUrl, { min: 0, max: 2 });
  const servers = benchServers();
  const runners: RunnerProcess[] = [];
  const loadBefore = load();
  try {
    const web = await servers.start('deskhand-types.ts', { ...env, BENCH_TYPES: 'web', BENCH_ORG: 'bench qemu' }, procfileNodeFlags('web'));
    for (const type of ['worker-agent', 'worker-evals', 'worker-clock']) await servers.start('deskhand-types.ts', { ...env, BENCH_TYPES: type }, procfileNodeFlags(type));
    const baseUrl = `http://127.0.0.1:${web.message.port as number}`;
    const headers = { authorization: `Bearer ${web.message.key as string}`, 'content-type': 'application/json' };
    const api = async (method: string, url: string, body?: unknown) => {
      const response = await fetch(`${baseUrl}${url}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
      if (!response.ok) throw new Error(`${method} ${url}: ${response.status} ${await response.text()}`);
      return (await response.json()) as Record<string, any>;
    };

    const qemu = await startRunner(api, baseUrl, 'bench qemu', ['--provider', 'qemu', '--memory', '1024']);
    runners.push(qemu);
    const simulated = await startRunner(api, baseUrl, 'bench simulated', ['--images', 'macos-15']);
    runners.push(simulated);
    const accel = qemu.lines().find((line) => line.event === 'accel') ?? {};

    // 1. A fresh machine from a start state until its hello, beside a cold boot of the same disk.
    const built = await api('POST', '/v1/start_states', { name: 'bench state', from: 'debian-12', method: 'script', script: 'echo "made for the bench" > ~/bench.txt' });
    const stateId = built.start_state_id as string;
    await until(async () => {
      const state = await api('GET', `/v1/start_states/${stateId}`);
      if (state.status === 'failed') throw new Error(`the bench's state failed: ${state.error}`);
      return state.status === 'ready';
    }, 180_000, 'the bench\'s state to be saved');
    const machineFrom = () => oneMachine(api, db, stateId);

    await machineFrom(); // warm-up: the service's first placement, the runner's first version read
    const fresh: MadeMachine[] = [];
    for (let i = 0; i < SAMPLES; i++) fresh.push(await machineFrom());
    const cold: MadeMachine[] = [];
    const versionSnapshots = path.join(qemu.dataDir, 'disks', stateId, '1', 'snapshots');
    for (let i = 0; i < COLD; i++) {
      fs.rmSync(versionSnapshots, { recursive: true, force: true });
      cold.push(await machineFrom());
    }
    // The runner's lines of the machines of the state: the warm-up, the samples, the cold boots.
    const freshLines = qemu.lines().filter((line) => line.event === 'machine_ready' && line.disk?.state === stateId).slice(1, 1 + SAMPLES);
    const coldBoots = qemu.lines().filter((line) => line.event === 'snapshot' && line.step === 'done');

    // 2. A task step's overhead inside a VM, beside the simulated machine's.
    await api('POST', '/v1/agents', { agent_id: 'bench-steps', name: 'bench steps', guardrails: { confirm: [], block: [] } });
    const look = 'click "Nothing here"';
    const script = (click: string) => [...Array.from({ length: STEPS }, () => [click, look]).flat(), 'done "Stepped"'].join('\n');
    const cases = (await api('POST', '/v1/test_cases/batch', {
      cases: [
        { key: 'steps-qemu', name: 'steps on a QEMU machine', prompt: script('click_at 640 300'), start_state: 'debian-12', limits: { steps: 2 * STEPS + 5 }, success: { check_script: 'true' } },
        { key: 'steps-simulated', name: 'steps on a simulated machine', prompt: script('click "Control Center"'), start_state: 'macos-15', limits: { steps: 2 * STEPS + 5 }, success: { check_script: 'true' } },
      ],
    })).data as Array<{ test_case_id: string; key: string }>;
    const steps = new Map<string, TimedStep[]>();
    for (const item of cases) {
      const testRun = await api('POST', '/v1/test_runs', { test_case_ids: [item.test_case_id], agent_id: 'bench-steps' });
      await until(async () => (await api('GET', `/v1/test_runs/${testRun.test_run_id}`)).status === 'completed', 300_000, `the run of ${item.key}`);
      const [only] = (await api('GET', `/v1/test_runs/${testRun.test_run_id}/tries`)).data as Array<Record<string, any>>;
      if (only.status !== 'passed') throw new Error(`the try of ${item.key} ended ${only.status}: ${only.error ?? JSON.stringify(only.check)}`);
      const task = await api('GET', `/v1/tasks/${only.task_id}`);
      if (task.status !== 'completed') throw new Error(`the task of ${item.key} ended ${task.status}: ${task.error}`);
      steps.set(item.key, await timedSteps(db, only.task_id as string));
    }

    // The report.
    const requestToHello = (machines: MadeMachine[]) => machines.map((made) => made.hello - made.requested);
    const why = String(accel.reason ?? 'as asked').replace(/ \(.*$/s, '');
    console.log(`qemu: accelerator ${accel.accel} (${why}); one slot, 1 GiB, one vCPU; host load ${loadBefore} before, ${load()} after (${os.cpus().length} cores)`);
    console.log(`1. a machine from a start state version (${stateId}/1, saved with its running state) until the service accepted its hello, ${SAMPLES} samples after one to warm up (p50 / p95):`);
    console.log(`  request → hello                                  ${pair(requestToHello(fresh))}`);
    console.log(`  — request → make command sent (service)          ${pair(fresh.map((made) => made.sent - made.requested))}`);
    console.log(`  — make sent → hello (runner: restore + pairing)  ${pair(fresh.map((made) => made.hello - made.sent))}`);
    console.log(`  —— restore (QEMU loads the state, agent, clock)  ${pair(freshLines.map((line) => line.restore_ms as number))}`);
    console.log(`  —— pairing (code written → app paired)           ${pair(freshLines.map((line) => line.pair_ms as number))}`);
    console.log(`  hello → make answered (state read back, done)    ${pair(fresh.map((made) => made.answered - made.hello))}`);
    console.log(`  each (ms): ${requestToHello(fresh).map((ms) => ms.toFixed(0)).join(', ')}`);
    console.log(`baseline: a cold boot of the same disk (its running state removed), ${COLD} sample${COLD === 1 ? '' : 's'}:`);
    console.log(`  request → hello                                  ${requestToHello(cold).map((ms) => `${(ms / 1000).toFixed(1)} s`).join(', ')}`);
    coldBoots.slice(-COLD).forEach((boot, index) => {
      const rest = requestToHello(cold)[index]! - boot.cold_boot.agent_ms - boot.session_ms - boot.save_ms;
      console.log(`  — of the ${index === 0 ? 'first' : 'next'}: guest agent up ${(boot.cold_boot.agent_ms / 1000).toFixed(1)} s, session and app waiting ${(boot.session_ms / 1000).toFixed(1)} s, state saved ${(boot.save_ms / 1000).toFixed(2)} s (${(boot.state_bytes / 1e6).toFixed(0)} MB), then restored and paired ${(rest / 1000).toFixed(1)} s`);
    });
    const ratio = p50(requestToHello(cold)) / p50(requestToHello(fresh));
    console.log(`  a fresh machine takes 1/${ratio.toFixed(0)} of a cold boot (p50)`);
    console.log(`2. a task step of the scripted agent, from the task's events, steps ${STEPS_WARM_UP + 1}.. of ${2 * STEPS} (p50 / p95):`);
    for (const kind of ['click', 'look'] as const) {
      const of = (key: string, part: keyof Omit<TimedStep, 'kind'>) => (steps.get(key) ?? []).filter((step) => step.kind === kind).map((step) => step[part]);
      console.log(`  ${kind === 'click' ? 'a click (debian-12: on the desktop; macos-15: on Control Center)' : 'a look (a plain screenshot)'}:`);
      for (const [name, part] of [['whole step (step → next step)', 'whole'], ['— action → result (the machine)', 'machine'], ['— result → next step (next turn)', 'nextTurn']] as const) {
        const vm = of('steps-qemu', part);
        const sim = of('steps-simulated', part);
        console.log(`    ${name.padEnd(36)} qemu ${pair(vm)}   simulated ${pair(sim)}   overhead in the VM ${(p50(vm) - p50(sim)).toFixed(0)} ms`);
      }
    }
    const made = p50(requestToHello(fresh));
    console.log(`target: a machine from a start state until its hello ≤ ${TARGET_P50_MS} ms p50 under ${accel.accel}: ${made.toFixed(0)} ms, ${made <= TARGET_P50_MS ? 'met' : 'NOT met'}`);
  } finally {
    for (const runner of runners) await stopRunner(runner);
    await servers.stopAll();
    await db.destroy();
    await dropRedisPrefix(config.redisUrl, prefix);
    for (const runner of runners) fs.rmSync(runner.dataDir, { recursive: true, force: true });
  }
}

/** Polls `check` with growing sleeps until it is true. */
async function until(check: () => Promise<boolean>, withinMs: number, what: string): Promise<void> {
  const deadline = Date.now() + withinMs;
  for (let wait = 20; ; wait = Math.min(wait * 2, 500)) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(wait);
  }
}

/**
 * A runner registered with the service and started as `npx deskhand runner` (the project's bin),
 * resolved once the service reads it online. Whatever happens to the bench, it goes with it; its
 * QEMUs die with it (runner/qemu/qemu-process.ts).
 */
async function startRunner(api: (method: string, url: string, body?: unknown) => Promise<Record<string, any>>, baseUrl: string, name: string, options: string[]): Promise<RunnerProcess> {
  const created = await api('POST', '/v1/runners', { name });
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-qemu-'));
  const child = spawn(process.execPath, [path.join(PROJECT_ROOT, 'bin', 'deskhand.js'), 'runner', '--token', created.token, '--base-url', baseUrl, '--name', name, '--slots', '1', '--data-dir', dataDir, ...options], { cwd: PROJECT_ROOT });
  process.once('exit', () => child.kill('SIGKILL'));
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    const text = chunk.toString();
    stdout += text;
    // A first run builds the image and boots it: its progress is worth seeing.
    for (const line of text.split('\n')) if (/"event":"(image_build|snapshot|version_snapshot|accel)"/.test(line)) process.stderr.write(`  ${line.slice(0, 240)}\n`);
  });
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const runner: RunnerProcess = {
    child,
    runnerId: created.runner_id,
    dataDir,
    lines: () => stdout.split('\n').filter(Boolean).map((line) => JSON.parse(line) as Record<string, any>),
  };
  await until(async () => {
    if (child.exitCode !== null) throw new Error(`the runner ${name} exited (${child.exitCode}): ${stderr.slice(-2000)}`);
    return (await api('GET', `/v1/runners/${created.runner_id}`)).status === 'online';
  }, 45 * 60_000, `${name} online`);
  return runner;
}

/** Stops a runner (SIGTERM: it destroys its machines), SIGKILL after 30 s; then makes sure none of its QEMUs is left, ending any that is. */
async function stopRunner(runner: RunnerProcess): Promise<void> {
  const { child } = runner;
  if (child.exitCode === null && child.signalCode === null) {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await Promise.race([exited, sleep(30_000)]);
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
  await until(async () => qemuOf(child.pid!).length === 0, 10_000, 'the runner\'s QEMU processes to end').catch(() => {
    const left = qemuOf(child.pid!);
    process.stderr.write(`the runner ${runner.runnerId} left QEMU processes ${left.join(', ')}: ended now\n`);
    for (const pid of left) process.kill(pid, 'SIGKILL');
  });
}


/**
 * One machine from the state's latest version, through the whole path: `POST /v1/start_states`
 * (method hand) until its make is answered, then `DELETE` until its destroy is answered (the one
 * slot is free again). The moments are PostgreSQL's rows (the bench shares the host's clock).
 */
async function oneMachine(api: (method: string, url: string, body?: unknown) => Promise<Record<string, any>>, db: Db, from: string): Promise<MadeMachine> {
  const requested = Date.now();
  const opened = await api('POST', '/v1/start_states', { name: 'bench machine', from, method: 'hand' });
  const id = opened.start_state_id as string;
  const machine = (await db('machines').where({ owner_id: id }).first('id', 'session_code')) as { id: string; session_code: string };
  let make: { status: string; sent_at: Date; finished_at: Date | null; error: string | null } | undefined;
  await until(async () => {
    make = await db('runner_commands').where({ machine_id: machine.id, type: 'machine.make' }).first('status', 'sent_at', 'finished_at', 'error');
    return make !== undefined && make.status !== 'sent';
  }, 600_000, `machine ${machine.id} to be made`);
  if (make!.status !== 'done') throw new Error(`machine ${machine.id} was not made: ${make!.error}`);
  const session = (await db('sessions').where({ code: machine.session_code }).first('paired_at')) as { paired_at: Date | null };
  if (!session.paired_at) throw new Error(`machine ${machine.id} was made but its session has no hello`);
  await api('DELETE', `/v1/start_states/${id}`);
  await until(async () => {
    const destroy = await db('runner_commands').where({ machine_id: machine.id, type: 'machine.destroy' }).first('status');
    return destroy !== undefined && destroy.status !== 'sent';
  }, 60_000, `machine ${machine.id} to be destroyed`);
  return { requested, sent: make!.sent_at.getTime(), hello: session.paired_at.getTime(), answered: make!.finished_at!.getTime() };
}

/** A task's steps timed from its events (`step`, `action`, `action_result`), without the first ones. */
async function timedSteps(db: Db, taskId: string): Promise<TimedStep[]> {
  const events = (await db('task_events').where({ task_id: taskId }).orderBy('cursor').select('type', 'message', 'ts')) as Array<{ type: string; message: string; ts: Date }>;
  const starts = events.map((event, index) => ({ event, index })).filter(({ event }) => event.type === 'step');
  const steps: TimedStep[] = [];
  for (let i = 0; i + 1 < starts.length; i++) {
    const { event: step, index } = starts[i]!;
    const between = events.slice(index + 1, starts[i + 1]!.index);
    const action = between.find((event) => event.type === 'action');
    const result = between.find((event) => event.type === 'action_result');
    if (!action || !result || i < STEPS_WARM_UP) continue;
    const next = starts[i + 1]!.event;
    steps.push({
      kind: step.message.startsWith('Click "Nothing here"') ? 'look' : 'click',
      machine: result.ts.getTime() - action.ts.getTime(),
      nextTurn: next.ts.getTime() - result.ts.getTime(),
      whole: next.ts.getTime() - step.ts.getTime(),
    });
  }
  return steps;
}
