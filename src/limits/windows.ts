/**
 * Window arithmetic on this replica's clock: used only while Redis is away (each replica then
 * counts on its own, SPEC §10) and for the `w` of a quota's `RateLimit-Policy` item. While Redis
 * is reachable the window's id and end come from Redis's clock (store/scripts/lease-rate-limit-slice.ts).
 */
import type { LimitWindow } from '../principal/limit-amount.js';

const DAY_MS = 86_400_000;

/** The fixed window holding `now`: aligned on the epoch (`seconds`), the UTC day, or the UTC month. */
export function windowAt(window: LimitWindow, now: number): { id: string; end: number } {
  if (window.period === 'month') {
    const d = new Date(now);
    const y = d.getUTCFullYear();
    const m = d.getUTCMonth();
    return { id: String(y * 12 + m), end: Date.UTC(y, m + 1, 1) };
  }
  const ms = window.seconds === undefined ? DAY_MS : window.seconds * 1000;
  const id = Math.floor(now / ms);
  return { id: String(id), end: (id + 1) * ms };
}

/** Seconds in the window or calendar period holding `now` (a month's length varies). */
export function windowSeconds(window: LimitWindow, now: number): number {
  if (window.period === 'month') {
    const d = new Date(now);
    const y = d.getUTCFullYear();
    const m = d.getUTCMonth();
    return (Date.UTC(y, m + 1, 1) - Date.UTC(y, m, 1)) / 1000;
  }
  return window.seconds ?? 86_400;
}

/** The tag in an allowance's Redis key: `60s`, `day` or `month`. */
export function windowTag(window: LimitWindow): string {
  return window.period ?? `${window.seconds}s`;
}

/** What the script is told: `seconds` with the window's length (a day is 86400 s), or `month`. */
export function scriptWindow(window: LimitWindow): [kind: string, seconds: number] {
  if (window.period === 'month') return ['month', 0];
  return ['seconds', window.seconds ?? 86_400];
}

/** `100 requests per 60 s`, `100000 units per month (UTC)`: how a refusal names the amount. */
export function describeAmount(limit: number, window: LimitWindow, units: string): string {
  if (window.period) return `${limit} ${units} per ${window.period} (UTC)`;
  return `${limit} ${units} per ${window.seconds} s`;
}
