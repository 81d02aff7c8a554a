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
import { startStandinBackend, type StandinBackend } from '../../examples/standin-backend/index.js';
import { startTestRedis, type TestRedis } from '../support/redis.js';
import { basic, startTestOutrigger, staticUsers } from '../support/outrigger.js';
import { call, gql } from './graphql-helpers.js';
import { hex, putSubscriptionPermissions, rawSse, received, sseSubscribe, subscriptionApp, wsSubscribe } from './graphql-subscriptions-helpers.js';

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
    await new Promise((r) => setTimeout(r, 300));
    const bobs = await insert(BOB, { owner: 'bob', status: 'open', secret: 's' });
    const alices = await insert(ALICE, { owner: 'alice', status: 'open', secret: 's' });
    const values = await received(alice, 1);
    const seen = await received(carol, 2);
    expect(values.map((v) => (v.data!.orderChanged as { document: { number: number } }).document.number)).toEqual([alices.n]);
    // alice's permission hides secret (projectResponse); carol's does not.
    expect((values[0]!.data!.orderChanged as { document: Record<string, unknown> }).document.secret).toBeNull();
    expect(seen.map((v) => (v.data!.orderChanged as { document: { number: number; secret: string } }).document)).toMatchObject([{ number: bobs.n, secret: 's' }, { number: alices.n, secret: 's' }]);
    alice.close();
    carol.close();
  });
});
