import { afterEach, describe, expect, it, vi } from 'vitest';
import type { OutriggerError } from '../../../src/errors.js';
import { UpstreamSlots } from '../../../src/proxy/upstream-slots.js';

describe('UpstreamSlots', () => {
  afterEach(() => vi.useRealTimers());
  const flush = () => new Promise<void>((resolve) => queueMicrotask(resolve));

  function harness(options: Partial<ConstructorParameters<typeof UpstreamSlots>[0]> = {}) {
    const slots = new UpstreamSlots({ total: 2, perClient: 2, queueTimeoutMs: 1000, maxWaitingPerClient: 10, ...options });
    const started: string[] = [];
    const refused: Array<[string, OutriggerError]> = [];
    const ask = (ip: string, name: string) => slots.acquire(ip, { start: () => void started.push(name), refuse: (e) => void refused.push([name, e]) });
    return { slots, started, refused, ask };
  }

  it('starts at once while slots are free, then makes the rest wait until one is released', async () => {
    const { slots, started, ask } = harness();
    expect(ask('a', 'a1')).toBeNull();
    expect(ask('b', 'b1')).toBeNull();
    expect(ask('c', 'c1')).not.toBeNull();
    expect(started).toEqual(['a1', 'b1']);
    expect(slots.waitingCount).toBe(1);
    slots.release('a');
    await flush();
    expect(started).toEqual(['a1', 'b1', 'c1']);
    expect(slots.activeCount).toBe(2);
  });

  it('never gives one client more than perClient slots, and serves waiting clients in turn', async () => {
    const { slots, started, ask } = harness({ total: 3, perClient: 1 });
    ask('a', 'a1');
    ask('a', 'a2');
    ask('a', 'a3');
    ask('b', 'b1');
    ask('c', 'c1');
    expect(started).toEqual(['a1', 'b1', 'c1']);
    slots.release('b');
    await flush();
    // b's slot is free but a may hold only one: nothing a can take until a1 ends.
    expect(started).toEqual(['a1', 'b1', 'c1']);
    slots.release('a');
    await flush();
    expect(started).toEqual(['a1', 'b1', 'c1', 'a2']);
  });

  it('takes a cancelled request out of the line: it never starts', async () => {
    const { slots, started, ask } = harness({ total: 1 });
    ask('a', 'a1');
    const waiting = ask('b', 'b1')!;
    ask('c', 'c1');
    waiting.cancel();
    expect(slots.waitingCount).toBe(1);
    slots.release('a');
    await flush();
    expect(started).toEqual(['a1', 'c1']);
  });

  it('answers 503 with Retry-After past the deadline, and 429 past the per-client waiting bound', () => {
    vi.useFakeTimers();
    const { slots, refused, ask } = harness({ total: 1, maxWaitingPerClient: 1 });
    ask('a', 'a1');
    ask('b', 'b1');
    ask('b', 'b2');
    expect(refused.map(([n, e]) => [n, e.status])).toEqual([['b2', 429]]);
    vi.advanceTimersByTime(1000);
    expect(refused.map(([n, e]) => [n, e.status])).toEqual([
      ['b2', 429],
      ['b1', 503],
    ]);
    expect(refused[1]![1].headers).toEqual({ 'retry-after': '1' });
    expect(slots.waitingCount).toBe(0);
  });

  it('keeps idle clients up to a bound, then forgets them all at once, never one in flight or waiting', () => {
    const { slots, started, ask } = harness({ total: 2, perClient: 1 });
    ask('busy', 'busy1');
    ask('busy', 'busy2'); // waits: its client is at perClient
    for (let i = 0; i < 3000; i++) {
      ask(`10.0.${i >> 8}.${i & 255}`, `r${i}`);
      slots.release(`10.0.${i >> 8}.${i & 255}`);
    }
    expect(started).toHaveLength(3001);
    expect(slots.clientCount).toBeLessThanOrEqual(1025);
    expect(slots.waitingCount).toBe(1);
    slots.release('busy');
    expect(slots.activeCount).toBe(0);
  });

  it('with more clients in flight than the bound, keeps them all and holds at most twice their number', () => {
    const { slots, started, ask } = harness({ total: 2000, perClient: 1 });
    const live = Array.from({ length: 1500 }, (_, i) => `10.1.${i >> 8}.${i & 255}`);
    for (const ip of live) ask(ip, ip);
    for (let i = 0; i < 5000; i++) {
      const ip = `10.2.${i >> 8}.${i & 255}`;
      ask(ip, ip);
      slots.release(ip);
    }
    expect(started).toHaveLength(6500);
    expect(slots.activeCount).toBe(1500);
    expect(slots.clientCount).toBeGreaterThanOrEqual(1500);
    expect(slots.clientCount).toBeLessThanOrEqual(3000);
    for (const ip of live) slots.release(ip);
    expect(slots.activeCount).toBe(0);
  });
});
