/**
 * Issue 53 item 7, the last window: a subscriber registered on one replica while a write is in
 * flight on another, and answered before that write's answer, receives the write. The script
 * that appends changes publishes only claimed collections (store/scripts/subscriptions), so a
 * change that reached Redis before the claim was dropped while its writer was still waiting for
 * the answer: a mutation whose field reads the document back after the write, or a REST answer
 * the client had not taken yet. A change now goes to the feed only once its answer left.
 *
 * Each row drives the window with a backend gate in front of the stand-in: the mutation's read-back
 * is held (the answer cannot leave), or a REST insert's answer is padded to 32 MiB for a writer that
 * does not read (its 'finish' cannot come). Meanwhile the row waits until Redis has run the
 * replica's publish script if it is going to (MONITOR sees it: the ahead publication runs at once, and finds no claim),
 * subscribes on the other replica (answered: its claim is written), lets the answer go, and then
 * requires the change. Each row closes what it opened in `finally`.
 */
import net from 'node:net';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStandinBackend, type StandinBackend } from '../../../examples/standin-backend/index.js';
import { redisKeys } from '../../../src/store/keys.js';
import { startTestRedis, type TestRedis } from '../../support/redis/redis.js';
import { monitor, publishScriptWithin, type SeenCommand } from '../../support/redis/redis-monitor.js';
import { PADDING, startGate, type Gate } from '../../support/peers/backend-gate.js';
import { basic, startTestOutrigger, staticUsers } from '../../support/outrigger.js';
import { until } from '../../support/wait.js';
import { call, gql } from '../graphql/graphql-helpers.js';
import { putSubscriptionPermissions, rawSse, subscriptionApp } from './graphql-subscriptions-helpers.js';

const JWT_SECRET = 'a-test-secret-that-is-at-least-32-characters-long';
const ROOT = basic('root', 'root-password');
const CAROL = basic('carol', 'carol-password');
const SERVICE = 'gql-subs-window';
/** An app whose Subscription field `unread` follows `shop.unread`: a collection of the REST row's own (the first row's claim on orders lasts 20 s). */
const unreadApp = {
  _id: 'unread',
  descriptor: { uri: 'subs/unread' },
  schema: 'type Doc { number: Int }\ntype Change { op: String, document: Doc }\ntype Query { nothing: Doc }\ntype Subscription { unread: Change }',
  mappings: { Query: { nothing: { db: 'shop', collection: 'unread' } }, Subscription: { unread: { db: 'shop', collection: 'unread', on: ['insert'] } } },
};

