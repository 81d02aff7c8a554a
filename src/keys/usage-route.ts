/**
 * The days `GET /keys/<id>/usage?from=YYYY-MM-DD&to=YYYY-MM-DD` asks for (SPEC §10): by default
 * the last 30 UTC days, today included; at most 100 days at once (usage is kept at least 90).
 */
import { badRequest } from '../errors.js';

const DAY_MS = 86_400_000;
const MAX_DAYS = 100;
const DATE = /^\d{4}-\d{2}-\d{2}$/;

function parseDay(value: string, name: string): number {
  const ms = DATE.test(value) ? Date.parse(`${value}T00:00:00Z`) : NaN;
  if (!Number.isFinite(ms) || new Date(ms).toISOString().slice(0, 10) !== value) throw badRequest(`${name} must be a UTC date written YYYY-MM-DD (got ${JSON.stringify(value)})`);
  return ms;
}

/** The UTC days from `from` to `to`, oldest first; 400 naming the parameter when they make no range. */
export function readUsageDays(query: URLSearchParams, now: number): string[] {
  const today = Math.floor(now / DAY_MS) * DAY_MS;
  const toText = query.get('to');
  const fromText = query.get('from');
  const to = toText ? parseDay(toText, 'to') : today;
  const from = fromText ? parseDay(fromText, 'from') : to - 29 * DAY_MS;
  if (from > to) throw badRequest(`from (${fromText}) is after to (${toText ?? new Date(to).toISOString().slice(0, 10)}); give from <= to`);
  const count = (to - from) / DAY_MS + 1;
  if (count > MAX_DAYS) throw badRequest(`from and to span ${count} days; ask for at most ${MAX_DAYS} at once`);
  const days: string[] = [];
  for (let t = from; t <= to; t += DAY_MS) days.push(new Date(t).toISOString().slice(0, 10));
  return days;
}
