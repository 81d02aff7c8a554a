/**
 * The rate limits on the request chain (SPEC §10), called once per request after authentication
 * and before the route or the forwarder. A covered request spends units its replica already
 * holds: no await and no Redis command in the steady state; a lease is awaited only when an
 * allowance holds nothing yet (its first request in a window) or a prefetch has not come back.
 * Every covering policy must admit; units taken from the others are given back on a refusal.
 */
import type { Redis } from 'ioredis';
import type { LimitsConfig } from '../config/limits-config.js';
import { OutriggerError, tooManyRequests } from '../errors.js';
import type { RequestScope } from '../http/scope.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import type { RedisKeys } from '../store/keys.js';
import { ADMITTED, REFUSED, type Allowance } from './allowance.js';
import { CompiledPolicy } from './policy.js';
import { Sharing } from './sharing.js';
import { UsageCounter } from './usage.js';
import { describeAmount } from './windows.js';

/** Lease rounds one request may wait for before it is refused (others kept taking what each lease brought). */
const MAX_ROUNDS = 3;

/** What covered a request, kept on its scope for the GraphQL cost charged once estimated (and a subscription's events). */
interface Covered {
  allowances: Allowance[];
  policies: CompiledPolicy[];
}

/**
 * What one decision charges for: a request on the chain (1 unit), a GraphQL request's estimate
 * beyond that unit, or one delivered subscription event (SPEC §6.5: its estimated cost).
 */
type Charge = 'request' | 'estimate' | 'event';

export interface LimiterParts {
  config: LimitsConfig;
  redis: Redis;
  keys: RedisKeys;
  metrics: Metrics;
  logger: Logger;
  /** `/_health`, `/_metrics`, the OAuth metadata and the console's assets are not counted. */
  adminPrefix: string;
}

export class RateLimiter {
  readonly policies: CompiledPolicy[];
  readonly sharing: Sharing;
  readonly usage: UsageCounter;
  private readonly headers: boolean;
  private readonly onAway: LimitsConfig['onRedisUnavailable'];
  private readonly consolePrefix: string;
  private readonly refusedMetric = new Map<string, { inc(by?: number): void }>();
  private readonly hasCostPolicy: boolean;

  constructor(private readonly parts: LimiterParts) {
    const { config, keys, metrics, logger } = parts;
    this.policies = config.policies.map((p) => new CompiledPolicy(p, keys.rateLimit));
    this.hasCostPolicy = config.policies.some((p) => p.units === 'cost');
    this.headers = config.headers;
    this.onAway = config.onRedisUnavailable;
    this.consolePrefix = `${parts.adminPrefix}/console`;
    for (const p of this.policies) this.refusedMetric.set(p.name, metrics.rateLimited.series({ policy: p.name }));
    this.sharing = new Sharing(parts.redis, {
      away: (error) => {
        metrics.rateLimitRedisUnavailable.inc();
        logger.warn(
          { err: error.message, onRedisUnavailable: this.onAway },
          this.onAway === 'local'
            ? 'rate limits: Redis is unavailable; each replica now enforces every policy on its own counters until it is back (outrigger_rate_limit_redis_unavailable_total)'
            : this.onAway === 'allow'
              ? 'rate limits: Redis is unavailable; limits are not enforced until it is back (limits.onRedisUnavailable: allow)'
              : 'rate limits: Redis is unavailable; covered requests are answered 503 until it is back (limits.onRedisUnavailable: deny)',
        );
      },
      back: () => logger.info('rate limits: Redis is reachable again; replicas share allowances again'),
    });
    this.usage = new UsageCounter(parts.redis, keys, (error) => logger.debug({ err: error.message }, 'rate limits: could not write key usage; kept for the next write'));
  }

  start(): void {
    this.usage.start();
  }

  stop(): Promise<void> {
    return this.usage.stop();
  }

  /** The request chain's step: returns when admitted, throws 429 (or 503 under `deny`). */
  check(scope: RequestScope): Promise<void> | void {
    const kind = scope.routeKind;
    if (kind === 'health' || kind === 'metrics') return;
    if (kind === 'oauth' && scope.path.startsWith('/.well-known/')) return;
    if (kind === 'admin' && this.isConsoleAsset(scope.path)) return;
    const now = Date.now();
    let covered: Covered | null = null;
    for (let i = 0; i < this.policies.length; i++) {
      const policy = this.policies[i]!;
      const allowance = policy.allowanceFor(scope, now);
      if (allowance === null) continue;
      covered ??= { allowances: [], policies: [] };
      covered.allowances.push(allowance);
      covered.policies.push(policy);
    }
    const keyId = scope.principal.via === 'apikey' ? scope.principal.keyId : undefined;
    if (covered === null) {
      if (keyId !== undefined) this.usage.record(keyId, 1, 1, 0, now);
      return;
    }
    if (!this.sharing.shared && this.onAway !== 'local') return this.whileAway(scope, covered, keyId, now, 'request', 1);
    return this.decide(scope, covered, 1, keyId, now, 0, 'request');
  }

