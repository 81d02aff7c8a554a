/**
 * The webhook worker (SPEC §7.2.2; notes/webhooks.md §C, §E.5): any number of them, in the
 * proxy's process or alone (`outrigger worker`), read the event stream through one consumer
 * group, each under its own consumer name.
 *
 * - Every matching webhook of an event is delivered in parallel; events run in parallel too (up
 *   to `concurrency`), so a slow target holds one slot, never the others.
 * - Writes go through a group commit (group-commit.ts): the deliveries that finish while one
 *   MULTI is in flight share the next one, with their log ids, acknowledgements and retry jobs
 *   merged into one command per kind. The markers of a read batch are read with one MGET.
 * - An entry is acknowledged (XACK + XDEL) only once every delivery of it is final or durably
 *   scheduled for a retry: the log entry, the `deliveryDone` marker and the retry job commit
 *   before the acknowledgement (in an earlier MULTI). An entry with a single delivery to make
 *   (a lone event with one matching webhook) commits its log entry, retry job and
 *   acknowledgement in one MULTI instead, without a marker: all of them land or none does, so
 *   there is no window to guard.
 * - An entry of a batch of events (stream-record.ts version 4) is read whole; each of its
 *   events takes an event slot (`concurrency` counts events, event-slots.ts), each delivery
 *   commits with its marker, and the entry is acknowledged after the last one. A worker that
 *   dies halfway leaves the entry pending: whoever reclaims it skips every delivery whose
 *   marker exists, so only the unfinished ones are sent again.
 * - Dead workers: each worker renews a key with a short TTL (`webhookWorkerAlive`, every 1.5 s,
 *   5 s TTL). Every 2 s a worker lists the group's consumers with pending entries (XPENDING) and
 *   claims (XCLAIM, min idle 1 s) the entries of those whose key has expired, so a killed
 *   worker's events are delivered again within seconds. A live worker's key never expires, so
 *   its slow deliveries are never taken. As a last resort (a consumer whose key exists but who
 *   stopped working), entries idle `reclaimIdleMs` are reclaimed with XAUTOCLAIM; a live worker
 *   resets its in-flight entries' idle time (XCLAIM JUSTID) so that never hits a slow delivery.
 *   A reclaimed entry skips every webhook whose `deliveryDone` marker exists: nothing is sent
 *   twice after a success, and a delivery already handed to the retry schedule is left to it.
 *   The same sweep takes back this worker's own orphans (entries Redis handed it whose read
 *   reply was lost with a connection), so those wait seconds, not `reclaimIdleMs`.
 * - Retries live in a sorted set scored by due time, with the webhook's own `retrySchedule` or
 *   `webhooks.retrySchedule`. A worker leases due jobs with one Lua script (re-scoring them
 *   `reclaimIdleMs` ahead, renewed while it works), so a job of a dead worker becomes due again
 *   instead of being lost, and jobs survive any restart.
 * - Failing targets: consecutive events that ended `failed` are counted per webhook version
 *   (any write of the webhook, re-enabling included, starts a new count); at
 *   `disableAfterFailures` the webhook is disabled (`onAutoDisable`).
 * - Throttling: a webhook with `maxPerSecond` starts at most that many deliveries per second
 *   (one counter per second in Redis, across workers); the excess waits in the retry set, spread
 *   over the following seconds, without using an attempt.
 * - While the webhooks feature is not enabled the worker reads nothing and sends nothing;
 *   entries and retries wait, untouched.
 */
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Logger } from '../../observability/logger.js';
import type { Metrics } from '../../observability/metrics.js';
import type { RedisKeys } from '../../store/keys.js';
import { deliveryMarkerTtlMs, type RetryJob, type WebhookAttempts } from '../delivery-contract.js';
import type { CapturedEvent } from '../event.js';
import { skippedLogEntry } from '../log-entry.js';
import type { WebhookLogStore } from '../logs/log-store.js';
import { parseRetryDelay } from '../../config/retry-schedule.js';
import { nextRetryDelayMs } from './retry-policy.js';
import { GroupCommit, WorkerKilled, type CommitPart } from './group-commit.js';
import { decodeStreamEntry, isNewerEntry, SKIPPED_LOG_INTERVAL_MS, type SkippedWebhook, type StreamRecord } from '../stream-record.js';
import type { WebhookDocument } from '../webhook.js';
import { backoffMs } from '../../util/backoff.js';
import { UnprocessableEvent, unprocessableLogEntry } from './unprocessable.js';
import { EventSlots } from './event-slots.js';
import { leaseDueRetries } from '../../store/scripts/lease-due-retries.js';
import { countThrottledDelivery } from '../../store/scripts/count-throttled-delivery.js';


