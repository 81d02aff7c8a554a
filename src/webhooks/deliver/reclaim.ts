/**
 * Heartbeat and reclaim (SPEC §7.2.2): how the events of a dead worker are delivered again.
 *
 * Each worker renews a key with a short TTL (`webhookWorkerAlive`, every 1.5 s, 5 s TTL): key
 * expiry is the failure detector. Every 2 s a worker lists the group's consumers with pending
 * entries (XPENDING) and claims (XCLAIM, min idle 1 s) the entries of those whose key has
 * expired, so a killed worker's events are delivered again within seconds. A live worker's key
 * never expires, so its slow deliveries are never taken. As a last resort (a consumer whose key
 * exists but who stopped working), entries idle `reclaimIdleMs` are reclaimed with XAUTOCLAIM;
 * a live worker resets its in-flight entries' idle time (XCLAIM JUSTID) and renews its retry
 * leases, so that never hits a slow delivery. The same sweep takes back this worker's own
 * orphans (entries Redis handed it whose read reply was lost with a connection).
 */
import type { Redis } from 'ioredis';
import type { Logger } from '../../observability/logger.js';
import type { RedisKeys } from '../../store/keys.js';
import { forgetIdleConsumer } from '../../store/scripts/forget-idle-consumer.js';
import type { StreamEntry, StreamReader, WorkerState } from './read-loop.js';
import type { RetryJobs } from './retry-jobs.js';

/** The alive key: renewed every HEARTBEAT_MS, gone ALIVE_TTL_MS after the last renewal. */
const HEARTBEAT_MS = 1500;
const ALIVE_TTL_MS = 5000;
/** How often a worker looks for consumers whose alive key expired. */
const DEAD_SWEEP_MS = 2000;
/** An entry must be this idle to be claimed from a dead consumer (so two sweepers never both take it). */
const DEAD_CLAIM_MIN_IDLE_MS = 1000;

type RawStreamEntry = [id: Buffer | string, fields: Buffer[] | null];

export interface ReclaimOptions {
  redis: Redis;
  keys: RedisKeys;
  logger: Logger;
  consumer: string;
  reclaimIdleMs: number;
  enabled(): boolean;
  state: WorkerState;
  reader: StreamReader;
  retryJobs: RetryJobs;
}

export class Reclaim {
  private janitorTimer: NodeJS.Timeout | null = null;
  private heartbeatTimer: NodeJS.Timeout | null = null;
  private sweepTimer: NodeJS.Timeout | null = null;
  private janitorBusy = false;
  private sweepBusy = false;

  constructor(private readonly o: ReclaimOptions) {}

  start(): void {
    const janitorMs = Math.max(50, Math.floor(this.o.reclaimIdleMs / 3));
    this.janitorTimer = setInterval(() => void this.janitor(), janitorMs);
    this.janitorTimer.unref();
    void this.heartbeat();
    this.heartbeatTimer = setInterval(() => void this.heartbeat(), HEARTBEAT_MS);
    this.heartbeatTimer.unref();
    this.sweepTimer = setInterval(() => void this.sweepDeadConsumers(), DEAD_SWEEP_MS);
    this.sweepTimer.unref();
  }

  stop(): void {
    for (const timer of [this.janitorTimer, this.heartbeatTimer, this.sweepTimer]) if (timer) clearInterval(timer);
    this.janitorTimer = this.heartbeatTimer = this.sweepTimer = null;
  }

  /** A graceful stop: this consumer leaves the group if nothing is pending for it, and its alive key goes. */
  async leave(): Promise<void> {
    await this.forgetConsumerIfIdle().catch(() => {});
    await this.o.redis.del(this.o.keys.webhookWorkerAlive(this.o.consumer)).catch(() => {});
  }

