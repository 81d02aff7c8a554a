/**
 * Whole GraphQL answers on a service with no `cache` section at all (SPEC §12, docs/caching.md
 * "Whole GraphQL answers"): before any app asks, nothing runs (`/_admin/cache` 404, no
 * Cache-Status); saving an app with `descriptor.cache` starts the cache without a warning, its
 * answers are kept and dropped by REST writes on this replica and on a replica started later; and
 * identical concurrent queries collapse into one execution (one backend read, counted at a relay
 * that holds the read until every caller has arrived), callers under another key never wait for
 * it, and a waiting or an executing caller whose client leaves breaks nobody else's answer.
 */
import { request } from 'undici';
import { beforeAll, describe, expect, it } from 'vitest';
import { as, ROOT, useStack, type Running } from '../../support/fixtures.js';
import { startGatedReads, type GatedReads } from '../../support/peers/gated-reads.js';
import { call } from '../../support/clients/http-client.js';
import { until, waitFor } from '../../support/wait.js';
import { collectionReads, gql, shopApp, shopData } from '../graphql/graphql-helpers.js';

const ALICE = as('alice');
const BOB = as('bob');
const ORDERS = 'query Orders($limit: Int) { orders(limit: $limit) { number owner total } }';
const STORED = /^Outrigger;fwd=miss;stored$/;
const HIT = /^Outrigger;hit;ttl=\d+$/;
const PERMISSIONS = {
  graphql: { predicate: 'path-prefix(/graphql)', roles: ['user'], priority: 1 },
  'own-orders': { predicate: 'method(GET) and path-prefix(/shop/orders)', roles: ['user'], priority: 10, mongo: { readFilter: { owner: '@user.id' } } },
};

