/**
 * RESTHeart's answers to writes as a mutation reads them (writes/answers.ts): the new id from the
 * last segment of `Location` (absolute or relative, with `id_type`), bulk counts and links (plain
 * or HAL), CONFLICT for a 409 and BACKEND_ERROR with the backend's status and message otherwise.
 */
import { describe, expect, it } from 'vitest';
import { bulkResult, idAsString, idFromSegment, lastSegment, partialWriteError, writeError } from '../../../../src/graphql/writes/answers.js';
import { argumentValueProblem } from '../../../../src/graphql/writes/values.js';

describe('write answers', () => {
  it('reads the new id from Location, absolute or relative, as STRING_OID (or id_type) reads it', () => {
    expect(lastSegment('http://rh:8080/shop/orders/6b09a4f8e776317575fd966d')).toEqual({ segment: '6b09a4f8e776317575fd966d', idType: null });
    expect(lastSegment('/shop/orders/a%20b')).toEqual({ segment: 'a b', idType: null });
    expect(lastSegment('/shop/orders/7?id_type=NUMBER')).toEqual({ segment: '7', idType: 'NUMBER' });
    expect(idFromSegment('6B09A4F8E776317575FD966D')).toEqual({ $oid: '6b09a4f8e776317575fd966d' });
    expect(idFromSegment('7', 'NUMBER')).toBe(7);
    expect(idFromSegment('6b09a4f8e776317575fd966d', 'STRING')).toBe('6b09a4f8e776317575fd966d');
    expect(idAsString({ $oid: 'abc' })).toBe('abc');
    expect(idAsString(7)).toBe('7');
  });

  it('reads bulk counts and links, plain or under HAL', () => {
    expect(bulkResult('{"inserted":2,"links":["/a/b/1","/a/b/2"],"deleted":0,"modified":0,"matched":0}')).toMatchObject({ inserted: 2, links: ['/a/b/1', '/a/b/2'], errors: [] });
    expect(bulkResult('{"_embedded":{"rh:result":[{"inserted":1,"links":["/a/b/1"]}]}}')).toMatchObject({ inserted: 1 });
    expect(bulkResult('not json')).toBeUndefined();
  });

  it('maps refusals: 409 CONFLICT, others BACKEND_ERROR with status and message; a partial bulk with its counts', () => {
    const conflict = writeError('an insert into shop/orders', { status: 409, headers: {}, body: '{"http status code":409,"message":"Duplicate key error"}' });
    expect(conflict.extensions).toMatchObject({ code: 'CONFLICT', status: 409, backendMessage: 'Duplicate key error' });
    expect(conflict.message).toBe('the backend answered 409 Conflict to an insert into shop/orders: Duplicate key error');
    expect(writeError('x', { status: 400, headers: {}, body: '' }).extensions).toMatchObject({ code: 'BACKEND_ERROR', status: 400 });
    const partial = partialWriteError('a bulk insert', { inserted: 1, modified: 0, deleted: 0, matched: 0, links: [], errors: [{ index: 1, httpStatus: 409 }] }, 207);
    expect(partial.extensions).toMatchObject({ code: 'CONFLICT', inserted: 1, status: 207 });
  });

  it('argument values: $-keys and dotted keys at any depth, and depth past 32, are named; literals pass', () => {
    expect(argumentValueProblem({ a: [{ b: { $gt: 1 } }] }, 'f')).toMatch(/^f\.a\.0\.b\.\$gt: a key starting with "\$"/);
    expect(argumentValueProblem({ 'a.b': 1 }, 'f')).toMatch(/the key "a\.b" holds a "\."/);
    expect(argumentValueProblem({ id: { $oid: '6b09a4f8e776317575fd966d' }, at: { $date: 0 } }, 'f')).toBeUndefined();
    let deep: unknown = 1;
    for (let i = 0; i < 40; i++) deep = [deep];
    expect(argumentValueProblem(deep, 'f')).toMatch(/nested more than 32 levels/);
  });
});
