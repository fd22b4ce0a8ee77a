import type { Knex } from '../db/knex';
import type { Config } from '../config';
import type { Logger } from '../logger';
import { SIGNATURE_HEADER, signPayload, type SafeHttpClient } from '../http';
import { newId } from '../ids';
import { QUEUE_NAMES } from '../queues/catalog';
import { jobId, type JobQueues } from '../queues/job-queues';
import { filterAccepts } from './webhook-events';
import { MicroBatcher } from './micro-batcher';
import {
  dispatchEvents,
  failDelivery,
  findDelivery,
  leaseDueDelivery,
  loadDeliveryTarget,
  overdueDeliveries,
  recordAttempts,
  undispatchedEvents,
  type AttemptOutcome,
  type DeliveryTarget,
  type DispatchRow,
  type RecordedAttempt,
} from './webhooks.repository';

/** Reply bytes kept per attempt (shown in the deliveries list); longer replies are cut. */
const REPLY_BYTES_KEPT = 1024;
/** Beyond the attempt's deadline, how long a lease lasts before the attempt counts as lost. */
const LEASE_MARGIN_MS = 5_000;
/** A job may fire this early (clock differences between workers and the database). */
const EARLY_TOLERANCE_MS = 1_000;
/** Most deliveries sharing one statement (the worker's concurrency bounds it anyway). */
const MAX_BATCH = 200;

/** What the processor reports about one job (logged; also the job's return value). */
export type DeliveryOutcome =
  | 'no_event'
  | 'not_sent'
  | 'succeeded'
  | 'retry_scheduled'
  | 'failed'
  | 'not_due'
  | 'finished_already'
  | 'given_up';

/** The body of every attempt of an event: the spec's envelope, identical bytes each time. */
export function envelopeBody(target: Pick<DeliveryTarget, 'event_id' | 'type' | 'created_at' | 'org_id' | 'data'>): string {
  return JSON.stringify({
    id: target.event_id,
    type: target.type,
    created_at: target.created_at.toISOString(),
    org_id: target.org_id,
    data: target.data,
  });
}

/**
 * Enqueues an attempt of a delivery. `jobId` makes it idempotent; infrastructure errors (the
 * database unreachable) are retried by BullMQ, while HTTP failures are the row's business.
 */
export async function enqueueDelivery(
  queues: JobQueues,
  deliveryId: string,
  options: { jobId: string; delayMs?: number; orLeaveToSweep?: boolean },
): Promise<void> {
  // A pending delivery whose job is missing is resumed by the sweep: after a commit, a Redis
  // that does not answer need not fail the request that committed it.
  const enqueue = options.orLeaveToSweep ? queues.enqueueOrLeaveToSweep.bind(queues) : queues.enqueue.bind(queues);
  await enqueue(QUEUE_NAMES.webhooks, 'deliver', { delivery_id: deliveryId }, {
    jobId: options.jobId,
    delay: Math.max(0, Math.round(options.delayMs ?? 0)),
    attempts: 5,
    backoff: { type: 'exponential', delay: 1000 },
  });
}

/**
 * The delivery worker's logic (spec: Delivery and retries). A delivery row is the state; jobs
 * only say "look at it now". Every attempt re-reads the endpoint (URL, secret, filter), signs
 * the same body with a fresh `t`, POSTs it through the SSRF-safe client (address check at
 * connect time, no redirects, one deadline), and stores a row; a failure schedules the next
 * attempt from `config.webhookRetryScheduleMs`.
 *
 * Crash safety: an attempt holds a lease (`next_attempt_at` = its deadline + a margin). A
 * worker killed mid-attempt leaves the delivery due again when the lease ends; the job comes
 * back as stalled (or the sweep finds it) and sends the same event again, same `id`.
 */
export class WebhookDeliveryService {
  private readonly leaseMs: number;
  /** Dispatches of jobs running at once share one statement (and one commit). */
  private readonly dispatches: MicroBatcher<{ eventId: string; newDeliveryId: string }, DispatchRow | null>;
  /** So do the attempt records. */
  private readonly records: MicroBatcher<{ deliveryId: string; attempt: AttemptOutcome }, RecordedAttempt | null>;

  constructor(
    private readonly deps: { db: Knex; queues: JobQueues; http: SafeHttpClient; config: Readonly<Config>; logger: Logger },
  ) {
    this.leaseMs = deps.config.webhookTimeoutMs + LEASE_MARGIN_MS;
    this.dispatches = new MicroBatcher(
      async (items) => {
        const rows = await dispatchEvents(deps.db, items, this.leaseMs);
        const byEvent = new Map(rows.map((row) => [row.event_id, row]));
        return items.map((item) => byEvent.get(item.eventId) ?? null);
      },
      { maxBatch: MAX_BATCH, key: (item) => item.eventId },
    );
    this.records = new MicroBatcher((items) => recordAttempts(deps.db, items, deps.config.webhookRetryScheduleMs), {
      maxBatch: MAX_BATCH,
      key: (item) => item.deliveryId,
    });
  }

