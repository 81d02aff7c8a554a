import { describe, expect, it } from 'vitest';
import { ADMITTED, Allowance, NEEDS_LEASE, REFUSED, sliceOf } from '../../../src/limits/allowance.js';

const day = { seconds: 86_400 } as const;

describe("Allowance (one replica's share of one limit)", () => {
  it('slices are 5 % of the limit, 1 under 20', () => {
    expect([1, 19, 20, 100, 1000, 1_000_000].map(sliceOf)).toEqual([1, 1, 1, 5, 50, 50_000]);
  });

  it('admits only what it holds; asks for a lease when the window still has units; refuses when none are free', () => {
    const a = new Allowance('p', 'k', 10, day);
    const now = 1_000_000;
    expect(a.take(1, now, true)).toBe(NEEDS_LEASE);
    a.apply({ granted: 3, free: 7, resetMs: 5000, windowId: 'w1' }, now);
    expect([a.take(1, now, true), a.take(1, now, true), a.take(1, now, true)]).toEqual([ADMITTED, ADMITTED, ADMITTED]);
    expect(a.take(1, now, true)).toBe(NEEDS_LEASE);
    a.apply({ granted: 0, free: 0, resetMs: 4000, windowId: 'w1' }, now);
    expect(a.take(1, now, true)).toBe(REFUSED);
    expect(a.resetSeconds(now)).toBe(4);
    // The window ends: what was held is dropped, a lease is needed again.
    expect(a.take(1, now + 4000, true)).toBe(NEEDS_LEASE);
  });

  it('a slice of an older window is dropped when Redis answers for a new one', () => {
    const a = new Allowance('p', 'k', 100, day);
    a.apply({ granted: 5, free: 95, resetMs: 10, windowId: 'w1' }, 0);
    a.apply({ granted: 5, free: 95, resetMs: 60_000, windowId: 'w2' }, 5);
    expect(a.held).toBe(5);
  });

  it('refunds go back only within the same window', () => {
    const a = new Allowance('p', 'k', 10, day);
    a.apply({ granted: 2, free: 8, resetMs: 5000, windowId: 'w1' }, 0);
    a.take(1, 0, true);
    a.refund(1, 'w1');
    a.refund(1, 'w0');
    expect(a.held).toBe(2);
  });

  it('Redis away: local counting never admits more than the limit in one window', () => {
    const a = new Allowance('p', 'k', 10, day);
    const now = 86_400_000 * 100 + 1000;
    a.apply({ granted: 4, free: 6, resetMs: 60_000, windowId: String(Math.floor(now / 86_400_000)) }, now);
    for (let i = 0; i < 3; i++) expect(a.take(1, now, true)).toBe(ADMITTED);
    a.enterLocal(now);
    let admitted = 0;
    for (let i = 0; i < 20; i++) if (a.take(1, now, false) === ADMITTED) admitted++;
    expect(admitted).toBe(7);
    expect(a.offlineUsed).toBe(7);
    // The next window on this replica's clock: the whole limit again, counted locally.
    const next = now + 86_400_000;
    admitted = 0;
    for (let i = 0; i < 20; i++) if (a.take(1, next, false) === ADMITTED) admitted++;
    expect(admitted).toBe(10);
    // Redis back: a lease is needed, carrying what was admitted locally.
    expect(a.take(1, next, true)).toBe(NEEDS_LEASE);
    expect(a.offlineUsed).toBe(10);
  });
});
