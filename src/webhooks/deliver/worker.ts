/**
 * The webhook worker (SPEC §7.2.2; notes/webhooks.md §C, §E.5): any number of them, in the
 * proxy's process or alone (`outrigger worker`), read the event stream through one consumer
 * group, each under its own consumer name. This file wires the worker's parts and makes one
 * delivery; the decisions are in README.md:
 * - the read loop and its event slots (read-loop.ts, event-slots.ts);
 * - what an attempt leaves behind: log entry, marker, retry or failure count (outcome.ts);
 * - retry jobs (retry-jobs.ts), throttling (throttle.ts), the group commit (group-commit.ts);
 * - heartbeat and reclaim of dead consumers' entries (reclaim.ts).
 * While the webhooks feature is not enabled the worker reads nothing and sends nothing;
 * entries and retries wait, untouched.
 */
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Logger } from '../../observability/logger.js';
import type { Metrics } from '../../observability/metrics.js';
import { entryDeliveryField, type RedisKeys } from '../../store/keys.js';
import { deliveryMarkerTtlMs, type WebhookAttempts } from '../delivery-contract.js';
import type { CapturedEvent } from '../event.js';
import { skippedLogEntry } from '../log-entry.js';
import type { WebhookLogStore } from '../logs/log-store.js';
import { SKIPPED_LOG_INTERVAL_MS, type SkippedWebhook } from '../stream-record.js';
import type { WebhookDocument } from '../webhook.js';
import { GroupCommit, WorkerKilled, type CommitPart, type MarkerAt } from './group-commit.js';
import { DeliveryOutcomes } from './outcome.js';
import { deliverOrFinalize, type Delivery, type EntryRef } from './delivery.js';
import { StreamReader, type EntryWork, type WorkerState } from './read-loop.js';
import { Reclaim } from './reclaim.js';
import { RetryJobs, retryJobMember } from './retry-jobs.js';
import { throttledUntil } from './throttle.js';
import { UnprocessableEvent, unprocessableLogEntry } from './unprocessable.js';

const PERSIST_GIVE_UP_MS = 120_000;
/** A failure count lives this long after the last failed event of its webhook version. */
const FAILURE_COUNT_TTL_MS = 30 * 86_400_000;

export interface WebhookWorkerOptions {
  redis: Redis;
  /** A connection of its own for XREADGROUP BLOCK, whose replies may take up to `blockMs`. */
  openBlockingConnection(blockMs: number): Redis;
  keys: RedisKeys;
  webhook(id: string): WebhookDocument | undefined;
  enabled(): boolean;
  deliverer: WebhookAttempts;
  logs: WebhookLogStore;
  logger: Logger;
  metrics: Metrics;
  retrySchedule: readonly number[];
  reclaimIdleMs: number;
  /** Events (and, apart, retry jobs) being delivered at most, default 64. */
  concurrency?: number;
  consumerName?: string;
  random?: () => number;
  /** Tests: runs before an entry is acknowledged (to crash a worker in that window). */
  beforeAck?(entryId: string): void | Promise<void>;
  /** Consecutive failed events after which a webhook is disabled (0: never); default 0. */
  disableAfterFailures?: number;
  /** Disables the webhook (called by the worker whose commit crossed the threshold). */
  onAutoDisable?(webhookId: string, version: string, failures: number): Promise<void>;
}

export class WebhookWorker implements EntryWork {
  readonly consumer: string;
  private readonly state: WorkerState = { running: false, killed: false };
  private readonly random: () => number;
  private readonly commits: GroupCommit;
  private readonly outcomes: DeliveryOutcomes;
  private readonly reader: StreamReader;
  private readonly retryJobs: RetryJobs;
  private readonly reclaim: Reclaim;

