import { Query } from 'mingo';
import { describe, expect, it } from 'vitest';
import { sortLocally } from '../../../../src/graphql/reads/batch-joins.js';
import { canonicalKey, compareForSort, findOperatorKey } from '../../../../src/graphql/values/ejson.js';
import { compileMatcher } from '../../../../src/graphql/values/local-match.js';
import { planPages } from '../../../../src/graphql/reads/paging.js';
import { candidateValues, readPath } from '../../../../src/graphql/values/paths.js';

describe('planPages: skip/limit → page/pagesize', () => {
  it('reads one exact page when skip is a multiple of limit', () => {
    expect(planPages(0, 10)).toEqual({ pagesize: 10, page: 1, pages: 1, offset: 0, limit: 10 });
    expect(planPages(20, 10)).toEqual({ pagesize: 10, page: 3, pages: 1, offset: 0, limit: 10 });
  });

  it('finds the smallest single covering page otherwise', () => {
    // [5, 15) fits in page 1 of 15.
    expect(planPages(5, 10)).toEqual({ pagesize: 15, page: 1, pages: 1, offset: 5, limit: 10 });
    // [500, 503) fits in page 126 of 4 (500..503).
    expect(planPages(500, 3)).toEqual({ pagesize: 4, page: 126, pages: 1, offset: 0, limit: 3 });
  });

  it('reads two pages of `limit` when no single page up to 1000 covers the window', () => {
    expect(planPages(5, 996)).toEqual({ pagesize: 996, page: 1, pages: 2, offset: 5, limit: 996 });
  });

  it('always covers exactly the window (exhaustive over small values, sampled over large)', () => {
    const cases: Array<[number, number]> = [];
    for (let skip = 0; skip <= 120; skip++) for (let limit = 1; limit <= 40; limit++) cases.push([skip, limit]);
    for (let i = 0; i < 3000; i++) cases.push([Math.floor(Math.random() * 100_000), 1 + Math.floor(Math.random() * 1000)]);
    for (const [skip, limit] of cases) {
      const p = planPages(skip, limit);
      expect(p.pagesize).toBeGreaterThanOrEqual(limit);
      expect(p.pagesize).toBeLessThanOrEqual(1000);
      const start = (p.page - 1) * p.pagesize;
      const end = start + p.pages * p.pagesize;
      expect(start + p.offset).toBe(skip);
      expect(end).toBeGreaterThanOrEqual(skip + limit);
    }
  });

  it('refuses impossible windows', () => {
    expect(() => planPages(-1, 10)).toThrow(RangeError);
    expect(() => planPages(0, 0)).toThrow(RangeError);
    expect(() => planPages(0, 1001)).toThrow(RangeError);
  });
});

describe('paths', () => {
  const doc = { a: { b: [{ c: 1 }, { c: 2 }, { d: 3 }] }, e: [10, 20], f: [[1, 2]] };
  it('readPath follows RESTHeart field mappings: index, map over arrays, missing', () => {
    expect(readPath(doc, 'a.b.1.c')).toBe(2);
    expect(readPath(doc, 'a.b.c')).toEqual([1, 2, undefined]);
    expect(readPath(doc, 'e.0')).toBe(10);
    expect(readPath(doc, 'x.y')).toBeUndefined();
  });
  it('candidateValues follows MongoDB: traverse arrays, a final array gives itself and its elements', () => {
    expect(candidateValues(doc, 'a.b.c')).toEqual([1, 2]);
    expect(candidateValues(doc, 'e')).toEqual([[10, 20], 10, 20]);
    expect(candidateValues(doc, 'x')).toEqual([]);
  });
});