  /**
   * A GraphQL request under `units: cost` (SPEC §10): the chain admitted it for 1 unit; its
   * estimate (at least 1) is charged here before any backend read, or it is refused (429) and
   * its unit given back.
   */
  chargeCost(scope: RequestScope, documents: number): Promise<void> | void {
    const covered = scope.rateLimits as Covered | undefined;
    if (covered === undefined) return;
    const cost = Math.max(1, Math.ceil(documents)) - 1;
    const byCost: Covered = { allowances: [], policies: [] };
    covered.policies.forEach((p, i) => {
      if (p.units === 'cost') {
        byCost.allowances.push(covered.allowances[i]!);
        byCost.policies.push(p);
      }
    });
    const keyId = scope.principal.via === 'apikey' ? scope.principal.keyId : undefined;
    if (byCost.allowances.length === 0 || cost === 0 || (!this.sharing.shared && this.onAway !== 'local')) return;
    return this.decide(scope, byCost, cost, keyId, Date.now(), 0, 'estimate');
  }

  /**
   * One subscription event about to be delivered (SPEC §6.5, issue 53): charged its estimated
   * `documents` (at least 1) against the `units: cost` policies that covered the subscription's
   * start. Units come from the slice this replica holds, as a request's do: no Redis round trip
   * per event in the steady state. Answers null when delivered, else the refusal (429 naming the
   * policy and when to retry, or 503 under `onRedisUnavailable: deny`): the subscription ends.
   */
  chargeEvent(scope: RequestScope, documents: number): Promise<OutriggerError | null> | OutriggerError | null {
    const covered = scope.rateLimits as Covered | undefined;
    if (covered === undefined) return null;
    const now = Date.now();
    const byCost: Covered = { allowances: [], policies: [] };
    for (const p of covered.policies) {
      if (p.units !== 'cost') continue;
      // Looked up again, not the start's: a key's override may have changed, a swept allowance been replaced.
      const allowance = p.allowanceFor(scope, now, true);
      if (allowance === null) continue;
      byCost.allowances.push(allowance);
      byCost.policies.push(p);
    }
    if (byCost.allowances.length === 0) return null;
    const keyId = scope.principal.via === 'apikey' ? scope.principal.keyId : undefined;
    const cost = Math.max(1, Math.ceil(documents));
    try {
      if (!this.sharing.shared && this.onAway !== 'local') {
        this.whileAway(scope, byCost, keyId, now, 'event', cost);
        return null;
      }
      const decided = this.decide(scope, byCost, cost, keyId, now, 0, 'event');
      return decided === undefined ? null : decided.then(() => null, refusal);
    } catch (error) {
      return refusal(error);
    }
  }

  private decide(scope: RequestScope, covered: Covered, cost: number, keyId: string | undefined, now: number, round: number, charge: Charge): Promise<void> | void {
    const { allowances } = covered;
    const shared = this.sharing.shared;
    let refused = -1;
    let leasing: Allowance[] | null = null;
    let taken = 0;
    for (; taken < allowances.length; taken++) {
      const result = allowances[taken]!.take(cost, now, shared);
      if (result === ADMITTED) continue;
      if (result === REFUSED) refused = taken;
      else (leasing ??= []).push(allowances[taken]!);
      break;
    }
    if (refused !== -1 || leasing !== null) {
      // All or nothing: the units taken from the policies before this one go back.
      for (let i = 0; i < taken; i++) allowances[i]!.refund(cost, allowances[i]!.windowId);
    }
    if (leasing !== null && round < MAX_ROUNDS) {
      // The one await: this allowance holds nothing yet in this window (or its prefetch is late).
      return Promise.all(leasing.map((a) => this.sharing.lease(a, cost - a.held))).then(() => {
        if (!this.sharing.shared && this.onAway !== 'local') return this.whileAway(scope, covered, keyId, Date.now(), charge, cost);
        return this.decide(scope, covered, cost, keyId, Date.now(), round + 1, charge);
      });
    }
    if (refused === -1 && leasing !== null) refused = taken;
    if (refused !== -1) {
      // Refused on local counters: Redis may be back, and only a lease can tell.
      for (const a of allowances) if (a.local) this.sharing.probe(a, now);
      return this.refuse(scope, covered, refused, cost, keyId, now, charge);
    }

    // Admitted by every policy.
    if (keyId !== undefined) this.usage.record(keyId, charge === 'request' ? 1 : 0, cost, 0, now);
    if (charge === 'request') this.keepCovered(scope, covered);
    for (const a of allowances) {
      if (a.local) this.sharing.probe(a, now);
      else if (a.wantsPrefetch()) void this.sharing.lease(a, 1);
    }
    // An event's response head went out when the subscription started.
    if (this.headers && charge !== 'event') this.setHeaders(scope, charge === 'estimate' ? (scope.rateLimits as Covered) : covered, now, -1, charge === 'estimate');
  }

