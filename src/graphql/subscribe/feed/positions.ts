/**
 * Feed positions are Redis stream ids (`<ms>-<seq>`), opaque to clients (the SSE `id:`), compared
 * here without floating point: a position is "after" another when its time, then its sequence,
 * is larger.
 */
const POSITION = /^(\d{1,15})-(\d{1,15})$/;

export function isPosition(text: string): boolean {
  return POSITION.test(text);
}

/** Negative, zero or positive as `a` is before, at or after `b`. Both must be positions. */
export function comparePositions(a: string, b: string): number {
  const [am, as] = a.split('-') as [string, string];
  const [bm, bs] = b.split('-') as [string, string];
  const ms = Number(am) - Number(bm);
  return ms !== 0 ? ms : Number(as) - Number(bs);
}

/** The time a position was written (ms since the epoch). */
export function positionTime(position: string): number {
  return Number(position.split('-')[0]);
}
