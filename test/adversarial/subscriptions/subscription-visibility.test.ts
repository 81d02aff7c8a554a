/**
 * Issue 53, items 1 and 2, under attack (SPEC §6.5, clarified 2026-12-06): who sees a change, and
 * what of it, is decided on the backend's unprojected document under each subscriber's own
 * readFilter and projectResponse, and on the state right after that write.
 * - A clerk whose projectResponse hides `confidential`, `level`, `embargo` and `flag` deletes a
 *   confidential order through a GraphQL mutation that returns the document: subscribers whose
 *   readFilter is negative on those fields (`$ne`, `$nin`, `$exists: false`, `{f: null}`) never
 *   receive it, live or through a made-up `Last-Event-ID` (the resume path decides the same way).
 * - Re-reads made slow (a relay in front of the backend delays every GET by 300 ms), so a client
 *   writing one document after another would have its first write re-read after its second: an
 *   insert of "new" is still delivered as "new", and an order inserted as "shipped" and updated
 *   away at once is still delivered to `orderChanged(status: "shipped")`.
 * - A REST DELETE carries the document as read before it was forwarded (issue 51): decided as a
 *   GraphQL delete's, so a confidential order deleted through REST reaches no negative readFilter.
 * - A document too large to carry (over 16 KiB of JSON) is not written into the feed: its change
 *   is re-read by each subscriber, and still reaches only who may read it.
 * One replica, no upstream identity: every state is decided in process (seen.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStandinBackend, type StandinBackend } from '../../../examples/standin-backend/index.js';
import { startTestRedis, type TestRedis } from '../../support/redis/redis.js';
import { basic, startTestOutrigger, staticUsers } from '../../support/outrigger.js';
import { startSlowReads, type SlowReads } from '../../support/peers/slow-reads.js';
import { sleep, until } from '../../support/wait.js';
import { call } from '../../support/clients/http-client.js';
import { gql } from '../../integration/graphql/graphql-helpers.js';
import { openSubscriptions, rawSse, subscribed } from '../../integration/subscriptions/graphql-subscriptions-helpers.js';

const ROOT = basic('root', 'root-password');
const CLERK = basic('clerk', 'clerk-password');
/** One subscriber per negative readFilter shape. */
const READERS = { ne: basic('ne', 'ne-password'), nin: basic('nin', 'nin-password'), absent: basic('absent', 'absent-password'), isnull: basic('isnull', 'isnull-password') };

const SCHEMA = /* GraphQL */ `
  type Order {
    _id: ObjectId
    number: Int
    status: String
    confidential: Boolean
    level: String
    embargo: String
    flag: String
    pad: String
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
    deleteOrder(id: ID!): Order
  }
  type Subscription {
    orderChanged(status: String): OrderChange
  }
`;
const orders = { db: 'shop', collection: 'orders' };
const APP = {
  _id: 'vis',
  descriptor: { uri: 'vis' },
  schema: SCHEMA,
  mappings: {
    Query: { orders },
    Mutation: { deleteOrder: { ...orders, find: { _id: { $arg: 'id' } }, delete: true } },
    Subscription: { orderChanged: { ...orders, on: ['insert', 'update', 'delete'], find: { status: { $arg: 'status' } } } },
  },
};
const CHANGE = 'op id document { number status confidential level embargo flag }';

