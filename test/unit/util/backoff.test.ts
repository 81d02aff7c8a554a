import { describe, expect, it } from 'vitest';
import { backoffMs } from '../../../src/util/backoff.js';

describe('backoffMs', () => {
  it('doubles from the first delay and stops at the cap, also after a very long outage', () => {
    expect([0, 1, 2, 3, 4, 5, 6].map((n) => backoffMs(n, 100, 2000))).toEqual([100, 200, 400, 800, 1600, 2000, 2000]);
    expect(backoffMs(10_000, 50, 2000)).toBe(2000);
    expect(backoffMs(-1, 50, 2000)).toBe(50);
  });
});
