import { describe, expect, it, vi } from 'vitest';
import { ADAPTIVE_DEFAULTS, BREAKER_DEFAULTS } from '../../../src/config/upstream-protection.js';
import { AdaptiveLimit } from '../../../src/proxy/guard/adaptive-limit.js';
import { Breaker, type BreakerTransition } from '../../../src/proxy/guard/breaker.js';
import { CRITICAL, DEFAULT, SHEDDABLE, UpstreamSlots, type Priority } from '../../../src/proxy/upstream-slots.js';
import type { OutriggerError } from '../../../src/errors.js';

/** Outrigger's loop as idle: the limit judges every window. */
const idle = () => 0;
/** The ratio alone (toleranceMs 0), except where a row says otherwise. */
const adaptive = { ...ADAPTIVE_DEFAULTS, enabled: true, minLimit: 2, sampleWindowMs: 100, minRttPeriodSeconds: 10, toleranceMs: 0 };

/** Feeds `windows` sample windows of `perWindow` answers of `ms` each, from virtual time `t`; returns the time after. */
function feed(limit: AdaptiveLimit, t: number, ms: number, windows: number, perWindow = 10): number {
  for (let w = 0; w < windows; w++) {
    for (let i = 0; i < perWindow; i++) limit.sample(ms, t + (i * 100) / perWindow);
    t += 100;
  }
  return (limit.sample(ms, t), t);
}

describe('AdaptiveLimit (the gradient against the minimum latency)', () => {
  it('keeps the whole limit while latency stays at its minimum', () => {
    const limit = new AdaptiveLimit(adaptive, 64, () => {}, idle);
    feed(limit, 0, 10, 30);
    expect(limit.limit).toBe(64);
    expect(limit.minRtt).toBe(10);
  });

  it('shrinks to the floor when latency is 10x the minimum, and grows back when it returns', () => {
    const changes: number[] = [];
    const limit = new AdaptiveLimit(adaptive, 64, (l) => changes.push(l), idle);
    let t = feed(limit, 0, 10, 5);
    t = feed(limit, t, 100, 30);
    expect(limit.limit).toBe(2);
    // Never more than halved in one window (a decrease is also smoothed).
    for (let i = 1; i < changes.length; i++) expect(changes[i]!).toBeGreaterThanOrEqual(Math.floor(changes[i - 1]! / 2));
    feed(limit, t, 10, 20);
    expect(limit.limit).toBe(64);
  });

  it('smooths every window of a fall: one slow window costs a quarter of the limit, a lasting fall less than half a window', () => {
    const changes: number[] = [];
    const limit = new AdaptiveLimit(adaptive, 64, (l) => changes.push(l), idle);
    let t = feed(limit, 0, 10, 5);
    t = feed(limit, t, 100, 1);
    expect(changes).toEqual([50]);
    t = feed(limit, t, 10, 3);
    expect(limit.limit).toBe(64);
    changes.length = 0;
    feed(limit, t, 100, 3);
    expect(changes).toEqual([50, 40, 32]);
  });

  it('re-measures the minimum each period: a backend slower for good becomes the new baseline', () => {
    const limit = new AdaptiveLimit(adaptive, 64, () => {}, idle);
    let t = feed(limit, 0, 10, 5);
    t = feed(limit, t, 40, 20);
    expect(limit.limit).toBeLessThan(64);
    // Once a whole period (10 s) saw nothing below 40 ms, 40 ms is the minimum: the limit grows back.
    feed(limit, t, 40, 200);
    expect(limit.minRtt).toBe(40);
    expect(limit.limit).toBe(64);
  });

  it("does not shrink while Outrigger's own loop is saturated: the latency is then its own", () => {
    let busy = 1;
    const limit = new AdaptiveLimit(
      adaptive,
      64,
      () => {},
      () => busy,
    );
    let t = feed(limit, 0, 10, 5);
    t = feed(limit, t, 100, 10);
    expect(limit.limit).toBe(64);
    busy = 0.5;
    feed(limit, t, 100, 10);
    expect(limit.limit).toBeLessThan(64);
  });

  it('takes a few milliseconds over a sub-millisecond minimum for scheduling, not queueing (toleranceMs)', () => {
    const limit = new AdaptiveLimit({ ...adaptive, toleranceMs: ADAPTIVE_DEFAULTS.toleranceMs }, 64, () => {}, idle);
    let t = feed(limit, 0, 0.2, 5);
    t = feed(limit, t, 30, 20);
    expect(limit.limit).toBe(64);
    // Ten times a healthy 20 ms is past it.
    feed(limit, t, 200, 20);
    expect(limit.limit).toBeLessThan(64);
  });

  it('judges no window with fewer than three answers', () => {
    const limit = new AdaptiveLimit(adaptive, 64, () => {}, idle);
    limit.sample(10, 0);
    for (let t = 100; t < 2000; t += 150) limit.sample(1000, t);
    expect(limit.limit).toBe(64);
  });
});

