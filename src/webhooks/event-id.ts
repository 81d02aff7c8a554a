import { randomBytes } from 'node:crypto';

const PROCESS_TAG = randomBytes(6).toString('hex');
let counter = 0;

/**
 * A unique event id without a random draw per request: time (base36 ms), a per-process random
 * tag and a counter, e.g. `evt_mh3k2a1b-4f0c1e2d3a4b-1f`. Never contains `.` or `:` (it is
 * part of Standard Webhooks ids and of Redis key names).
 */
export function newEventId(now = Date.now()): string {
  counter = (counter + 1) % 0x7fffffff;
  // Thousands of events share a millisecond's prefix: built once per millisecond.
  if (now !== prefixTime) {
    prefixTime = now;
    prefix = `evt_${now.toString(36)}-${PROCESS_TAG}-`;
  }
  return prefix + counter.toString(36);
}
let prefixTime = -1;
let prefix = '';
