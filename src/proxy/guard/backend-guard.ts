/**
 * What stands between Outrigger and one upstream origin (SPEC §13): the line with its adaptive
 * limit (upstream-slots.ts, adaptive-limit.ts), the circuit breaker (breaker.ts) and the retry
 * budget. One per origin, shared by everything that calls it: the pass-through and GraphQL's
 * backend reads and writes (and so MCP's tools) wait in the same line and trip the same breaker.
 */
import { OutriggerError } from '../../errors.js';
import type { UpstreamSettings } from '../forward-request.js';
import { UpstreamSlots } from '../upstream-slots.js';
import { AdaptiveLimit } from './adaptive-limit.js';
import { Breaker, type BreakerState, type BreakerTransition } from './breaker.js';

/** Retries in flight may be at most this share of the requests in flight (SPEC §13)... */
const RETRY_SHARE = 0.1;
/** ...or one, so a lone request's failed connection is still retried (Envoy's min_retry_concurrency is 3). */
const RETRY_FLOOR = 1;

export interface GuardEvents {
  /** A guard was made for a new origin (metrics track it). */
  created?(guard: BackendGuard): void;
  /** The breaker moved (logged once per transition). */
  breaker?(origin: string, transition: BreakerTransition): void;
}

/** What the console and `GET /_admin/backend` show of one origin: the limit, the line, the breaker. */
export interface BackendGuardState {
  origin: string;
  /** Requests allowed in flight now: the adaptive limit, or upstream.connections. */
  limit: number;
  /** upstream.connections: the most the limit can be. */
  connections: number;
  /** The adaptive limit's settings and what it measured; null with adaptiveConcurrency off. */
  adaptive: { minLimit: number; minLatencyMs: number | null; lastLatencyMs: number | null } | null;
  inFlight: number;
  queued: number;
  /** How long a request may wait in the line (upstream.queueTimeoutMs). */
  queueTimeoutMs: number;
  breaker: { enabled: boolean; state: BreakerState; retryAfterSeconds: number | null };
  /** Requests sent again after their connection failed, since start. */
  retries: number;
}

export class BackendGuard {
  readonly slots: UpstreamSlots;
  readonly limit: AdaptiveLimit | null;
  readonly breaker: Breaker;
  private retriesInFlight = 0;
  /** Retries made, for metrics. */
  retries = 0;

  constructor(
    readonly origin: string,
    private readonly upstream: UpstreamSettings,
    events: GuardEvents = {},
  ) {
    const adaptive = upstream.adaptiveConcurrency;
    this.slots = new UpstreamSlots({
      total: upstream.connections,
      perClient: Math.min(upstream.maxConnectionsPerClient, upstream.connections),
      queueTimeoutMs: upstream.queueTimeoutMs,
      maxWaitingPerClient: upstream.maxQueuedPerClient,
      sheddableFraction: adaptive.enabled ? adaptive.sheddableFraction : 1,
    });
    this.limit = adaptive.enabled ? new AdaptiveLimit(adaptive, upstream.connections, (limit) => this.slots.setLimit(limit)) : null;
    this.breaker = new Breaker(upstream.breaker, (t) => events.breaker?.(origin, t));
  }

  state(): BackendGuardState {
    const { limit, breaker, slots, upstream } = this;
    const ms = (v: number) => (Number.isFinite(v) && v > 0 ? Math.round(v * 10) / 10 : null);
    return {
      origin: this.origin,
      limit: slots.currentLimit,
      connections: upstream.connections,
      adaptive: limit === null ? null : { minLimit: Math.min(upstream.adaptiveConcurrency.minLimit, upstream.connections), minLatencyMs: ms(limit.minRtt), lastLatencyMs: ms(limit.lastSample) },
      inFlight: slots.activeCount,
      queued: slots.waitingCount,
      queueTimeoutMs: upstream.queueTimeoutMs,
      breaker: { enabled: upstream.breaker.enabled, state: breaker.state, retryAfterSeconds: breaker.state === 'open' ? breaker.retryAfterSeconds : null },
      retries: this.retries,
    };
  }

  /** The refusal while the breaker is open: at once, nothing sent. */
  breakerRefusal(): OutriggerError {
    return new OutriggerError(503, 'UPSTREAM_BREAKER_OPEN', `the backend is failing and its circuit breaker is ${this.breaker.state} (upstream.breaker); nothing was sent; retry in a few seconds`, {
      'retry-after': String(this.breaker.retryAfterSeconds),
    });
  }

  /** A retry may start now (within 10 % of the requests in flight); pair with `retryDone()`. */
  takeRetry(): boolean {
    if (this.retriesInFlight >= Math.max(RETRY_FLOOR, Math.floor(this.slots.activeCount * RETRY_SHARE))) return false;
    this.retriesInFlight++;
    this.retries++;
    return true;
  }

  retryDone(): void {
    this.retriesInFlight--;
  }
}

/** One guard per origin: the forwarder and GraphQL's backend take theirs here. */
export class BackendGuards {
  private readonly byOrigin = new Map<string, BackendGuard>();

  constructor(
    private readonly upstream: UpstreamSettings,
    private readonly events: GuardEvents = {},
  ) {}

  for(origin: string): BackendGuard {
    let guard = this.byOrigin.get(origin);
    if (guard === undefined) {
      this.byOrigin.set(origin, (guard = new BackendGuard(origin, this.upstream, this.events)));
      this.events.created?.(guard);
    }
    return guard;
  }

  all(): Iterable<BackendGuard> {
    return this.byOrigin.values();
  }
}