  /**
   * `webhooks/dispatch`: turns an org event into a delivery when the org's endpoint wants it,
   * and makes the first attempt at once (one job per event on the happy path).
   */
  async dispatch(eventId: string): Promise<DeliveryOutcome> {
    const row = await this.dispatches.add({ eventId, newDeliveryId: newId('dlv') });
    if (!row) return 'no_event';
    if (row.created_id) return this.attempt(row.created_id, row);
    // A second run (stalled job, sweep): the delivery exists; carry on from its state.
    if (row.existing_id) return this.deliver(row.existing_id);
    if (!row.url || !row.secret || !filterAccepts(row.events, row.type)) return 'not_sent';
    // Made by a run racing this one; that run or its lease decides what happens next.
    const again = await this.dispatches.add({ eventId, newDeliveryId: newId('dlv') });
    return again?.existing_id ? this.deliver(again.existing_id) : 'no_event';
  }

  /** `webhooks/deliver`: makes the delivery's attempt if one is due; otherwise makes sure a job waits for it. */
  async deliver(deliveryId: string): Promise<DeliveryOutcome> {
    const { db } = this.deps;
    const leased = await leaseDueDelivery(db, deliveryId, this.leaseMs, EARLY_TOLERANCE_MS);
    if (!leased) {
      const delivery = await findDelivery(db, deliveryId);
      if (!delivery || delivery.status !== 'pending' || !delivery.next_attempt_at) return 'finished_already';
      // Due later (a retry, or another worker's lease): one job per due time, whoever asks.
      await this.scheduleAt(deliveryId, delivery.next_attempt_at);
      return 'not_due';
    }
    const target = await loadDeliveryTarget(db, leased.event_id);
    if (!target) return 'no_event';
    if (!target.url || !target.secret) {
      await failDelivery(db, deliveryId, 'the webhook endpoint was removed');
      return 'given_up';
    }
    if (!filterAccepts(target.events, target.type)) {
      await failDelivery(db, deliveryId, `the webhook's events filter no longer accepts ${target.type}`);
      return 'given_up';
    }
    return this.attempt(deliveryId, target);
  }

  private async attempt(deliveryId: string, target: DeliveryTarget): Promise<DeliveryOutcome> {
    const { config, http, logger } = this.deps;
    const url = target.url!;
    const body = envelopeBody(target);
    const startedAt = new Date();
    const result = await http.post(url, body, {
      headers: { [SIGNATURE_HEADER]: signPayload(body, target.secret!) },
      timeoutMs: config.webhookTimeoutMs,
      maxResponseBytes: REPLY_BYTES_KEPT,
    });
    const recorded = await this.records.add({
      deliveryId,
      attempt: {
        url,
        startedAt,
        durationMs: result.durationMs,
        statusCode: result.status,
        ok: result.ok,
        error: result.error,
        errorCode: result.errorCode,
        responseBody: result.bodyText === '' ? null : result.bodyText.replace(/\u0000/g, '\uFFFD'),
      },
    });
    if (!recorded) return 'no_event';
    if (recorded.status === 'pending' && recorded.next_attempt_at) {
      await this.scheduleAt(deliveryId, recorded.next_attempt_at);
      logger.debug({ delivery_id: deliveryId, attempt: recorded.attempts, error: result.error }, 'webhook attempt failed; retry scheduled');
      return 'retry_scheduled';
    }
    if (recorded.status === 'failed') {
      logger.info({ delivery_id: deliveryId, attempts: recorded.attempts, error: result.error }, 'webhook delivery given up');
      return 'failed';
    }
    return 'succeeded';
  }

  private scheduleAt(deliveryId: string, dueAt: Date): Promise<void> {
    const due = dueAt.getTime();
    return enqueueDelivery(this.deps.queues, deliveryId, { jobId: jobId('deliver', deliveryId, 'at', due), delayMs: due - Date.now() });
  }

  /**
   * Sweep: events still undispatched after `olderThanMs` get their dispatch job again (added
   * when missing, retried when it failed). Returns how many were re-dispatched.
   */
  async redispatchLostEvents(olderThanMs = 30_000, limit = 1000): Promise<number> {
    const ids = await undispatchedEvents(this.deps.db, olderThanMs, limit);
    const queue = this.deps.queues.queue(QUEUE_NAMES.webhooks);
    let count = 0;
    // A job still waiting (a backlog) is left alone: re-adding it would be a no-op anyway.
    const redispatch = async (eventId: string): Promise<void> => {
      const id = jobId('dispatch', eventId);
      const job = await queue.getJob(id);
      if (!job) {
        await this.deps.queues.enqueue(QUEUE_NAMES.webhooks, 'dispatch', { event_id: eventId }, { jobId: id });
        count += 1;
      } else if (await job.isFailed()) {
        await job.retry();
        count += 1;
      }
    };
    for (let i = 0; i < ids.length; i += 50) await Promise.all(ids.slice(i, i + 50).map(redispatch));
    return count;
  }

  /**
   * Sweep: pending deliveries due more than `overdueMs` ago (their job was lost, or failed on
   * an infrastructure error) get a job now. The job id changes each minute so that a failed
   * one does not block the next sweep.
   */
  async resumeOverdueDeliveries(overdueMs = 30_000, limit = 1000): Promise<number> {
    const ids = await overdueDeliveries(this.deps.db, overdueMs, limit);
    const minute = Math.floor(Date.now() / 60_000);
    for (const deliveryId of ids) await enqueueDelivery(this.deps.queues, deliveryId, { jobId: jobId('deliver', deliveryId, 'sweep', minute) });
    return ids.length;
  }
}
