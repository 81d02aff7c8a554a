/**
 * GraphQL's backend reads through the response cache (SPEC §12 "one cache of backend reads"),
 * through the real proxy, the RESTHeart stand-in and a real redis-server: a query's reads a rule
 * covers are answered from memory the second time; two callers whose readFilters differ never
 * share a read; a REST write and a GraphQL mutation drop the reads of their collection before
 * their answer; a mutation's own reads and an uncovered collection always reach the backend.
 */
import { describe, expect, it } from 'vitest';
import { as, ROOT, useStack } from '../../support/fixtures.js';
import { call } from '../../support/clients/http-client.js';
import { collectionReads, gql, shopApp, shopData } from '../graphql/graphql-helpers.js';
import { mutationApp } from '../graphql/graphql-mutations-helpers.js';

const ALICE = as('alice');
const BOB = as('bob');
const ORDERS = '{ orders(limit: 100) { number owner total } }';

describe('GraphQL reads through the response cache', () => {
  const data = shopData();
  const stack = useStack({
    service: 'gql-cache',
    jwtIdentity: true,
    backend: { data },
    users: { root: ['root'], alice: ['user'], bob: ['user'] },
    config: { acl: { mode: 'enforce' }, cache: { rules: [{ name: 'orders', when: 'path-prefix(/shop/orders)', maxAgeSeconds: 60 }] } },
    permissions: {
      graphql: { predicate: 'path-prefix(/graphql)', roles: ['user'], priority: 1 },
      'own-orders': { predicate: 'method(GET) and path-prefix(/shop/orders)', roles: ['user'], priority: 10, mongo: { readFilter: { owner: '@user.id' } } },
      'read-users': { predicate: 'method(GET) and path-prefix(/shop/users)', roles: ['user'], priority: 1 },
      'write-orders': { predicate: '(method(POST) or method(PATCH) or method(DELETE)) and path-prefix(/shop/orders)', roles: ['user'], priority: 5 },
    },
    apps: { shop: shopApp(), writes: mutationApp() },
  });
  const orderReads = () => collectionReads(stack.backend, 'orders').length;
  const owners = (answer: { json: { data: { orders: Array<{ owner: string }> } } }) => new Set(answer.json.data.orders.map((o) => o.owner));

  it("answers a query's second read from memory: the backend sees one read", async () => {
    const before = orderReads();
    const first = await gql(stack.proxy.url, 'shop', ORDERS, { auth: ALICE });
    expect(first.status).toBe(200);
    expect(first.json.data.orders.length).toBeGreaterThan(0);
    const second = await gql(stack.proxy.url, 'shop', ORDERS, { auth: ALICE });
    expect(second.json).toEqual(first.json);
    expect(orderReads() - before).toBe(1);
  });

  it('never shares a read between two callers whose readFilters differ', async () => {
    const [alice, bob] = await Promise.all([gql(stack.proxy.url, 'shop', ORDERS, { auth: ALICE }), gql(stack.proxy.url, 'shop', ORDERS, { auth: BOB })]);
    expect([...owners(alice)]).toEqual(['alice']);
    expect([...owners(bob)]).toEqual(['bob']);
    // Again, from memory each: still their own.
    expect([...owners(await gql(stack.proxy.url, 'shop', ORDERS, { auth: BOB }))]).toEqual(['bob']);
    expect([...owners(await gql(stack.proxy.url, 'shop', ORDERS, { auth: ALICE }))]).toEqual(['alice']);
  });

  it('drops the cached reads when a REST write to the collection passes, before its answer', async () => {
    const first = await gql(stack.proxy.url, 'shop', ORDERS, { auth: ALICE });
    const target = first.json.data.orders[0] as { number: number; total: number };
    const doc = data.shop.orders.find((o) => o.number === target.number)!;
    const write = await call(stack.proxy.url, `/shop/orders/${(doc._id as { $oid: string }).$oid}`, { method: 'PATCH', auth: ROOT, body: { total: target.total + 1000 } });
    expect(write.status).toBeLessThan(300);
    const before = orderReads();
    const after = await gql(stack.proxy.url, 'shop', ORDERS, { auth: ALICE });
    expect(orderReads() - before).toBe(1);
    expect(after.json.data.orders.find((o: { number: number }) => o.number === target.number).total).toBe(target.total + 1000);
  });

  it("does not cache a collection no rule covers, nor a mutation's reads", async () => {
    const users = () => collectionReads(stack.backend, 'users').length;
    const before = users();
    await gql(stack.proxy.url, 'shop', '{ users(limit: 3) { id } }', { auth: ALICE });
    await gql(stack.proxy.url, 'shop', '{ users(limit: 3) { id } }', { auth: ALICE });
    expect(users() - before).toBe(2);
  });

  it('drops the cached reads of a collection a GraphQL mutation wrote, before its answer', async () => {
    await gql(stack.proxy.url, 'shop', ORDERS, { auth: ALICE });
    const cached = orderReads();
    await gql(stack.proxy.url, 'shop', ORDERS, { auth: ALICE });
    expect(orderReads()).toBe(cached);
    const created = await gql(stack.proxy.url, 'writes', 'mutation { createOrder(number: 9001, total: 5) { number } }', { auth: ALICE });
    expect(created.json.errors).toBeUndefined();
    expect(created.json.data.createOrder.number).toBe(9001);
    const before = orderReads();
    const after = await gql(stack.proxy.url, 'shop', ORDERS, { auth: ALICE });
    expect(orderReads() - before).toBe(1);
    expect(after.json.data.orders.some((o: { number: number }) => o.number === 9001)).toBe(true);
  });
});
