/**
 * Policies compiled once from `limits.policies`: the condition parsed, the roles as a set, and
 * per policy the allowances this replica holds (one per key, user, address or the service).
 * Which policies cover a request is decided here, synchronously and without allocation for a
 * request no policy covers.
 */
import type { LimitBy, LimitPolicyConfig, LimitUnits } from '../config/limits-config.js';
import type { LimitAmount } from '../principal/limit-amount.js';
import { parseCondition, type Condition, type Exchange } from '../condition/index.js';
import type { RequestScope } from '../http/scope.js';
import { clientAddressBucket } from '../net/client-address.js';
import { Allowance } from './allowance.js';
import { windowTag } from './windows.js';
import type { PriorityClass } from '../principal/priority.js';

/** Allowances one policy keeps before it sweeps those whose window has ended (then double that). */
const SWEEP_FROM = 4096;
/** Allowances one policy keeps at most (~200 bytes each): past it, shared ones are forgotten. */
const MAX_ALLOWANCES = 500_000;

export class CompiledPolicy {
  readonly name: string;
  readonly by: LimitBy;
  readonly units: LimitUnits;
  readonly amount: LimitAmount;
  /** SPEC §13: the class of what it covers, when set. */
  readonly priority: PriorityClass | undefined;
  private readonly roles: ReadonlySet<string> | null;
  private readonly condition: Condition | null;
  private readonly allowances = new Map<string, Allowance>();
  private sweepAbove = SWEEP_FROM;
  private lastClientIp = '';
  private lastClientBucket = '';

  constructor(
    config: LimitPolicyConfig,
    private readonly redisKey: (policy: string, window: string, subject: string) => string,
    /** The condition language's view of a request (chain/exchange.ts, handed down: the chain is above this folder). */
    private readonly exchangeFor: (scope: RequestScope) => Exchange,
  ) {
    this.name = config.name;
    this.by = config.by;
    this.units = config.units;
    this.amount = { limit: config.limit, window: config.window };
    this.priority = config.priority;
    this.roles = config.roles ? new Set(config.roles) : null;
    this.condition = config.condition === null ? null : parseCondition(config.condition);
  }

  /**
   * The allowance this request spends from, or null when the policy does not cover it.
   * `decided`: the request was covered already (a subscription's events are charged against the
   * policies that covered its start; roles and condition are not weighed again per event).
   */
  allowanceFor(scope: RequestScope, now: number, decided = false): Allowance | null {
    const p = scope.principal;
    let subject: string;
    switch (this.by) {
      case 'key':
        if (p.via !== 'apikey' || p.keyId === undefined) return null;
        subject = p.keyId;
        break;
      case 'user':
        if (p.id === null) return null;
        subject = p.id;
        break;
      case 'client':
        subject = this.clientBucket(scope.clientIp);
        break;
      default:
        subject = '*';
    }
    if (!decided) {
      if (this.roles !== null && !p.roles.some((r) => this.roles!.has(r))) return null;
      if (this.condition !== null && !this.condition.evaluate(this.exchangeFor(scope))) return null;
    }
    const override = this.by === 'key' ? p.keyLimits?.[this.name] : undefined;
    const amount = override ?? this.amount;
    let allowance = this.allowances.get(subject);
    if (allowance === undefined || allowance.limit !== amount.limit || windowTag(allowance.window) !== windowTag(amount.window)) {
      if (this.allowances.size >= this.sweepAbove) this.sweep(now);
      allowance = new Allowance(this.name, this.redisKey(this.name, windowTag(amount.window), `${this.by}:${subject}`), amount.limit, amount.window);
      this.allowances.set(subject, allowance);
    }
    return allowance;
  }

  get size(): number {
    return this.allowances.size;
  }

  /** IPv6 by its /64, as the failure counters (a keep-alive client sends many requests from one address). */
  private clientBucket(ip: string): string {
    if (ip !== this.lastClientIp) {
      this.lastClientIp = ip;
      this.lastClientBucket = clientAddressBucket(ip);
    }
    return this.lastClientBucket;
  }

  /**
   * Drops allowances whose window has ended and that hold nothing Redis lacks (in bulk, when the
   * table has doubled: entries are kept while in use, see docs/architecture.md on per-request state).
   */
  private sweep(now: number): void {
    for (const [subject, a] of this.allowances) {
      if (a.lease === null && now >= a.windowEnd && a.offlineUsed === 0) this.allowances.delete(subject);
    }
    // Many subjects inside their windows (rotating addresses): shared allowances live in Redis
    // too, so forgetting one here costs only its unused slice (admits less, never more).
    if (this.allowances.size > MAX_ALLOWANCES) {
      for (const [subject, a] of this.allowances) {
        if (this.allowances.size <= MAX_ALLOWANCES / 2) break;
        if (a.lease === null && !a.local) this.allowances.delete(subject);
      }
    }
    this.sweepAbove = Math.max(SWEEP_FROM, this.allowances.size * 2);
  }
}
