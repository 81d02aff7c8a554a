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
import { z } from 'zod';
import { got, optionalSection } from './fields.js';

export interface ShutdownConfig {
  drainSeconds: number;
  timeoutSeconds: number;
  /** Set when the deprecated `listen.shutdownGraceMs` was used: `check` prints it, `start` logs it. */
  deprecation: string | null;
}

export const SHUTDOWN_DEFAULTS = { drainSeconds: 5, timeoutSeconds: 25 } as const;
const MAX_SECONDS = 3600;

/** Seconds with up to millisecond precision (0.5 is fine: tests and local runs want short drains). */
const seconds = z
  .number({ error: (iss) => `must be a number of seconds from 0 to ${MAX_SECONDS} ${got(iss.input)}` })
  .min(0)
  .max(MAX_SECONDS);
const toMs = (value: number) => Math.round(value * 1000) / 1000;

/** `timeoutSeconds` has no default here: when it is left out, `listen.shutdownGraceMs` may still set it (shutdownOf). */
export const shutdownSchema = optionalSection({
  drainSeconds: seconds.default(SHUTDOWN_DEFAULTS.drainSeconds).transform(toMs),
  timeoutSeconds: seconds
    .optional()
    .meta({ default: SHUTDOWN_DEFAULTS.timeoutSeconds })
    .transform((value) => (value === undefined ? undefined : toMs(value))),
});

/** The deprecated spelling, read in `listen`: the time in-flight requests may run after the drain. */
export const shutdownGraceMs = z
  .int({ error: (iss) => `must be an integer from 0 to 600000 ${got(iss.input)}` })
  .min(0)
  .max(600_000)
  .optional();

type Issue = { path: string; message: string };

/** The shutdown settings once `listen.shutdownGraceMs` is taken into account; `issues` names each conflict. */
export function shutdownOf(section: z.output<typeof shutdownSchema>, graceMs: number | undefined, issues: Issue[]): ShutdownConfig {
  const { drainSeconds } = section;
  let timeoutSeconds = section.timeoutSeconds ?? SHUTDOWN_DEFAULTS.timeoutSeconds;
  let deprecation: string | null = null;
  if (graceMs !== undefined) {
    if (section.timeoutSeconds !== undefined) {
      issues.push({ path: 'listen.shutdownGraceMs', message: 'replaced by shutdown.timeoutSeconds, which is also set; remove listen.shutdownGraceMs' });
    } else {
      timeoutSeconds = drainSeconds + graceMs / 1000;
      deprecation =
        `listen.shutdownGraceMs is deprecated: write shutdown: { drainSeconds: ${drainSeconds}, timeoutSeconds: ${timeoutSeconds} } ` +
        `(the same behaviour: a ${drainSeconds} s drain, then in-flight requests may run ${graceMs / 1000} s more)`;
    }
  }
  if (drainSeconds > timeoutSeconds)
    issues.push({
      path: 'shutdown.drainSeconds',
      message: `must not exceed shutdown.timeoutSeconds (${timeoutSeconds}); the timeout is counted from the signal and includes the drain`,
    });
  return { drainSeconds, timeoutSeconds, deprecation };
}
