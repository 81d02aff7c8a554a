/**
 * The syntax of a retry schedule (`webhooks.retrySchedule` in the config, a webhook's own
 * `retrySchedule`): a list of delays, each a number of seconds or a string like 200ms, 5s, 1m.
 * Here, below both the config and the webhooks, so that the config's validation does not import
 * a feature; the worker applies the schedule (webhooks/deliver/retry-policy.ts).
 */

const DURATION_UNITS_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const RETRY_DELAY_MIN_MS = 10;
const RETRY_DELAY_MAX_MS = 7 * 86_400_000;
export const RETRY_SCHEDULE_MAX_LENGTH = 50;

/**
 * One delay of a retry schedule (`webhooks.retrySchedule`, or a webhook's own `retrySchedule`):
 * a number of seconds or a string like 200ms, 5s, 1m, 1h, 1d; in ms, or null when it is not one
 * or lies outside 10ms..7d.
 */
export function parseRetryDelay(item: unknown): number | null {
  let ms = NaN;
  if (typeof item === 'number') ms = item * 1000;
  else if (typeof item === 'string') {
    const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)\s*$/.exec(item);
    if (m) ms = Number(m[1]) * DURATION_UNITS_MS[m[2]!]!;
  }
  if (!Number.isFinite(ms) || ms < RETRY_DELAY_MIN_MS || ms > RETRY_DELAY_MAX_MS) return null;
  return Math.round(ms);
}
