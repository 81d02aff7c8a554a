/**
 * What a write to one document drops (src/cache/cache-scope.ts): that document's reads and the
 * collection's queries, never another document read by its own path; a write to the collection
 * (a POST, a bulk `*` path) drops everything below it.
 */
import { describe, expect, it } from 'vitest';
import { Generations, scopeClassifier } from '../../../src/cache/cache-scope.js';

const scopeOf = scopeClassifier('/{db}/{collection}');

describe('document scopes', () => {
  it('names the document a path reads; the bulk path `*` and reserved names are the collection', () => {
    expect(scopeOf('/shop/orders/o1')).toEqual({ level: 'collection', db: 'shop', collection: 'orders', document: 'o1' });
    expect(scopeOf('/shop/orders')).toEqual({ level: 'collection', db: 'shop', collection: 'orders' });
    expect(scopeOf('/shop/orders/*')).toEqual({ level: 'collection', db: 'shop', collection: 'orders' });
    expect(scopeOf('/shop/orders/_aggrs/total')).toEqual({ level: 'collection', db: 'shop', collection: 'orders' });
    expect(scopeOf('/shop/orders/o1/deeper')).toEqual({ level: 'collection', db: 'shop', collection: 'orders' });
  });

  it("a document write drops that document and the collection's queries, and keeps the other documents", () => {
    const g = new Generations();
    const o1 = scopeOf('/shop/orders/o1');
    const o2 = scopeOf('/shop/orders/o2');
    const list = scopeOf('/shop/orders');
    const db = scopeOf('/shop');
    const before = { o1: g.of(o1), o2: g.of(o2), list: g.of(list), db: g.of(db) };
    g.bump(o1);
    expect(g.of(o1)).not.toBe(before.o1);
    expect(g.of(list)).not.toBe(before.list);
    expect(g.of(db)).not.toBe(before.db);
    expect(g.of(o2)).toBe(before.o2);
  });

  it("a write to any of 1,000 documents keeps every other one's reads (their counters do not share slots)", () => {
    // The bench's 90/10 mix over 1,000 documents: with 4096 slots 152 of these shared one, and the
    // cache read the backend 13 % more than needed (docs/caching.md, Bounds).
    const g = new Generations();
    const docs = Array.from({ length: 1000 }, (_, i) => scopeOf(`/restheart/docs/d${String(i).padStart(4, '0')}`));
    let dropped = 0;
    for (const written of docs) {
      const before = docs.map((d) => g.of(d));
      g.bump(written);
      docs.forEach((d, i) => {
        if (d !== written && g.of(d) !== before[i]) dropped++;
      });
    }
    expect(dropped).toBe(0);
  });

  it('a collection write (POST, bulk) drops every document of it, and no other collection', () => {
    const g = new Generations();
    const o2 = scopeOf('/shop/orders/o2');
    const other = scopeOf('/shop/users/u1');
    const before = { o2: g.of(o2), other: g.of(other) };
    g.bump(scopeOf('/shop/orders/*'));
    expect(g.of(o2)).not.toBe(before.o2);
    expect(g.of(other)).toBe(before.other);
    const again = g.of(o2);
    g.bump(scopeOf('/shop/orders'));
    expect(g.of(o2)).not.toBe(again);
  });
});
