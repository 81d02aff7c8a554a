/**
 * Issue 53, items 1 and 2, through two real replicas, Redis and the RESTHeart stand-in with minted
 * JWTs (`upstream.identity: jwt`, so the backend can tell every identity apart and each
 * subscriber's own re-read decides whether it may read a change's document): writes go through
 * replica A, subscribers listen on replica B.
 * - Who sees a change is decided on the backend's unprojected document under the subscriber's own
 *   readFilter and projectResponse, never on the writer's: a clerk whose projectResponse hides
 *   `confidential` deletes a confidential order with a GraphQL mutation; a subscriber under
 *   `readFilter: {confidential: {$ne: true}}` never gets it (live or by a made-up Last-Event-ID),
 *   and carol, who may read everything, gets the document with `confidential`.
 * - Each change carries its own state: with the backend's reads slowed down (a relay holds every
 *   GET 300 ms, so a re-read would come after the client's next write), GraphQL mutations written
 *   one after another are delivered each in the state right after its own write.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStandinBackend, type StandinBackend } from '../../../examples/standin-backend/index.js';
import { startTestRedis, type TestRedis } from '../../support/redis/redis.js';
import { basic, startTestOutrigger, staticUsers } from '../../support/outrigger.js';
import { startSlowReads, type SlowReads } from '../../support/peers/slow-reads.js';
import { sleep, until } from '../../support/wait.js';
import { call, gql } from '../graphql/graphql-helpers.js';
import { openSubscriptions, rawSse, subscribed } from './graphql-subscriptions-helpers.js';

const JWT_SECRET = 'a-test-secret-that-is-at-least-32-characters-long';
const ROOT = basic('root', 'root-password');
const CLERK = basic('clerk', 'clerk-password');
const PUB = basic('pub', 'pub-password');
const CAROL = basic('carol', 'carol-password');

const orders = { db: 'shop', collection: 'orders' };
const APP = {
  _id: 'state',
  descriptor: { uri: 'state' },
  schema: /* GraphQL */ `
    type Order {
      _id: ObjectId
      number: Int
      status: String
      confidential: Boolean
    }
    type OrderChange {
      op: String
      id: ID
      document: Order
    }
    type Query {
      orders: [Order]
    }
    type Mutation {
      createOrder(number: Int!, status: String!, confidential: Boolean): Order
      setStatus(id: ID!, status: String!): Order
      deleteOrder(id: ID!): Order
    }
    type Subscription {
      orderChanged(status: String): OrderChange
    }
  `,
  mappings: {
    Query: { orders },
    Mutation: {
      createOrder: { ...orders, insert: { number: { $arg: 'number' }, status: { $arg: 'status' }, confidential: { $arg: ['confidential', false] } } },
      setStatus: { ...orders, find: { _id: { $arg: 'id' } }, update: { $set: { status: { $arg: 'status' } } } },
      deleteOrder: { ...orders, find: { _id: { $arg: 'id' } }, delete: true },
    },
    Subscription: { orderChanged: { ...orders, on: ['insert', 'update', 'delete'], find: { status: { $arg: 'status' } } } },
  },
};
const CHANGE = 'op id document { number status confidential }';

