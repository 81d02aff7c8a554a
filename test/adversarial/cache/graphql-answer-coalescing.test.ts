/**
 * Identical concurrent whole GraphQL answers under abuse (SPEC §12 "concurrent misses for one key
 * collapse", `descriptor.cache`): a backend that holds the read (a relay whose gate the test
 * opens) and 200 identical queries arriving meanwhile. One read reaches the backend, one
 * execution is in flight and the other 199 wait for it holding nothing but a promise; a quarter of
 * them leave while waiting; every one that stayed gets the same answer once the read returns.
 */
import { request } from 'undici';
import { beforeAll, describe, expect, it } from 'vitest';
import { as, ROOT, useStack, type Running } from '../../support/fixtures.js';
import { startGatedReads, type GatedReads } from '../../support/peers/gated-reads.js';
import { call } from '../../support/clients/http-client.js';
import { until } from '../../support/wait.js';
import { collectionReads, gql, shopApp, shopData } from '../../integration/graphql/graphql-helpers.js';

const ALICE = as('alice');
const QUERY = 'query Orders($limit: Int) { orders(limit: $limit) { number owner total } }';
const CALLERS = 200;
const LEAVING = 50;

describe('200 identical queries while the backend holds the read', () => {
  const stack = useStack({ service: 'gql-collapse-abuse', jwtIdentity: true, backend: { data: shopData() }, users: { root: ['root'], alice: ['user'] }, outrigger: false });
  let relay: GatedReads;
  let a: Running;
  beforeAll(async () => {
    relay = await startGatedReads(stack.backend.url);
    stack.onStop(() => relay.close());
    a = await stack.start({ upstream: { url: relay.url }, acl: { mode: 'enforce' } });
    await stack.put('/_admin/acl/graphql', { predicate: 'path-prefix(/graphql)', roles: ['user'], priority: 1 }, a.url);
    await stack.put('/_admin/acl/read', { predicate: 'method(GET) and path-prefix(/shop)', roles: ['user'], priority: 1 }, a.url);
    const app = shopApp();
    await stack.put('/gql-apps/shop', { ...app, descriptor: { ...(app.descriptor as object), cache: { maxAgeSeconds: 60 } } }, a.url);
  });

  it('makes one backend read, keeps one flight, and answers every caller that stayed the same', async () => {
    const flights = a.context.responseCache!.answerFlights;
    relay.shut((path) => path === '/shop/orders');
    const before = collectionReads(stack.backend, 'orders').length;
    const heapBefore = process.memoryUsage().heapUsed;
    const ask = () => gql(a.url, 'shop', QUERY, { auth: ALICE, variables: { limit: 9 } });
    // The first one executes (and stays); the crowd arrives while its read is held.
    const staying = [ask()];
    await until(() => relay.held === 1, 'the first query to read');
    for (let i = 1; i < CALLERS - LEAVING; i++) staying.push(ask());
    const body = JSON.stringify({ query: QUERY, variables: { limit: 9 } });
    const leaving = Array.from({ length: LEAVING }, () => {
      const controller = new AbortController();
      const sent = request(`${a.url}/graphql/shop`, { method: 'POST', headers: { authorization: ALICE, 'content-type': 'application/json' }, body, signal: controller.signal }).catch(() => undefined);
      return { controller, sent };
    });
    await until(() => relay.held === 1 && flights.waiting === CALLERS - 1, `one read held and ${CALLERS - 1} identical queries waiting`, 30_000);
    // Bounded: one execution in flight whatever the crowd; the backend saw one read.
    expect(flights.size).toBe(1);
    expect(collectionReads(stack.backend, 'orders').length - before).toBe(0);
    const heapWaiting = process.memoryUsage().heapUsed;
    for (const l of leaving) l.controller.abort();
    await Promise.all(leaving.map((l) => l.sent));
    await until(() => flights.waiting === CALLERS - LEAVING - 1, 'the ones whose clients left to stop waiting', 30_000);
    expect(relay.held).toBe(1);
    relay.open();
    const answers = await Promise.all(staying);
    for (const res of answers) {
      expect(res.status, res.text).toBe(200);
      expect(res.text).toBe(answers[0]!.text);
    }
    expect(collectionReads(stack.backend, 'orders').length - before).toBe(1);
    expect(flights.size).toBe(0);
    expect(flights.waiting).toBe(0);
    const state = await call(a.url, '/_admin/cache', { auth: ROOT });
    expect(state.json.entries).toBe(1);
    console.log(`${CALLERS} identical queries: heap ${((heapWaiting - heapBefore) / 1024 / 1024).toFixed(1)} MiB more while they waited (the test's own clients included)`);
  });
});
