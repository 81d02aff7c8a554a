/**
 * Capped exponential backoff: `firstMs` doubled per earlier failure (`failures` = 0 gives
 * `firstMs`), never above `maxMs`. Used wherever a loop waits for Redis to come back.
 */
export function backoffMs(failures: number, firstMs: number, maxMs: number): number {
  // The exponent is bounded only so that a long outage never overflows to Infinity.
  return Math.min(maxMs, firstMs * 2 ** Math.min(Math.max(0, failures), 30));
}
