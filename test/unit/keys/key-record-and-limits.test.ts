import { describe, expect, it } from 'vitest';
import type { LimitPolicyConfig } from '../../../src/config/limits-config.js';
import { ValidationError } from '../../../src/errors.js';
import { patchKeyLimits, presentKeyLimits } from '../../../src/keys/key-limits.js';
import { adminView, newestFirst, ownerView, parseKeyRecord, type KeyRecord } from '../../../src/keys/key-record.js';

// What a key's record shows (never the key's hash) and an admin's per-key limits: written for
// `npm run mutate` (issue 54), the pure parts of what test/integration/api-keys reaches by HTTP.
const record: KeyRecord = {
  _id: 'k1',
  owner: 'alice',
  name: 'laptop',
  roles: ['reader'],
  createdAt: 1000,
  expiresAt: 2000,
  via: 'api',
  serviceId: 'svc',
  keyHash: 'HASH',
};

describe('key record views', () => {
  it("the owner's view: no owner, no hash, no service; dates as {$date}", () => {
    expect(ownerView(record, undefined)).toEqual({ _id: 'k1', name: 'laptop', roles: ['reader'], createdAt: { $date: 1000 }, expiresAt: { $date: 2000 }, via: 'api', limits: {} });
    const full = ownerView({ ...record, client: 'Claude', kind: 'token', limits: { 'per-key': { limit: 5, window: { seconds: 60 } } } }, 1500);
    expect(full).toEqual({
      _id: 'k1',
      name: 'laptop',
      roles: ['reader'],
      createdAt: { $date: 1000 },
      expiresAt: { $date: 2000 },
      lastUsedAt: { $date: 1500 },
      via: 'api',
      client: 'Claude',
      kind: 'token',
      limits: { 'per-key': { limit: 5, window: '60s' } },
    });
    expect(JSON.stringify(full)).not.toContain('HASH');
  });

  it("the admin's view adds the owner, and still no hash", () => {
    const view = adminView(record, 0);
    expect(view).toMatchObject({ _id: 'k1', owner: 'alice', lastUsedAt: { $date: 0 } });
    expect(JSON.stringify(view)).not.toContain('HASH');
    expect(JSON.stringify(view)).not.toContain('svc');
  });

  it('sorts newest first, then by id', () => {
    const a = { ...record, _id: 'a', createdAt: 1 };
    const b = { ...record, _id: 'b', createdAt: 2 };
    const c = { ...record, _id: 'c', createdAt: 2 };
    expect([a, c, b].sort(newestFirst).map((r) => r._id)).toEqual(['b', 'c', 'a']);
    expect(newestFirst(b, b)).toBe(0);
    expect(newestFirst(c, b)).toBe(1);
    expect(newestFirst(b, c)).toBe(-1);
  });

  it('parses only a stored record with an id and an expiry', () => {
    expect(parseKeyRecord(JSON.stringify(record))).toEqual(record);
    for (const bad of [null, undefined, '', 'not json', 'null', '1', JSON.stringify({ ...record, _id: 1 }), JSON.stringify({ ...record, expiresAt: '2000' })]) {
      expect(parseKeyRecord(bad), String(bad)).toBeNull();
    }
  });
});

