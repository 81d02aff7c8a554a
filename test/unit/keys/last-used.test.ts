import { describe, expect, it } from 'vitest';
import { LastUsedThrottle } from '../../../src/keys/last-used.js';

describe('lastUsedAt throttle (at most one write a minute per key per replica)', () => {
  it('records the first use, then nothing until a minute has passed', () => {
    const throttle = new LastUsedThrottle();
    const t0 = 1_000_000;
    expect(throttle.shouldRecord('k1', t0)).toBe(true);
    for (let s = 1; s < 60; s++) expect(throttle.shouldRecord('k1', t0 + s * 1000)).toBe(false);
    expect(throttle.shouldRecord('k1', t0 + 59_999)).toBe(false);
    expect(throttle.shouldRecord('k1', t0 + 60_000)).toBe(true);
    expect(throttle.shouldRecord('k1', t0 + 60_001)).toBe(false);
    expect(throttle.shouldRecord('k1', t0 + 120_000)).toBe(true);
  });

  it('keeps keys apart', () => {
    const throttle = new LastUsedThrottle();
    expect(throttle.shouldRecord('a', 0)).toBe(true);
    expect(throttle.shouldRecord('b', 1)).toBe(true);
    expect(throttle.shouldRecord('a', 2)).toBe(false);
    expect(throttle.shouldRecord('b', 3)).toBe(false);
  });

  it('records again after a key was forgotten (revoked and evicted)', () => {
    const throttle = new LastUsedThrottle();
    expect(throttle.shouldRecord('a', 0)).toBe(true);
    throttle.forget('a');
    expect(throttle.shouldRecord('a', 1)).toBe(true);
  });

  it('stays bounded in memory', () => {
    const throttle = new LastUsedThrottle(60_000, 100);
    for (let i = 0; i < 1000; i++) expect(throttle.shouldRecord(`k${i}`, i)).toBe(true);
    expect((throttle as unknown as { recordedAt: Map<string, number> }).recordedAt.size).toBeLessThanOrEqual(100);
  });
});