describe('Breaker', () => {
  function harness(over: Partial<typeof BREAKER_DEFAULTS> = {}) {
    let now = 1_000_000;
    const moves: BreakerTransition[] = [];
    const breaker = new Breaker(
      { ...BREAKER_DEFAULTS, enabled: true, failures: 3, minAnswers: 4, coolOffSeconds: 5, probes: 2, ...over },
      (t) => moves.push(t),
      () => now,
    );
    return { breaker, moves, advance: (ms: number) => (now += ms) };
  }

  it('opens after consecutive failures, refuses while open, half-opens after the cool-off and closes after its probes', () => {
    const { breaker, moves, advance } = harness();
    breaker.failed('unreachable');
    breaker.failed('timeout');
    expect(breaker.allow()).toBe(true);
    breaker.failed('unreachable');
    expect(breaker.state).toBe('open');
    expect(breaker.allow()).toBe(false);
    expect(breaker.retryAfterSeconds).toBe(5);
    advance(5000);
    expect(breaker.allow()).toBe(true);
    expect(breaker.allow()).toBe(true);
    expect(breaker.allow()).toBe(false); // two probes only
    breaker.answered(200);
    breaker.answered(204);
    expect(breaker.state).toBe('closed');
    expect(moves.map((m) => m.to)).toEqual(['open', 'half-open', 'closed']);
  });

  it('an answer resets the consecutive count; a failed probe opens it again', () => {
    const { breaker, advance } = harness();
    breaker.failed('unreachable');
    breaker.failed('unreachable');
    breaker.answered(200);
    breaker.failed('unreachable');
    expect(breaker.state).toBe('closed');
    breaker.failed('unreachable');
    breaker.failed('unreachable');
    expect(breaker.state).toBe('open');
    advance(5000);
    expect(breaker.allow()).toBe(true);
    breaker.answered(503);
    expect(breaker.state).toBe('open');
  });

  it('opens on a 5xx ratio over the window once enough answers came, and forgets answers older than the window', () => {
    const { breaker, advance } = harness({ ratio: 0.5, windowSeconds: 2 });
    breaker.answered(500);
    breaker.answered(500);
    breaker.answered(500);
    expect(breaker.state).toBe('closed'); // 3 answers < minAnswers 4
    advance(3000);
    breaker.answered(500);
    breaker.answered(200);
    breaker.answered(200);
    breaker.answered(200);
    expect(breaker.state).toBe('closed'); // the old 5xx are out of the window: 1 of 4
    breaker.answered(500);
    breaker.answered(500);
    expect(breaker.state).toBe('closed'); // 3 of 6 is not over 0.5
    breaker.answered(500);
    expect(breaker.state).toBe('open');
  });

  it('hands out new probes when the first ones never reported (their clients left)', () => {
    const { breaker, advance } = harness();
    for (let i = 0; i < 3; i++) breaker.failed('unreachable');
    advance(5000);
    expect(breaker.allow()).toBe(true);
    expect(breaker.allow()).toBe(true);
    expect(breaker.allow()).toBe(false);
    advance(5000);
    expect(breaker.allow()).toBe(true);
  });
});

