/**
 * `upstream.adaptiveConcurrency` and `upstream.breaker` (SPEC §13): how Outrigger keeps the
 * backend it fronts from collapsing. The parameters, their defaults and why are in
 * docs/protection.md; the algorithms are in src/proxy/guard/.
 */
import { SectionReader } from './reader.js';

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
   * And up to this many milliseconds more: a backend answering in 0.2 ms shows Outrigger's own
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
  minLimit: 4,
  sampleWindowMs: 100,
  minRttPeriodSeconds: 10,
  tolerance: 1.5,
  toleranceMs: 50,
  sheddableFraction: 0.75,
};
export const BREAKER_DEFAULTS: Omit<BreakerConfig, 'enabled'> = { failures: 20, ratio: 0.5, windowSeconds: 10, minAnswers: 20, coolOffSeconds: 5, probes: 3 };

/** `on`, `off`, `true`, `false`, or a mapping of settings (on). Problems go to the reader's list. */
function onOffOrSettings(parent: SectionReader, key: string): { enabled: boolean; settings: SectionReader } {
  const raw = parent.raw(key);
  const path = `${parent.path}.${key}`;
  if (raw === undefined || raw === null || raw === true || raw === 'on') return { enabled: true, settings: new SectionReader({}, path, parent.problems) };
  if (raw === false || raw === 'off') return { enabled: false, settings: new SectionReader({}, path, parent.problems) };
  if (typeof raw === 'object' && !Array.isArray(raw)) {
    const settings = new SectionReader(raw, path, parent.problems);
    return { enabled: settings.boolean('enabled', true), settings };
  }
  parent.problems.push(`${path}: must be on, off, or a mapping of its settings (got ${JSON.stringify(raw)})`);
  return { enabled: true, settings: new SectionReader({}, path, parent.problems) };
}

/** A number in [min, max] (fractions allowed). */
function number(section: SectionReader, key: string, fallback: number, min: number, max: number): number {
  const value = section.raw(key);
  if (value === undefined || value === null) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min || value > max) {
    section.problems.push(`${section.path}.${key}: must be a number from ${min} to ${max} (got ${JSON.stringify(value)})`);
    return fallback;
  }
  return value;
}

export function readAdaptiveConcurrency(upstream: SectionReader, connections: number): AdaptiveConcurrencyConfig {
  const { enabled, settings: s } = onOffOrSettings(upstream, 'adaptiveConcurrency');
  const d = ADAPTIVE_DEFAULTS;
  const out: AdaptiveConcurrencyConfig = {
    enabled,
    minLimit: s.integer('minLimit', Math.min(d.minLimit, connections), 1, 4096),
    sampleWindowMs: s.integer('sampleWindowMs', d.sampleWindowMs, 10, 60_000),
    minRttPeriodSeconds: number(s, 'minRttPeriodSeconds', d.minRttPeriodSeconds, 0.1, 3600),
    tolerance: number(s, 'tolerance', d.tolerance, 1, 10),
    toleranceMs: number(s, 'toleranceMs', d.toleranceMs, 0, 60_000),
    sheddableFraction: number(s, 'sheddableFraction', d.sheddableFraction, 0, 1),
  };
  s.finish();
  if (out.minLimit > connections) upstream.problems.push(`${s.path}.minLimit: must not exceed upstream.connections (${connections})`);
  return out;
}

export function readBreaker(upstream: SectionReader): BreakerConfig {
  const { enabled, settings: s } = onOffOrSettings(upstream, 'breaker');
  const d = BREAKER_DEFAULTS;
  const out: BreakerConfig = {
    enabled,
    failures: s.integer('failures', d.failures, 1, 100_000),
    ratio: number(s, 'ratio', d.ratio, 0.01, 1),
    windowSeconds: number(s, 'windowSeconds', d.windowSeconds, 0.1, 3600),
    minAnswers: s.integer('minAnswers', d.minAnswers, 1, 1_000_000),
    coolOffSeconds: number(s, 'coolOffSeconds', d.coolOffSeconds, 0.05, 3600),
    probes: s.integer('probes', d.probes, 1, 1000),
  };
  s.finish();
  return out;
}
