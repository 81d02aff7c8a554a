/**
 * The webhook worker (SPEC §7.2.2; notes/webhooks.md §C, §E.5): any number of them, in the
 * proxy's process or alone (`outrigger worker`), read the event stream through one consumer
 * group, each under its own consumer name.
 *
 * - Every matching webhook of an event is delivered in parallel; events run in parallel too (up
 *   to `concurrency`), so a slow target holds one slot, never the others.
 * - An entry is acknowledged (XACK + XDEL) only once every delivery of it is final or durably
 *   scheduled for a retry: the log entry, the `deliveryDone` marker and the retry job commit in
 *   one MULTI before the acknowledgement.
 * - Entries of a worker that died are reclaimed with XAUTOCLAIM after `reclaimIdleMs` of
 *   silence. A live worker heartbeats its in-flight entries (XCLAIM JUSTID resets their idle
 *   time), so a slow delivery is never taken from a live worker. A reclaimed entry skips every
 *   webhook whose `deliveryDone` marker exists: nothing is sent twice after a success, and a
 *   delivery already handed to the retry schedule is left to it.
 * - Retries live in a sorted set scored by due time. A worker leases due jobs with one Lua
 *   script (re-scoring them `reclaimIdleMs` ahead, renewed while it works), so a job of a dead
 *   worker becomes due again instead of being lost, and jobs survive any restart.
 * - While the webhooks feature is not enabled the worker reads nothing and sends nothing;
 *   entries and retries wait, untouched.
 */
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { ChainableCommander, Redis } from 'ioredis';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import type { RedisKeys } from '../store/keys.js';
import type { AttemptContext, AttemptResult } from './delivery.js';
import type { CapturedEvent } from './event.js';
import { skippedLogEntry } from './log-entry.js';
import type { WebhookLogStore } from './log-store.js';
import { nextRetryDelayMs } from './retry-policy.js';
import { decodeStreamRecord, type SkippedWebhook } from './stream-record.js';
import type { WebhookDocument } from './webhook-document.js';
import { SKIPPED_LOG_INTERVAL_MS } from './observer.js';
import { backoffMs } from '../util/backoff.js';

/** KEYS[1] the retry set; ARGV: now, lease-until, max jobs. Due jobs are re-scored to lease-until and returned. */
const LEASE_DUE_RETRIES = `
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[3]))
for _, member in ipairs(due) do redis.call('ZADD', KEYS[1], 'XX', ARGV[2], member) end
return due
`;

/**
 * How long a delivery's marker is kept. It only has to outlive the window between the
 * delivery's MULTI and the entry's acknowledgement plus a reclaim (retry jobs are removed in
 * the same MULTI, so they cannot come back), hence an hour, or 20 reclaim periods if longer.
 */
export function deliveryMarkerTtlMs(reclaimIdleMs: number): number {
  return Math.max(3600_000, 20 * reclaimIdleMs);
}
const PERSIST_GIVE_UP_MS = 120_000;
const BLOCK_MS = 2000;

export interface RetryJob {
  v: 1;
  /** Makes every job member unique. */
  job: string;
  eventId: string;
  webhookId: string;
  /** The attempt this job makes (2 for the first retry). */
  attempt: number;
  condition: { matched: boolean; reason: string };
  event: CapturedEvent;
}

export interface WebhookWorkerOptions {
  redis: Redis;
  openBlockingConnection(): Redis;
  keys: RedisKeys;
  webhook(id: string): WebhookDocument | undefined;
  enabled(): boolean;
  deliverer: { attempt(webhook: WebhookDocument, event: CapturedEvent, context: AttemptContext): Promise<AttemptResult> };
  logs: WebhookLogStore;
  logger: Logger;
  metrics: Metrics;
  retrySchedule: readonly number[];
  reclaimIdleMs: number;
  /** Events (and retry jobs) in flight at most, default 64. */
  concurrency?: number;
  consumerName?: string;
  random?: () => number;
  /** Tests: runs before an entry is acknowledged (to crash a worker in that window). */
  beforeAck?(entryId: string): void | Promise<void>;
}

class WorkerKilled extends Error {
  constructor() {
    super('the worker was killed');
  }
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
  private janitorTimer: NodeJS.Timeout | null = null;
  private retryTimer: NodeJS.Timeout | null = null;
  private janitorBusy = false;
  private retryBusy = false;
  private readonly inflight = new Map<string, Promise<void>>();
  private readonly inflightJobs = new Map<string, Promise<void>>();
  private readonly concurrency: number;
  private readonly random: () => number;

