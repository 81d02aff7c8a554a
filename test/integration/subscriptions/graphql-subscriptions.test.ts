/**
 * GraphQL subscriptions through the real proxy, Redis and the RESTHeart stand-in (SPEC §6.5,
 * issue 38), with the real `graphql-sse` and `graphql-ws` clients: changes from REST writes and
 * GraphQL mutations, who gets them (find with arguments and @user.id, readFilter and
 * projectResponse through the per-identity re-read, deletes), SSE `id:` and resuming, bounds,
 * and the ends (revocation, lost permission, changed app).
 *
 * Visibility rows end with a write every subscriber may see (a marker): changes are delivered in
 * feed order, so once the marker arrived, a change not received before it was not delivered.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStandinBackend, type StandinBackend } from '../../../examples/standin-backend/index.js';
import { startTestRedis, type TestRedis } from '../../support/redis/redis.js';
import { basic, startTestOutrigger, staticUsers } from '../../support/outrigger.js';
import { call, gql } from '../graphql/graphql-helpers.js';
import { openSubscriptions, putSubscriptionPermissions, rawSse, received, sseSubscribe, subscribed, subscriptionApp, wsSubscribe } from './graphql-subscriptions-helpers.js';
import { until } from '../../support/wait.js';

const JWT_SECRET = 'a-test-secret-that-is-at-least-32-characters-long';
const ROOT = basic('root', 'root-password');
const ALICE = basic('alice', 'alice-password');
const BOB = basic('bob', 'bob-password');
const CAROL = basic('carol', 'carol-password');

const CHANGE = 'op id document { number owner status secret }';

describe('GraphQL subscriptions (SPEC §6.5)', () => {
  let redis: TestRedis;
  let backend: StandinBackend;
  let proxy: Awaited<ReturnType<typeof startTestOutrigger>>;
  let number = 1000;
  const post = (auth: string, doc: Record<string, unknown>) => call(proxy.url, '/shop/orders', { method: 'POST', auth, body: doc });
  /** A REST insert by `auth` with a fresh number; returns the number and the new id. */
  const insert = async (auth: string, doc: Record<string, unknown>) => {
    const n = ++number;
    const res = await post(auth, { number: n, ...doc });
    expect(res.status).toBe(201);
    const location = String(res.headers.location);
    return { n, id: location.slice(location.lastIndexOf('/') + 1) };
  };

  beforeAll(async () => {
    redis = await startTestRedis();
    backend = await startStandinBackend({ data: { shop: { orders: [] } }, jwt: { secret: JWT_SECRET } });
    proxy = await startTestOutrigger({
      service: { id: 'gql-subs' },
      upstream: { url: backend.url, identity: { mode: 'jwt', jwt: { secret: JWT_SECRET } } },
      redis: { url: redis.url },
      users: await staticUsers({ root: ['root'], alice: ['owner'], bob: ['owner'], carol: ['everything'] }),
      acl: { mode: 'enforce' },
    });
    await putSubscriptionPermissions(proxy.url, ROOT);
    expect((await call(proxy.url, '/gql-apps/subs', { method: 'PUT', auth: ROOT, body: subscriptionApp() })).status).toBe(201);
  });

  afterAll(async () => {
    await proxy?.stop();
    await backend?.close();
    await redis?.close();
  });

  it('SSE: a REST insert reaches the subscriber as the field built from {op, _id, document}, each event with an id', async () => {
    const sub = await rawSse(proxy.url, 'subs', `subscription { orderChanged { ${CHANGE} _id } }`, { auth: CAROL });
    expect(sub.status).toBe(200);
    expect(sub.headers.get('content-type')).toContain('text/event-stream');
    const { n, id } = await insert(CAROL, { owner: 'carol', status: 'open' });
    const [event] = await sub.waitForNexts(1);
    expect(event!.id).toMatch(/^\d+-\d+$/);
    expect(event!.payload.data).toEqual({ orderChanged: { op: 'insert', id, _id: { $oid: id }, document: { number: n, owner: 'carol', status: 'open', secret: null } } });
    await sub.close();
  });

  it('readFilter and projectResponse decide through the re-read: REST writes of another user never reach alice', async () => {
    const alice = sseSubscribe(proxy.url, 'subs', `subscription { orderChanged { ${CHANGE} } }`, { auth: ALICE });
    const carol = sseSubscribe(proxy.url, 'subs', `subscription { orderChanged { ${CHANGE} } }`, { auth: CAROL });
    await subscribed(proxy.url, 2);
    const bobs = await insert(BOB, { owner: 'bob', status: 'open', secret: 's' });
    const alices = await insert(ALICE, { owner: 'alice', status: 'open', secret: 's' });
    const values = await received(alice, 1);
    const seen = await received(carol, 2);
    expect(values.map((v) => (v.data!.orderChanged as { document: { number: number } }).document.number)).toEqual([alices.n]);
    // alice's permission hides secret (projectResponse); carol's does not.
    expect((values[0]!.data!.orderChanged as { document: Record<string, unknown> }).document.secret).toBeNull();
    expect(seen.map((v) => (v.data!.orderChanged as { document: { number: number; secret: string } }).document)).toMatchObject([
      { number: bobs.n, secret: 's' },
      { number: alices.n, secret: 's' },
    ]);
    alice.close();
    carol.close();
  });

  it('GraphQL mutations are changes too; an update and a delete reach the subscribers allowed to see them', async () => {
    await until(async () => (await openSubscriptions(proxy.url)) === 0, 'earlier subscriptions closed');
    const opened: Array<{ close(): void }> = [];
    const alice = sseSubscribe(proxy.url, 'subs', `subscription { myOrders { ${CHANGE} } }`, { auth: ALICE });
    const bob = wsSubscribe(proxy.url, 'subs', `subscription { myOrders { ${CHANGE} } }`, { auth: BOB });
    opened.push(alice, bob);
    try {
      await subscribed(proxy.url, 2);
      const created = await gql(proxy.url, 'subs', 'mutation { createOrder(number: 7001) { _id } }', { auth: BOB });
      expect(created.status).toBe(200);
      const id = created.json.data.createOrder._id.$oid as string;
      // One subscriber on the document by id (carol: no readFilter), over WebSocket: sees the update and the delete, whose
      // document (read before the REST DELETE was forwarded, as a GraphQL delete reads it: issue 51) is decided as an update's.
      const byId = wsSubscribe(proxy.url, 'subs', 'subscription($id: ObjectId!) { orderById(id: $id) { op id document { status } } }', { auth: CAROL, variables: { id } });
      const aliceById = sseSubscribe(proxy.url, 'subs', 'subscription($id: ObjectId!) { orderById(id: $id) { op id } }', { auth: ALICE, variables: { id } });
      opened.push(byId, aliceById);
      await subscribed(proxy.url, 4);
      expect((await gql(proxy.url, 'subs', `mutation { setStatus(id: "${id}", status: "paid") { status } }`, { auth: BOB })).status).toBe(200);
      expect((await call(proxy.url, `/shop/orders/${id}`, { method: 'DELETE', auth: BOB })).status).toBe(204);
      const marker = await insert(ALICE, { owner: 'alice', status: 'open' });
      expect((await received(bob, 2)).map((v) => v.data!.myOrders)).toEqual([
        { op: 'insert', id, document: { number: 7001, owner: 'bob', status: 'open', secret: null } },
        { op: 'update', id, document: { number: 7001, owner: 'bob', status: 'paid', secret: null } },
      ]);
      const byIdValues = await received(byId, 2);
      expect(byIdValues.map((v) => v.data!.orderById)).toEqual([
        { op: 'update', id, document: { status: 'paid' } },
        { op: 'delete', id, document: { status: 'paid' } },
      ]);
      // alice: her own order (the marker) only; bob's insert and update, and the delete (her permission has a readFilter), never.
      const aliceValues = await received(alice, 1);
      expect(aliceValues.map((v) => (v.data!.myOrders as { document: { number: number } }).document.number)).toEqual([marker.n]);
      expect(aliceById.values).toEqual([]);
    } finally {
      // Closed however the row ends: the next rows wait for no open subscription.
      for (const s of opened) s.close();
    }
  });

  it('a subscription over a plain JSON POST is a 400 naming the two transports', async () => {
    const res = await gql(proxy.url, 'subs', 'subscription { myOrders { op } }', { auth: ALICE });
    expect(res.status).toBe(400);
    expect(res.json.errors[0].message).toMatch(/SSE.*WebSocket/);
  });

  it('resume: Last-Event-ID gives the missed changes, then live ones, nothing twice; garbage and future ids get an error event then live ones', async () => {
    const query = `subscription { orderChanged(status: "resume") { op document { number } } }`;
    const first = await rawSse(proxy.url, 'subs', query, { auth: CAROL });
    const a = await insert(CAROL, { owner: 'carol', status: 'resume' });
    const [ea] = await first.waitForNexts(1);
    await first.close();
    const b = await insert(CAROL, { owner: 'carol', status: 'resume' });
    const c = await insert(CAROL, { owner: 'carol', status: 'resume' });
    const again = await rawSse(proxy.url, 'subs', query, { auth: CAROL, lastEventId: ea!.id! });
    const d = await insert(CAROL, { owner: 'carol', status: 'resume' });
    const e = await insert(CAROL, { owner: 'carol', status: 'resume' });
    const got = await again.waitForNexts(4);
    expect(got.map((x) => (x.payload.data!.orderChanged as { document: { number: number } }).document.number)).toEqual([b.n, c.n, d.n, e.n]);
    expect(new Set(got.map((x) => x.id)).size).toBe(4);
    expect(a.n).toBeLessThan(b.n);
    await again.close();
    for (const [lastEventId, code] of [
      ['garbage', 'INVALID_LAST_EVENT_ID'],
      ['99999999999999-0', 'LAST_EVENT_ID_AHEAD'],
      ['1-0', 'BEYOND_RETENTION'],
    ] as const) {
      const s = await rawSse(proxy.url, 'subs', query, { auth: CAROL, lastEventId });
      const [notice] = await s.waitForNexts(1);
      expect(notice!.payload.errors![0]!.extensions!.code).toBe(code);
      const next = await insert(CAROL, { owner: 'carol', status: 'resume' });
      const [, live] = await s.waitForNexts(2);
      expect((live!.payload.data!.orderChanged as { document: { number: number } }).document.number).toBe(next.n);
      await s.close();
    }
  });

  it("a GraphQL delete carries the document it read first, unprojected: matched against find and each readFilter, projected as each subscriber's permission says (issue 53)", async () => {
    await until(async () => (await openSubscriptions(proxy.url)) === 0, 'earlier subscriptions closed');
    const query = 'subscription { orderChanged(status: "gone") { op id document { number owner secret } } }';
    const alice = sseSubscribe(proxy.url, 'subs', query, { auth: ALICE });
    const carol = wsSubscribe(proxy.url, 'subs', query, { auth: CAROL });
    await subscribed(proxy.url, 2);
    const bobs = await gql(proxy.url, 'subs', 'mutation { createOrder(number: 8001, status: "gone") { _id } }', { auth: BOB });
    const alices = await gql(proxy.url, 'subs', 'mutation { createOrder(number: 8002, status: "gone") { _id } }', { auth: ALICE });
    const bobId = bobs.json.data.createOrder._id.$oid as string;
    const aliceId = alices.json.data.createOrder._id.$oid as string;
    expect((await gql(proxy.url, 'subs', `mutation { deleteOrder(id: "${bobId}") { number } }`, { auth: BOB })).json.data).toEqual({ deleteOrder: { number: 8001 } });
    expect((await gql(proxy.url, 'subs', `mutation { deleteOrder(id: "${aliceId}") { number } }`, { auth: ALICE })).json.data).toEqual({ deleteOrder: { number: 8002 } });
    const carolValues = await received(carol, 4).finally(() => {
      alice.close();
      carol.close();
    });
    expect(carolValues.map((v) => v.data!.orderChanged)).toEqual([
      { op: 'insert', id: bobId, document: { number: 8001, owner: 'bob', secret: 'hidden' } },
      { op: 'insert', id: aliceId, document: { number: 8002, owner: 'alice', secret: 'hidden' } },
      // The writer's projectResponse hides secret from the writer, not from carol (issue 53).
      { op: 'delete', id: bobId, document: { number: 8001, owner: 'bob', secret: 'hidden' } },
      { op: 'delete', id: aliceId, document: { number: 8002, owner: 'alice', secret: 'hidden' } },
    ]);
    const aliceValues = await received(alice, 2);
    expect(aliceValues.map((v) => v.data!.orderChanged)).toEqual([
      { op: 'insert', id: aliceId, document: { number: 8002, owner: 'alice', secret: null } },
      { op: 'delete', id: aliceId, document: { number: 8002, owner: 'alice', secret: null } },
    ]);
    alice.close();
    carol.close();
  });

  /** Another replica of the same service (the app comes through Redis) with more settings. */
  const anotherReplica = async (more: Record<string, unknown>) => {
    const other = await startTestOutrigger({
      service: { id: 'gql-subs' },
      upstream: { url: backend.url, identity: { mode: 'jwt', jwt: { secret: JWT_SECRET } } },
      redis: { url: redis.url },
      users: await staticUsers({ root: ['root'], alice: ['owner'], bob: ['owner'], carol: ['everything'] }),
      acl: { mode: 'enforce' },
      ...more,
    });
    await until(async () => (await call(other.url, '/graphql/subs', { method: 'POST', auth: ROOT, body: { query: '{ __typename }' } })).status === 200, 'the other replica serving the app');
    return other;
  };

  it('SSE heartbeats follow subscriptions.heartbeatSeconds (here 1 s; graphql-sse alone pings every 12 s)', async () => {
    const other = await anotherReplica({ subscriptions: { heartbeatSeconds: 1 } });
    try {
      const sub = await rawSse(other.url, 'subs', 'subscription { orderChanged(status: "beat") { op } }', { auth: CAROL });
      expect(sub.status).toBe(200);
      const started = Date.now();
      // The first comment at once, then one a second.
      await until(() => sub.events.filter((e) => e.comment !== undefined).length >= 3, 'three comments', 10_000);
      expect(Date.now() - started).toBeGreaterThanOrEqual(1500);
      await sub.close();
    } finally {
      await other.stop();
    }
  });

  it('subscriptions count against rate limits once when they start, over SSE and WebSocket alike (one allowance)', async () => {
    const other = await anotherReplica({ limits: { policies: [{ name: 'subs', by: 'user', limit: 2, window: '1d', condition: "path-prefix('/graphql/subs')" }] } });
    const query = 'subscription { orderChanged(status: "limited") { op } }';
    try {
      const first = await rawSse(other.url, 'subs', query, { auth: CAROL });
      expect(first.status).toBe(200);
      const second = wsSubscribe(other.url, 'subs', query, { auth: CAROL });
      await subscribed(other.url, 2);
      const third = wsSubscribe(other.url, 'subs', query, { auth: CAROL });
      await until(() => third.error !== undefined, 'the third subscription refused');
      expect(JSON.stringify(third.error)).toContain('TOO_MANY_REQUESTS');
      expect(JSON.stringify(third.error)).toContain("rate limit 'subs'");
      const fourth = await rawSse(other.url, 'subs', query, { auth: CAROL });
      expect(fourth.status).toBe(429);
      // The two admitted still get changes.
      await insert(CAROL, { owner: 'carol', status: 'limited' });
      await first.waitForNexts(1);
      await received(second, 1);
      await first.close();
      second.close();
      third.close();
    } finally {
      await other.stop();
    }
  });

  it('users the backend cannot tell apart need no re-read, and each still gets only what its readFilter shows, projected (issues 38, 53)', async () => {
    // No upstream.identity: the backend sees the same (no) identity for alice and bob and for the
    // writers, so the state each write carries is decided in process for all three (readFilter
    // {owner: @user.id} matched on it, projectResponse applied).
    await until(async () => (await openSubscriptions(proxy.url)) === 0, 'earlier subscriptions closed');
    const other = await anotherReplica({ upstream: { url: backend.url } });
    const query = 'subscription { orderChanged(status: "shared") { op document { number owner secret } } }';
    try {
      const alice = sseSubscribe(other.url, 'subs', query, { auth: ALICE });
      const bob = wsSubscribe(other.url, 'subs', query, { auth: BOB });
      const carol = sseSubscribe(other.url, 'subs', query, { auth: CAROL });
      await subscribed(other.url, 3);
      backend.clearRequests();
      // Written through this replica (no identity to the backend): the captured states are shared.
      const insertHere = async (auth: string, doc: Record<string, unknown>) => {
        const n = ++number;
        const res = await call(other.url, '/shop/orders', { method: 'POST', auth, body: { number: n, ...doc } });
        expect(res.status).toBe(201);
        return { n };
      };
      const first = await insertHere(BOB, { owner: 'bob', status: 'shared', secret: 's' });
      await received(carol, 1);
      await received(bob, 1);
      const second = await insertHere(ALICE, { owner: 'alice', status: 'shared', secret: 's' });
      await received(alice, 1);
      await received(carol, 2);
      expect(alice.values.map((v) => v.data!.orderChanged)).toEqual([{ op: 'insert', document: { number: second.n, owner: 'alice', secret: null } }]);
      expect(bob.values.map((v) => v.data!.orderChanged)).toEqual([{ op: 'insert', document: { number: first.n, owner: 'bob', secret: null } }]);
      expect(carol.values.map((v) => (v.data!.orderChanged as { document: { number: number; secret: string } }).document)).toEqual([
        { number: first.n, owner: 'bob', secret: 's' },
        { number: second.n, owner: 'alice', secret: 's' },
      ]);
      // One read per change, made before the write was answered; no subscriber re-read it.
      const rereads = backend.requests.filter((r) => r.method === 'GET' && r.url.startsWith('/shop/orders?'));
      expect(rereads).toHaveLength(2);
      for (const r of rereads) expect(decodeURIComponent(r.url)).not.toContain('owner');
      alice.close();
      bob.close();
      carol.close();
    } finally {
      await other.stop();
    }
  });
});