  constructor(private readonly o: WebhookWorkerOptions) {
    this.consumer = o.consumerName ?? `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
    const concurrency = o.concurrency ?? 64;
    this.random = o.random ?? Math.random;
    const { state } = this;
    this.outcomes = new DeliveryOutcomes({ ...o, random: this.random });
    this.commits = new GroupCommit({
      redis: o.redis,
      keys: o.keys,
      logs: o.logs,
      markerTtlMs: deliveryMarkerTtlMs(o.reclaimIdleMs),
      failureCountTtlMs: FAILURE_COUNT_TTL_MS,
      giveUpMs: PERSIST_GIVE_UP_MS,
      killed: () => state.killed,
      stopping: () => !state.running,
      onFailureCount: (webhookId, before, after) => this.outcomes.failuresCounted(webhookId, before, after),
    });
    this.reader = new StreamReader({ ...o, consumer: this.consumer, concurrency, state, work: this });
    this.retryJobs = new RetryJobs({
      ...o,
      concurrency,
      state,
      commits: this.commits,
      deliver: (job, member) => deliverOrFinalize(this, { event: job.event, webhookId: job.webhookId, condition: job.condition, attempt: job.attempt, jobMember: member }),
    });
    this.reclaim = new Reclaim({ ...o, consumer: this.consumer, state, reader: this.reader, retryJobs: this.retryJobs });
  }

  start(): void {
    if (this.state.running) return;
    this.state.running = true;
    this.reader.start();
    this.retryJobs.start(this.o.retrySchedule);
    this.reclaim.start();
  }

  /** Graceful: stop taking work, let in-flight deliveries finish and be acknowledged (bounded). */
  async stop(timeoutMs = 35_000): Promise<void> {
    if (!this.state.running) return;
    this.halt();
    const pending = [...this.reader.inflight.values(), ...this.retryJobs.inflight.values()];
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.allSettled(pending), new Promise((r) => (timer = setTimeout(r, timeoutMs)))]);
    clearTimeout(timer);
    await this.reader.ended();
    await this.retryJobs.release();
    await this.reclaim.leave();
  }

  /** A crash, for tests: stop at once; nothing more is written or acknowledged by this worker. */
  kill(): void {
    this.state.killed = true;
    this.halt();
  }

  get inFlight(): number {
    return this.reader.inflight.size + this.retryJobs.inflight.size;
  }

  /** Takes no more work: ends the read, stops the timers, drops the blocking connection. */
  private halt(): void {
    this.state.running = false;
    this.reader.halt();
    this.retryJobs.stop();
    this.reclaim.stop();
  }

  acknowledge(id: string, markers: boolean): Promise<void> {
    return this.commits.commit(markers ? { acks: [id], dropMarkers: [this.o.keys.entryDeliveries(id)] } : { acks: [id] });
  }

  /**
   * Commits a delivery's writes; for an entry's only delivery (`entry.ack`), in the same commit as
   * the entry's acknowledgement and without the delivery's marker (which only guards the window
   * between the two commits).
   */
  private commitCarrying(part: CommitPart, entry: EntryRef | undefined): Promise<void> {
    if (!entry?.ack) return this.commits.commit(part);
    part.markers = undefined;
    part.acks = [entry.id];
    return this.commits.commit(part).then(() => {
      entry.done = true;
    });
  }

  /** Where a delivery's marker goes: a field of its stream entry's hash for a first attempt from an entry, else its own key. */
  private markerAt(eventId: string, webhookId: string, entry: EntryRef | undefined): MarkerAt {
    if (entry && !entry.ack) return { key: this.o.keys.entryDeliveries(entry.id), field: entryDeliveryField(eventId, webhookId) };
    return { key: this.o.keys.deliveryDone(eventId, webhookId) };
  }

  async logSkipped(event: CapturedEvent, skipped: SkippedWebhook): Promise<void> {
    const webhook = this.o.webhook(skipped.id);
    if (!webhook) return;
    if (!skipped.always) {
      // Across replicas: at most one skipped entry per webhook per 10 s.
      const gate = await this.o.redis.set(this.o.keys.skippedLogGate(skipped.id), '1', 'PX', SKIPPED_LOG_INTERVAL_MS, 'NX');
      if (gate !== 'OK') return;
    }
    await this.commits.commit({ logs: [skippedLogEntry(event, webhook, skipped.reason)] }).catch((error: unknown) => {
      if (!(error instanceof UnprocessableEvent)) throw error;
      this.o.logger.warn({ err: error.message, webhook: webhook._id }, 'a skipped entry could not be logged');
    });
  }

  /**
   * A delivery that failed for a reason other than Redis being away (a poison input, a bug) ends
   * as a `failed` entry with the reason, so the event is acknowledged instead of retried forever.
   */
  async finalizeUnprocessable(delivery: Delivery, error: unknown): Promise<void> {
    if (error instanceof WorkerKilled || (!(error instanceof UnprocessableEvent) && this.o.redis.status !== 'ready')) throw error;
    const { event, webhookId, jobMember, entry } = delivery;
    const webhook = this.o.webhook(webhookId);
    if (!webhook) return;
    const log = unprocessableLogEntry(delivery, webhook, error);
    this.o.logger.error({ err: log.summary.error, webhook: webhookId, event: event.id }, 'a webhook event could not be processed; logged as failed');
    const marker = this.markerAt(event.id, webhookId, entry);
    await this.commitCarrying({ logs: [log], markers: [[marker.key, 'failed', marker.field]], retryRemove: jobMember ? [jobMember] : undefined }, entry);
    this.o.metrics.webhookDeliveries.inc({ type: webhook.type, outcome: 'failed' });
  }

  /** One delivery of an event to one webhook (from the stream, or a retry job's `jobMember`). */
  async deliver(delivery: Delivery): Promise<void> {
    const { event, webhookId, condition, attempt, jobMember, entry } = delivery;
    const webhook = this.o.webhook(webhookId);
    const done = jobMember ? [jobMember] : undefined;
    if (!webhook || !webhook.enabled) {
      // Deleted or disabled since the event matched: nothing fires, a pending retry is dropped.
      if (jobMember) await this.commits.commit({ retryRemove: done });
      return;
    }
    const marker = this.markerAt(event.id, webhookId, entry);
    if (webhook.maxPerSecond) {
      const waitUntil = await throttledUntil(this.o.redis, this.o.keys, webhookId, webhook.maxPerSecond, this.random);
      if (waitUntil !== null) {
        // Over the webhook's rate: the delivery waits in the retry set, its attempt unused.
        const member = retryJobMember(event, webhookId, attempt, condition, true);
        await this.commitCarrying({ markers: [[marker.key, 'retry', marker.field]], retryRemove: done, retryAdd: [[waitUntil, member]] }, entry);
        this.o.metrics.webhookDeliveries.inc({ type: webhook.type, outcome: 'throttled' });
        return;
      }
    }
    const result = await this.o.deliverer.attempt(webhook, event, { attempt, condition });
    if (this.state.killed) throw new WorkerKilled();
    const part = this.outcomes.settle(webhook, delivery, marker, done, result);
    await this.commitCarrying(part, entry);
    this.outcomes.report(webhook, event, attempt, result.entry, part.retryAdd !== undefined);
  }
}