  /** A request a `units: cost` policy covers keeps what covered it: its estimate, or its subscription's events, are charged later. */
  private keepCovered(scope: RequestScope, covered: Covered): void {
    if (this.hasCostPolicy && covered.policies.some((p) => p.units === 'cost')) scope.rateLimits = covered;
  }

  private refuse(scope: RequestScope, covered: Covered, index: number, cost: number, keyId: string | undefined, now: number, charge: Charge): never {
    const policy = covered.policies[index]!;
    const allowance = covered.allowances[index]!;
    this.refusedMetric.get(policy.name)?.inc();
    const estimate = charge === 'estimate';
    if (estimate) {
      // The unit the chain took for this request goes back: a refused request costs nothing.
      for (const a of (scope.rateLimits as Covered).allowances) a.refund(1, a.windowId);
      if (keyId !== undefined) this.usage.record(keyId, -1, -1, 1, now);
    } else if (keyId !== undefined) this.usage.record(keyId, 0, 0, 1, now);
    if (this.headers && charge !== 'event') this.setHeaders(scope, estimate ? (scope.rateLimits as Covered) : covered, now, index, estimate, allowance);
    const retry = allowance.resetSeconds(now) || 1;
    const what = describeAmount(allowance.limit, allowance.window, policy.units === 'cost' ? 'units' : 'requests');
    const kindOf = allowance.window.period ? 'quota' : 'rate limit';
    const costly = charge === 'event' ? ` (each event of this subscription costs ${cost} units)` : cost > 1 ? ` (this request costs ${cost + (estimate ? 1 : 0)} units)` : '';
    throw tooManyRequests(`${kindOf} '${policy.name}': ${what}${costly}; retry in ${retry} s`, retry);
  }

  /** Redis away under `allow` (no limits) or `deny` (503); a probe now and then finds it back. */
  private whileAway(scope: RequestScope, covered: Covered, keyId: string | undefined, now: number, charge: Charge, cost: number): void {
    for (const a of covered.allowances) this.sharing.probe(a, now);
    if (this.onAway === 'allow') {
      if (keyId !== undefined) this.usage.record(keyId, charge === 'request' ? 1 : 0, cost, 0, now);
      // A subscription started now has its events charged once Redis is back.
      if (charge === 'request') this.keepCovered(scope, covered);
      return;
    }
    if (keyId !== undefined) this.usage.record(keyId, 0, 0, 1, now);
    throw new OutriggerError(503, 'RATE_LIMITS_UNAVAILABLE', `rate limits cannot be checked while Redis is unavailable (limits.onRedisUnavailable: deny); retry shortly`, { 'retry-after': '2' });
  }

  /** `RateLimit-Policy` with every covering policy, `RateLimit` with the one nearest exhaustion (draft-ietf-httpapi-ratelimit-headers-11). */
  private setHeaders(scope: RequestScope, covered: Covered, now: number, refusedIndex: number, estimate: boolean, refusedAllowance?: Allowance): void {
    const { allowances } = covered;
    let policyValue = '';
    let nearest: Allowance = refusedAllowance ?? allowances[0]!;
    for (let i = 0; i < allowances.length; i++) {
      const a = allowances[i]!;
      policyValue = i === 0 ? a.policyItem(now) : `${policyValue}, ${a.policyItem(now)}`;
      if (refusedIndex === -1 && a.remaining() < nearest.remaining()) nearest = a;
    }
    const headers = {
      'ratelimit-policy': policyValue,
      ratelimit: `"${nearest.policy}";r=${refusedIndex === -1 ? nearest.remaining() : 0};t=${nearest.resetSeconds(now)}`,
    };
    // On the scope, not setHeader: the forwarder writes them in the upstream answer's head, the
    // handler sets them on own routes and errors (a setHeader per request costs ~0.7 µs each).
    scope.rateLimitHeaders = headers;
    // Charged once a GraphQL query is estimated: the own route's headers were set already.
    if (estimate && !scope.res.headersSent) {
      scope.res.setHeader('ratelimit-policy', headers['ratelimit-policy']);
      scope.res.setHeader('ratelimit', headers.ratelimit);
    }
  }

  private isConsoleAsset(path: string): boolean {
    const admin = this.parts.adminPrefix;
    return path === admin || path === `${admin}/` || path === this.consolePrefix || path.startsWith(`${this.consolePrefix}/`);
  }
}

/** A refusal of a subscription event, as the subscription's end reason; anything else is a bug and thrown. */
function refusal(error: unknown): OutriggerError {
  if (error instanceof OutriggerError) return error;
  throw error;
}
