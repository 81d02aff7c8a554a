/**
 * `upstream.adaptiveConcurrency` and `upstream.breaker` (SPEC §13): how Outrigger keeps the
 * backend it fronts from collapsing. The parameters, their defaults and why are in
 * docs/protection.md; the algorithms are in src/proxy/guard/.
 */
import { z } from 'zod';
import { boolean, decimal, got, integer, section } from './fields.js';

export interface AdaptiveConcurrencyConfig {
  enabled: boolean;
  /** The floor: the limit never goes below it, however slow the backend. */
  minLimit: number;
  /** Latency samples are summarised (their median) and the limit recomputed once per window. */
  sampleWindowMs: number;
  /** The minimum latency is re-measured this often: the least window median of the last period. */
  minRttPeriodSeconds: number;
  /** Latency up to this multiple of the minimum counts as no queueing (Gradient2's rttTolerance; Envoy's buffer is 1.25). */
  tolerance: number;
  /**
   * Or up to this many milliseconds more, whichever is larger: a backend answering in 0.2 ms shows Outrigger's own
   * scheduling as a tenfold latency, which is no sign of a backend in trouble.
   */
  toleranceMs: number;
  /** Sheddable requests start only while fewer than this fraction of the limit are in flight. */
  sheddableFraction: number;
}

export interface BreakerConfig {
  enabled: boolean;
  /** Consecutive connection errors or timeouts that open the breaker. */
  failures: number;
  /** Or this share of 5xx answers within windowSeconds, once minAnswers came back. */
  ratio: number;
  windowSeconds: number;
  minAnswers: number;
  /** Open: every request is answered 503 at once for this long, then probes decide. */
  coolOffSeconds: number;
  /** Half-open: this many requests are let through; all must succeed to close. */
  probes: number;
}

export const ADAPTIVE_DEFAULTS: Omit<AdaptiveConcurrencyConfig, 'enabled'> = {
  // concurrency-limits' Gradient2 floor: below it a sidecar sheds a backend's ordinary concurrency
  // whenever the host is busy (the full suite on two cores shed read-backs at 4; decisions.md).
  minLimit: 20,
  sampleWindowMs: 100,
  minRttPeriodSeconds: 10,
  tolerance: 1.5,
  toleranceMs: 50,
  sheddableFraction: 0.75,
};
export const BREAKER_DEFAULTS: Omit<BreakerConfig, 'enabled'> = { failures: 20, ratio: 0.5, windowSeconds: 10, minAnswers: 20, coolOffSeconds: 5, probes: 3 };

/**
 * `on`, `off`, `true`, `false`, or a mapping of settings (on unless it says `enabled: false`);
 * each read as `{ enabled, ...settings }`.
 */
function onOffOrSettings<S extends z.ZodRawShape>(shape: S) {
  const settings = section({ enabled: boolean().default(true), ...shape });
  return z
    .union([z.boolean(), z.enum(['on', 'off']), settings], { error: (iss) => `must be on, off, or a mapping of its settings ${got(iss.input)}` })
    .default(true)
    .transform((value) => (typeof value === 'object' ? value : settings.parse({ enabled: value === true || value === 'on' })));
}

const A = ADAPTIVE_DEFAULTS;

/** `minLimit` defaults to min(20, upstream.connections), filled in by the upstream section (sections.ts). */
export const adaptiveConcurrencySchema = onOffOrSettings({
  minLimit: integer(1, 4096).optional().meta({ default: A.minLimit }),
  sampleWindowMs: integer(10, 60_000).default(A.sampleWindowMs),
  minRttPeriodSeconds: decimal(0.1, 3600).default(A.minRttPeriodSeconds),
  tolerance: decimal(1, 10).default(A.tolerance),
  toleranceMs: decimal(0, 60_000).default(A.toleranceMs),
  sheddableFraction: decimal(0, 1).default(A.sheddableFraction),
});

const B = BREAKER_DEFAULTS;

export const breakerSchema = onOffOrSettings({
  failures: integer(1, 100_000).default(B.failures),
  ratio: decimal(0.01, 1).default(B.ratio),
  windowSeconds: decimal(0.1, 3600).default(B.windowSeconds),
  minAnswers: integer(1, 1_000_000).default(B.minAnswers),
  coolOffSeconds: decimal(0.05, 3600).default(B.coolOffSeconds),
  probes: integer(1, 1000).default(B.probes),
});
