/**
 * The rate limits on the request chain (SPEC §10), called once per request after authentication
 * and before the route or the forwarder. A covered request spends units its replica already
 * holds: no await and no Redis command in the steady state; a lease is awaited only when an
 * allowance holds nothing yet (its first request in a window) or a prefetch has not come back.
 * Every covering policy must admit; units taken from the others are given back on a refusal.
 */
import type { Redis } from 'ioredis';
import type { LimitPolicyConfig, LimitsConfig } from '../config/limits-config.js';
import type { Exchange } from '../condition/index.js';
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
import { higherPriority, type PriorityClass } from '../principal/priority.js';

/** Lease rounds one request may wait for before it is refused (others kept taking what each lease brought). */
const MAX_ROUNDS = 3;

/**
 * What one decision charges for: a request on the chain (1 unit), a GraphQL request's estimate
 * beyond that unit, or one delivered subscription event (SPEC §6.5: its estimated cost).
 */
type ChargeKind = 'request' | 'estimate' | 'event';

/**
 * One charge, decided as a whole: the allowances of the policies that cover it (index for
 * index), what it costs, and whose key's usage it counts. A request's charge stays on its scope
 * (`rateLimits`) when a `units: cost` policy covers it: its estimate, or its subscription's
 * events, are charged later against what covered it.
 */
export interface Charge {
  readonly kind: ChargeKind;
  readonly allowances: Allowance[];
  readonly policies: CompiledPolicy[];
  readonly cost: number;
  readonly keyId: string | undefined;
}

declare module '../http/scope.js' {
  interface RequestScope {
    /** The limit stage's slot: what covered the request, kept when a `units: cost` policy counts its GraphQL cost (see Charge). */
    rateLimits: Charge | undefined;
    /** The highest `priority` of the policies that covered the request (SPEC §13), when one has one. */
    ratePriority: PriorityClass | undefined;
  }
}

export interface LimiterParts {
  config: LimitsConfig;
  redis: Redis;
  keys: RedisKeys;
  metrics: Metrics;
  logger: Logger;
  /** `/_health`, `/_metrics`, the OAuth metadata and the console's assets are not counted. */
  adminPrefix: string;
  /** What a policy's `condition` reads (the request chain's condition view; chain/exchange.ts). */
  exchangeFor(scope: RequestScope): Exchange;
}

export class RateLimiter {
  /** Replaced whole by `applyPolicies` (a reload): a request reads it once, so it sees one set. */
  policies: CompiledPolicy[];
  readonly sharing: Sharing;
  readonly usage: UsageCounter;
  private readonly headers: boolean;
  private readonly onAway: LimitsConfig['onRedisUnavailable'];
  private readonly consolePrefix: string;
  private readonly refusedMetric = new Map<string, { inc(by?: number): void }>();
  private hasCostPolicy = false;
  /** What each compiled policy was compiled from, to keep the unchanged ones across a reload. */
  private compiledFrom = new Map<CompiledPolicy, string>();
  private byName = new Map<string, CompiledPolicy>();

