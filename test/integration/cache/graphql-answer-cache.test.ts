/**
 * Whole GraphQL answers in the response cache (SPEC §12, `descriptor.cache: {maxAgeSeconds}`),
 * through the real proxy, the RESTHeart stand-in and a real redis-server, one replica and two:
 * the second identical query is a hit and the backend is not asked; a GraphQL mutation or a REST
 * write to a collection the answer read drops it, a write to another collection does not; two
 * callers whose readFilters differ never share an answer, even under one key (the same user, a
 * permission that looks at a header); a write through replica B drops A's answer through Redis.
 * The per-read rule covers only products, so the orders reads the backend counts are the answers'.
 */
import { describe, expect, it } from 'vitest';
import { as, ROOT, useStack } from '../../support/fixtures.js';
import { call } from '../../support/clients/http-client.js';
import { waitFor } from '../../support/wait.js';
import { collectionReads, gql, shopApp, shopData } from '../graphql/graphql-helpers.js';
import { mutationApp } from '../graphql/graphql-mutations-helpers.js';

const ALICE = as('alice');
const BOB = as('bob');
const ORDERS = 'query Orders($limit: Int) { orders(limit: $limit) { number owner total status } }';
const STORED = /^Outrigger;fwd=miss;stored$/;
const HIT = /^Outrigger;hit;ttl=\d+$/;

function cachedShop(): Record<string, unknown> {
  const app = shopApp();
  return { ...app, descriptor: { ...(app.descriptor as object), cache: { maxAgeSeconds: 60 } } };
}

