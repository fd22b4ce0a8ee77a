import { AuditLogService } from './audit/audit-log.service';
import type { Config } from './config';
import { createLogger, type Logger } from './logger';
import { createKnex, type Knex } from './db/knex';
import { createRedis, type Redis } from './redis';
import { JobQueues } from './queues/job-queues';
import { Notifier } from './notifier';
import { ApiKeyService } from './api-keys/api-keys.service';
import { OrgService } from './orgs/orgs.service';
import { UsersService } from './users/users.service';
import { createSafeHttpClient, type HostResolver, type SafeHttpClient } from './http';
import { WebhookService } from './webhooks/webhooks.service';
import { WebhookDeliveryService } from './webhooks/webhook-delivery.service';
import { ensureToolSecret, ToolSecretService } from './tools/tool-secrets.service';
import { createToolCall, enqueueToolCall, requeueToolCallOf, ToolCallService } from './tools/tool-calls.service';
import { AgentService } from './agents/agents.service';
import { AgentFileService } from './agents/agent-files.service';
import { systemClock, type Clock } from './clock';
import { ComputerLink } from './desktop/computer-link';
import { SessionsService } from './sessions/sessions.service';
import { sessionAgentDirectory } from './sessions/session-agents';
import { createKeyedLimiter } from './rate-limits';
import { createModelRegistry, type ModelRegistry } from './models/registry';
import { TaskLoop } from './tasks/loop';
import type { TaskChangeObserver } from './tasks/task-change';
import { followerNotes, orgEventDispatch } from './tasks/task-change-observers';
import { TasksService } from './tasks/tasks.service';
import { TaskFollowers } from './tasks/task-followers';
import { RunnerLink } from './runners/runner-link';
import { RunnersService } from './runners/runners.service';
import { RunnerConsole } from './runners/runner-console';
import { MachinesService } from './machines/machines.service';
import { StartStateFlow, startStateTasks } from './start-states/start-state-flow';
import { StartStatesService } from './start-states/start-states.service';
import { TryFlow, tryTasks, type TryFlowDeps } from './test-runs/try-flow';
import { TestRunsService } from './test-runs/test-runs.service';
import { createEvalModels } from './evals/eval-models';
import { secretToType, stepToClick } from './evals/customer';
import { TestCasesService } from './test-cases/test-cases.service';
import { TestSetsService } from './test-sets/test-sets.service';
import { IdempotencyService } from './idempotency/idempotency.service';
import { createBillingServices, type BillingServices } from './billing/billing-services';
import { stripeProvider } from './billing/payment-provider';

/**
 * Everything a process needs, built once by its composition root and passed down. There are no
 * module-level singletons: two containers in one process (as in tests) do not share state.
 */
export interface Container {
  config: Readonly<Config>;
  logger: Logger;
  db: Knex;
  /** Commands (non-blocking, fails fast). */
  redis: Redis;
  /** Pub/sub subscriber. */
  subscriber: Redis;
  queues: JobQueues;
  notifier: Notifier;
  apiKeys: ApiKeyService;
  orgs: OrgService;
  /** The console's people: members, roles, sign-ins and console sessions. */
  users: UsersService;
  /** Reads the org's audit log (each change writes its own rows). */
  auditLog: AuditLogService;
  agents: AgentService;
  /** The agents' own file stores (AgentTools `files`). */
  agentFiles: AgentFileService;
  clock: Clock;
  /** Reaches computers through socket.io's Redis emitter, from any process. */
  link: ComputerLink;
  sessions: SessionsService;
  models: ModelRegistry;
  /** What happens after any task change commits, in the order registered (they run together). */
  observers: readonly TaskChangeObserver[];
  /** The agent loop: steps, results from computers, answers, stops. */
  loop: TaskLoop;
  tasks: TasksService;
  /** `Idempotency-Key` on the /v1 POSTs that create: the first answer per org, operation and key. */
  idempotency: IdempotencyService;
  /** The long-poll followers of tasks in this process (GET /v1/tasks/{id}/events, the older API's /wait). */
  followers: TaskFollowers;
  /** Outbound HTTP to customers' URLs (webhooks, HTTP tools): SSRF-checked at connect time. */
  outboundHttp: SafeHttpClient;
  webhooks: WebhookService;
  webhookDelivery: WebhookDeliveryService;
  toolSecrets: ToolSecretService;
  toolCalls: ToolCallService;
  /** Runners: registration, revocation, and what their connections report. */
  runners: RunnersService;
  machines: MachinesService;
  /** An open machine's screen and input, through its runner (a web process attaches it). */
  runnerConsole: RunnerConsole;
  /** Commands to runners: through the Redis emitter, or a web process's own namespace once the gateway attaches it. */
  runnerLink: RunnerLink;
  startStates: StartStatesService;
  startStateFlow: StartStateFlow;
  testRuns: TestRunsService;
  tryFlow: TryFlow;
  testCases: TestCasesService;
  testSets: TestSetsService;
  /** Billing, one service per concern: reads, levers, payments, providerWebhook, admission (a task start's limits), metering. */
  billing: BillingServices;
  /** Closes queues, Redis, outbound HTTP and the database pool, in that order. */
  close(): Promise<void>;
}

