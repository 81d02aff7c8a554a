/**
 * How replicas share allowances through Redis: a lease hands a replica a slice (one EVALSHA per
 * slice, never per request), and the answer says how much of the window is free and how long
 * it lasts on Redis's clock. This file also keeps whether Redis is reachable for limits: the
 * first failed lease switches every allowance to local counting (one log line, one metric
 * increment), a lease every few seconds probes, and the first that succeeds shares again.
 */
import type { ScriptRunner } from '../store/redis-script.js';
import { leaseRateLimitSlice } from '../store/scripts/lease-rate-limit-slice.js';
import type { Allowance, LeaseAnswer } from './allowance.js';
import { scriptWindow } from './windows.js';

/** A lease not answered within this long counts as Redis away (a hung server must not hold requests). */
const LEASE_DEADLINE_MS = 1000;
/** While Redis is away, at most one lease per this long probes whether it is back. */
export const PROBE_EVERY_MS = 2000;

export interface SharingEvents {
  away(error: Error): void;
  back(): void;
  /** Counts leases (EVALSHA calls), for the benchmark's commands-per-request figure and tests. */
  leased?(): void;
}

export class Sharing {
  /** Redis answered the last lease. */
  shared = true;
  private lastProbe = 0;
  leases = 0;

  constructor(
    private readonly redis: ScriptRunner,
    private readonly events: SharingEvents,
  ) {}

  /**
   * Leases `need` units (and a slice beyond them when the window has it) for `allowance`; the
   * promise never rejects: a failure switches to local counting. One lease per allowance at a time.
   */
  lease(allowance: Allowance, need: number): Promise<void> {
    if (allowance.lease) return allowance.lease;
    const [kind, seconds] = scriptWindow(allowance.window);
    const add = allowance.offlineUsed;
    this.leases++;
    this.events.leased?.();
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer from Redis within ${LEASE_DEADLINE_MS} ms`)), LEASE_DEADLINE_MS);
    });
    const call = leaseRateLimitSlice.run(this.redis, [allowance.redisKey], [kind, seconds, allowance.limit, need, need > 0 ? allowance.slice - 1 : 0, add]);
    const pending = Promise.race([call, deadline])
      .then(
        (reply) => {
          const [granted, free, resetMs, windowId] = reply as [number, number, number, string];
          const answer: LeaseAnswer = { granted: Number(granted), free: Number(free), resetMs: Number(resetMs), windowId: String(windowId) };
          if (!this.shared) {
            this.shared = true;
            this.events.back();
          }
          allowance.apply(answer, Date.now());
        },
        (error: unknown) => {
          if (this.shared) {
            this.shared = false;
            this.lastProbe = Date.now();
            this.events.away(error as Error);
          }
          allowance.enterLocal(Date.now());
        },
      )
      .finally(() => {
        clearTimeout(timer);
        allowance.lease = null;
      });
    call.catch(() => {}); // answered after the deadline: nothing waits for it any more
    allowance.lease = pending;
    return pending;
  }

  /** While Redis is away: lease nothing but report `allowance`'s local use, at most once per PROBE_EVERY_MS. */
  probe(allowance: Allowance, now: number): void {
    if (this.shared || now - this.lastProbe < PROBE_EVERY_MS || allowance.lease) return;
    this.lastProbe = now;
    void this.lease(allowance, 0);
  }
}