  constructor(private readonly parts: LimiterParts) {
    const { config, keys, metrics, logger } = parts;
    this.policies = [];
    this.applyPolicies(config.policies);
    this.headers = config.headers;
    this.onAway = config.onRedisUnavailable;
    this.consolePrefix = `${parts.adminPrefix}/console`;
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

  /**
   * `limits.policies` as a reload found them (SPEC §15). A policy whose whole definition is
   * unchanged keeps its compiled self, slices held included. Any other is compiled anew; its
   * counters live in Redis under its name and window (store/keys.ts `rateLimit`), so one whose
   * name and window are unchanged keeps what was counted in the current window, whatever else
   * changed (a new limit is judged against that count). Requests in flight finish against the
   * set they started with; a subscription's later events are charged to the policies of the
   * same names as configured now (chargeEvent).
   */
  applyPolicies(configs: readonly LimitPolicyConfig[]): void {
    const old = new Map<string, CompiledPolicy>();
    for (const [policy, text] of this.compiledFrom) old.set(text, policy);
    const compiledFrom = new Map<CompiledPolicy, string>();
    const next = configs.map((config) => {
      const text = JSON.stringify(config);
      const policy = old.get(text) ?? new CompiledPolicy(config, this.parts.keys.rateLimit, this.parts.exchangeFor);
      compiledFrom.set(policy, text);
      if (!this.refusedMetric.has(policy.name)) this.refusedMetric.set(policy.name, this.parts.metrics.rateLimited.series({ policy: policy.name }));
      return policy;
    });
    this.compiledFrom = compiledFrom;
    this.byName = new Map(next.map((p) => [p.name, p]));
    this.hasCostPolicy = configs.some((p) => p.units === 'cost');
    this.policies = next;
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
    const keyId = scope.principal.via === 'apikey' ? scope.principal.keyId : undefined;
    let charge: Charge | null = null;
    const policies = this.policies;
    for (let i = 0; i < policies.length; i++) {
      const policy = policies[i]!;
      const allowance = policy.allowanceFor(scope, now);
      if (allowance === null) continue;
      charge ??= { kind: 'request', allowances: [], policies: [], cost: 1, keyId };
      charge.allowances.push(allowance);
      charge.policies.push(policy);
      if (policy.priority !== undefined) scope.ratePriority = higherPriority(scope.ratePriority, policy.priority);
    }
    if (charge === null) {
      if (keyId !== undefined) this.usage.record(keyId, 1, 1, 0, now);
      return;
    }
    if (!this.sharing.shared && this.onAway !== 'local') return this.whileAway(scope, charge, now);
    return this.decide(scope, charge, now, 0);
  }

  /**
   * A GraphQL request under `units: cost` (SPEC §10): the chain admitted it for 1 unit; its
   * estimate (at least 1) is charged here before any backend read, or it is refused (429) and
   * its unit given back.
   */
  chargeCost(scope: RequestScope, documents: number): Promise<void> | void {
    const covered = scope.rateLimits;
    if (covered === undefined) return;
    const cost = Math.max(1, Math.ceil(documents)) - 1;
    const keyId = scope.principal.via === 'apikey' ? scope.principal.keyId : undefined;
    const byCost: Charge = { kind: 'estimate', allowances: [], policies: [], cost, keyId };
    covered.policies.forEach((p, i) => {
      if (p.units === 'cost') {
        byCost.allowances.push(covered.allowances[i]!);
        byCost.policies.push(p);
      }
    });
    if (byCost.allowances.length === 0 || cost === 0 || (!this.sharing.shared && this.onAway !== 'local')) return;
    return this.decide(scope, byCost, Date.now(), 0);
  }

  /**
   * One subscription event about to be delivered (SPEC §6.5, issue 53): charged its estimated
   * `documents` (at least 1) against the `units: cost` policies that covered the subscription's
   * start. Units come from the slice this replica holds, as a request's do: no Redis round trip
   * per event in the steady state. Answers null when delivered, else the refusal (429 naming the
   * policy and when to retry, or 503 under `onRedisUnavailable: deny`): the subscription ends.
   */
  chargeEvent(scope: RequestScope, documents: number): Promise<OutriggerError | null> | OutriggerError | null {
    const covered = scope.rateLimits;
    if (covered === undefined) return null;
    const now = Date.now();
    const keyId = scope.principal.via === 'apikey' ? scope.principal.keyId : undefined;
    const byCost: Charge = { kind: 'event', allowances: [], policies: [], cost: Math.max(1, Math.ceil(documents)), keyId };
    for (const started of covered.policies) {
      // The policy of that name as configured now: a reload may have changed its limit or removed it.
      const p = this.byName.get(started.name);
      if (p === undefined || p.units !== 'cost') continue;
      // Looked up again, not the start's: a key's override may have changed, a swept allowance been replaced.
      const allowance = p.allowanceFor(scope, now, true);
      if (allowance === null) continue;
      byCost.allowances.push(allowance);
      byCost.policies.push(p);
    }
    if (byCost.allowances.length === 0) return null;
    try {
      if (!this.sharing.shared && this.onAway !== 'local') {
        this.whileAway(scope, byCost, now);
        return null;
      }
      const decided = this.decide(scope, byCost, now, 0);
      return decided === undefined ? null : decided.then(() => null, refusal);
    } catch (error) {
      return refusal(error);
    }
  }

  private decide(scope: RequestScope, charge: Charge, now: number, round: number): Promise<void> | void {
    const { allowances, cost } = charge;
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
        if (!this.sharing.shared && this.onAway !== 'local') return this.whileAway(scope, charge, Date.now());
        return this.decide(scope, charge, Date.now(), round + 1);
      });
    }
    if (refused === -1 && leasing !== null) refused = taken;
    if (refused !== -1) {
      // Refused on local counters: Redis may be back, and only a lease can tell.
      for (const a of allowances) if (a.local) this.sharing.probe(a, now);
      return this.refuse(scope, charge, refused, now);
    }
    this.admitted(scope, charge, now);
  }

  /** Admitted by every policy: usage counted, slices topped up, headers set. */
  private admitted(scope: RequestScope, charge: Charge, now: number): void {
    const { keyId, kind } = charge;
    if (keyId !== undefined) this.usage.record(keyId, kind === 'request' ? 1 : 0, charge.cost, 0, now);
    if (kind === 'request') this.keepCovered(scope, charge);
    for (const a of charge.allowances) {
      if (a.local) this.sharing.probe(a, now);
      else if (a.wantsPrefetch()) void this.sharing.lease(a, 1);
    }
    // An event's response head went out when the subscription started; an estimate's headers say what covered the request.
    if (this.headers && kind !== 'event') this.setHeaders(scope, charge, now);
  }

  /** A request a `units: cost` policy covers keeps what covered it: its estimate, or its subscription's events, are charged later. */
  private keepCovered(scope: RequestScope, charge: Charge): void {
    if (this.hasCostPolicy && charge.policies.some((p) => p.units === 'cost')) scope.rateLimits = charge;
  }

  private refuse(scope: RequestScope, charge: Charge, index: number, now: number): never {
    const { kind, cost, keyId } = charge;
    const policy = charge.policies[index]!;
    const allowance = charge.allowances[index]!;
    this.refusedMetric.get(policy.name)?.inc();
    const estimate = kind === 'estimate';
    if (estimate) {
      // The unit the chain took for this request goes back: a refused request costs nothing.
      for (const a of scope.rateLimits!.allowances) a.refund(1, a.windowId);
      if (keyId !== undefined) this.usage.record(keyId, -1, -1, 1, now);
    } else if (keyId !== undefined) this.usage.record(keyId, 0, 0, 1, now);
    if (this.headers && kind !== 'event') this.setHeaders(scope, charge, now, allowance);
    const retry = allowance.resetSeconds(now) || 1;
    const what = describeAmount(allowance.limit, allowance.window, policy.units === 'cost' ? 'units' : 'requests');
    const kindOf = allowance.window.period ? 'quota' : 'rate limit';
    const costly = kind === 'event' ? ` (each event of this subscription costs ${cost} units)` : cost > 1 ? ` (this request costs ${cost + (estimate ? 1 : 0)} units)` : '';
    throw tooManyRequests(`${kindOf} '${policy.name}': ${what}${costly}; retry in ${retry} s`, retry);
  }

  /** Redis away under `allow` (no limits) or `deny` (503); a probe now and then finds it back. */
  private whileAway(scope: RequestScope, charge: Charge, now: number): void {
    const { keyId, kind } = charge;
    for (const a of charge.allowances) this.sharing.probe(a, now);
    if (this.onAway === 'allow') {
      if (keyId !== undefined) this.usage.record(keyId, kind === 'request' ? 1 : 0, charge.cost, 0, now);
      // A subscription started now has its events charged once Redis is back.
      if (kind === 'request') this.keepCovered(scope, charge);
      return;
    }
    if (keyId !== undefined) this.usage.record(keyId, 0, 0, 1, now);
    throw new OutriggerError(503, 'RATE_LIMITS_UNAVAILABLE', `rate limits cannot be checked while Redis is unavailable (limits.onRedisUnavailable: deny); retry shortly`, { 'retry-after': '2' });
  }

  /** `RateLimit-Policy` with every covering policy, `RateLimit` with the one nearest exhaustion (draft-ietf-httpapi-ratelimit-headers-11). */
  private setHeaders(scope: RequestScope, charge: Charge, now: number, refused?: Allowance): void {
    // An estimate's headers name every policy that covered the request, not only its `units: cost` ones.
    const estimate = charge.kind === 'estimate';
    const { allowances } = estimate ? scope.rateLimits! : charge;
    let policyValue = '';
    let nearest: Allowance = refused ?? allowances[0]!;
    for (let i = 0; i < allowances.length; i++) {
      const a = allowances[i]!;
      policyValue = i === 0 ? a.policyItem(now) : `${policyValue}, ${a.policyItem(now)}`;
      if (refused === undefined && a.remaining() < nearest.remaining()) nearest = a;
    }
    const headers = {
      'ratelimit-policy': policyValue,
      ratelimit: `"${nearest.policy}";r=${refused === undefined ? nearest.remaining() : 0};t=${nearest.resetSeconds(now)}`,
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