const PERSIST_GIVE_UP_MS = 120_000;
const BLOCK_MS = 2000;
/** How long the read loop waits for half of the event slots to be free before reading fewer. */
const READ_BATCH_WAIT_MS = 5;
const STOPPED = Symbol('stopped');
/** The alive key: renewed every HEARTBEAT_MS, gone ALIVE_TTL_MS after the last renewal. */
export const HEARTBEAT_MS = 1500;
export const ALIVE_TTL_MS = 5000;
/** How often a worker looks for consumers whose alive key expired. */
const DEAD_SWEEP_MS = 2000;
/** An entry must be this idle to be claimed from a dead consumer (so two sweepers never both take it). */
const DEAD_CLAIM_MIN_IDLE_MS = 1000;
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

/** An entry's acknowledgement handed to its only delivery, to commit with it; `done` once it did. */
interface AckCarrier {
  id: string;
  done: boolean;
}

/** Entries are read as bytes: a body field reaches `captureBody` exactly as the proxy captured it. */
type StreamEntry = [id: string, fields: Buffer[] | null];
type RawStreamEntry = [id: Buffer | string, fields: Buffer[] | null];

export class WebhookWorker {
  readonly consumer: string;
  private running = false;
  private killed = false;
  private groupReady = false;
  private blocking: Redis | null = null;
  private loop: Promise<void> | null = null;
  /**
   * Ends the read loop's current wait with STOPPED (stop() or kill()). One slot, set per read: a
   * Promise.race against one long-lived "stopped" promise would leave a reaction on it at every
   * read (every 2 s when idle), kept until the worker stops.
   */
  private endRead: ((value: typeof STOPPED) => void) | null = null;
  private janitorTimer: NodeJS.Timeout | null = null;
  private retryTimer: NodeJS.Timeout | null = null;
  private heartbeatTimer: NodeJS.Timeout | null = null;
  private sweepTimer: NodeJS.Timeout | null = null;
  private sweepBusy = false;
  private janitorBusy = false;
  private retryBusy = false;
  /** Entries read and not acknowledged yet, by id (their events may still wait for a slot). */
  private readonly inflight = new Map<string, Promise<void>>();
  /** What `concurrency` counts: events being delivered. */
  private readonly slots: EventSlots;
  /** Events per entry in recent reads (a running mean), to turn free slots into a read COUNT. */
  private eventsPerEntry = 1;
  /** The read loop waiting for free event slots. */
  private slotWaiter: { need: number; wake(): void } | null = null;
  private readonly inflightJobs = new Map<string, Promise<void>>();
  private readonly concurrency: number;
  private readonly random: () => number;
  private readonly commits: GroupCommit;
  private readonly schedules = new WeakMap<WebhookDocument, readonly number[]>();
  /** Entries of a newer version, left pending (see `leftForNewer`). */
  private readonly newerEntries = new Set<string>();
  private newerWarnedAt = 0;