describe('issue 53 item 7: a subscriber answered before a write is answered gets the write, from any replica', () => {
  let redis: TestRedis;
  let client: Redis;
  let backend: StandinBackend;
  let gate: Gate;
  let a: Awaited<ReturnType<typeof startTestOutrigger>>;
  let b: Awaited<ReturnType<typeof startTestOutrigger>>;
  const keys = redisKeys('outrigger', SERVICE);
  /** Has Redis run replica a's publish script (its EVALSHA, or EVAL, names the feed and the claims) since `seen` was started? */
  const publishedWithin = (seen: SeenCommand[], ms: number) => publishScriptWithin(seen, keys, ms);

  beforeAll(async () => {
    redis = await startTestRedis();
    client = new Redis(redis.url);
    backend = await startStandinBackend({ data: { shop: { orders: [], unread: [] } }, jwt: { secret: JWT_SECRET } });
    gate = await startGate(backend.url);
    const config = async () => ({
      service: { id: SERVICE },
      upstream: { url: gate.url, identity: { mode: 'jwt', jwt: { secret: JWT_SECRET } } },
      redis: { url: redis.url },
      users: await staticUsers({ root: ['root'], carol: ['everything'] }),
      acl: { mode: 'enforce' as const },
    });
    a = await startTestOutrigger(await config());
    b = await startTestOutrigger(await config());
    await putSubscriptionPermissions(a.url, ROOT);
    expect((await call(a.url, '/_admin/acl/unread', { method: 'PUT', auth: ROOT, body: { predicate: 'path-prefix(/shop/unread)', roles: ['everything'], priority: 1 } })).status).toBe(201);
    expect((await call(a.url, '/gql-apps/subs', { method: 'PUT', auth: ROOT, body: subscriptionApp() })).status).toBe(201);
    expect((await call(a.url, '/gql-apps/unread', { method: 'PUT', auth: ROOT, body: unreadApp })).status).toBe(201);
    await until(async () => (await call(b.url, '/graphql/subs/unread', { method: 'POST', auth: CAROL, body: { query: '{ __typename }' } })).status === 200, 'replica b serving the app');
  });

  afterAll(async () => {
    await a?.stop();
    await b?.stop();
    await gate?.close();
    client?.disconnect();
    await backend?.close();
    await redis?.close();
  });

  it('a mutation whose read-back is held: the subscriber answered on the other replica meanwhile gets its insert', async () => {
    // Nobody has claimed shop.orders yet: the claim below is the first.
    expect(await client.zcard(keys.subscribedCollections)).toBe(0);
    const watch = await monitor(redis.port);
    let sub: Awaited<ReturnType<typeof rawSse>> | undefined;
    try {
      // The backend write goes through; the field's read of the inserted document waits at the gate.
      gate.held = (method, url) => method === 'GET' && url.startsWith('/shop/orders');
      const mutation = gql(a.url, 'subs', 'mutation { createOrder(number: 7001, status: "held") { number } }', { auth: CAROL });
      await until(() => gate.waiting > 0, 'the mutation reading its document back');
      expect(backend.collection('shop', 'orders').some((d) => d.number === 7001)).toBe(true);
      await publishedWithin(watch.seen, 1000);
      sub = await rawSse(b.url, 'subs', 'subscription { orderChanged(status: "held") { op document { number } } }', { auth: CAROL });
      expect(sub.status).toBe(200);
      gate.release();
      const answered = await mutation;
      expect(answered.json.data).toEqual({ createOrder: { number: 7001 } });
      const [event] = await sub.waitForNexts(1);
      expect(event!.payload.data).toEqual({ orderChanged: { op: 'insert', document: { number: 7001 } } });
    } finally {
      gate.release();
      await watch.stop();
      await sub?.close();
    }
  });

  it('a REST insert whose answer the writer has not taken: the subscriber answered on the other replica meanwhile gets it', async () => {
    expect(await client.zscore(keys.subscribedCollections, JSON.stringify(['shop', 'unread']))).toBeNull();
    const watch = await monitor(redis.port);
    const writer = net.connect(Number(new URL(a.url).port), '127.0.0.1');
    let sub: Awaited<ReturnType<typeof rawSse>> | undefined;
    try {
      await new Promise<void>((resolve, reject) => writer.once('connect', resolve).once('error', reject));
      // The writer reads nothing: 32 MiB of answer fill the socket's buffers, and Outrigger's answer cannot finish.
      writer.pause();
      gate.padded = (method, url) => method === 'POST' && url.startsWith('/shop/unread');
      const body = JSON.stringify({ number: 7002 });
      writer.write(`POST /shop/unread HTTP/1.1\r\nhost: a\r\nauthorization: ${CAROL}\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`);
      // The answer's first bytes, and no more: Outrigger has begun answering (the code before the fix had queued the change then).
      let head = '';
      let got = 0;
      writer.once('data', (c: Buffer) => {
        writer.pause();
        head = c.subarray(0, 12).toString();
        got += c.length;
      });
      writer.resume();
      await until(() => got > 0, 'the answer begun', 30_000);
      expect(head).toBe('HTTP/1.1 201');
      await publishedWithin(watch.seen, 1000);
      sub = await rawSse(b.url, 'subs/unread', 'subscription { unread { op document { number } } }', { auth: CAROL });
      expect(sub.status).toBe(200);
      // Now the writer takes the rest of its answer, every byte of it.
      writer.on('data', (c: Buffer) => (got += c.length));
      writer.resume();
      await until(() => got > PADDING, 'the writer read its answer', 30_000);
      const [event] = await sub.waitForNexts(1);
      expect(event!.payload.data).toEqual({ unread: { op: 'insert', document: { number: 7002 } } });
    } finally {
      gate.padded = undefined;
      writer.destroy();
      await watch.stop();
      await sub?.close();
    }
  });
});