  private async janitor(): Promise<void> {
    const { redis, keys, reader, state } = this.o;
    if (!state.running || this.janitorBusy) return;
    this.janitorBusy = true;
    try {
      if (reader.inflight.size > 0) {
        await redis.call('XCLAIM', keys.events, keys.eventsGroup, this.o.consumer, 0, ...reader.inflight.keys(), 'JUSTID');
      }
      if (this.o.retryJobs.inflight.size > 0) {
        const multi = redis.multi();
        this.o.retryJobs.renewLeases(multi);
        await multi.exec();
      }
      if (!this.o.enabled() || !reader.groupReady) return;
      let cursor = '0-0';
      // Entries may hold hundreds of events each: take no more than the free event slots cover.
      for (let round = 0; round < 10 && state.running && reader.slots.free > 0; round++) {
        const count = Math.min(50, reader.entriesFor(reader.slots.free));
        const reply = (await redis.callBuffer('XAUTOCLAIM', keys.events, keys.eventsGroup, this.o.consumer, this.o.reclaimIdleMs, cursor, 'COUNT', count)) as [Buffer, RawStreamEntry[], Buffer[]?];
        const claimed: StreamEntry[] = [];
        for (const [rawId, fields] of reply[1] ?? []) {
          const id = String(rawId);
          if (reader.inflight.has(id)) continue;
          if (!fields) {
            await redis.xack(keys.events, keys.eventsGroup, id);
            continue;
          }
          this.o.logger.info({ entry: id }, 'reclaimed a webhook event from a worker that stopped answering');
          claimed.push([id, fields]);
        }
        reader.handleEntries(claimed);
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
    if (!this.o.state.running) return;
    await this.o.redis.set(this.o.keys.webhookWorkerAlive(this.o.consumer), '1', 'PX', ALIVE_TTL_MS).catch(() => {});
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
    const { redis, keys, reader, state } = this.o;
    if (!state.running || this.sweepBusy || !this.o.enabled() || !reader.groupReady) return;
    this.sweepBusy = true;
    try {
      const summary = (await redis.call('XPENDING', keys.events, keys.eventsGroup)) as [number, unknown, unknown, Array<[string, string]> | null];
      const consumers = summary?.[3] ?? [];
      const own = consumers.find(([name]) => String(name) === this.o.consumer);
      if (own && Number(own[1]) > reader.inflight.size) await this.claimPendingOf(this.o.consumer);
      const others = consumers.map(([name]) => String(name)).filter((name) => name !== this.o.consumer);
      if (others.length === 0) return;
      const alive = await redis.mget(others.map((name) => keys.webhookWorkerAlive(name)));
      for (let i = 0; i < others.length && state.running; i++) {
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
    const { redis, keys, reader } = this.o;
    const free = reader.slots.free;
    if (free <= 0) return -1;
    const pending = (await redis.call('XPENDING', keys.events, keys.eventsGroup, 'IDLE', DEAD_CLAIM_MIN_IDLE_MS, '-', '+', Math.min(reader.entriesFor(free), 100), consumer)) as Array<[string]>;
    const ids = pending.map(([id]) => String(id)).filter((id) => !reader.inflight.has(id) && !reader.newerEntries.has(id));
    if (ids.length === 0) return 0;
    const reply = (await redis.callBuffer('XCLAIM', keys.events, keys.eventsGroup, this.o.consumer, DEAD_CLAIM_MIN_IDLE_MS, ...ids)) as RawStreamEntry[];
    const claimed: StreamEntry[] = [];
    for (const [rawId, fields] of reply ?? []) if (rawId) claimed.push([String(rawId), fields]);
    if (consumer === this.o.consumer && claimed.length > 0) this.o.logger.info({ entries: claimed.length }, 'took back webhook events whose read reply was lost');
    reader.handleEntries(claimed);
    return claimed.length;
  }

  /**
   * Check and delete in one script: a read of this consumer still blocked on the server (its
   * connection closing) may be handed entries at any moment, and DELCONSUMER would drop them.
   * If it is handed some after the delete, Redis makes the consumer again with them pending, and
   * the dead sweep of another worker takes them (this worker's alive key is gone).
   */
  private async forgetConsumerIfIdle(): Promise<void> {
    await forgetIdleConsumer.run(this.o.redis, [this.o.keys.events], [this.o.keys.eventsGroup, this.o.consumer]);
  }
}
