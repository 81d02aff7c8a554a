/**
 * Whole GraphQL answers under `cache.consistency: strong`, and an aggregation's answer (SPEC §12,
 * docs/caching.md "Whole GraphQL answers"), with no `cache.rules`: two replicas on one real
 * redis-server, a write through A (REST or a GraphQL mutation) and the same query on B at once,
 * never stale (each hit checks the generations in Redis), even with B deaf to A's pub/sub drops; an answer that ran a declared
 * aggregation is dropped by a write to any collection of its db, not by a write to another db,
 * while a plain query's answer is dropped only by its own collections' writes.
 */
import { describe, expect, it } from 'vitest';
import { as, ROOT, useStack } from '../../support/fixtures.js';
import { call } from '../../support/clients/http-client.js';
import { gql, shopApp, shopData } from '../graphql/graphql-helpers.js';
import { mutationApp } from '../graphql/graphql-mutations-helpers.js';

const ALICE = as('alice');
const ORDERS = '{ orders(limit: 200) { number total } }';
const TOTALS = '{ totals { _id orders sum } }';
const STORED = /^Outrigger;fwd=miss;stored$/;
const HIT = /^Outrigger;hit;ttl=\d+$/;
const cached = (app: Record<string, unknown>) => ({ ...app, descriptor: { ...(app.descriptor as object), cache: { maxAgeSeconds: 60 } } });

const statsApp = {
  _id: 'stats',
  descriptor: { uri: 'stats' },
  schema: 'type Total { _id: String, orders: Int, sum: Int } type Query { totals: [Total] }',
  mappings: {
    Query: { totals: { db: 'shop', collection: 'orders', stages: [{ $group: { _id: '$status', orders: { $sum: 1 }, sum: { $sum: '$total' } } }, { $sort: { _id: 1 } }] } },
  },
};

describe('whole GraphQL answers with consistency: strong, and aggregations', () => {
  const data = shopData();
  const stack = useStack({
    service: 'gql-answers-strong',
    jwtIdentity: true,
    backend: { data: { ...data, elsewhere: { things: [{ _id: 't1', n: 0 }] } } },
    users: { root: ['root'], alice: ['user'] },
    config: { acl: { mode: 'enforce' }, graphql: { aggregations: true }, cache: { consistency: 'strong' } },
    permissions: {
      graphql: { predicate: 'path-prefix(/graphql)', roles: ['user'], priority: 1 },
      read: { predicate: 'method(GET) and path-prefix(/shop)', roles: ['user'], priority: 1 },
      write: { predicate: '(method(POST) or method(PATCH)) and path-prefix(/shop/orders)', roles: ['user'], priority: 1 },
    },
    apps: { shop: cached(shopApp()), stats: cached(statsApp), writes: mutationApp() },
  });
  const totalOf = (answer: { json: { data: { orders: Array<{ number: number; total: number }> } } }, number: number) => answer.json.data.orders.find((o) => o.number === number)?.total;

  it('B never serves an answer older than a write answered through A: zero stale reads in 20 rounds', async () => {
    const a = stack.proxy;
    const b = await stack.start();
    // B never hears A's drops on pub/sub (as if every message came later than the next read): only
    // strong's check of the generations in Redis stands between B and a stale answer.
    const cache = b.context.responseCache!.cache;
    const invalidate = cache.invalidate.bind(cache);
    cache.invalidate = (scope, source) => (source === 'replica' ? undefined : invalidate(scope, source));
    const target = data.shop.orders.find((o) => o.number === 5)!;
    const path = `/shop/orders/${(target._id as { $oid: string }).$oid}`;
    let stale = 0;
    let hits = 0;
    for (let i = 0; i < 20; i++) {
      await gql(b.url, 'shop', ORDERS, { auth: ALICE });
      const again = await gql(b.url, 'shop', ORDERS, { auth: ALICE });
      if (HIT.test(String(again.headers['cache-status']))) hits++;
      // Alternately a REST write and a GraphQL mutation, each through A.
      if (i % 2 === 0) expect((await call(a.url, path, { method: 'PATCH', auth: ALICE, body: { total: 7000 + i } })).status).toBeLessThan(300);
      else expect((await gql(a.url, 'writes', `mutation { createOrder(number: ${9300 + i}, total: 1) { number } }`, { auth: ALICE })).json.errors).toBeUndefined();
      const after = await gql(b.url, 'shop', ORDERS, { auth: ALICE });
      expect(after.status).toBe(200);
      const fresh = i % 2 === 0 ? totalOf(after, 5) === 7000 + i : totalOf(after, 9300 + i) === 1;
      if (!fresh) stale++;
    }
    expect(stale).toBe(0);
    // The cache was in use between the writes: every second read was a hit.
    expect(hits).toBe(20);
  });

  it("drops an aggregation's answer on a write to any collection of its db, not on another db's", async () => {
    const ask = () => gql(stack.proxy.url, 'stats', TOTALS, { auth: ALICE });
    const plain = () => gql(stack.proxy.url, 'shop', '{ orders(limit: 3) { number } }', { auth: ALICE });
    const first = await ask();
    expect(first.json.errors, first.text).toBeUndefined();
    expect(first.json.data.totals.length).toBeGreaterThan(0);
    await plain();
    expect((await ask()).headers['cache-status']).toMatch(HIT);
    expect((await plain()).headers['cache-status']).toMatch(HIT);
    // Another db: neither answer read it.
    expect((await call(stack.proxy.url, '/elsewhere/things', { method: 'POST', auth: ROOT, body: { n: 1 } })).status).toBeLessThan(300);
    expect((await ask()).headers['cache-status']).toMatch(HIT);
    // users, in the aggregation's db: the aggregation may read any of its collections, the plain query read only orders.
    expect((await call(stack.proxy.url, '/shop/users/u1', { method: 'PATCH', auth: ROOT, body: { name: 'renamed' } })).status).toBeLessThan(300);
    expect((await ask()).headers['cache-status']).toMatch(STORED);
    expect((await plain()).headers['cache-status']).toMatch(HIT);
    // orders: both.
    expect((await call(stack.proxy.url, '/shop/orders', { method: 'POST', auth: ROOT, body: { number: 9400, total: 3, status: 'open' } })).status).toBeLessThan(300);
    const after = await ask();
    expect(after.headers['cache-status']).toMatch(STORED);
    expect(after.text).not.toBe(first.text);
    expect((await plain()).headers['cache-status']).toMatch(STORED);
  });
});
