/** The cache key (what the backend receives), scopes and generations, Cache-Status, the byte LRU (src/cache/). */
import { describe, expect, it } from 'vitest';
import { parseList, Token } from 'structured-headers';
import { ByteLru } from '../../../src/cache/byte-lru.js';
import { primaryKey, variantKey } from '../../../src/cache/cache-key.js';
import { Generations, parseScope, scopeClassifier } from '../../../src/cache/cache-scope.js';
import { forwardStatus, hitStatus } from '../../../src/cache/cache-status.js';

const headers = (h: Record<string, string>) => (name: string) => h[name];

describe('cache key', () => {
  it('is fixed-size and differs by target, identity and every keyed header', () => {
    const base = primaryKey('/db/c?filter={"owner":"a"}', 'alice\0user', headers({ accept: 'application/json' }));
    expect(base).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(primaryKey('/db/c?filter={"owner":"b"}', 'alice\0user', headers({ accept: 'application/json' }))).not.toBe(base);
    expect(primaryKey('/db/c?filter={"owner":"a"}', 'bob\0user', headers({ accept: 'application/json' }))).not.toBe(base);
    for (const name of ['authorization', 'cookie', 'accept-encoding'])
      expect(primaryKey('/db/c?filter={"owner":"a"}', 'alice\0user', headers({ accept: 'application/json', [name]: 'x' }))).not.toBe(base);
    expect(primaryKey('/db/c?filter={"owner":"a"}', 'alice\0user', headers({ accept: 'application/json' }))).toBe(base);
  });

  it('tells an absent header from an empty one, and fields apart (no concatenation ambiguity)', () => {
    expect(primaryKey('/a', '', headers({ accept: '' }))).not.toBe(primaryKey('/a', '', headers({})));
    expect(primaryKey('/a', 'b', headers({}))).not.toBe(primaryKey('/ab', '', headers({})));
  });

  it('keys variants by the headers Vary names', () => {
    expect(variantKey('k', ['x-flavor'], headers({ 'x-flavor': 'a' }))).not.toBe(variantKey('k', ['x-flavor'], headers({ 'x-flavor': 'b' })));
  });
});

describe('scopes and generations', () => {
  const scopeOf = scopeClassifier('/{db}/{collection}');

  it('classifies collection, document, db and other paths', () => {
    expect(scopeOf('/shop/orders')).toEqual({ level: 'collection', db: 'shop', collection: 'orders' });
    expect(scopeOf('/shop/orders/o1')).toEqual({ level: 'collection', db: 'shop', collection: 'orders', document: 'o1' });
    expect(scopeOf('/shop/orders/*')).toEqual({ level: 'collection', db: 'shop', collection: 'orders' });
    expect(scopeOf('/shop/orders/_aggrs/x')).toEqual({ level: 'collection', db: 'shop', collection: 'orders' });
    expect(scopeOf('/shop')).toEqual({ level: 'db', db: 'shop' });
    expect(scopeOf('/shop/_size')).toEqual({ level: 'db', db: 'shop' });
    expect(scopeOf('/')).toEqual({ level: 'all' });
    expect(scopeOf('/_admin/x')).toEqual({ level: 'all' });
    expect(scopeClassifier('/api/{db}/{collection}')('/other/shop/orders')).toEqual({ level: 'all' });
  });

  it('moves a collection read by its collection, its db and everything; a db read by any write in the db', () => {
    const g = new Generations();
    const orders = scopeOf('/shop/orders');
    const products = scopeOf('/shop/products');
    const db = scopeOf('/shop');
    const at = () => [g.of(orders), g.of(products), g.of(db)];
    let before = at();
    g.bump(orders);
    expect(at().map((v, i) => v !== before[i])).toEqual([true, false, true]);
    before = at();
    g.bump(db);
    expect(at().map((v, i) => v !== before[i])).toEqual([true, true, true]);
    before = at();
    g.bump({ level: 'all' });
    expect(at().map((v, i) => v !== before[i])).toEqual([true, true, true]);
  });

  it('parses db/coll and db, refusing anything else', () => {
    expect(parseScope('shop/orders')).toEqual({ level: 'collection', db: 'shop', collection: 'orders' });
    expect(parseScope('shop')).toEqual({ level: 'db', db: 'shop' });
    for (const bad of ['', 'a/b/c', '_x', 'a/_b']) expect(parseScope(bad)).toMatch(/must be db\/collection/);
  });
});

describe('Cache-Status', () => {
  it('serializes valid Structured Fields', () => {
    const [[name, hit]] = parseList(hitStatus(41.7)) as [[Token, Map<string, unknown>]];
    expect(name.toString()).toBe('Outrigger');
    expect([...hit]).toEqual([
      ['hit', true],
      ['ttl', 41],
    ]);
    expect(forwardStatus('miss', true)).toBe('Outrigger;fwd=miss;stored');
    expect(forwardStatus('stale', false, 304)).toBe('Outrigger;fwd=stale;fwd-status=304');
    expect(forwardStatus('bypass', false)).toBe('Outrigger;fwd=bypass');
  });
});

describe('ByteLru', () => {
  it('evicts the least recently used first, keeps bytes within the budget, refuses a value larger than it', () => {
    const evicted: string[] = [];
    const lru = new ByteLru<{ size: number; name: string }>(100, (v, wasEvicted) => wasEvicted && evicted.push(v.name));
    lru.set('a', { size: 40, name: 'a' });
    lru.set('b', { size: 40, name: 'b' });
    lru.get('a');
    lru.set('c', { size: 40, name: 'c' });
    expect(evicted).toEqual(['b']);
    expect(lru.bytes).toBe(80);
    expect(lru.set('huge', { size: 101, name: 'huge' })).toBe(false);
    lru.set('a', { size: 10, name: 'a' });
    expect(lru.bytes).toBe(50);
    lru.clear();
    expect([lru.bytes, lru.count]).toEqual([0, 0]);
  });
});
