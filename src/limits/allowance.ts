/**
 * One allowance (a policy's limit for one key, user, address or the whole service) as this
 * replica holds it. While Redis is reachable the replica spends a slice leased from Redis
 * (`held`) and knows how much the fleet has not leased yet (`free`); it never admits a unit it
 * does not hold, so the fleet never admits more than the limit in a window (it may admit less:
 * what idle replicas hold, at most replicas × slice). While Redis is away (`onRedisUnavailable:
 * local`) it counts on its own clock and its own counters, the whole limit per window.
 */
import type { LimitWindow } from '../principal/limit-amount.js';
import { windowAt, windowSeconds } from './windows.js';

export const ADMITTED = 0;
export const REFUSED = 1;
export const NEEDS_LEASE = 2;
export type TakeResult = typeof ADMITTED | typeof REFUSED | typeof NEEDS_LEASE;

/** What the lease script answers. */
export interface LeaseAnswer {
  granted: number;
  free: number;
  /** Milliseconds until the window ends on Redis's clock: a duration, so replica clock skew does not matter. */
  resetMs: number;
  windowId: string;
}

/** The slice a replica leases at a time: 5 % of the limit, 1 when the limit is under 20 (SPEC §10). */
export function sliceOf(limit: number): number {
  return limit < 20 ? 1 : Math.floor(limit * 0.05);
}

export class Allowance {
  /** This replica's clock (ms) when the window ends; 0: unknown until a lease answers. */
  windowEnd = 0;
  windowId = '';
  /** Units this replica holds and may admit without asking anyone. */
  held = 0;
  /** Units of the window no replica has leased yet, as of Redis's last answer. */
  free = 0;
  /** Counting on this replica's own counters: Redis was away when last asked. */
  local = false;
  /** Units admitted on local counters in the current window, added to Redis's count at the next lease. */
  offlineUsed = 0;
  /** Units this replica admitted in the window `windowId`: local counting never gives it more than the limit in one window. */
  admittedInWindow = 0;
  /** The lease in flight, at most one per allowance. */
  lease: Promise<void> | null = null;
  readonly slice: number;
  private itemFor = '';
  private item = '';

  constructor(
    readonly policy: string,
    readonly redisKey: string,
    readonly limit: number,
    readonly window: LimitWindow,
  ) {
    this.slice = sliceOf(limit);
  }

  /** Takes `cost` units if held; otherwise says whether a lease could still find them. Never waits. */
  take(cost: number, now: number, shared: boolean): TakeResult {
    if (this.local && shared) this.leaveLocal();
    if (now >= this.windowEnd) this.nextWindow(now, shared);
    if (this.held >= cost) {
      this.held -= cost;
      this.admittedInWindow += cost;
      if (this.local) this.offlineUsed += cost;
      return ADMITTED;
    }
    if (this.local || (this.windowEnd !== 0 && this.free < cost - this.held)) return REFUSED;
    return NEEDS_LEASE;
  }

  /** Gives back units taken for a request another policy refused (only within the same window). */
  refund(cost: number, windowId: string): void {
    if (windowId !== this.windowId) return;
    this.held += cost;
    this.admittedInWindow -= cost;
    if (this.local) this.offlineUsed = Math.max(0, this.offlineUsed - cost);
  }

  /** Whether to lease the next slice now, in the background, so the next request finds it held. */
  wantsPrefetch(): boolean {
    return !this.local && this.lease === null && this.windowEnd !== 0 && this.held * 2 < this.slice && this.free > 0;
  }

  apply(answer: LeaseAnswer, now: number): void {
    if (this.local) this.leaveLocal();
    if (answer.windowId !== this.windowId) {
      this.held = 0;
      this.admittedInWindow = 0;
      this.windowId = answer.windowId;
    }
    this.held += answer.granted;
    this.free = answer.free;
    this.windowEnd = now + answer.resetMs;
    this.offlineUsed = 0;
  }

  /** Redis did not answer: count on our own from here, what Redis still had free in this window at most. */
  enterLocal(now: number): void {
    if (this.local) return;
    this.local = true;
    this.offlineUsed = 0;
    if (this.windowEnd === 0 || now >= this.windowEnd) this.localWindow(now);
    else {
      this.held = Math.min(this.held + this.free, this.limit - this.admittedInWindow);
      this.free = 0;
    }
  }

  remaining(): number {
    return this.held + this.free;
  }

  resetSeconds(now: number): number {
    return this.windowEnd === 0 ? windowSeconds(this.window, now) : Math.max(0, Math.ceil((this.windowEnd - now) / 1000));
  }

  /** `"per-key";q=100;w=60`: this allowance's item of `RateLimit-Policy` (a month's w changes with the month). */
  policyItem(now: number): string {
    const w = windowSeconds(this.window, now);
    const tag = this.window.period === 'month' ? String(w) : '';
    if (this.item === '' || this.itemFor !== tag) {
      this.item = `"${this.policy}";q=${this.limit};w=${w}`;
      this.itemFor = tag;
    }
    return this.item;
  }

  private nextWindow(now: number, shared: boolean): void {
    if (shared) {
      // Unknown until Redis answers: what is left of the old slice belongs to the old window.
      this.windowEnd = 0;
      this.held = 0;
      this.free = this.limit;
    } else {
      this.local = true;
      this.localWindow(now);
    }
  }

  private localWindow(now: number): void {
    const w = windowAt(this.window, now);
    if (w.id !== this.windowId) {
      this.offlineUsed = 0;
      this.admittedInWindow = 0;
    }
    this.windowId = w.id;
    this.windowEnd = w.end;
    this.held = Math.max(0, this.limit - this.admittedInWindow);
    this.free = 0;
  }

  private leaveLocal(): void {
    this.local = false;
    this.windowEnd = 0;
    this.held = 0;
    this.free = this.limit;
  }
}