  constructor(private readonly o: WebhookWorkerOptions) {
    this.consumer = o.consumerName ?? `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
    this.concurrency = o.concurrency ?? 64;
    this.random = o.random ?? Math.random;
    this.slots = new EventSlots(this.concurrency, () => {
      const waiter = this.slotWaiter;
      if (waiter && this.slots.free >= waiter.need) waiter.wake();
    });
    this.commits = new GroupCommit({
      redis: o.redis,
      keys: o.keys,
      logs: o.logs,
      markerTtlMs: deliveryMarkerTtlMs(o.reclaimIdleMs),
      failureCountTtlMs: FAILURE_COUNT_TTL_MS,
      giveUpMs: PERSIST_GIVE_UP_MS,
      killed: () => this.killed,
      stopping: () => !this.running,
      onFailureCount: (webhookId, before, after) => this.failuresCounted(webhookId, before, after),
    });
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.blocking = this.o.openBlockingConnection(BLOCK_MS);
    this.loop = this.readLoop();
    const janitorMs = Math.max(50, Math.floor(this.o.reclaimIdleMs / 3));
    this.janitorTimer = setInterval(() => void this.janitor(), janitorMs);
    this.janitorTimer.unref();
    const shortest = Math.min(...this.o.retrySchedule, 4000);
    this.retryTimer = setInterval(() => void this.drainRetries(), Math.max(50, Math.min(1000, Math.floor(shortest / 4))));
    this.retryTimer.unref();
    void this.heartbeat();
    this.heartbeatTimer = setInterval(() => void this.heartbeat(), HEARTBEAT_MS);
    this.heartbeatTimer.unref();
    this.sweepTimer = setInterval(() => void this.sweepDeadConsumers(), DEAD_SWEEP_MS);
    this.sweepTimer.unref();
  }

  /** Graceful: stop taking work, let in-flight deliveries finish and be acknowledged (bounded). */
  async stop(timeoutMs = 35_000): Promise<void> {
    if (!this.running) return;
    this.halt();
    const pending = [...this.inflight.values(), ...this.inflightJobs.values()];
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.allSettled(pending), new Promise((r) => (timer = setTimeout(r, timeoutMs)))]);
    clearTimeout(timer);
    await this.loop?.catch(() => {});
    await this.forgetConsumerIfIdle().catch(() => {});
    await this.o.redis.del(this.o.keys.webhookWorkerAlive(this.consumer)).catch(() => {});
  }

  /** A crash, for tests: stop at once; nothing more is written or acknowledged by this worker. */
  kill(): void {
    this.killed = true;
    this.halt();
  }

  get inFlight(): number {
    return this.inflight.size + this.inflightJobs.size;
  }

  /** Takes no more work: ends the read, stops the timers, drops the blocking connection. */
  private halt(): void {
    this.running = false;
    this.endRead?.(STOPPED);
    this.slotWaiter?.wake(); // the read loop may be waiting for slots that a stuck delivery holds
    for (const timer of [this.janitorTimer, this.retryTimer, this.heartbeatTimer, this.sweepTimer]) if (timer) clearInterval(timer);
    this.janitorTimer = this.retryTimer = this.heartbeatTimer = this.sweepTimer = null;
    this.blocking?.disconnect();
  }

  // ----------------------------------------------------------------------------------------------
  // Reading the stream

  private async ensureGroup(): Promise<void> {
    try {
      // From the start of the stream: events written before any worker existed are delivered too.
      await this.o.redis.xgroup('CREATE', this.o.keys.events, this.o.keys.eventsGroup, '0', 'MKSTREAM');
    } catch (error) {
      if (!/BUSYGROUP/.test((error as Error).message)) throw error;
    }
    this.groupReady = true;
  }

  private async readLoop(): Promise<void> {
    let failures = 0;
    while (this.running) {
      if (!this.o.enabled()) {
        await sleep(250);
        continue;
      }
      let free = this.slots.free;
      const batch = Math.max(1, Math.floor(this.concurrency / 2));
      if (free < batch) {
        // Read in batches, not one entry per freed slot: every read, marker MGET and commit is a
        // round trip and a socket write whatever its size. Wait for one slot at least, then up
        // to READ_BATCH_WAIT_MS for half of them (so slow targets holding slots delay reads by
        // that much at most).
        await this.slotsFree(free <= 0 ? 1 : batch, free <= 0 ? null : READ_BATCH_WAIT_MS);
        if (free <= 0 || !this.running) continue;
        free = this.slots.free;
      }
      let reply: unknown;
      try {
        if (!this.groupReady) await this.ensureGroup();
        if (!this.running) break; // stopped while the group was being made: no read would be ended
        const read = this.blocking!.callBuffer(
          'XREADGROUP', 'GROUP', this.o.keys.eventsGroup, this.consumer, 'COUNT', this.entriesFor(free), 'BLOCK', BLOCK_MS, 'STREAMS', this.o.keys.events, '>',
        );
        // A read queued while the connection was reconnecting is never settled by the disconnect
        // of stop() (ioredis keeps it queued): the stop signal ends the wait instead.
        reply = await new Promise<unknown>((resolve, reject) => {
          this.endRead = resolve;
          read.then(resolve, reject);
        }).finally(() => (this.endRead = null));
        if (reply === STOPPED) {
          read.catch(() => {});
          break;
        }
        failures = 0;
      } catch (error) {
        if (!this.running) break;
        const message = (error as Error).message;
        if (/NOGROUP/.test(message)) this.groupReady = false; // Redis lost its data: create the group again
        failures++;
        if (failures === 1 || failures % 30 === 0) this.o.logger.warn({ err: message }, 'webhook worker cannot read the event stream; retrying');
        await sleep(backoffMs(failures, 100, 2000));
        continue;
      }
      this.handleEntries(streamEntries(reply));
    }
  }

  /**
   * Starts the entries of one read (or claim): their delivery markers are read with one MGET for
   * the whole batch, then each entry runs on its own.
   */
  private handleEntries(entries: StreamEntry[]): void {
    const fresh: StreamEntry[] = [];
    const decoded: StreamRecord[][] = [];
    let events = 0;
    for (const entry of entries) {
      const [id, fields] = entry;
      if (this.inflight.has(id) || this.newerEntries.has(id)) continue;
      const records = decodeStreamEntry(fields);
      if (records === null && this.leftForNewer(id, fields)) continue;
      fresh.push(entry);
      decoded.push(records ?? []);
      events += Math.max(1, records?.length ?? 0);
    }
    if (fresh.length === 0) return;
    this.eventsPerEntry = 0.75 * this.eventsPerEntry + 0.25 * (events / fresh.length);
    const markerKeys: string[] = [];
    for (const records of decoded) for (const record of records) for (const m of record.matched) markerKeys.push(this.o.keys.deliveryDone(record.event.id, m.id));
    const markers: Promise<Array<string | null>> = markerKeys.length > 0 ? this.o.redis.mget(markerKeys) : Promise.resolve([]);
    let offset = 0;
    fresh.forEach(([id], i) => {
      const records = decoded[i]!;
      const from = offset;
      let count = 0;
      for (const record of records) count += record.matched.length;
      offset += count;
      // Only entries that read their markers get a share of the MGET: a share nobody awaits would be an unhandled rejection.
      const share = count > 0 ? markers.then((all) => all.slice(from, from + count)) : Promise.resolve([]);
      const work = this.processEntry(id, records, share)
        .catch((error: unknown) => {
          if (error instanceof WorkerKilled) return;
          this.o.logger.warn({ err: String(error), entry: id }, 'a webhook event stays pending; it will be reclaimed and tried again');
        })
        .finally(() => this.inflight.delete(id));
      this.inflight.set(id, work);
    });
  }

  /** How many entries to read or claim for `free` event slots (at least one). */
  private entriesFor(free: number): number {
    return Math.max(1, Math.floor(free / Math.max(1, this.eventsPerEntry)));
  }

  /**
   * An entry that did not decode because it is of a newer version than this worker reads (a
   * proxy upgraded first) is left pending, not acknowledged as not ours: once idle
   * `reclaimIdleMs`, a worker that reads it claims it. This worker's sweep for its own orphans
   * passes over it, so it does not claim it back every sweep.
   */
  private leftForNewer(id: string, fields: Buffer[] | null): boolean {
    if (!isNewerEntry(fields)) return false;
    if (this.newerEntries.size >= 10_000) this.newerEntries.clear();
    this.newerEntries.add(id);
    const now = Date.now();
    if (now - this.newerWarnedAt >= 10_000) {
      this.newerWarnedAt = now;
      this.o.logger.warn({ entry: id }, 'a webhook event was written by a newer Outrigger than this worker; it is left for an upgraded worker (upgrade the workers)');
    }
    return true;
  }

  /** Resolves once `need` event slots are free, or after `timeoutMs` (null: no limit). */
  private slotsFree(need: number, timeoutMs: number | null): Promise<void> {
    return new Promise((resolve) => {
      const wake = () => {
        if (timer) clearTimeout(timer);
        this.slotWaiter = null;
        resolve();
      };
      const timer = timeoutMs === null ? null : setTimeout(wake, timeoutMs);
      this.slotWaiter = { need, wake };
    });
  }

  /**
   * An entry's events, each delivered to its matching webhooks; the entry is acknowledged once
   * every delivery of every event is final or scheduled for a retry. Each event holds a slot
   * while its deliveries run.
   */
  private async processEntry(id: string, records: StreamRecord[], markersOf: Promise<Array<string | null>>): Promise<void> {
    if (records.length > 0) {
      const markers = await markersOf; // [] when the entry has no delivery to make
      const only = records.length === 1 ? records[0]! : null;
      // A marker means an earlier run of this entry finished that delivery (or scheduled its retry).
      const due = only ? only.matched.filter((_, i) => markers[i] == null) : [];
      // The usual entry, one event with one delivery and nothing else to log: its commit
      // acknowledges the entry too (one MULTI: the log entry, the retry job and the
      // acknowledgement land together or not at all), so it needs no marker and no second
      // commit. `beforeAck` (tests) wants the window between the two, so it keeps them apart.
      if (only && due.length === 1 && only.skipped.length === 0 && !this.o.beforeAck) {
        const m = due[0]!;
        const condition = { matched: true, reason: m.reason };
        const ack: AckCarrier = { id, done: false };
        await this.inSlot(() => this.deliver(only.event, m.id, condition, 1, null, ack).catch((e: unknown) => this.finalizeUnprocessable(only.event, m.id, condition, 1, null, e, ack)));
        if (ack.done) return;
      } else {
        let offset = 0;
        const events = records.map((record) => {
          const from = offset;
          offset += record.matched.length;
          return this.inSlot(() => this.processEvent(record, markers.slice(from, offset)));
        });
        await allSettledOrThrow(events);
      }
    }
    if (this.killed) throw new WorkerKilled();
    await this.o.beforeAck?.(id);
    if (this.killed) throw new WorkerKilled();
    await this.commits.commit({ acks: [id] });
  }

  /** Runs one event's work in an event slot, waiting for one if none is free. */
  private async inSlot(work: () => Promise<void>): Promise<void> {
    const wait = this.slots.acquire();
    if (wait) await wait;
    try {
      if (this.killed) throw new WorkerKilled();
      await work();
    } finally {
      this.slots.release();
    }
  }

  /** One event of an entry that has more to do than one delivery: each delivery commits with its marker. */
  private async processEvent(record: StreamRecord, markers: Array<string | null>): Promise<void> {
    const tasks: Array<Promise<void>> = record.skipped.map((s) => this.logSkipped(record.event, s));
    record.matched.forEach((m, i) => {
      if (markers[i] != null) return;
      const condition = { matched: true, reason: m.reason };
      tasks.push(this.deliver(record.event, m.id, condition, 1, null).catch((e: unknown) => this.finalizeUnprocessable(record.event, m.id, condition, 1, null, e)));
    });
    await allSettledOrThrow(tasks);
  }

  /**
   * Commits a delivery's writes; with `ack`, in the same commit as the entry's acknowledgement and
   * without the delivery's marker (which only guards the window between the two commits).
   */
  private async commitCarrying(part: CommitPart, ack: AckCarrier | undefined): Promise<void> {
    if (!ack) return this.commits.commit(part);
    await this.commits.commit({ ...part, markers: undefined, acks: [ack.id] });
    ack.done = true;
  }

  private async logSkipped(event: CapturedEvent, skipped: SkippedWebhook): Promise<void> {
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
  private async finalizeUnprocessable(
    event: CapturedEvent,
    webhookId: string,
    condition: RetryJob['condition'],
    attempt: number,
    jobMember: string | null,
    error: unknown,
    ack?: AckCarrier,
  ): Promise<void> {
    if (error instanceof WorkerKilled || (!(error instanceof UnprocessableEvent) && this.o.redis.status !== 'ready')) throw error;
    const webhook = this.o.webhook(webhookId);
    if (!webhook) return;
    const entry = unprocessableLogEntry(event, webhook, condition, attempt, error);
    this.o.logger.error({ err: entry.summary.error, webhook: webhookId, event: event.id }, 'a webhook event could not be processed; logged as failed');
    await this.commitCarrying({ logs: [entry], markers: [[this.o.keys.deliveryDone(event.id, webhookId), 'failed']], retryRemove: jobMember ? [jobMember] : undefined }, ack);
    this.o.metrics.webhookDeliveries.inc({ type: webhook.type, outcome: 'failed' });
  }

  // ----------------------------------------------------------------------------------------------
  // Delivering

  private async deliver(
    event: CapturedEvent,
    webhookId: string,
    condition: RetryJob['condition'],
    attempt: number,
    jobMember: string | null,
    ack?: AckCarrier,
  ): Promise<void> {
    const { keys } = this.o;
    const webhook = this.o.webhook(webhookId);
    const done = jobMember ? [jobMember] : undefined;
    if (!webhook || !webhook.enabled) {
      // Deleted or disabled since the event matched: nothing fires, a pending retry is dropped.
      if (jobMember) await this.commits.commit({ retryRemove: done });
      return;
    }
    const marker = keys.deliveryDone(event.id, webhookId);
    if (webhook.maxPerSecond) {
      const waitUntil = await this.throttle(webhookId, webhook.maxPerSecond);
      if (waitUntil !== null) {
        // Over the webhook's rate: the delivery waits in the retry set, its attempt unused.
        const job: RetryJob = { v: 1, job: randomBytes(8).toString('hex'), eventId: event.id, webhookId, attempt, throttled: true, condition, event };
        await this.commitCarrying({ markers: [[marker, 'retry']], retryRemove: done, retryAdd: [[waitUntil, JSON.stringify(job)]] }, ack);
        this.o.metrics.webhookDeliveries.inc({ type: webhook.type, outcome: 'throttled' });
        return;
      }
    }
    const result = await this.o.deliverer.attempt(webhook, event, { attempt, condition });
    if (this.killed) throw new WorkerKilled();

    let nextAt: number | null = null;
    if (result.retryable) {
      const delay = nextRetryDelayMs(this.scheduleOf(webhook), attempt, result.retryAfterMs, this.random);
      if (delay !== null) nextAt = Date.now() + delay;
    }
    const entry = result.entry;
    if (nextAt !== null) entry.nextAttemptAt = { $date: nextAt };
    const part: CommitPart = { logs: [entry], markers: [[marker, nextAt === null ? entry.status : 'retry']], retryRemove: done };
    if (nextAt !== null) {
      const nextJob: RetryJob = { v: 1, job: randomBytes(8).toString('hex'), eventId: event.id, webhookId, attempt: attempt + 1, condition, event };
      part.retryAdd = [[nextAt, JSON.stringify(nextJob)]];
    } else if (this.o.disableAfterFailures) {
      part.outcome = { webhookId, counterKey: keys.webhookFailures(webhookId, webhookVersion(webhook)), failed: entry.status === 'failed' };
    }
    await this.commitCarrying(part, ack);
    this.o.metrics.webhookDeliveries.inc({ type: webhook.type, outcome: nextAt !== null ? 'retry-scheduled' : entry.status });
    if (nextAt === null && entry.status === 'failed') {
      const { target, statusCode, error } = entry.summary;
      // The target without its query string, which may carry a token.
      this.o.logger.info({ webhook: webhookId, event: event.id, attempt, target: target.split('?')[0], statusCode, err: error }, 'webhook delivery ended failed (no retry left)');
    }
  }

  /** The webhook's own retry schedule, or the configured one; parsed once per webhook version. */
  private scheduleOf(webhook: WebhookDocument): readonly number[] {
    if (!Array.isArray(webhook.retrySchedule)) return this.o.retrySchedule;
    let schedule = this.schedules.get(webhook);
    if (!schedule) {
      schedule = webhook.retrySchedule.map(parseRetryDelay).filter((ms): ms is number => ms !== null);
      this.schedules.set(webhook, schedule);
    }
    return schedule;
  }

  /** Null when a delivery may start now; else when it may be tried (the excess of a second spread over the next ones). */
  private async throttle(webhookId: string, perSecond: number): Promise<number | null> {
    const now = Date.now();
    const second = Math.floor(now / 1000);
    const count = Number(await countThrottledDelivery.run(this.o.redis, [this.o.keys.webhookThrottle(webhookId, second)], []));
    if (count <= perSecond) return null;
    const secondsAhead = 1 + Math.floor((count - perSecond - 1) / perSecond);
    return (second + secondsAhead) * 1000 + Math.floor(this.random() * 1000);
  }

  private failuresCounted(webhookId: string, before: number, after: number): void {
    const limit = this.o.disableAfterFailures ?? 0;
    if (limit <= 0 || before >= limit || after < limit) return;
    const webhook = this.o.webhook(webhookId);
    if (!webhook || !webhook.enabled || !this.o.onAutoDisable) return;
    this.o.onAutoDisable(webhookId, webhookVersion(webhook), after).catch((error: unknown) =>
      this.o.logger.error({ err: String(error), webhook: webhookId }, 'could not disable a failing webhook'),
    );
  }

  // ----------------------------------------------------------------------------------------------
  // Retries

  private async drainRetries(): Promise<void> {
    if (!this.running || this.retryBusy || !this.o.enabled()) return;
    const free = this.concurrency - this.inflightJobs.size;
    if (free <= 0) return;
    this.retryBusy = true;
    try {
      const now = Date.now();
      const members = (await leaseDueRetries.run(this.o.redis, [this.o.keys.retrySchedule], [now, now + this.o.reclaimIdleMs, free])) as string[];
      for (const member of members) {
        if (this.inflightJobs.has(member) || !this.running) continue;
        const work = this.processJob(member)
          .catch((error: unknown) => {
            if (error instanceof WorkerKilled) return;
            this.o.logger.warn({ err: String(error) }, 'a webhook retry failed to complete; it will be leased again');
          })
          .finally(() => this.inflightJobs.delete(member));
        this.inflightJobs.set(member, work);
      }
    } catch {
      // Redis unreachable: the next tick tries again.
    } finally {
      this.retryBusy = false;
    }
  }

  private async processJob(member: string): Promise<void> {
    let job: RetryJob;
    try {
      job = JSON.parse(member) as RetryJob;
      if (job.v !== 1 || !job.event) throw new Error('not a retry job');
    } catch {
      this.o.logger.error({ member: member.slice(0, 200) }, 'dropping an unreadable webhook retry job');
      await this.commits.commit({ retryRemove: [member] });
      return;
    }
    const marker = await this.o.redis.get(this.o.keys.deliveryDone(job.eventId, job.webhookId));
    if (marker === 'success' || marker === 'failed') {
      await this.commits.commit({ retryRemove: [member] });
      return;
    }
    await this.deliver(job.event, job.webhookId, job.condition, job.attempt, member).catch((e: unknown) =>
      this.finalizeUnprocessable(job.event, job.webhookId, job.condition, job.attempt, member, e),
    );
  }

  // ----------------------------------------------------------------------------------------------
  // Heartbeat and reclaim

  private async janitor(): Promise<void> {
    if (!this.running || this.janitorBusy) return;
    this.janitorBusy = true;
    const { redis, keys } = this.o;
    try {
      if (this.inflight.size > 0) {
        await redis.call('XCLAIM', keys.events, keys.eventsGroup, this.consumer, 0, ...this.inflight.keys(), 'JUSTID');
      }
      if (this.inflightJobs.size > 0) {
        const leaseUntil = Date.now() + this.o.reclaimIdleMs;
        const multi = redis.multi();
        for (const member of this.inflightJobs.keys()) multi.zadd(keys.retrySchedule, 'XX', leaseUntil, member);
        await multi.exec();
      }
      if (!this.o.enabled() || !this.groupReady) return;
      let cursor = '0-0';
      // Entries may hold hundreds of events each: take no more than the free event slots cover.
      for (let round = 0; round < 10 && this.running && this.slots.free > 0; round++) {
        const count = Math.min(50, this.entriesFor(this.slots.free));
        const reply = (await redis.callBuffer('XAUTOCLAIM', keys.events, keys.eventsGroup, this.consumer, this.o.reclaimIdleMs, cursor, 'COUNT', count)) as [
          Buffer,
          RawStreamEntry[],
          Buffer[]?,
        ];
        const claimed: StreamEntry[] = [];
        for (const [rawId, fields] of reply[1] ?? []) {
          const id = String(rawId);
          if (this.inflight.has(id)) continue;
          if (!fields) {
            await redis.xack(keys.events, keys.eventsGroup, id);
            continue;
          }
          this.o.logger.info({ entry: id }, 'reclaimed a webhook event from a worker that stopped answering');
          claimed.push([id, fields]);
        }
        this.handleEntries(claimed);
        cursor = String(reply[0]);
        if (cursor === '0-0') break;
      }
    } catch {
      // Redis unreachable, or the group is gone: the read loop recreates it; try again next tick.
    } finally {
      this.janitorBusy = false;
    }
  }

  /** Renews this worker's alive key (key expiry is the failure detector: no key, a dead worker). */
  private async heartbeat(): Promise<void> {
    if (!this.running) return;
    await this.o.redis.set(this.o.keys.webhookWorkerAlive(this.consumer), '1', 'PX', ALIVE_TTL_MS).catch(() => {});
  }

  /**
   * Claims the pending entries of consumers whose alive key expired (killed, crashed, cut off).
   * XCLAIM's minimum idle time makes a claim exclusive: once one worker took an entry, its idle
   * time is 0 and the others' XCLAIMs pass over it.
   *
   * The same summary shows this worker's own orphans: entries Redis handed to this consumer whose
   * reply never arrived (a connection lost between XREADGROUP or XCLAIM and its reply: a
   * restart, a failover, a stalled socket reset). Redis counts them as ours, so neither the dead
   * sweep nor another worker's XAUTOCLAIM would take them before `reclaimIdleMs`; they are taken
   * back here within a sweep or two instead.
   */
  private async sweepDeadConsumers(): Promise<void> {
    if (!this.running || this.sweepBusy || !this.o.enabled() || !this.groupReady) return;
    this.sweepBusy = true;
    const { redis, keys } = this.o;
    try {
      const summary = (await redis.call('XPENDING', keys.events, keys.eventsGroup)) as [number, unknown, unknown, Array<[string, string]> | null];
      const consumers = summary?.[3] ?? [];
      const own = consumers.find(([name]) => String(name) === this.consumer);
      if (own && Number(own[1]) > this.inflight.size) await this.claimPendingOf(this.consumer);
      const others = consumers.map(([name]) => String(name)).filter((name) => name !== this.consumer);
      if (others.length === 0) return;
      const alive = await redis.mget(others.map((name) => keys.webhookWorkerAlive(name)));
      for (let i = 0; i < others.length && this.running; i++) {
        if (alive[i] != null) continue;
        const claimed = await this.claimPendingOf(others[i]!);
        if (claimed < 0) return;
        if (claimed > 0) this.o.logger.info({ consumer: others[i], entries: claimed }, 'a webhook worker stopped heartbeating; delivering its pending events');
      }
    } catch {
      // Redis unreachable: the next sweep tries again.
    } finally {
      this.sweepBusy = false;
    }
  }

  /**
   * Claims (and starts) the entries of `consumer` idle at least DEAD_CLAIM_MIN_IDLE_MS that this
   * worker is not already running; the idle floor also passes over entries whose read reply is
   * still on its way. Returns how many were claimed, or -1 when no event slot is free.
   */
  private async claimPendingOf(consumer: string): Promise<number> {
    const { redis, keys } = this.o;
    const free = this.slots.free;
    if (free <= 0) return -1;
    const pending = (await redis.call('XPENDING', keys.events, keys.eventsGroup, 'IDLE', DEAD_CLAIM_MIN_IDLE_MS, '-', '+', Math.min(this.entriesFor(free), 100), consumer)) as Array<[string]>;
    const ids = pending.map(([id]) => String(id)).filter((id) => !this.inflight.has(id) && !this.newerEntries.has(id));
    if (ids.length === 0) return 0;
    const reply = (await redis.callBuffer('XCLAIM', keys.events, keys.eventsGroup, this.consumer, DEAD_CLAIM_MIN_IDLE_MS, ...ids)) as RawStreamEntry[];
    const claimed: StreamEntry[] = [];
    for (const [rawId, fields] of reply ?? []) if (rawId) claimed.push([String(rawId), fields]);
    if (consumer === this.consumer && claimed.length > 0) this.o.logger.info({ entries: claimed.length }, 'took back webhook events whose read reply was lost');
    this.handleEntries(claimed);
    return claimed.length;
  }

  private async forgetConsumerIfIdle(): Promise<void> {
    const { redis, keys } = this.o;
    const pending = (await redis.call('XPENDING', keys.events, keys.eventsGroup, '-', '+', 1, this.consumer)) as unknown[];
    if (Array.isArray(pending) && pending.length === 0) await redis.call('XGROUP', 'DELCONSUMER', keys.events, keys.eventsGroup, this.consumer);
  }
}

/** A failure count belongs to one version of the webhook: any write (re-enabling included) starts a new one. */
function webhookVersion(webhook: WebhookDocument): string {
  return String(webhook.updatedAt?.$date ?? 0);
}

function streamEntries(reply: unknown): StreamEntry[] {
  if (!Array.isArray(reply)) return [];
  const out: StreamEntry[] = [];
  for (const stream of reply as Array<[Buffer, RawStreamEntry[]]>) for (const [id, fields] of stream[1] ?? []) out.push([String(id), fields]);
  return out;
}

/** Waits for every task, then throws the first failure: no task is left running behind an early throw. */
async function allSettledOrThrow(tasks: ReadonlyArray<Promise<void>>): Promise<void> {
  const results = await Promise.allSettled(tasks);
  const failure = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failure) throw failure.reason;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