export function createContainer(
  config: Readonly<Config>,
  options: {
    logger?: Logger;
    dbPoolMax?: number;
    clock?: Clock;
    /** Name resolution for customers' URLs, at registration and at connect time (tests inject it). */
    hostResolver?: HostResolver;
    /** Told of every committed task change after the root's own observers (tests listen here). */
    observers?: readonly TaskChangeObserver[];
    /** The rubric judge of tries, instead of the configured one (tests inject one). */
    judge?: TryFlowDeps['judge'];
  } = {},
): Container {
  const clock = options.clock ?? systemClock;
  const logger = options.logger ?? createLogger(config.logLevel, { service: 'deskhand' });
  const db = createKnex(config.databaseUrl, { min: 0, max: options.dbPoolMax ?? 10 }, { pooler: config.databasePooler });
  const commandTimeoutMs = config.redisCommandTimeoutMs;
  // To the single Redis, or to the cluster (`DESKHAND_REDIS_CLUSTER_NODES`): nothing below asks which.
  const redis = createRedis(config, { name: 'deskhand-commands', commandTimeoutMs });
  const subscriber = createRedis(config, { name: 'deskhand-subscriber', blocking: true, subscriber: true });
  // BullMQ's producers get their own connection: its scripts would slow every pipeline of `redis`.
  const queues = new JobQueues(createRedis(config, { name: 'deskhand-queues', scripted: true, commandTimeoutMs }), config.redisPrefix, {
    deadlineMs: commandTimeoutMs,
    logger: logger.child({ scope: 'queues' }),
  });
  const notifier = new Notifier(redis, subscriber, config.redisPrefix, undefined, commandTimeoutMs);
  const apiKeys = new ApiKeyService({ db, env: config.env, notifier, logger: logger.child({ scope: 'api-keys' }) });
  const orgs = new OrgService({ db, apiKeys });
  const agents = new AgentService({ db, config, resolve: options.hostResolver });
  // Every org has exactly one default agent from its first moment.
  orgs.onCreated((trx, orgId, actor) => agents.createDefaultAgent(trx, orgId, actor));
  const billing = createBillingServices({ db, clock, provider: config.payments ? stripeProvider(config.payments) : null, logger: logger.child({ scope: 'billing' }), defaultPlanId: config.defaultPlanId });
  // Every org has a billing account, on the free plan, from its first moment.
  orgs.onCreated((trx, orgId) => billing.levers.onOrgCreated(trx, orgId));
  const agentFiles = new AgentFileService({ db });
  const link = new ComputerLink(redis, config.redisPrefix);
  const sessionCreations = createKeyedLimiter({ redis, prefix: config.redisPrefix, name: 'sessions', points: config.sessionsPerHour, durationSeconds: 3600 });
  const sessions = new SessionsService({
    db,
    clock,
    queues,
    link,
    agents: sessionAgentDirectory(agents),
    limitCreation: (orgId) => sessionCreations(orgId, 'sessions created for this org'),
    logger: logger.child({ scope: 'sessions' }),
    reconnectGraceMs: config.reconnectGraceMs,
  });
  const outboundHttp = createSafeHttpClient({ allowPrivate: config.allowPrivateUrls, lookup: options.hostResolver });
  const webhooks = new WebhookService({ db, queues, config, logger: logger.child({ scope: 'webhooks' }), resolve: options.hostResolver });
  const webhookDelivery = new WebhookDeliveryService({ db, queues, http: outboundHttp, config, logger: logger.child({ scope: 'webhook-delivery' }) });
  const toolSecrets = new ToolSecretService({ db });
  orgs.onCreated((trx, orgId) => ensureToolSecret(trx, orgId));
  const toolCalls = new ToolCallService({ db, http: outboundHttp, config, logger: logger.child({ scope: 'tool-calls' }) });
  const modelConfig = {
    scripted: config.scriptedModels,
    anthropic: config.vendors.anthropic,
    openai: config.vendors.openai,
    gemini: config.vendors.gemini,
  };
  const models = createModelRegistry(modelConfig);
  // After a task change commits: its followers hear of it, its org events go to the webhooks queue.
  // A start state built by an instruction advances when its task ends.
  const observers: TaskChangeObserver[] = [followerNotes(notifier), orgEventDispatch(queues), startStateTasks({ db, queues, clock }), tryTasks({ queues, clock }), ...(options.observers ?? [])];
  const loop = new TaskLoop({
    db,
    clock,
    queues,
    observers,
    link,
    models,
    agentFiles,
    tools: { create: createToolCall, enqueue: (callId) => enqueueToolCall(queues, callId), requeue: (taskId) => requeueToolCallOf(db, queues, taskId) },
    logger: logger.child({ scope: 'task-loop' }),
    baseUrl: config.baseUrl,
    actTimeoutMs: config.actTimeoutMs,
    reconnectGraceMs: config.reconnectGraceMs,
    modelTimeoutMs: config.modelTimeoutMs,
    billing,
  });
  const idempotency = new IdempotencyService(db);
  const tasks = new TasksService({ db, clock, agents, models, loop, billing, baseUrl: config.baseUrl, logger: logger.child({ scope: 'tasks' }) });
  const followers = new TaskFollowers({ db, clock, notifier, baseUrl: config.baseUrl });
  // A computer that goes away takes its running task with it.
  sessions.onComputerGone((session, why) => loop.computerGone(session.code, why));
  const runnerLink = new RunnerLink(redis, config.redisPrefix);
  // A machine's owner hears of its changes through its own queue job.
  let startStateFlow: StartStateFlow | undefined;
  let tryFlow: TryFlow | undefined;
  const machines = new MachinesService({
    db,
    queues,
    link: runnerLink,
    sessions,
    logger: logger.child({ scope: 'machines' }),
    notifyOwner: async (machine, why) => {
      if (machine.owner_kind === 'start_state') await startStateFlow!.advanceSoon(machine.owner_id, why);
      if (machine.owner_kind === 'try') await tryFlow!.advanceSoon(machine.owner_id, why);
    },
    offlineAfterMs: config.runnerOfflineAfterMs,
    bootTimeoutMs: config.machineBootTimeoutMs,
  });
  const runners = new RunnersService({
    db,
    link: runnerLink,
    logger: logger.child({ scope: 'runners' }),
    heartbeatMs: config.runnerHeartbeatMs,
    offlineAfterMs: config.runnerOfflineAfterMs,
    // A revoked runner's work goes elsewhere at once.
    revoked: (runnerId) => machines.runnerLost(runnerId, `Runner ${runnerId} was deleted`),
  });
  startStateFlow = new StartStateFlow({
    db,
    clock,
    queues,
    logger: logger.child({ scope: 'start-states' }),
    machines,
    agents,
    sessions,
    createTask: (trx, input) => tasks.createInTransaction(trx, input),
  });
  // The simulated customer and the rubric judge: scripted, or a vendor model (shared/evals/).
  const evalModels = createEvalModels(modelConfig);
  tryFlow = new TryFlow({
    db,
    clock,
    queues,
    logger: logger.child({ scope: 'tries' }),
    machines,
    sessions,
    createTask: (trx, input) => tasks.createInTransaction(trx, input),
    respond: (taskId, orgId, input, by) => loop.respond(taskId, orgId, input, by),
    stopTask: (taskId, orgId, reason) => loop.stop(taskId, orgId, 'operator', reason),
    customer: { answer: (input) => evalModels.customer.answer(input), secretToType, stepToClick },
    judge: options.judge ?? evalModels.judge,
    offlineAfterMs: config.runnerOfflineAfterMs,
  });
  const testRuns = new TestRunsService({ db, agents, scheduleSoon: () => tryFlow!.scheduleSoon(), cancelTries: (runId) => tryFlow!.cancelRun(runId) });
  const runnerConsole = new RunnerConsole();
  const startStates = new StartStatesService({
    db,
    clock,
    baseUrl: config.baseUrl,
    machines,
    flow: startStateFlow,
    console: runnerConsole,
    agents,
    offlineAfterMs: config.runnerOfflineAfterMs,
    openForMs: config.openMachineMs,
  });

  return {
    config,
    logger,
    db,
    redis,
    subscriber,
    queues,
    notifier,
    apiKeys,
    orgs,
    users: new UsersService({ db, redis, config, logger: logger.child({ scope: 'users' }) }),
    auditLog: new AuditLogService({ db }),
    agents,
    agentFiles,
    clock,
    link,
    sessions,
    models,
    observers,
    loop,
    tasks,
    idempotency,
    followers,
    outboundHttp,
    webhooks,
    webhookDelivery,
    toolSecrets,
    toolCalls,
    runners,
    machines,
    runnerConsole,
    runnerLink,
    startStates,
    startStateFlow,
    testRuns,
    tryFlow,
    testCases: new TestCasesService({ db }),
    testSets: new TestSetsService({ db }),
    billing,
    async close() {
      await queues.close();
      subscriber.disconnect();
      await redis.quit().catch(() => redis.disconnect());
      await outboundHttp.close();
      await db.destroy();
    },
  };
}
