/**
 * When a failed delivery is tried again (SPEC §7.2.3): network errors, timeouts, 429 and 5xx
 * are retried on `webhooks.retrySchedule` (default 5 s, 1 min, 10 min, 1 h, 6 h: six attempts in
 * all), each delay stretched by a random 0-20 % (jitter, so a target that failed for many events
 * at once is not hit by all their retries in the same second). A `Retry-After` answer replaces
 * the scheduled delay of that attempt (bounded to 24 h); it never adds attempts.
 */

export const MAX_RETRY_AFTER_MS = 24 * 3600_000;
export const JITTER = 0.2;

/**
 * The delay before the next attempt after attempt number `failedAttempt` (1-based) failed in a
 * retryable way, or null when the schedule is exhausted (the failure is final).
 */
export function nextRetryDelayMs(schedule: readonly number[], failedAttempt: number, retryAfterMs: number | null, random: () => number = Math.random): number | null {
  if (failedAttempt < 1 || failedAttempt > schedule.length) return null;
  if (retryAfterMs !== null && Number.isFinite(retryAfterMs)) return Math.min(MAX_RETRY_AFTER_MS, Math.max(0, Math.round(retryAfterMs)));
  const base = schedule[failedAttempt - 1]!;
  return Math.round(base * (1 + JITTER * random()));
}

/** `Retry-After` as milliseconds from `now`: delay-seconds or an HTTP date; null when absent or unreadable. */
export function parseRetryAfter(value: string | string[] | undefined, now = Date.now()): number | null {
  const text = Array.isArray(value) ? value[0] : value;
  if (text === undefined) return null;
  const trimmed = text.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const date = Date.parse(trimmed);
  if (Number.isNaN(date)) return null;
  return Math.max(0, date - now);
}