describe('extended JSON', () => {
  it('equates values as MongoDB does', () => {
    expect(canonicalKey({ $oid: 'AB'.padEnd(24, '0') })).toBe(canonicalKey({ $oid: 'ab'.padEnd(24, '0') }));
    expect(canonicalKey({ $date: 0 })).toBe(canonicalKey({ $date: '1970-01-01T00:00:00Z' }));
    expect(canonicalKey(5)).toBe(canonicalKey({ $numberLong: '5' }));
    expect(canonicalKey('5')).not.toBe(canonicalKey(5));
    expect(canonicalKey({ a: 1, b: 2 })).not.toBe(canonicalKey({ b: 2, a: 1 }));
  });
  it('orders across types in MongoDB order', () => {
    const sorted = [true, { $oid: '0'.repeat(24) }, 'x', 3, null, { a: 1 }].sort(compareForSort);
    expect(sorted).toEqual([null, 3, 'x', { a: 1 }, { $oid: '0'.repeat(24) }, true]);
  });
  it('finds operator keys but not extended-JSON literals', () => {
    expect(findOperatorKey({ a: { $oid: '0'.repeat(24) }, b: [{ $date: 1 }] })).toBeUndefined();
    expect(findOperatorKey({ a: [{ b: { $ne: 1 } }] })).toBe('a.0.b.$ne');
  });
  it('sorts locally like the backend (asc/desc, missing first, arrays by min/max)', () => {
    const docs = [{ _id: 1, n: 3 }, { _id: 2 }, { _id: 3, n: [5, 1] }, { _id: 4, n: 2 }];
    expect(sortLocally(docs, { n: 1, _id: 1 }).map((d: any) => d._id)).toEqual([2, 3, 4, 1]);
    expect(sortLocally(docs, { n: -1 }).map((d: any) => d._id)).toEqual([3, 1, 4, 2]);
  });
});

describe('compileMatcher agrees with mingo', () => {
  const docs: Record<string, unknown>[] = [
    {
      _id: 1,
      status: 'a',
      n: 1,
      tags: ['x', 'y'],
      sub: { k: 1 },
      items: [
        { p: 'p1', q: 1 },
        { p: 'p2', q: 5 },
      ],
    },
    { _id: 2, status: 'b', n: 5, tags: ['y'], sub: { k: 2 }, items: [{ p: 'p2', q: 2 }] },
    { _id: 3, status: null, n: 10, tags: [], items: [] },
    { _id: 4, n: '5', tags: 'x', sub: { k: [1, 2] } },
    { _id: 5, status: 'a', n: -2, tags: [['x']], sub: null },
  ];
  const filters: Record<string, unknown>[] = [
    { status: 'a' },
    { status: null },
    { status: { $ne: null } },
    { status: { $exists: false } },
    { status: { $exists: true } },
    { n: { $gt: 1 } },
    { n: { $gte: 5, $lt: 10 } },
    { n: { $lte: 5 } },
    { n: { $in: [1, 10, '5'] } },
    { n: { $nin: [1, 10] } },
    { tags: 'x' },
    { tags: ['x', 'y'] },
    { tags: { $all: ['x', 'y'] } },
    { tags: { $size: 1 } },
    { tags: { $in: ['y'] } },
    { 'sub.k': 1 },
    { 'sub.k': { $gt: 1 } },
    { sub: { k: 1 } },
    { 'items.p': 'p2' },
    { 'items.0.p': 'p1' },
    { items: { $elemMatch: { p: 'p2', q: { $gt: 3 } } } },
    { $or: [{ status: 'b' }, { n: { $lt: 0 } }] },
    { $and: [{ status: 'a' }, { n: { $gt: 0 } }] },
    { $nor: [{ status: 'a' }, { n: 10 }] },
    { n: { $not: { $gt: 4 } } },
    { status: { $eq: 'a' }, n: 1 },
  ];
  for (const filter of filters) {
    it(JSON.stringify(filter), () => {
      const m = compileMatcher(filter);
      expect(m).toBeDefined();
      const q = new Query(filter as any);
      const mine = docs.filter((d) => m?.(d)).map((d) => d._id);
      const theirs = docs.filter((d) => q.test(d)).map((d) => d._id);
      expect(mine).toEqual(theirs);
    });
  }

  it('declines what it does not implement ($regex, $expr, $type, regex literals)', () => {
    expect(compileMatcher({ a: { $regex: '^x' } })).toBeUndefined();
    expect(compileMatcher({ $expr: { $gt: ['$a', 1] } })).toBeUndefined();
    expect(compileMatcher({ a: { $type: 'string' } })).toBeUndefined();
    expect(compileMatcher({ a: { $regularExpression: { pattern: 'x', options: '' } } })).toBeUndefined();
  });

  it('compares extended JSON values', () => {
    const id = { $oid: '65a000000000000000000001' };
    const m = compileMatcher({ _id: { $in: [id] }, at: { $gte: { $date: 1000 } } });
    expect(m?.({ _id: { $oid: '65A000000000000000000001' }, at: { $date: '1970-01-01T00:00:02Z' } })).toBe(true);
    expect(m?.({ _id: id, at: { $date: 999 } })).toBe(false);
  });
});