describe('per-key limits', () => {
  const policies = [
    { name: 'per-key', by: 'key' },
    { name: 'quota', by: 'key' },
    { name: 'per-user', by: 'user' },
  ] as LimitPolicyConfig[];
  const problemsOf = (fn: () => unknown): string[] => {
    try {
      fn();
    } catch (error) {
      expect(error).toBeInstanceOf(ValidationError);
      return (error as ValidationError).problems;
    }
    throw new Error('expected a ValidationError');
  };

  it('writes windows as a person would and quotas as {quota}', () => {
    expect(presentKeyLimits(undefined)).toEqual({});
    expect(
      presentKeyLimits({
        a: { limit: 1, window: { seconds: 86_400 * 2 } },
        b: { limit: 2, window: { seconds: 7200 } },
        c: { limit: 3, window: { seconds: 90 } },
        d: { limit: 4, window: { period: 'month' } },
      }),
    ).toEqual({ a: { limit: 1, window: '2d' }, b: { limit: 2, window: '2h' }, c: { limit: 3, window: '90s' }, d: { quota: { limit: 4, period: 'month' } } });
  });

  it('sets, replaces and removes an override of a by: key policy, and removes all with null', () => {
    const set = patchKeyLimits(undefined, { limits: { 'per-key': { limit: 10, window: '60s' } } }, policies);
    expect(set).toEqual({ 'per-key': { limit: 10, window: { seconds: 60 } } });
    const both = patchKeyLimits(set, { limits: { quota: { quota: { limit: 99, period: 'day' } } } }, policies);
    expect(both).toEqual({ 'per-key': { limit: 10, window: { seconds: 60 } }, quota: { limit: 99, window: { period: 'day' } } });
    expect(set).toEqual({ 'per-key': { limit: 10, window: { seconds: 60 } } });
    expect(patchKeyLimits(both, { limits: { 'per-key': null } }, policies)).toEqual({ quota: { limit: 99, window: { period: 'day' } } });
    expect(patchKeyLimits(set, { limits: { 'per-key': null } }, policies)).toBeUndefined();
    expect(patchKeyLimits(both, { limits: null }, policies)).toBeUndefined();
    expect(patchKeyLimits(both, { limits: {} }, policies)).toEqual(both);
  });

  it('names every problem at once', () => {
    expect(problemsOf(() => patchKeyLimits(undefined, [], policies))).toHaveLength(1);
    expect(problemsOf(() => patchKeyLimits(undefined, null, policies))).toHaveLength(1);
    expect(problemsOf(() => patchKeyLimits(undefined, 'x', policies))).toHaveLength(1);
    expect(problemsOf(() => patchKeyLimits(undefined, { name: 'x', limits: null }, policies))).toEqual([
      "name: cannot be changed here; only limits and priority can (a key's other fields are fixed when it is issued)",
    ]);
    // SPEC §13: a key's class, alone or beside limits; a bad one named.
    expect(patchKeyLimits({ 'per-key': { limit: 1, window: { seconds: 1 } } }, { priority: 'critical' }, policies)).toEqual({ 'per-key': { limit: 1, window: { seconds: 1 } } });
    expect(problemsOf(() => patchKeyLimits(undefined, { priority: 'urgent' }, policies))).toEqual(['priority: must be one of critical, default, sheddable, or null (SPEC §13; got "urgent")']);
    const problems = problemsOf(() =>
      patchKeyLimits(undefined, { roles: [], limits: { 'per-user': { limit: 1, window: '1s' }, 'per-key': [1], quota: { limit: 1, window: '1s', extra: 1 } } }, policies),
    );
    expect(problems).toHaveLength(4);
    expect(problems[0]).toMatch(/^roles: /);
    expect(problems[1]).toBe('limits.per-user: no by: key policy has this name (the by: key policies are per-key, quota)');
    expect(problems[2]).toMatch(/^limits\.per-key: must be/);
    expect(problems[3]).toMatch(/^limits\.quota\.extra: unknown option/);
    expect(problemsOf(() => patchKeyLimits(undefined, { limits: [] }, policies))[0]).toMatch(/^limits: must be an object/);
    expect(problemsOf(() => patchKeyLimits(undefined, { limits: 5 }, policies))[0]).toMatch(/^limits: must be an object/);
    expect(problemsOf(() => patchKeyLimits(undefined, { limits: { x: {} } }, []))[0]).toBe('limits.x: no by: key policy has this name (limits.policies has no by: key policy)');
    expect(problemsOf(() => patchKeyLimits(undefined, { limits: { 'per-key': 'fast' } }, policies))[0]).toMatch(/^limits\.per-key: must be/);
    expect(problemsOf(() => patchKeyLimits(undefined, { limits: { 'per-key': { limit: 0, window: '60s' } } }, policies))[0]).toMatch(/^limits\.per-key\.limit/);
  });
});
