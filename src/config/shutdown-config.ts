/**
 * `shutdown:` (SPEC §2): how a SIGTERM is taken, in the order a Kubernetes sidecar needs.
 *
 *   drainSeconds    readiness fails and every answer carries `Connection: close`, while requests
 *                   are still served, so the endpoint is taken out of rotation (default 5, as
 *                   Istio's `terminationDrainDuration`);
 *   timeoutSeconds  counted from the signal, like Kubernetes' `terminationGracePeriodSeconds`:
 *                   in-flight requests are cut when it runs out (default 25, so the flush of
 *                   webhook events and the worker's last acknowledgements fit in the default 30 s).
 *
 * `listen.shutdownGraceMs` (the older setting: how long in-flight requests may run once accepting
 * stops, with no drain before) is still read, as a deprecated spelling: it means the time after the drain,
 * so `timeoutSeconds = drainSeconds + shutdownGraceMs / 1000`, and a warning names the new keys.
 */
import type { SectionReader } from './reader.js';

export interface ShutdownConfig {
  drainSeconds: number;
  timeoutSeconds: number;
  /** Set when the deprecated `listen.shutdownGraceMs` was used: `check` prints it, `start` logs it. */
  deprecation: string | null;
}

export const SHUTDOWN_DEFAULTS = { drainSeconds: 5, timeoutSeconds: 25 } as const;
const MAX_SECONDS = 3600;

/** Seconds with up to millisecond precision (0.5 is fine: tests and local runs want short drains). */
function seconds(section: SectionReader, key: string, fallback: number): number {
  const value = section.raw(key);
  if (value === undefined || value === null) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > MAX_SECONDS) {
    section.problems.push(`${section.path}.${key}: must be a number of seconds from 0 to ${MAX_SECONDS} (got ${JSON.stringify(value)})`);
    return fallback;
  }
  return Math.round(value * 1000) / 1000;
}

export function readShutdown(section: SectionReader, listen: SectionReader): ShutdownConfig {
  const drainSeconds = seconds(section, 'drainSeconds', SHUTDOWN_DEFAULTS.drainSeconds);
  const hasTimeout = section.has('timeoutSeconds');
  let timeoutSeconds = seconds(section, 'timeoutSeconds', SHUTDOWN_DEFAULTS.timeoutSeconds);
  let deprecation: string | null = null;
  if (listen.has('shutdownGraceMs')) {
    const graceMs = listen.integer('shutdownGraceMs', 0, 0, 600_000);
    if (hasTimeout) {
      section.problems.push(`${listen.path}.shutdownGraceMs: replaced by shutdown.timeoutSeconds, which is also set; remove listen.shutdownGraceMs`);
    } else {
      timeoutSeconds = drainSeconds + graceMs / 1000;
      deprecation =
        `listen.shutdownGraceMs is deprecated: write shutdown: { drainSeconds: ${drainSeconds}, timeoutSeconds: ${timeoutSeconds} } ` +
        `(the same behaviour: a ${drainSeconds} s drain, then in-flight requests may run ${graceMs / 1000} s more)`;
    }
  } else listen.raw('shutdownGraceMs');
  section.finish();
  if (drainSeconds > timeoutSeconds)
    section.problems.push(`${section.path}.drainSeconds: must not exceed shutdown.timeoutSeconds (${timeoutSeconds}); the timeout is counted from the signal and includes the drain`);
  return { drainSeconds, timeoutSeconds, deprecation };
}
