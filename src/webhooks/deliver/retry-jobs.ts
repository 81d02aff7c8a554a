/**
 * Retry jobs (SPEC §7.2.3): a sorted set of jobs scored by due time. A worker leases due jobs
 * with one Lua script (`leaseDueRetries`: re-scored `reclaimIdleMs` ahead, the lease renewed
 * while the delivery runs), so a job of a dead worker becomes due again instead of being lost,
 * and jobs survive any restart. A job whose delivery already ended (its marker says `success`
 * or `failed`) is dropped; an unreadable one is dropped with an error logged. Resend and recover
 * (routes/redelivery.ts) put jobs in the same set, in the same form (delivery-contract.ts).
 */
import { randomBytes } from 'node:crypto';
import type { ChainableCommander, Redis } from 'ioredis';
import type { Logger } from '../../observability/logger.js';
import type { RedisKeys } from '../../store/keys.js';
import { leaseDueRetries } from '../../store/scripts/lease-due-retries.js';
import { LinkedMap } from '../../util/linked-set.js';
import type { RetryJob } from '../delivery-contract.js';
import type { CapturedEvent } from '../event.js';
import { WorkerKilled, type GroupCommit } from './group-commit.js';
import type { WorkerState } from './read-loop.js';

/** A job as its sorted-set member: JSON, unique by a random `job` id. */
export function retryJobMember(event: CapturedEvent, webhookId: string, attempt: number, condition: RetryJob['condition'], throttled?: true): string {
  const job: RetryJob = throttled
    ? { v: 1, job: randomBytes(8).toString('hex'), eventId: event.id, webhookId, attempt, throttled, condition, event }
    : { v: 1, job: randomBytes(8).toString('hex'), eventId: event.id, webhookId, attempt, condition, event };
  return JSON.stringify(job);
}

export interface RetryJobsOptions {
  redis: Redis;
  keys: RedisKeys;
  logger: Logger;
  reclaimIdleMs: number;
  /** Jobs being delivered at most. */
  concurrency: number;
  enabled(): boolean;
  state: WorkerState;
  commits: GroupCommit;
  /** Delivers a job's event like a first attempt would (the worker's `deliver`, and its way out for an unprocessable event). */
  deliver(job: RetryJob, member: string): Promise<void>;
}

export class RetryJobs {
  /** Leased jobs being delivered, by member. */
  /** Retries being delivered, by member; a linked list for the reason read-loop.ts gives. */
  readonly inflight = new LinkedMap<string, Promise<void>>();
  private timer: NodeJS.Timeout | null = null;
  private busy = false;
  /** The lease round under way, so a stop can wait for it to give back what it leased too late. */
  private round: Promise<void> | null = null;

  constructor(private readonly o: RetryJobsOptions) {}

  /** Looks for due jobs a few times per shortest delay of `schedule` (between 50 ms and 1 s). */
  start(schedule: readonly number[]): void {
    const shortest = Math.min(...schedule, 4000);
    this.timer = setInterval(() => void this.drain(), Math.max(50, Math.min(1000, Math.floor(shortest / 4))));
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** Adds the renewal of every leased job's lease to a MULTI. */
  renewLeases(multi: ChainableCommander): void {
    const leaseUntil = Date.now() + this.o.reclaimIdleMs;
    for (const member of this.inflight.keys()) multi.zadd(this.o.keys.retrySchedule, 'XX', leaseUntil, member);
  }

  /**
   * A graceful stop: waits for a lease round under way, then gives back the leases of the jobs
   * whose delivery is still running (the process is about to go: they become due again at once
   * for another worker instead of `reclaimIdleMs` later; at least once, so a delivery finishing
   * here as well is allowed).
   */
  async release(): Promise<void> {
    await this.round;
    await this.giveBack([...this.inflight.keys()]);
  }

  private async giveBack(members: string[]): Promise<void> {
    if (members.length === 0) return;
    const now = Date.now();
    await this.o.redis.zadd(this.o.keys.retrySchedule, 'XX', ...members.flatMap((member) => [now, member])).catch(() => {});
  }

  private drain(): Promise<void> {
    if (!this.o.state.running || this.busy || !this.o.enabled()) return Promise.resolve();
    const free = this.o.concurrency - this.inflight.size;
    if (free <= 0) return Promise.resolve();
    this.busy = true;
    this.round = this.leaseRound(free).finally(() => {
      this.busy = false;
      this.round = null;
    });
    return this.round;
  }

  private async leaseRound(free: number): Promise<void> {
    try {
      const now = Date.now();
      const members = (await leaseDueRetries.run(this.o.redis, [this.o.keys.retrySchedule], [now, now + this.o.reclaimIdleMs, free])) as string[];
      // Leased while the worker was stopping: given back at once, or they would wait out the lease.
      if (!this.o.state.running) return this.o.state.killed ? undefined : await this.giveBack(members.filter((member) => !this.inflight.has(member)));
      for (const member of members) {
        if (this.inflight.has(member)) continue;
        const work = this.run(member)
          .catch((error: unknown) => {
            if (error instanceof WorkerKilled) return;
            this.o.logger.warn({ err: String(error) }, 'a webhook retry failed to complete; it will be leased again');
          })
          .finally(() => this.inflight.remove(node));
        const node = this.inflight.set(member, work);
      }
    } catch {
      // Redis unreachable: the next tick tries again.
    }
  }

  private async run(member: string): Promise<void> {
    let job: RetryJob;
    try {
      job = JSON.parse(member) as RetryJob;
      if (job.v !== 1 || !job.event) throw new Error('not a retry job');
    } catch {
      this.o.logger.error({ member: member.slice(0, 200) }, 'dropping an unreadable webhook retry job');
      await this.o.commits.commit({ retryRemove: [member] });
      return;
    }
    const marker = await this.o.redis.get(this.o.keys.deliveryDone(job.eventId, job.webhookId));
    if (marker === 'success' || marker === 'failed') {
      await this.o.commits.commit({ retryRemove: [member] });
      return;
    }
    await this.o.deliver(job, member);
  }
}