  constructor(private readonly o: WebhookWorkerOptions) {
    this.consumer = o.consumerName ?? `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
    this.concurrency = o.concurrency ?? 64;
    this.random = o.random ?? Math.random;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.blocking = this.o.openBlockingConnection();
    this.loop = this.readLoop();
    const janitorMs = Math.max(50, Math.floor(this.o.reclaimIdleMs / 3));
    this.janitorTimer = setInterval(() => void this.janitor(), janitorMs);
    this.janitorTimer.unref();
    const shortest = Math.min(...this.o.retrySchedule, 4000);
    this.retryTimer = setInterval(() => void this.drainRetries(), Math.max(50, Math.min(1000, Math.floor(shortest / 4))));
    this.retryTimer.unref();
  }

  /** Graceful: stop taking work, let in-flight deliveries finish and be acknowledged (bounded). */
  async stop(timeoutMs = 35_000): Promise<void> {
    if (!this.running) return;
    this.running = false;
    this.clearTimers();
    this.blocking?.disconnect();
    const pending = [...this.inflight.values(), ...this.inflightJobs.values()];
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.allSettled(pending), new Promise((r) => (timer = setTimeout(r, timeoutMs)))]);
    clearTimeout(timer);
    await this.loop?.catch(() => {});
    await this.forgetConsumerIfIdle().catch(() => {});
  }

  /** A crash, for tests: stop at once; nothing more is written or acknowledged by this worker. */
  kill(): void {
    this.killed = true;
    this.running = false;
    this.clearTimers();
    this.blocking?.disconnect();
  }

  get inFlight(): number {
    return this.inflight.size + this.inflightJobs.size;
  }

  private clearTimers(): void {
    if (this.janitorTimer) clearInterval(this.janitorTimer);
    if (this.retryTimer) clearInterval(this.retryTimer);
    this.janitorTimer = this.retryTimer = null;
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
      const free = this.concurrency - this.inflight.size;
      if (free <= 0) {
        await Promise.race(this.inflight.values());
        continue;
      }
      let reply: unknown;
      try {
        if (!this.groupReady) await this.ensureGroup();
        reply = await this.blocking!.callBuffer(
          'XREADGROUP', 'GROUP', this.o.keys.eventsGroup, this.consumer, 'COUNT', free, 'BLOCK', BLOCK_MS, 'STREAMS', this.o.keys.events, '>',
        );
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
      for (const [id, fields] of streamEntries(reply)) this.handleEntry(id, fields);
    }
  }

  private handleEntry(id: string, fields: Buffer[] | null): void {
    if (this.inflight.has(id)) return;
    const work = this.processEntry(id, fields)
      .catch((error: unknown) => {
        if (error instanceof WorkerKilled) return;
        this.o.logger.warn({ err: String(error), entry: id }, 'a webhook event stays pending; it will be reclaimed and tried again');
      })
      .finally(() => this.inflight.delete(id));
    this.inflight.set(id, work);
  }

  private async processEntry(id: string, fields: Buffer[] | null): Promise<void> {
    const record = decodeStreamRecord(fields);
    if (record) {
      const tasks: Array<Promise<void>> = record.skipped.map((s) => this.logSkipped(record.event, s));
      if (record.matched.length > 0) {
        const markers = await this.o.redis.mget(record.matched.map((m) => this.o.keys.deliveryDone(record.event.id, m.id)));
        record.matched.forEach((m, i) => {
          // A marker means an earlier run of this entry finished this delivery (or scheduled its retry).
          if (markers[i] == null) tasks.push(this.deliver(record.event, m.id, { matched: true, reason: m.reason }, 1, null));
        });
      }
      const results = await Promise.allSettled(tasks);
      const failure = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (failure) throw failure.reason;
    }
    if (this.killed) throw new WorkerKilled();
    await this.o.beforeAck?.(id);
    if (this.killed) throw new WorkerKilled();
    await this.persist((multi) => multi.xack(this.o.keys.events, this.o.keys.eventsGroup, id).xdel(this.o.keys.events, id));
  }

  private async logSkipped(event: CapturedEvent, skipped: SkippedWebhook): Promise<void> {
    const webhook = this.o.webhook(skipped.id);
    if (!webhook) return;
    if (!skipped.always) {
      // Across replicas: at most one skipped entry per webhook per 10 s.
      const gate = await this.o.redis.set(this.o.keys.skippedLogGate(skipped.id), '1', 'PX', SKIPPED_LOG_INTERVAL_MS, 'NX');
      if (gate !== 'OK') return;
    }
    await this.persist((multi) => this.o.logs.add(multi, skippedLogEntry(event, webhook, skipped.reason)));
  }

  // ----------------------------------------------------------------------------------------------
  // Delivering

  private async deliver(event: CapturedEvent, webhookId: string, condition: RetryJob['condition'], attempt: number, jobMember: string | null): Promise<void> {
    const { keys } = this.o;
    const webhook = this.o.webhook(webhookId);
    if (!webhook || !webhook.enabled) {
      // Deleted or disabled since the event matched: nothing fires, a pending retry is dropped.
      if (jobMember) await this.persist((multi) => multi.zrem(keys.retrySchedule, jobMember));
      return;
    }
    const result = await this.o.deliverer.attempt(webhook, event, { attempt, condition });
    if (this.killed) throw new WorkerKilled();

    let nextAt: number | null = null;
    if (result.retryable) {
      const delay = nextRetryDelayMs(this.o.retrySchedule, attempt, result.retryAfterMs, this.random);
      if (delay !== null) nextAt = Date.now() + delay;
    }
    const entry = result.entry;
    if (nextAt !== null) entry.nextAttemptAt = { $date: nextAt };
    const nextJob: RetryJob | null =
      nextAt === null ? null : { v: 1, job: randomBytes(8).toString('hex'), eventId: event.id, webhookId, attempt: attempt + 1, condition, event };
    await this.persist((multi) => {
      this.o.logs.add(multi, entry);
      multi.set(keys.deliveryDone(event.id, webhookId), nextAt === null ? entry.status : 'retry', 'PX', deliveryMarkerTtlMs(this.o.reclaimIdleMs));
      if (jobMember) multi.zrem(keys.retrySchedule, jobMember);
      if (nextJob) multi.zadd(keys.retrySchedule, nextAt!, JSON.stringify(nextJob));
    });
    this.o.metrics.webhookDeliveries.inc({ type: webhook.type, outcome: nextJob ? 'retry-scheduled' : entry.status });
  }

  /**
   * Commits one MULTI, trying again while Redis is unreachable (a short outage must not turn a
   * finished delivery into a repeated one). Gives up after two minutes, leaving the entry
   * pending for a reclaim.
   */
  private async persist(build: (multi: ChainableCommander) => void): Promise<void> {
    const started = Date.now();
    for (let i = 0; ; i++) {
      if (this.killed) throw new WorkerKilled();
      try {
        const multi = this.o.redis.multi();
        build(multi);
        const results = await multi.exec();
        if (!results) throw new Error('the transaction was discarded');
        const failed = results.find(([error]) => error);
        if (failed) throw failed[0] as Error;
        return;
      } catch (error) {
        if (Date.now() - started > PERSIST_GIVE_UP_MS || (!this.running && i >= 20)) throw error;
        await sleep(backoffMs(i, 50, 2000));
      }
    }
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
      const members = (await this.o.redis.eval(LEASE_DUE_RETRIES, 1, this.o.keys.retrySchedule, now, now + this.o.reclaimIdleMs, free)) as string[];
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
      await this.persist((multi) => multi.zrem(this.o.keys.retrySchedule, member));
      return;
    }
    const marker = await this.o.redis.get(this.o.keys.deliveryDone(job.eventId, job.webhookId));
    if (marker === 'success' || marker === 'failed') {
      await this.persist((multi) => multi.zrem(this.o.keys.retrySchedule, member));
      return;
    }
    await this.deliver(job.event, job.webhookId, job.condition, job.attempt, member);
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
      for (let round = 0; round < 10 && this.running; round++) {
        const reply = (await redis.callBuffer('XAUTOCLAIM', keys.events, keys.eventsGroup, this.consumer, this.o.reclaimIdleMs, cursor, 'COUNT', 50)) as [
          Buffer,
          RawStreamEntry[],
          Buffer[]?,
        ];
        for (const [rawId, fields] of reply[1] ?? []) {
          const id = String(rawId);
          if (this.inflight.has(id)) continue;
          if (!fields) {
            await redis.xack(keys.events, keys.eventsGroup, id);
            continue;
          }
          this.o.logger.info({ entry: id }, 'reclaimed a webhook event from a worker that stopped answering');
          this.handleEntry(id, fields);
        }
        cursor = String(reply[0]);
        if (cursor === '0-0') break;
      }
    } catch {
      // Redis unreachable, or the group is gone: the read loop recreates it; try again next tick.
    } finally {
      this.janitorBusy = false;
    }
  }

  private async forgetConsumerIfIdle(): Promise<void> {
    const { redis, keys } = this.o;
    const pending = (await redis.call('XPENDING', keys.events, keys.eventsGroup, '-', '+', 1, this.consumer)) as unknown[];
    if (Array.isArray(pending) && pending.length === 0) await redis.call('XGROUP', 'DELCONSUMER', keys.events, keys.eventsGroup, this.consumer);
  }
}

function streamEntries(reply: unknown): StreamEntry[] {
  if (!Array.isArray(reply)) return [];
  const out: StreamEntry[] = [];
  for (const stream of reply as Array<[Buffer, RawStreamEntry[]]>) for (const [id, fields] of stream[1] ?? []) out.push([String(id), fields]);
  return out;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