describe('whole GraphQL answers in the response cache', () => {
  const data = shopData();
  const stack = useStack({
    service: 'gql-answers',
    jwtIdentity: true,
    backend: { data },
    users: { root: ['root'], alice: ['user'], bob: ['user'] },
    config: { acl: { mode: 'enforce' }, cache: { rules: [{ name: 'products', when: 'path-prefix(/shop/products)', maxAgeSeconds: 60 }] } },
    permissions: {
      graphql: { predicate: 'path-prefix(/graphql)', roles: ['user'], priority: 1 },
      // The same user, another readFilter when a header says so: one answer key, two decisions.
      'open-view': { predicate: 'method(GET) and path-prefix(/shop/orders) and equals(%{i,x-view}, open)', roles: ['user'], priority: 20, mongo: { readFilter: { status: 'open' } } },
      'own-orders': { predicate: 'method(GET) and path-prefix(/shop/orders)', roles: ['user'], priority: 10, mongo: { readFilter: { owner: '@user.id' } } },
      'read-users': { predicate: 'method(GET) and path-prefix(/shop/users)', roles: ['user'], priority: 1 },
      'write-orders': { predicate: '(method(POST) or method(PATCH) or method(DELETE)) and path-prefix(/shop/orders)', roles: ['user'], priority: 5 },
    },
    apps: { shop: cachedShop(), writes: mutationApp() },
  });
  const orderReads = () => collectionReads(stack.backend, 'orders').length;
  const ask = (auth = ALICE, limit = 100, base = stack.proxy.url) => gql(base, 'shop', ORDERS, { auth, variables: { limit }, operationName: 'Orders' });
  const owners = (answer: { json: { data: { orders: Array<{ owner: string }> } } }) => [...new Set(answer.json.data.orders.map((o) => o.owner))];

  it('answers the second identical query from memory: Cache-Status hit, Age, the backend not asked', async () => {
    const first = await ask(ALICE, 50);
    expect(first.status).toBe(200);
    expect(first.headers['cache-status']).toMatch(STORED);
    const before = orderReads();
    const second = await ask(ALICE, 50);
    expect(second.status).toBe(200);
    expect(second.headers['cache-status']).toMatch(HIT);
    expect(second.headers.age).toMatch(/^\d+$/);
    expect(second.text).toBe(first.text);
    expect(orderReads()).toBe(before);
    // Other variables are another answer.
    expect((await ask(ALICE, 49)).headers['cache-status']).toMatch(STORED);
    expect(orderReads()).toBe(before + 1);
    // Counted under graphql:<uri> beside the rules (the console's hit ratio per rule).
    const state = await call(stack.proxy.url, '/_admin/cache', { auth: ROOT });
    const shop = state.json.byRule.find((r: { rule: string }) => r.rule === 'graphql:shop');
    expect(shop).toMatchObject({ hits: 1, misses: 2, hitRatio: 1 / 3, stores: 2 });
    expect(shop.bytes).toBeGreaterThan(first.text.length);
    expect(state.json.byRule[0]).toMatchObject({ rule: 'products', hits: 0, misses: 0, hitRatio: null });
  });

  it('never keeps a mutation, and a mutation that writes a collection the answer read drops it', async () => {
    await ask();
    expect((await ask()).headers['cache-status']).toMatch(HIT);
    const created = await gql(stack.proxy.url, 'writes', 'mutation { createOrder(number: 9101, total: 5) { number } }', { auth: ALICE });
    expect(created.json.errors).toBeUndefined();
    expect(created.headers['cache-status']).toBeUndefined();
    const before = orderReads();
    const after = await ask();
    expect(after.headers['cache-status']).toMatch(STORED);
    expect(orderReads()).toBe(before + 1);
    expect(after.json.data.orders.some((o: { number: number }) => o.number === 9101)).toBe(true);
  });

  it('is dropped by a REST write to a collection it read, not by a write to another', async () => {
    await ask();
    expect((await ask()).headers['cache-status']).toMatch(HIT);
    // users: the answer did not read it.
    expect((await call(stack.proxy.url, '/shop/users/u1', { method: 'PATCH', auth: ROOT, body: { name: 'renamed' } })).status).toBeLessThan(300);
    expect((await ask()).headers['cache-status']).toMatch(HIT);
    const target = data.shop.orders.find((o) => o.owner === 'alice')!;
    const write = await call(stack.proxy.url, `/shop/orders/${(target._id as { $oid: string }).$oid}`, { method: 'PATCH', auth: ROOT, body: { total: 4242 } });
    expect(write.status).toBeLessThan(300);
    const after = await ask();
    expect(after.headers['cache-status']).toMatch(STORED);
    expect(after.json.data.orders.find((o: { number: number }) => o.number === target.number).total).toBe(4242);
  });

  it('never shares an answer between callers whose readFilters differ', async () => {
    const [alice, bob] = await Promise.all([ask(ALICE, 30), ask(BOB, 30)]);
    expect(owners(alice)).toEqual(['alice']);
    expect(owners(bob)).toEqual(['bob']);
    expect(owners(await ask(BOB, 30))).toEqual(['bob']);
    expect(owners(await ask(ALICE, 30))).toEqual(['alice']);
    // Alice again, with the header her other permission looks at: the same key, another readFilter.
    const open = await call(stack.proxy.url, '/graphql/shop', {
      method: 'POST',
      auth: ALICE,
      headers: { accept: 'application/graphql-response+json', 'x-view': 'open' },
      body: { query: ORDERS, variables: { limit: 30 }, operationName: 'Orders' },
    });
    expect(open.headers['cache-status']).toMatch(STORED);
    expect([...new Set(open.json.data.orders.map((o: { status: string }) => o.status))]).toEqual(['OPEN']);
    expect(owners(open).length).toBeGreaterThan(1);
    // And back: her own orders again, never the open view's answer.
    const own = await ask(ALICE, 30);
    expect(owners(own)).toEqual(['alice']);
    expect(own.headers['cache-status']).toMatch(STORED);
  });

  it("drops replica A's answer when a write passes through replica B (through Redis)", async () => {
    const b = await stack.start();
    await ask(ALICE, 20);
    expect((await ask(ALICE, 20)).headers['cache-status']).toMatch(HIT);
    const created = await gql(b.url, 'writes', 'mutation { createOrder(number: 9102, total: 7) { number } }', { auth: ALICE });
    expect(created.json.errors).toBeUndefined();
    const fresh = await waitFor(
      () => ask(ALICE, 100),
      (r) => r.json.data.orders.some((o: { number: number }) => o.number === 9102),
      5000,
      "replica A to drop the answer after B's write",
    );
    expect(fresh.status).toBe(200);
  });
});
