/**
 * The bounded in-process queue between the observer and Redis (SPEC §7.2.1; notes/perf-and-style
 * §A5). `offer` never waits and never touches Redis: it appends to an array or, when the array
 * is full, drops the event (counted in a metric, logged at most every 10 s). A background
 * flusher writes batches, so several hundred events cost one round trip:
 * - a batch of one-value entries (stream-record.ts version 3, what the observer writes) is packed
 *   into one version 4 entry (up to 256 events and about 1 MiB): one XADD, or a MULTI of a few
 *   when the bodies are large, trimming the stream once per batch;
 * - a batch of other entries is one run of the `xaddEach` script (src/store/scripts), which runs `XADD <events>
 *   MAXLEN ~ N * <fields>` for each event: one command and one reply per batch instead of a
 *   MULTI with an XADD per event, which cost the proxy several µs per event in ioredis;
 * - a batch that also carries recorded requests is one MULTI of XADDs and the recording's RPUSH.
 * When events arrive densely (the previous one less than `lingerMs` ago), the flusher waits
 * `lingerMs` (4 ms) after the first queued event, or until `lingerEvents` (64) are queued, so that
 * moderate rates batch too instead of paying a round trip (and its wake-ups) per event; a lone
 * event is written on the next turn of the event loop. While Redis is unreachable the events stay
 * queued, in order, and are written once it is back; `drain()` flushes on shutdown.
 */
import { performance } from 'node:perf_hooks';
import { ReplyError, type Redis } from 'ioredis';
import type { Logger } from '../../observability/logger.js';
import type { Metrics } from '../../observability/metrics.js';
import type { RedisKeys } from '../../store/keys.js';
import { ENTRY_FIELD, packEntries, type StreamFields } from '../stream-record.js';
import { backoffMs } from '../../util/backoff.js';
import { xaddEach } from '../../store/scripts/xadd-each.js';
import { isRedisUnavailable } from '../../store/redis-errors.js';

export interface QueuedEvent {
  /** The stream entry's fields for the workers (stream-record.ts), when a webhook matched or a skipped entry is due. */
  stream?: StreamFields;
  /** Encoded RecordedRequest, when a recording is active. */
  recorded?: string;
}

export interface EventProducerOptions {
  redis: Redis;
  keys: RedisKeys;
  capacity: number;
  streamMaxLength: number;
  /** Recording entries kept at most (the oldest are trimmed). */
  recordingMaxEntries: number;
  /** How long recorded requests stay readable after the last one was written. */
  recordingTtlMs: number;
  metrics: Metrics;
  logger: Logger;
  batchSize?: number;
  /** How long the first queued event waits for company when events arrive densely (default 4 ms; 0: never). */
  lingerMs?: number;
  /** Queued events that start a flush at once, whatever the linger (default 64). */
  lingerEvents?: number;
  /** Replicas that must hold a batch before it leaves the queue (`redis.waitForReplicas`; default 0). */
  waitForReplicas?: number;
  /** Events of a batch written as one stream entry at most (stream-record.ts version 4; default 256; 1: an entry per event). */
  eventsPerEntry?: number;
}

/**
 * A whole batch (256 events, `batchSize`) in one entry unless it passes about 1 MiB: one XADD per
 * batch. Entries of 32 cost this process about 3.5 µs more per event (tee alone): several XADDs
 * need a MULTI, and ioredis copies a pipeline's buffers once more. A worker reads an entry whole
 * but delivers its events in its event slots, so a large entry does not raise its concurrency.
 */
const EVENTS_PER_ENTRY = 256;
const ENTRY_BYTES = 1024 * 1024;

const RETRY_MIN_MS = 100;
const REPLICA_WAIT_MS = 1000;
/** While the master has too few replicas (its replica just got promoted away), wait only this long. */
const REPLICA_WAIT_DEGRADED_MS = 20;
const RETRY_MAX_MS = 2000;
const DROP_LOG_INTERVAL_MS = 10_000;

