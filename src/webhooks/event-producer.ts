/**
 * The bounded in-process queue between the observer and Redis (SPEC §7.2.1; notes/perf-and-style
 * §A5). `offer` never waits and never touches Redis: it appends to an array or, when the array
 * is full, drops the event (counted in a metric, logged at most every 10 s). A background
 * flusher writes batches with one MULTI of `XADD <events> MAXLEN ~ N * d <record>` (and the
 * recording's RPUSH), so several hundred events cost one round trip. While Redis is unreachable
 * the events stay queued, in order, and are written once it is back; `drain()` flushes on
 * shutdown.
 */
import type { Redis } from 'ioredis';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import type { RedisKeys } from '../store/keys.js';
import { STREAM_FIELD } from './stream-record.js';

export interface QueuedEvent {
  /** Encoded StreamRecord for the workers, when a webhook matched or a skipped entry is due. */
  stream?: string;
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
}

const RETRY_MIN_MS = 100;
const RETRY_MAX_MS = 2000;
const DROP_LOG_INTERVAL_MS = 10_000;

export class EventProducer {
  private readonly queue: QueuedEvent[] = [];
  private flushing = false;
  private scheduled = false;
  private retryTimer: NodeJS.Timeout | null = null;
  private failures = 0;
  private droppedSinceLog = 0;
  private lastDropLog = 0;
  private readonly batchSize: number;
  private readonly onReady = () => this.kick();

  constructor(private readonly o: EventProducerOptions) {
    this.batchSize = o.batchSize ?? 256;
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
    this.kick();
    return true;
  }

  private kick(): void {
    if (this.scheduled || this.flushing || this.retryTimer || this.queue.length === 0) return;
    this.scheduled = true;
    // One flush per event-loop turn: everything offered in this turn goes in one batch.
    setImmediate(() => {
      this.scheduled = false;
      void this.flush();
    });
  }

  private async flush(): Promise<void> {
    if (this.flushing) return;
    this.flushing = true;
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
      }
    } finally {
      this.flushing = false;
    }
  }

  private retryLater(): void {
    if (this.retryTimer) return;
    const delay = Math.min(RETRY_MAX_MS, RETRY_MIN_MS * 2 ** Math.min(this.failures, 5));
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      this.kick();
    }, delay);
    this.retryTimer.unref();
  }

  /**
   * One MULTI: all of the batch or none of it. A connection lost before EXEC leaves nothing
   * written and the batch is retried; a reply lost after EXEC may write a batch twice
   * (at-least-once, like every other step of the pipeline).
   */
  private async write(batch: QueuedEvent[]): Promise<void> {
    const { redis, keys } = this.o;
    const multi = redis.multi();
    let recorded = 0;
    for (const item of batch) {
      if (item.stream !== undefined) multi.xadd(keys.events, 'MAXLEN', '~', this.o.streamMaxLength, '*', STREAM_FIELD, item.stream);
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
    const failed = results.find(([error]) => error);
    if (failed) {
      // Not a connection problem (those throw above): a command Redis refused. Retrying would
      // write the rest of the batch twice, so the batch is reported and let go.
      this.o.logger.error({ err: String(failed[0]), events: batch.length }, 'Redis refused part of a webhook event batch');
    }
  }

  /** Graceful shutdown: keep flushing until the queue is empty or `timeoutMs` passed. */
  async drain(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (this.queue.length > 0 && Date.now() < deadline) {
      if (this.retryTimer) {
        clearTimeout(this.retryTimer);
        this.retryTimer = null;
      }
      await this.flush();
      if (this.queue.length > 0) await new Promise((r) => setTimeout(r, 100));
    }
    if (this.queue.length > 0)
      this.o.logger.error({ lost: this.queue.length }, 'stopping with webhook events that could not be written to Redis; they are lost');
  }

  close(): void {
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    this.o.redis.off('ready', this.onReady);
  }
}