describe('whole GraphQL answers without cache.rules', () => {
  const data = shopData();
  const stack = useStack({ service: 'gql-answers-alone', jwtIdentity: true, backend: { data }, users: { root: ['root'], alice: ['user'], bob: ['user'] }, outrigger: false });
  let relay: GatedReads;
  let a: Running;
  beforeAll(async () => {
    relay = await startGatedReads(stack.backend.url);
    stack.onStop(() => relay.close());
    a = await stack.start({ upstream: { url: relay.url }, acl: { mode: 'enforce' } });
    for (const [id, doc] of Object.entries(PERMISSIONS)) await stack.put(`/_admin/acl/${id}`, doc, a.url);
  });
  const orderReads = () => collectionReads(stack.backend, 'orders').length;
  const ask = (auth = ALICE, limit = 100, base = a.url) => gql(base, 'shop', ORDERS, { auth, variables: { limit }, operationName: 'Orders' });
  const flights = () => a.context.responseCache!.answerFlights;

  it('runs no cache until an app asks; then keeps its answers with no warning, dropped by a REST write', async () => {
    expect((await call(a.url, '/_admin/cache', { auth: ROOT })).status).toBe(404);
    expect(a.context.responseCache!.armed).toBe(false);
    expect((await call(a.url, '/shop/orders', { auth: ROOT })).headers['cache-status']).toBeUndefined();
    const app = shopApp();
    const put = await call(a.url, '/gql-apps/shop', { method: 'PUT', auth: ROOT, body: { ...app, descriptor: { ...(app.descriptor as object), cache: { maxAgeSeconds: 60 } } } });
    expect(put.status).toBe(201);
    expect(put.json.warnings).toBeUndefined();
    expect((await call(a.url, '/_admin/cache', { auth: ROOT })).status).toBe(200);
    expect((await ask()).headers['cache-status']).toMatch(STORED);
    const before = orderReads();
    const hit = await ask();
    expect(hit.headers['cache-status']).toMatch(HIT);
    expect(orderReads()).toBe(before);
    // No rule: a REST read is never cached.
    expect((await call(a.url, '/shop/orders', { auth: ROOT })).headers['cache-status']).toBeUndefined();
    // The chain gained the cache stage when the app arrived: a REST write drops the answer.
    const target = data.shop.orders.find((o) => o.owner === 'alice')!;
    const write = await call(a.url, `/shop/orders/${(target._id as { $oid: string }).$oid}`, { method: 'PATCH', auth: ROOT, body: { total: 5151 } });
    expect(write.status).toBeLessThan(300);
    const after = await ask();
    expect(after.headers['cache-status']).toMatch(STORED);
    expect(after.json.data.orders.find((o: { number: number }) => o.number === target.number).total).toBe(5151);
  });

  it("runs the cache from the start on a replica started after the app exists: its writes drop A's answers", async () => {
    const b = await stack.start({ upstream: { url: relay.url }, acl: { mode: 'enforce' } });
    expect(b.context.responseCache!.armed).toBe(true);
    await ask(ALICE, 40);
    expect((await ask(ALICE, 40)).headers['cache-status']).toMatch(HIT);
    const target = data.shop.orders.find((o) => o.owner === 'alice')!;
    expect((await call(b.url, `/shop/orders/${(target._id as { $oid: string }).$oid}`, { method: 'PATCH', auth: ROOT, body: { total: 6262 } })).status).toBeLessThan(300);
    await waitFor(
      () => ask(ALICE, 40),
      (r) => r.json.data.orders.find((o: { number: number }) => o.number === target.number)?.total === 6262,
      5000,
      "replica A to drop the answer after B's write",
    );
  });

  it('collapses identical concurrent queries into one execution; another caller never waits for it', async () => {
    relay.shut((path) => path === '/shop/orders');
    const before = orderReads();
    const alices = Array.from({ length: 10 }, () => ask(ALICE, 7));
    await until(() => relay.held === 1 && flights().waiting === 9, 'one read held and nine identical queries waiting for it');
    // Bob's key differs (another user, another readFilter): he executes beside Alice's, never waits.
    const bob = ask(BOB, 7);
    await until(() => relay.held === 2, "Bob's own read to reach the backend");
    expect(flights().waiting).toBe(9);
    relay.open();
    const answers = await Promise.all(alices);
    for (const res of answers) {
      expect(res.status).toBe(200);
      expect(res.text).toBe(answers[0]!.text);
    }
    expect([...new Set(answers[0]!.json.data.orders.map((o: { owner: string }) => o.owner))]).toEqual(['alice']);
    expect(answers.filter((r) => HIT.test(String(r.headers['cache-status'])))).toHaveLength(9);
    expect([...new Set((await bob).json.data.orders.map((o: { owner: string }) => o.owner))]).toEqual(['bob']);
    expect(orderReads() - before).toBe(2);
    expect(flights().size).toBe(0);
  });

  it('a waiting caller whose client leaves, or the executing one, breaks no other answer', async () => {
    relay.shut((path) => path === '/shop/orders');
    const body = JSON.stringify({ query: ORDERS, variables: { limit: 8 }, operationName: 'Orders' });
    const leaving = () => {
      const controller = new AbortController();
      const sent = request(`${a.url}/graphql/shop`, { method: 'POST', headers: { authorization: ALICE, 'content-type': 'application/json' }, body, signal: controller.signal }).catch(() => undefined);
      return { controller, sent };
    };
    const leader = leaving();
    await until(() => relay.held === 1, 'the first query to read');
    const stayers = Array.from({ length: 4 }, () => ask(ALICE, 8));
    const quitter = leaving();
    await until(() => flights().waiting === 5, 'five identical queries waiting');
    quitter.controller.abort();
    await quitter.sent;
    await until(() => flights().waiting === 4, 'the one whose client left to stop waiting');
    // The executing caller leaves: its execution stops, stores nothing, and the four run their own.
    leader.controller.abort();
    await leader.sent;
    await until(() => flights().waiting === 0, 'the waiting ones to be let go');
    relay.open();
    const answers = await Promise.all(stayers);
    for (const res of answers) {
      expect(res.status).toBe(200);
      expect(res.json.data.orders.length).toBeGreaterThan(0);
      expect(res.json.data.orders.every((o: { owner: string }) => o.owner === 'alice')).toBe(true);
    }
    expect(flights().size).toBe(0);
  });
});