export class EventProducer {
  private readonly queue: QueuedEvent[] = [];
  private flushing = false;
  private scheduled = false;
  private lingerTimer: NodeJS.Timeout | null = null;
  private retryTimer: NodeJS.Timeout | null = null;
  private failures = 0;
  private droppedSinceLog = 0;
  private lastDropLog = 0;
  private lastOffer = -Infinity;
  private replicasShort = false;
  private readonly batchSize: number;
  private readonly lingerMs: number;
  private readonly lingerEvents: number;
  private readonly maxLength: string;
  private readonly eventsPerEntry: number;
  private readonly onReady = () => this.kick(false);
  private readonly flushNow = () => {
    this.scheduled = false;
    void this.flush();
  };
  private readonly lingered = () => {
    this.lingerTimer = null;
    this.kick(false);
  };

  constructor(private readonly o: EventProducerOptions) {
    this.batchSize = o.batchSize ?? 256;
    this.lingerMs = o.lingerMs ?? 4;
    this.lingerEvents = Math.max(1, o.lingerEvents ?? 64);
    this.maxLength = String(o.streamMaxLength);
    this.eventsPerEntry = Math.max(1, o.eventsPerEntry ?? EVENTS_PER_ENTRY);
    o.metrics.webhookQueueDepth.track(() => this.queue.length);
    o.redis.on('ready', this.onReady);
  }

  get depth(): number {
    return this.queue.length;
  }

  /** Hot path: O(1), no await, no Redis. False when the queue was full and the event dropped. */
  offer(item: QueuedEvent): boolean {
    if (this.queue.length >= this.o.capacity) {
      this.o.metrics.webhookEventsDropped.inc();
      this.droppedSinceLog++;
      const now = Date.now();
      if (now - this.lastDropLog >= DROP_LOG_INTERVAL_MS) {
        this.o.logger.warn(
          { dropped: this.droppedSinceLog, capacity: this.o.capacity, redis: this.o.redis.status },
          'webhook event queue is full (Redis unreachable or too slow): events are being dropped; raise webhooks.queueCapacity or check Redis',
        );
        this.lastDropLog = now;
        this.droppedSinceLog = 0;
      }
      return false;
    }
    this.queue.push(item);
    this.o.metrics.webhookEventsQueued.inc();
    const now = performance.now();
    const dense = now - this.lastOffer < this.lingerMs;
    this.lastOffer = now;
    this.kick(dense);
    return true;
  }

  /**
   * Starts a flush soon. While a flush runs, what is offered meanwhile goes in its next batch.
   * Otherwise, when events arrive densely, the first one waits `lingerMs` for others (so that
   * 4,000 events/s make a few round trips per 10 ms, not one per event), unless `lingerEvents`
   * are queued already; a lone event goes on the next turn of the event loop.
   */
  private kick(linger: boolean): void {
    if (this.scheduled || this.flushing || this.retryTimer || this.queue.length === 0) return;
    if (linger && this.queue.length < this.lingerEvents) {
      this.lingerTimer ??= setTimeout(this.lingered, this.lingerMs);
      return;
    }
    if (this.lingerTimer) {
      clearTimeout(this.lingerTimer);
      this.lingerTimer = null;
    }
    this.scheduled = true;
    // Everything offered in this turn of the event loop goes in one batch.
    setImmediate(this.flushNow);
  }

  /** Writes what is queued, batch after batch; `all`: without lingering between batches (shutdown). */
  private async flush(all = false): Promise<void> {
    if (this.flushing) return;
    this.flushing = true;
    let linger = false;
    try {
      while (this.queue.length > 0) {
        if (this.o.redis.status !== 'ready') {
          this.retryLater();
          return;
        }
        const batch = this.queue.slice(0, this.batchSize);
        try {
          await this.write(batch);
        } catch (error) {
          this.failures++;
          if (this.failures === 1 || this.failures % 50 === 0)
            this.o.logger.warn({ err: (error as Error).message, queued: this.queue.length }, 'cannot write webhook events to Redis yet; keeping them queued');
          this.retryLater();
          return;
        }
        this.failures = 0;
        this.queue.splice(0, batch.length);
        // What arrived during the round trip waits for company too while events keep coming,
        // or a dense stream would alternate full batches with batches of one or two.
        if (!all && this.queue.length > 0 && this.queue.length < this.lingerEvents && performance.now() - this.lastOffer < this.lingerMs) {
          linger = true;
          break;
        }
      }
    } finally {
      this.flushing = false;
    }
    if (linger) this.kick(true);
  }

