/**
 * The bench's slowdown (bench/lib/protection-section.mjs) on virtual time, so the host's load cannot
 * blur it: the line (UpstreamSlots) and the limit (AdaptiveLimit) with their defaults, in front of
 * a model backend of 16 workers that queues the rest inside itself, offered 200 requests/s open
 * loop from one address; the backend goes from 20 ms to 200 ms a request and back.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ADAPTIVE_DEFAULTS } from '../../../src/config/upstream-protection.js';
import { AdaptiveLimit } from '../../../src/proxy/guard/adaptive-limit.js';
import { UpstreamSlots } from '../../../src/proxy/upstream-slots.js';

const WORKERS = 16;
const RATE = 200;

interface Second {
  admitted: number[];
  refused: number;
  /** The limit at the second's end. */
  limit: number;
}

/** Runs `serviceMs(second)` for `seconds` seconds of virtual time; what each second's arrivals met. */
async function simulate(seconds: number, serviceMs: (second: number) => number): Promise<Second[]> {
  const slots = new UpstreamSlots({ total: 128, perClient: 64, queueTimeoutMs: 100, maxWaitingPerClient: 256, sheddableFraction: ADAPTIVE_DEFAULTS.sheddableFraction });
  const limit = new AdaptiveLimit(
    { ...ADAPTIVE_DEFAULTS, enabled: true },
    128,
    (l) => slots.setLimit(l),
    () => 0,
  );
  let busy = 0;
  let service = serviceMs(0);
  const inside: Array<() => void> = [];
  const serve = (done: () => void): void => {
    busy++;
    setTimeout(() => {
      busy--;
      done();
      const next = inside.shift();
      if (next) serve(next);
    }, service);
  };
  const result: Second[] = [];
  for (let s = 0; s < seconds; s++) {
    service = serviceMs(s);
    const second: Second = { admitted: [], refused: 0, limit: 0 };
    result.push(second);
    for (let i = 0; i < RATE; i++) {
      const arrived = performance.now();
      slots.acquire('bench', {
        start: () => {
          const sent = performance.now();
          const done = () => {
            const now = performance.now();
            limit.sample(now - sent, now, slots.activeCount);
            slots.release('bench');
            second.admitted.push(now - arrived);
          };
          if (busy < WORKERS) serve(done);
          else inside.push(done);
        },
        refuse: () => void second.refused++,
      });
      await vi.advanceTimersByTimeAsync(1000 / RATE);
    }
    second.limit = limit.limit;
  }
  await vi.advanceTimersByTimeAsync(2000);
  return result;
}

function p99(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.99))] ?? 0;
}

describe('the bench slowdown on virtual time', () => {
  afterEach(() => vi.useRealTimers());

  it('10 x slower: the limit reaches its floor within 2 s, what it admits is fresh from the line (under 2 x the slowed backend), and recovery is whole at once', async () => {
    vi.useFakeTimers();
    // 5 s healthy, 8 s at 200 ms (the bench's slow step), 5 s healthy again.
    const seconds = await simulate(18, (s) => (s >= 5 && s < 13 ? 200 : 20));
    const healthy = seconds.slice(0, 5);
    expect(healthy.every((s) => s.refused === 0 && s.limit === 128)).toBe(true);
    // Every window of a fall is smoothed (a noisy window costs a quarter): the floor comes in the second slow second.
    expect(seconds[5]!.limit).toBeLessThanOrEqual(64);
    expect(seconds[6]!.limit).toBe(ADAPTIVE_DEFAULTS.minLimit);
    // From the slow step's third second, as the bench counts: the line refuses at its deadline, so it is
    // served newest first and what is admitted did not wait out queueTimeoutMs (100 ms) first. Served
    // in order it did, and the p99 was 2.2 x (the bench measured the same; docs/protection.md).
    const slow = seconds.slice(7, 13).flatMap((s) => s.admitted);
    expect(slow.length).toBeGreaterThan(6 * 70);
    expect(p99(slow), `admitted p99 while slow`).toBeLessThanOrEqual(2 * 200);
    for (const s of seconds.slice(14)) expect(s.admitted.length).toBeGreaterThanOrEqual(0.9 * RATE);
  });

  it('a slowdown that outlasts the re-measures settles near the slowed backend instead of swinging or creeping up', async () => {
    vi.useFakeTimers();
    // 40 s at 200 ms: the minimum is re-measured four times while the backend is slow.
    const seconds = await simulate(50, (s) => (s >= 5 && s < 45 ? 200 : 20));
    // Re-measured at the floor (20 in flight, 4 of them queued inside the backend), the minimum is ~250 ms:
    // the limit grows once against it, by headroom only, and holds; later periods, above the floor, keep it.
    const settled = seconds.slice(23, 45);
    const limits = settled.map((s) => s.limit);
    expect(Math.max(...limits), `limits ${limits.join(' ')}`).toBeLessThanOrEqual(40);
    expect(Math.min(...limits)).toBeGreaterThanOrEqual(ADAPTIVE_DEFAULTS.minLimit);
    expect(p99(settled.flatMap((s) => s.admitted)), 'admitted p99 once settled').toBeLessThanOrEqual(2 * 200);
    expect(p99(seconds.slice(7, 45).flatMap((s) => s.admitted)), 'admitted p99 over the whole slowdown').toBeLessThanOrEqual(2.25 * 200);
    for (const s of seconds.slice(46)) expect(s.admitted.length).toBeGreaterThanOrEqual(0.9 * RATE);
  });
});