describe('subscriptions: who sees a change, and in which state (issue 53, items 1 and 2)', () => {
  let redis: TestRedis;
  let backend: StandinBackend;
  let relay: SlowReads;
  let proxy: Awaited<ReturnType<typeof startTestOutrigger>>;
  let number = 5000;

  /** A REST insert by `auth`; returns its number and id. */
  const insert = async (auth: string, doc: Record<string, unknown>) => {
    const n = ++number;
    const res = await call(proxy.url, '/shop/orders', { method: 'POST', auth, body: { number: n, ...doc } });
    expect(res.status).toBe(201);
    const location = String(res.headers.location);
    return { n, id: location.slice(location.lastIndexOf('/') + 1) };
  };
  const numbersOf = (nexts: Array<{ payload: { data?: Record<string, unknown> | null } }>) =>
    nexts.map((x) => (x.payload.data?.orderChanged as { document?: { number?: number } } | undefined)?.document?.number);

  beforeAll(async () => {
    redis = await startTestRedis();
    backend = await startStandinBackend({ data: { shop: { orders: [] } } });
    relay = await startSlowReads(backend.url);
    proxy = await startTestOutrigger({
      service: { id: 'subs-visibility' },
      upstream: { url: relay.url },
      redis: { url: redis.url },
      users: await staticUsers({ root: ['root'], clerk: ['clerk'], ne: ['ne'], nin: ['nin'], absent: ['absent'], isnull: ['isnull'] }),
      acl: { mode: 'enforce' },
    });
    const put = async (id: string, doc: unknown) => expect((await call(proxy.url, `/_admin/acl/${id}`, { method: 'PUT', auth: ROOT, body: doc })).status).toBe(201);
    const reads = 'method(GET) and path-prefix(/shop/orders)';
    await put('vis-app', { predicate: 'path-prefix(/graphql/vis)', roles: ['clerk', 'ne', 'nin', 'absent', 'isnull'], priority: 1 });
    // The clerk writes everything but is shown none of the four fields.
    await put('clerk-reads', { predicate: reads, roles: ['clerk'], priority: 10, mongo: { projectResponse: { confidential: 0, level: 0, embargo: 0, flag: 0 } } });
    await put('clerk-writes', { predicate: '(method(POST) or method(PATCH) or method(DELETE)) and path-prefix(/shop/orders)', roles: ['clerk'], priority: 5 });
    await put('ne-reads', { predicate: reads, roles: ['ne'], priority: 10, mongo: { readFilter: { confidential: { $ne: true } } } });
    await put('nin-reads', { predicate: reads, roles: ['nin'], priority: 10, mongo: { readFilter: { level: { $nin: ['secret', 'top'] } } } });
    await put('absent-reads', { predicate: reads, roles: ['absent'], priority: 10, mongo: { readFilter: { embargo: { $exists: false } } } });
    await put('null-reads', { predicate: reads, roles: ['isnull'], priority: 10, mongo: { readFilter: { flag: null } } });
    expect((await call(proxy.url, '/gql-apps/vis', { method: 'PUT', auth: ROOT, body: APP })).status).toBe(201);
  });

  afterAll(async () => {
    await proxy?.stop();
    await relay?.close();
    await backend?.close();
    await redis?.close();
  });

  it('a confidential order deleted by a writer whose projectResponse hides the fields never reaches a negative readFilter, live or by a made-up Last-Event-ID', async () => {
    const query = `subscription { orderChanged(status: "vis") { ${CHANGE} } }`;
    const subs = await Promise.all(Object.values(READERS).map((auth) => rawSse(proxy.url, 'vis', query, { auth })));
    try {
      await subscribed(proxy.url, 4);
      const before = Date.now() - 1;
      const secret = await insert(CLERK, { status: 'vis', confidential: true, level: 'secret', embargo: '2030', flag: 'x' });
      const deleted = await gql(proxy.url, 'vis', `mutation { deleteOrder(id: "${secret.id}") { number confidential } }`, { auth: CLERK });
      // The clerk is shown the document without the field its permission hides.
      expect(deleted.json).toEqual({ data: { deleteOrder: { number: secret.n, confidential: null } } });
      const marker = await insert(CLERK, { status: 'vis' });
      for (const sub of subs) {
        await sub.waitForNexts(1);
        await sleep(200); // anything delivered before the marker has arrived by now (feed order)
        expect(numbersOf(sub.nexts())).toEqual([marker.n]);
      }
      // A made-up Last-Event-ID from before the confidential insert replays the same decision.
      for (const auth of Object.values(READERS)) {
        const resumed = await rawSse(proxy.url, 'vis', query, { auth, lastEventId: `${before}-0` });
        try {
          const [first] = await resumed.waitForNexts(1);
          expect(first!.payload.errors).toBeUndefined();
          await sleep(200);
          expect(numbersOf(resumed.nexts())).toEqual([marker.n]);
        } finally {
          await resumed.close();
        }
      }
    } finally {
      for (const sub of subs) await sub.close();
    }
  });

  it('a REST DELETE carries the state read before it (issue 51): a plain order deleted reaches every reader with its document, a confidential one no negative readFilter', async () => {
    const query = `subscription { orderChanged(status: "gone") { ${CHANGE} } }`;
    const subs = await Promise.all(Object.values(READERS).map((auth) => rawSse(proxy.url, 'vis', query, { auth })));
    try {
      await subscribed(proxy.url, 4);
      const secret = await insert(CLERK, { status: 'gone', confidential: true, level: 'top', embargo: '2031', flag: 'y' });
      const plain = await insert(CLERK, { status: 'gone' });
      for (const id of [secret.id, plain.id]) expect((await call(proxy.url, `/shop/orders/${id}`, { method: 'DELETE', auth: CLERK })).status).toBe(204);
      for (const sub of subs) {
        await sub.waitForNexts(2);
        await sleep(200); // anything delivered before the plain order's delete has arrived by now (feed order)
        const got = sub.nexts().map((x) => x.payload.data?.orderChanged as { op: string; document: { number: number } | null });
        // The insert and the delete of the plain order, the delete decided on the document as it was: never the confidential one.
        expect(got.map((c) => [c.op, c.document?.number])).toEqual([
          ['insert', plain.n],
          ['delete', plain.n],
        ]);
      }
    } finally {
      for (const sub of subs) await sub.close();
    }
  });

  it('with re-reads slowed down, each change is delivered in the state right after its own write: "new" stays new, "shipped" updated away is still delivered', async () => {
    await until(async () => (await openSubscriptions(proxy.url)) === 0, 'earlier subscriptions closed');
    const all = await rawSse(proxy.url, 'vis', `subscription { orderChanged { ${CHANGE} } }`, { auth: READERS.ne });
    const isNew = await rawSse(proxy.url, 'vis', `subscription { orderChanged(status: "new") { ${CHANGE} } }`, { auth: READERS.ne });
    const shipped = await rawSse(proxy.url, 'vis', `subscription { orderChanged(status: "shipped") { ${CHANGE} } }`, { auth: READERS.ne });
    relay.slowMs = 300;
    try {
      await subscribed(proxy.url, 3);
      // One client, each write after the previous one's answer.
      const first = await insert(CLERK, { status: 'new' });
      expect((await call(proxy.url, `/shop/orders/${first.id}`, { method: 'PATCH', auth: CLERK, body: { $set: { status: 'shipped' } } })).status).toBe(200);
      const second = await insert(CLERK, { status: 'shipped' });
      expect((await call(proxy.url, `/shop/orders/${second.id}`, { method: 'PATCH', auth: CLERK, body: { $set: { status: 'returned' } } })).status).toBe(200);
      const state = (x: { payload: { data?: Record<string, unknown> | null } }) => {
        const c = x.payload.data!.orderChanged as { op: string; document: { number: number; status: string } };
        return [c.op, c.document.number, c.document.status];
      };
      expect((await all.waitForNexts(4)).map(state)).toEqual([
        ['insert', first.n, 'new'],
        ['update', first.n, 'shipped'],
        ['insert', second.n, 'shipped'],
        ['update', second.n, 'returned'],
      ]);
      expect((await isNew.waitForNexts(1)).map(state)).toEqual([['insert', first.n, 'new']]);
      expect((await shipped.waitForNexts(2)).map(state)).toEqual([
        ['update', first.n, 'shipped'],
        ['insert', second.n, 'shipped'],
      ]);
      await sleep(200);
      expect(isNew.nexts()).toHaveLength(1);
      expect(shipped.nexts()).toHaveLength(2);
    } finally {
      relay.slowMs = 0;
      for (const sub of [all, isNew, shipped]) await sub.close();
    }
  });

  it("a REST bulk insert of 150 documents carries each one's state (read back in chunks before the answer), even when one is updated at once", async () => {
    await until(async () => (await openSubscriptions(proxy.url)) === 0, 'earlier subscriptions closed');
    const sub = await rawSse(proxy.url, 'vis', `subscription { orderChanged(status: "bulk") { ${CHANGE} } }`, { auth: READERS.ne });
    relay.slowMs = 300;
    try {
      await subscribed(proxy.url, 1);
      const numbers = Array.from({ length: 150 }, () => ++number);
      const res = await call(proxy.url, '/shop/orders', { method: 'POST', auth: CLERK, body: numbers.map((n) => ({ number: n, status: 'bulk' })) });
      expect(res.status).toBe(200);
      const first = (res.json as { links: string[] }).links[0]!;
      expect((await call(proxy.url, `/shop/orders/${first.slice(first.lastIndexOf('/') + 1)}`, { method: 'PATCH', auth: CLERK, body: { $set: { status: 'moved' } } })).status).toBe(200);
      const got = await sub.waitForNexts(150);
      expect(got.map((x) => (x.payload.data!.orderChanged as { document: { status: string } }).document.status)).toEqual(numbers.map(() => 'bulk'));
      expect(numbersOf(got)).toEqual(numbers);
    } finally {
      relay.slowMs = 0;
      await sub.close();
    }
  });

  it('a document too large to carry is not written into the feed; its change is re-read by each subscriber and reaches only who may read it', async () => {
    await until(async () => (await openSubscriptions(proxy.url)) === 0, 'earlier subscriptions closed');
    const query = `subscription { orderChanged(status: "big") { op document { number pad } } }`;
    const ne = await rawSse(proxy.url, 'vis', query, { auth: READERS.ne });
    const nin = await rawSse(proxy.url, 'vis', query, { auth: READERS.nin });
    try {
      await subscribed(proxy.url, 2);
      const pad = 'p'.repeat(20 * 1024);
      const hidden = await insert(CLERK, { status: 'big', confidential: true, pad });
      const shown = await insert(CLERK, { status: 'big', level: 'public', pad });
      const [event] = await ne.waitForNexts(1);
      expect((event!.payload.data!.orderChanged as { document: { number: number; pad: string } }).document).toEqual({ number: shown.n, pad });
      await nin.waitForNexts(2);
      expect(numbersOf(nin.nexts())).toEqual([hidden.n, shown.n]);
      await sleep(200);
      expect(numbersOf(ne.nexts())).toEqual([shown.n]);
      // Every entry of the feed is small: the two documents were not carried.
      const [feedKey] = await redis.client.keys('*sub-feed');
      const entries = (await redis.client.xrevrange(feedKey!, '+', '-', 'COUNT', 2)) as Array<[string, string[]]>;
      for (const [, fields] of entries) expect(fields.join('').length).toBeLessThan(1024);
    } finally {
      await ne.close();
      await nin.close();
    }
  });
});