describe("subscriptions across replicas: each change in its own state, seen under each subscriber's own permission (issue 53)", () => {
  let redis: TestRedis;
  let backend: StandinBackend;
  let relay: SlowReads;
  let a: Awaited<ReturnType<typeof startTestOutrigger>>;
  let b: Awaited<ReturnType<typeof startTestOutrigger>>;
  let number = 9000;

  const replica = async () =>
    startTestOutrigger({
      service: { id: 'gql-subs-state' },
      upstream: { url: relay.url, identity: { mode: 'jwt', jwt: { secret: JWT_SECRET } } },
      redis: { url: redis.url },
      users: await staticUsers({ root: ['root'], clerk: ['clerk'], pub: ['pub'], carol: ['everything'] }),
      acl: { mode: 'enforce' },
    });
  const create = async (status: string, confidential = false) => {
    const n = ++number;
    const res = await gql(a.url, 'state', `mutation { createOrder(number: ${n}, status: "${status}", confidential: ${confidential}) { _id } }`, { auth: CLERK });
    expect(res.json.errors).toBeUndefined();
    return { n, id: res.json.data.createOrder._id.$oid as string };
  };
  const state = (x: { payload: { data?: Record<string, unknown> | null } }) => {
    const c = x.payload.data!.orderChanged as { op: string; document: { number: number; status: string; confidential: boolean | null } };
    return [c.op, c.document.number, c.document.status, c.document.confidential];
  };

  beforeAll(async () => {
    redis = await startTestRedis();
    backend = await startStandinBackend({ data: { shop: { orders: [] } }, jwt: { secret: JWT_SECRET } });
    relay = await startSlowReads(backend.url);
    a = await replica();
    b = await replica();
    const put = async (id: string, doc: unknown) => expect((await call(a.url, `/_admin/acl/${id}`, { method: 'PUT', auth: ROOT, body: doc })).status).toBe(201);
    const reads = 'method(GET) and path-prefix(/shop/orders)';
    await put('state-app', { predicate: 'path-prefix(/graphql/state)', roles: ['clerk', 'pub', 'everything'], priority: 1 });
    await put('clerk-reads', { predicate: reads, roles: ['clerk'], priority: 10, mongo: { projectResponse: { confidential: 0 } } });
    await put('clerk-writes', { predicate: '(method(POST) or method(PATCH) or method(DELETE)) and path-prefix(/shop/orders)', roles: ['clerk'], priority: 5 });
    await put('pub-reads', { predicate: reads, roles: ['pub'], priority: 10, mongo: { readFilter: { confidential: { $ne: true } } } });
    await put('all-reads', { predicate: reads, roles: ['everything'], priority: 10 });
    expect((await call(a.url, '/gql-apps/state', { method: 'PUT', auth: ROOT, body: APP })).status).toBe(201);
    await until(async () => (await call(b.url, '/graphql/state', { method: 'POST', auth: ROOT, body: { query: '{ __typename }' } })).status === 200, 'replica B serving the app');
  });

  afterAll(async () => {
    await a?.stop();
    await b?.stop();
    await relay?.close();
    await backend?.close();
    await redis?.close();
  });

  it('a confidential order deleted by a clerk who cannot see the field never reaches readFilter {confidential: {$ne: true}}; carol gets it unprojected', async () => {
    const query = `subscription { orderChanged(status: "vis") { ${CHANGE} } }`;
    const pub = await rawSse(b.url, 'state', query, { auth: PUB });
    const carol = await rawSse(b.url, 'state', query, { auth: CAROL });
    try {
      await subscribed(b.url, 2);
      const before = Date.now() - 1;
      const secret = await create('vis', true);
      const deleted = await gql(a.url, 'state', `mutation { deleteOrder(id: "${secret.id}") { number confidential } }`, { auth: CLERK });
      expect(deleted.json).toEqual({ data: { deleteOrder: { number: secret.n, confidential: null } } });
      const open = await create('vis');
      expect((await carol.waitForNexts(3)).map(state)).toEqual([
        ['insert', secret.n, 'vis', true],
        ['delete', secret.n, 'vis', true],
        ['insert', open.n, 'vis', false],
      ]);
      expect((await pub.waitForNexts(1)).map(state)).toEqual([['insert', open.n, 'vis', false]]);
      await sleep(300);
      expect(pub.nexts()).toHaveLength(1);
      // A made-up Last-Event-ID from before the confidential insert: the same decision on resume.
      const resumed = await rawSse(b.url, 'state', query, { auth: PUB, lastEventId: `${before}-0` });
      try {
        const [first] = await resumed.waitForNexts(1);
        expect(first!.payload.errors).toBeUndefined();
        await sleep(300);
        expect(resumed.nexts().map(state)).toEqual([['insert', open.n, 'vis', false]]);
      } finally {
        await resumed.close();
      }
    } finally {
      await pub.close();
      await carol.close();
    }
  });

  it('GraphQL writes one after another, reads slowed down: each change is matched and delivered in the state right after its own write', async () => {
    await until(async () => (await openSubscriptions(b.url)) === 0, 'earlier subscriptions closed');
    const isNew = await rawSse(b.url, 'state', `subscription { orderChanged(status: "new") { ${CHANGE} } }`, { auth: PUB });
    const shipped = await rawSse(b.url, 'state', `subscription { orderChanged(status: "shipped") { ${CHANGE} } }`, { auth: CAROL });
    relay.slowMs = 300;
    try {
      await subscribed(b.url, 2);
      const first = await create('new');
      expect((await gql(a.url, 'state', `mutation { setStatus(id: "${first.id}", status: "shipped") { status } }`, { auth: CLERK })).json.data).toEqual({ setStatus: { status: 'shipped' } });
      const second = await create('shipped');
      expect((await gql(a.url, 'state', `mutation { setStatus(id: "${second.id}", status: "returned") { status } }`, { auth: CLERK })).json.data).toEqual({ setStatus: { status: 'returned' } });
      expect((await isNew.waitForNexts(1)).map(state)).toEqual([['insert', first.n, 'new', false]]);
      expect((await shipped.waitForNexts(2)).map(state)).toEqual([
        ['update', first.n, 'shipped', false],
        ['insert', second.n, 'shipped', false],
      ]);
      await sleep(300);
      expect(isNew.nexts()).toHaveLength(1);
      expect(shipped.nexts()).toHaveLength(2);
    } finally {
      relay.slowMs = 0;
      await isNew.close();
      await shipped.close();
    }
  });
});