  private retryLater(): void {
    if (this.retryTimer) return;
    const delay = backoffMs(this.failures, RETRY_MIN_MS, RETRY_MAX_MS);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      this.kick(false);
    }, delay);
    this.retryTimer.unref();
  }

  /**
   * One round trip: the xaddEach script (atomic, like a MULTI), or a MULTI when the batch also
   * carries recorded requests. A connection lost before the command ran leaves nothing written
   * and the batch is retried; a reply lost after it ran may write a batch twice (at-least-once,
   * like every other step of the pipeline).
   */
  private async write(batch: QueuedEvent[]): Promise<void> {
    let streamOnly = true;
    for (const item of batch) if (item.recorded !== undefined || item.stream === undefined) streamOnly = false;
    if (streamOnly) await this.writeEvents(batch);
    else await this.writeWithRecording(batch);
    if (this.o.waitForReplicas) await this.awaitReplicas(this.o.waitForReplicas, batch.length);
  }

  /**
   * Replication is asynchronous: a master killed right after acknowledging a batch takes it
   * along, and the promoted replica never saw it. So, when configured, a batch leaves the queue
   * only once WAIT says enough replicas hold it. The WAIT is pipelined behind a read of the
   * stream's key, so on a cluster it reaches the master that took the write. A master lost
   * meanwhile makes this throw: the batch stays queued and is written again to the promoted
   * replica (at-least-once). Too few acknowledgements in time (a replica lagging or gone) is
   * logged and the batch let go, since writing it again would not make it safer; until a wait
   * succeeds again the next ones wait only briefly, so a shard left without a replica after a
   * failover does not slow the queue to one batch per second.
   */
  private async awaitReplicas(wanted: number, events: number): Promise<void> {
    const timeout = this.replicasShort ? REPLICA_WAIT_DEGRADED_MS : REPLICA_WAIT_MS;
    const replies = await this.o.redis.pipeline().exists(this.o.keys.events).wait(wanted, timeout).exec();
    const [error, acked] = replies?.[1] ?? [new Error('the replica wait was not answered'), 0];
    if (error) throw error;
    if (Number(acked) >= wanted) {
      this.replicasShort = false;
      return;
    }
    this.o.metrics.webhookEventsUnreplicated.inc({}, events);
    if (!this.replicasShort) this.o.logger.warn({ wanted, acked, events }, 'webhook events written but not on enough replicas in time (redis.waitForReplicas); a failover now could lose them');
    this.replicasShort = true;
  }

  private async writeWithRecording(batch: QueuedEvent[]): Promise<void> {
    const { redis, keys } = this.o;
    const multi = redis.multi();
    let recorded = 0;
    for (const item of batch) {
      if (item.stream !== undefined) multi.xadd(keys.events, 'MAXLEN', '~', this.maxLength, '*', ...item.stream);
      if (item.recorded !== undefined) {
        multi.rpush(keys.recordingEntries, item.recorded);
        recorded++;
      }
    }
    if (recorded > 0) {
      multi.ltrim(keys.recordingEntries, -this.o.recordingMaxEntries, -1);
      multi.pexpire(keys.recordingEntries, this.o.recordingTtlMs);
    }
    const results = await multi.exec();
    if (!results) throw new Error('the transaction was discarded');
    this.refusedIn(results, batch.length);
  }

  private async writeEvents(batch: QueuedEvent[]): Promise<void> {
    let values = true;
    for (const item of batch) if (item.stream!.length !== 2 || item.stream![0] !== ENTRY_FIELD) values = false;
    if (values) await this.writeEntries(batch);
    else await this.writeEach(batch);
  }

  /**
   * Version 3 values (what the observer queues), packed into entries of up to `eventsPerEntry`:
   * one XADD, or a MULTI of a few. Plain commands, not a script: a script's arguments are copied
   * into Lua strings and back, which for these values (kilobytes each) cost Redis more than the
   * XADDs themselves.
   */
  private async writeEntries(batch: QueuedEvent[]): Promise<void> {
    const { redis, keys } = this.o;
    const entries = packEntries(
      batch.map((item) => item.stream![1]!),
      this.eventsPerEntry,
      ENTRY_BYTES,
    );
    // MAXLEN counts entries and `streamMaxLength` means events: scaled by this batch's events per
    // entry. Only the batch's last XADD trims (`~` removes whole stream nodes anyway).
    const maxLength = String(Math.max(1, Math.ceil((this.o.streamMaxLength * entries.length) / batch.length)));
    const last = entries.length - 1;
    if (last === 0) {
      try {
        await redis.xadd(keys.events, 'MAXLEN', '~', maxLength, '*', ...entries[0]!);
      } catch (error) {
        // A connection problem, or a refusal that says "not now" (out of memory, a read-only
        // replica, loading...): nothing was written, and the batch stays queued.
        if (!(error instanceof ReplyError) || isRedisUnavailable(error)) throw error;
        this.refused(String((error as Error).message), batch.length);
      }
      return;
    }
    const multi = redis.multi();
    entries.forEach((entry, i) => {
      if (i < last) multi.xadd(keys.events, '*', ...entry);
      else multi.xadd(keys.events, 'MAXLEN', '~', maxLength, '*', ...entry);
    });
    // Out of memory or a read-only replica refuses the whole MULTI (EXECABORT): that throws, and the batch stays queued.
    const results = await multi.exec();
    if (!results) throw new Error('the transaction was discarded');
    this.refusedIn(results, batch.length);
  }

  /** Entries of any other shape (tests, tools, older callers): the xaddEach script, one entry per event. */
  private async writeEach(batch: QueuedEvent[]): Promise<void> {
    const { redis, keys } = this.o;
    const args: Array<string | Buffer | number> = [1, keys.events, this.maxLength];
    for (const item of batch) {
      const fields = item.stream!;
      args.push(fields.length);
      for (const field of fields) args.push(field);
    }
    const reply = await xaddEach.runWith(redis, args);
    const [refusedCount, firstError] = Array.isArray(reply) ? (reply as [number, string?]) : [0];
    if (refusedCount > 0) {
      // Out of memory, a read-only replica...: nothing (or hardly anything) was written; keep the
      // batch, as a MULTI refused with EXECABORT would.
      const error = new Error(String(firstError));
      if (isRedisUnavailable(error)) throw error;
      this.refused(String(firstError), batch.length);
    }
  }

  /**
   * A MULTI whose commands ran, some refused: a refusal that says "not now" (a replica turned
   * read-only between queueing and EXEC) throws so the batch stays queued; others are reported.
   */
  private refusedIn(results: Array<[Error | null, unknown]>, events: number): void {
    const failed = results.find(([error]) => error);
    if (!failed) return;
    if (isRedisUnavailable(failed[0])) throw failed[0];
    this.refused(String(failed[0]), events);
  }

  /**
   * Not a connection problem (those throw): a command Redis refused. Retrying would write the
   * rest of the batch twice, so the batch is reported and let go.
   */
  private refused(error: string, events: number): void {
    this.o.logger.error({ err: error, events }, 'Redis refused part of a webhook event batch');
  }

  /** Graceful shutdown: keep flushing until the queue is empty or `timeoutMs` passed. */
  async drain(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    if (this.lingerTimer) {
      clearTimeout(this.lingerTimer);
      this.lingerTimer = null;
    }
    while (this.queue.length > 0 && Date.now() < deadline) {
      if (this.retryTimer) {
        clearTimeout(this.retryTimer);
        this.retryTimer = null;
      }
      await this.flush(true);
      if (this.queue.length > 0) await new Promise((r) => setTimeout(r, 100));
    }
    if (this.queue.length > 0) this.o.logger.error({ lost: this.queue.length }, 'stopping with webhook events that could not be written to Redis; they are lost');
  }

  close(): void {
    if (this.retryTimer) clearTimeout(this.retryTimer);
    if (this.lingerTimer) clearTimeout(this.lingerTimer);
    this.retryTimer = this.lingerTimer = null;
    this.o.redis.off('ready', this.onReady);
  }
}