describe('UpstreamSlots under an adaptive limit (priorities)', () => {
  const flush = () => new Promise<void>((resolve) => queueMicrotask(resolve));
  function harness() {
    const slots = new UpstreamSlots({ total: 8, perClient: 8, queueTimeoutMs: 1000, maxWaitingPerClient: 100, sheddableFraction: 0.5 });
    const started: string[] = [];
    const refused: Array<[string, OutriggerError]> = [];
    const ask = (name: string, priority: Priority = DEFAULT, ip = name) => slots.acquire(ip, { priority, start: () => void started.push(name), refuse: (e) => void refused.push([name, e]) });
    return { slots, started, refused, ask };
  }

  it('refuses sheddable requests first, at once, while the limit binds; critical ones wait and go first', async () => {
    const { slots, started, refused, ask } = harness();
    slots.setLimit(4);
    ask('d1');
    ask('s1', SHEDDABLE); // 1 in flight < 4 x 0.5: admitted
    ask('s2', SHEDDABLE); // 2 in flight: not below half the limit
    expect(refused.map(([n, e]) => [n, e.status, e.code])).toEqual([['s2', 503, 'UPSTREAM_OVERLOADED']]);
    ask('d2');
    ask('d3');
    ask('d4');
    ask('c1', CRITICAL);
    expect(started).toEqual(['d1', 's1', 'd2', 'd3']);
    // Default requests wait in the round robin; a critical one goes before them.
    ask('d5');
    ask('c2', CRITICAL);
    expect(refused.map(([n]) => n)).toEqual(['s2']);
    slots.release('d1');
    slots.release('s1');
    await flush();
    expect(started.slice(4)).toEqual(['c1', 'c2']);
    slots.release('d2');
    await flush();
    expect(started.slice(6)).toEqual(['d4']);
  });

  it('a critical request still waiting at the deadline starts over the limit, never over upstream.connections', () => {
    vi.useFakeTimers();
    try {
      const { slots, started, refused, ask } = harness();
      slots.setLimit(2);
      ask('d1');
      ask('d2');
      ask('c1', CRITICAL);
      ask('d3');
      vi.advanceTimersByTime(1000);
      // The default one is refused at its deadline; the critical one goes over the limit of 2.
      expect(started).toEqual(['d1', 'd2', 'c1']);
      expect(refused.map(([n, e]) => [n, e.code])).toEqual([['d3', 'UPSTREAM_OVERLOADED']]);
      for (let i = 4; i <= 8; i++) ask(`c${i}`, CRITICAL);
      vi.advanceTimersByTime(1000);
      expect(slots.activeCount).toBe(8);
      // upstream.connections (8) all in flight: the next critical one is refused at its deadline.
      ask('c9', CRITICAL);
      vi.advanceTimersByTime(1000);
      expect(refused.map(([n]) => n)).toEqual(['d3', 'c9']);
    } finally {
      vi.useRealTimers();
    }
  });

  it("serves a client's line in order until it refuses at its deadline, then newest first for a second while the limit binds", async () => {
    vi.useFakeTimers();
    try {
      const { slots, started, refused, ask } = harness();
      slots.setLimit(1);
      ask('first', DEFAULT, 'one');
      ask('w1', DEFAULT, 'one');
      await vi.advanceTimersByTimeAsync(500);
      ask('w2', DEFAULT, 'one');
      await vi.advanceTimersByTimeAsync(300);
      // A line that stood 800 ms but refused nobody: in order (a healthy backend's dip).
      slots.release('one');
      await vi.advanceTimersByTimeAsync(0);
      expect(started).toEqual(['first', 'w1']);
      ask('w3', DEFAULT, 'one');
      await vi.advanceTimersByTimeAsync(700);
      // w2 met its deadline: the line is refusing, so the freshest starts and the stale wait out theirs.
      expect(refused.map(([n]) => n)).toEqual(['w2']);
      ask('w4', DEFAULT, 'one');
      await vi.advanceTimersByTimeAsync(100);
      slots.release('one');
      await vi.advanceTimersByTimeAsync(0);
      expect(started.at(-1)).toBe('w4');
      await vi.advanceTimersByTimeAsync(200);
      expect(refused.map(([n]) => n)).toEqual(['w2', 'w3']);
      // A second with no refusal: in order again.
      await vi.advanceTimersByTimeAsync(1100);
      ask('o1', DEFAULT, 'one');
      ask('o2', DEFAULT, 'one');
      slots.release('one');
      await vi.advanceTimersByTimeAsync(0);
      expect(started.at(-1)).toBe('o1');
      // The limit back at upstream.connections: in order, even right after a refusal.
      slots.setLimit(8);
      await vi.advanceTimersByTimeAsync(0);
      for (let i = 0; i < 6; i++) ask(`h${i}`, DEFAULT, 'one');
      ask('p1', DEFAULT, 'one');
      await vi.advanceTimersByTimeAsync(1000);
      expect(refused.map(([n]) => n)).toContain('p1');
      for (const n of ['q1', 'q2']) ask(n, DEFAULT, 'one');
      slots.release('one');
      await vi.advanceTimersByTimeAsync(0);
      expect(started.at(-1)).toBe('q1');
    } finally {
      vi.useRealTimers();
    }
  });

  it('a limit that grows starts the waiting requests', async () => {
    const { slots, started, ask } = harness();
    slots.setLimit(1);
    ask('a');
    ask('b');
    expect(started).toEqual(['a']);
    slots.setLimit(8);
    await flush();
    expect(started).toEqual(['a', 'b']);
  });
});
