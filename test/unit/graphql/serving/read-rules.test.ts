/**
 * Issue 25's rules as pure functions: which paths a projectResponse hides, which filter and sort
 * paths a read looks at, which extended-JSON literals are values, and what an app document may
 * not hold (literals at write, stages reaching other collections).
 */
import { describe, expect, it } from 'vitest';
import { projectionHides } from '../../../../src/access/mongo-rules.js';
import { blockedStageOperator } from '../../../../src/graphql/document/aggregations.js';
import { findOperatorKey, isEjsonLiteral } from '../../../../src/graphql/values/ejson.js';
import { hiddenReadKey } from '../../../../src/graphql/reads/read-keys.js';
import { checkMappingLiterals } from '../../../../src/graphql/document/literals.js';

describe('projectionHides', () => {
  it('an exclusion hides the excluded path, what is inside it and what holds it', () => {
    const hides = projectionHides({ 'address.zip': 0, secret: 0 });
    expect(['secret', 'secret.x', 'address', 'address.zip', 'address.0.zip'].filter(hides)).toHaveLength(5);
    expect(['name', 'address.city', 'secretary'].some(hides)).toBe(false);
  });
  it('an inclusion hides every path no included path holds whole, _id included', () => {
    const hides = projectionHides({ name: 1, 'address.city': 1 });
    expect(['name', 'name.first', 'address.city', 'address.0.city'].some(hides)).toBe(false);
    expect(['address', 'address.zip', '_id', 'secret'].every(hides)).toBe(true);
  });
});

describe('hiddenReadKey', () => {
  const hides = projectionHides({ secret: 0, 'items.secret': 0, 'a.secret': 0 });
  const read = (filter?: Record<string, unknown>, sort?: Record<string, unknown>) => ({ db: 'd', collection: 'c', page: 1, pagesize: 10, ...(filter ? { filter } : {}), ...(sort ? { sort } : {}) });
  it.each([
    [{ secret: 'x' }, 'secret'],
    [{ $or: [{ b: 1 }, { $and: [{ 'secret.k': { $gt: 1 } }] }] }, 'secret.k'],
    [{ items: { $elemMatch: { secret: 1 } } }, 'items.secret'],
    [{ a: { $not: { $elemMatch: { secret: 1 } } } }, 'a.secret'],
    [{ $expr: { $eq: ['$secret', 'x'] } }, 'secret'],
    [{ $text: { $search: 'x' } }, '$text'],
    [{ items: { $elemMatch: { $gt: 1 } } }, 'items'],
    [{ items: { sku: 1 } }, 'items'],
  ])('finds the hidden path in %j', (filter, path) => {
    expect(hiddenReadKey(read(filter), hides)).toBe(path);
  });
  it('sorts count too, except by _id (every read is ordered by it by default)', () => {
    expect(hiddenReadKey(read(undefined, { secret: -1 }), hides)).toBe('secret');
    expect(hiddenReadKey(read({ a: { $in: [1] } }, { _id: 1 }), projectionHides({ a: 1 }))).toBeUndefined();
    expect(hiddenReadKey(read({ owner: 'x', status: { $ne: 'open' }, items: { $elemMatch: { sku: 1 } } }, { number: 1 }), hides)).toBeUndefined();
  });
});

describe('extended-JSON literals', () => {
  it.each([
    { $oid: '0123456789abcdef01234567' },
    { $date: 1 },
    { $date: '2024-01-01T00:00:00Z' },
    { $date: { $numberLong: '1' } },
    { $numberLong: '-42' },
    { $numberDecimal: '1.5' },
    { $binary: { base64: 'AAE=', subType: '00' } },
    { $timestamp: { t: 1, i: 2 } },
    { $uuid: '01234567-89ab-cdef-0123-456789abcdef' },
    { $minKey: 1 },
  ])('%j is a literal', (value) => {
    expect(isEjsonLiteral(value)).toBe(true);
    expect(findOperatorKey({ a: value })).toBeUndefined();
  });
  it.each([
    [{ $regularExpression: { pattern: '.*', options: '' } }, '$regularExpression'],
    [{ $code: 'x' }, '$code'],
    [{ $code: 'x', $scope: {} }, '$code'],
    [{ $dbPointer: { $ref: 'c', $id: { $oid: '0123456789abcdef01234567' } } }, '$dbPointer'],
    [{ $symbol: 's' }, '$symbol'],
    [{ $oid: { $ne: null } }, '$oid'],
    [{ $oid: 'AB' }, '$oid'],
    [{ $date: { $gt: 0 } }, '$date'],
    [{ $numberLong: '1e3' }, '$numberLong'],
    [{ $oid: '0123456789abcdef01234567', $where: 'x' }, '$oid'],
  ])('%j is not a literal: findOperatorKey names %s', (value, key) => {
    expect(isEjsonLiteral(value)).toBe(false);
    expect(findOperatorKey(value)).toBe(key);
  });
});

describe('app documents at write', () => {
  const problems = (mappings: Record<string, unknown>) => {
    const out: string[] = [];
    checkMappingLiterals(mappings, out);
    return out;
  };
  it('refuses unsafe and malformed literals, naming their path', () => {
    const out = problems({
      Query: {
        a: { collection: 'c', find: { x: { $code: 'f' }, y: { $oid: { $ne: null } }, z: { $regularExpression: { pattern: 'a', options: 'g' } } } },
        b: { collection: 'c', stages: [{ $match: { w: { $dbPointer: {} } } }] },
      },
    });
    expect(out.map((p) => p.split(/ |:/)[0])).toEqual([
      'mappings.Query.a.find.x.$code',
      'mappings.Query.a.find.y.$oid',
      'mappings.Query.a.find.z.$regularExpression',
      'mappings.Query.b.stages.0.$match.w.$dbPointer',
    ]);
  });
  it('accepts operators, well-formed literals and references', () => {
    expect(
      problems({
        Query: { a: { collection: 'c', find: { _id: { $oid: '0123456789abcdef01234567' }, n: { $gte: { $arg: 'n' } }, r: { $regularExpression: { pattern: '^a', options: 'i' } } } } },
        T: { j: { collection: 'c', find: { k: { $fk: 'k' } } }, name: 'path' },
      }),
    ).toEqual([]);
  });
  it('blocks stages reaching other collections, and writes and JavaScript as before', () => {
    for (const op of ['$lookup', '$graphLookup', '$unionWith', '$out', '$merge', '$where', '$function', '$accumulator']) expect(blockedStageOperator(op)).toBeDefined();
    expect(blockedStageOperator('$match')).toBeUndefined();
  });
});
