/**
 * Issue 53, items 7 (first half) and 11: GraphQL subscriptions (SPEC §6.5) across two replicas
 * sharing a test-owned redis-server, at the edges of registration, publication and Redis faults.
 * - A replica that hears nothing over pub/sub (its subscriber connection killed and unable to
 *   come back) still publishes a write to a subscriber registered on the other replica.
 * - Starts refused while Redis is frozen leave nothing counted: once it thaws the same user
 *   subscribes again, and the gauge is back to what is open.
 * - A resume across many times `maxBufferedEvents` missed changes delivers them all, once, in
 *   order, paced, without SLOW_SUBSCRIBER.
 * - Writes made while Redis is frozen reach a live subscriber once each, and a resume after the
 *   thaw finds each once; a claim gone from Redis (a restart without its data) is told to the
 *   subscribers with CHANGES_LOST.
 * - A feed that went back under its readers (a failover to a replica that lacked the last
 *   entries, its clock behind the old master's) is read from its new end: a later write arrives.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStandinBackend, type StandinBackend } from '../../../examples/standin-backend/index.js';
import { redisKeys } from '../../../src/store/keys.js';
import { startTestRedis, type TestRedis } from '../../support/redis/redis.js';
import { basic, startTestOutrigger, staticUsers } from '../../support/outrigger.js';
import { sleep, until } from '../../support/wait.js';
import { call } from '../../support/clients/http-client.js';
import { openSubscriptions, putSubscriptionPermissions, rawSse, subscriptionApp } from '../../integration/subscriptions/graphql-subscriptions-helpers.js';

const ROOT = basic('root', 'root-password');
const CAROL = basic('carol', 'carol-password');
const SERVICE = 'subs-redis-faults';
const MAX_BUFFERED = 50;

type Sse = Awaited<ReturnType<typeof rawSse>>;
const numbers = (s: Sse) =>
  s
    .nexts()
    .filter((n) => n.payload.data)
    .map((n) => (n.payload.data!.orderChanged as { document: { number: number } }).document.number);
const errorsOf = (s: Sse) => s.nexts().flatMap((n) => n.payload.errors ?? []);

describe('GraphQL subscriptions under Redis faults (issue 53 items 7 and 11)', () => {
  let redis: TestRedis;
  let client: Redis;
  let backend: StandinBackend;
  let a: Awaited<ReturnType<typeof startTestOutrigger>>;
  let b: Awaited<ReturnType<typeof startTestOutrigger>>;
  let frozenPid = 0;
  let number = 0;
  const thaw = () => {
    if (frozenPid) process.kill(frozenPid, 'SIGCONT');
    frozenPid = 0;
  };
  const freeze = async () => {
    const pid = Number(/process_id:(\d+)/.exec(await client.info('server'))?.[1]);
    expect(pid).toBeGreaterThan(0);
    process.kill(pid, 'SIGSTOP');
    frozenPid = pid;
  };
  const insert = async (base: string, status: string) => {
    const n = ++number;
    const res = await call(base, '/shop/orders', { method: 'POST', auth: CAROL, body: { number: n, status } });
    expect(res.status, res.text).toBe(201);
    return n;
  };
  const subscribe = (base: string, status: string, lastEventId?: string) =>
    rawSse(base, 'subs', `subscription { orderChanged(status: "${status}") { op document { number } } }`, { auth: CAROL, ...(lastEventId ? { lastEventId } : {}) });

  beforeAll(async () => {
    redis = await startTestRedis();
    client = new Redis(redis.url, { maxRetriesPerRequest: 1 });
    client.on('error', () => {});
    backend = await startStandinBackend({ data: { shop: { orders: [] } } });
    const config = async () => ({
      service: { id: SERVICE },
      upstream: { url: backend.url },
      redis: { url: redis.url },
      users: await staticUsers({ root: ['root'], carol: ['everything'] }),
      acl: { mode: 'enforce' as const },
      subscriptions: { maxPerPrincipal: 3, maxBufferedEvents: MAX_BUFFERED },
    });
    a = await startTestOutrigger(await config());
    b = await startTestOutrigger(await config());
    await putSubscriptionPermissions(a.url, ROOT);
    expect((await call(a.url, '/gql-apps/subs', { method: 'PUT', auth: ROOT, body: subscriptionApp() })).status).toBe(201);
    await until(async () => (await call(b.url, '/graphql/subs', { method: 'POST', auth: CAROL, body: { query: '{ __typename }' } })).status === 200, 'replica b serving the app');
    await until(async () => (await call(a.url, '/graphql/subs', { method: 'POST', auth: CAROL, body: { query: '{ __typename }' } })).status === 200, 'replica a serving the app');
  }, 120_000);

  afterAll(async () => {
    thaw();
    await client?.config('SET', 'maxclients', '10000').catch(() => {});
    await a?.stop();
    await b?.stop();
    client?.disconnect();
    await backend?.close();
    await redis?.close();
  });

  it('item 7: a replica that hears nothing over pub/sub still publishes a write answered after a subscriber registered on the other replica', async () => {
    const opened: Sse[] = [];
    try {
      // Every replica's pub/sub connection is cut, and none can come back (Redis takes no new connection).
      const connected = Number(/connected_clients:(\d+)/.exec(await client.info('clients'))?.[1]);
      const pubsub = String(await client.call('CLIENT', 'LIST', 'TYPE', 'pubsub'))
        .split('\n')
        .filter((l) => l.trim()).length;
      expect(pubsub).toBeGreaterThanOrEqual(2);
      await client.config('SET', 'maxclients', String(connected - pubsub));
      await client.call('CLIENT', 'KILL', 'TYPE', 'pubsub');
      await until(async () => String(await client.call('CLIENT', 'LIST', 'TYPE', 'pubsub')).trim() === '', 'no pub/sub connection left');

      const sub = await subscribe(b.url, 'deaf');
      opened.push(sub);
      expect(sub.status).toBe(200);
      // Registered before this write's answer: it must arrive, whatever replica a has heard.
      const n = await insert(a.url, 'deaf');
      const viaMutation = await call(a.url, '/graphql/subs', { method: 'POST', auth: CAROL, body: { query: 'mutation { createOrder(number: 7001, status: "deaf") { number } }' } });
      expect(viaMutation.status).toBe(200);
      await sub.waitForNexts(2);
      expect(numbers(sub)).toEqual([n, 7001]);
    } finally {
      await client.config('SET', 'maxclients', '10000');
      await Promise.all(opened.map((s) => s.close()));
    }
  });

  it('item 11: twenty starts refused while Redis is frozen leave nothing counted; the user subscribes again once it thaws', { timeout: 120_000 }, async () => {
    const opened: Sse[] = [];
    try {
      await until(async () => (await openSubscriptions(b.url)) === 0, 'earlier subscriptions closed');
      // Warm: carol's credentials and the permissions are cached, so only the start needs Redis.
      const warm = await subscribe(b.url, 'warm');
      expect(warm.status).toBe(200);
      await warm.close();
      await until(async () => (await openSubscriptions(b.url)) === 0, 'the warm-up subscription closed');
      await freeze();
      // No local subscriber is left, so every start claims shop.orders in Redis again, and fails.
      const refused: Sse[] = [];
      for (let i = 0; i < 20; i++) refused.push(await subscribe(b.url, `frozen-${i}`));
      for (const r of refused) {
        expect(r.status).toBe(503);
        expect(Number(r.headers.get('retry-after'))).toBeGreaterThan(0);
        const text = await r.text();
        expect(text).toContain('SUBSCRIPTIONS_UNAVAILABLE');
        expect(text).toMatch(/Redis/);
      }
      expect(await openSubscriptions(b.url)).toBe(0);
      thaw();
      // maxPerPrincipal is 3: three starts after the thaw are all served.
      await until(async () => (await client.ping().catch(() => '')) === 'PONG', 'Redis answering again');
      await until(
        async () => {
          const s = await subscribe(b.url, 'after');
          if (s.status === 200) opened.push(s);
          else await s.close();
          return s.status === 200;
        },
        'a subscription served after the thaw',
        30_000,
      );
      for (let i = 0; i < 2; i++) {
        const s = await subscribe(b.url, 'after');
        opened.push(s);
        expect(s.status).toBe(200);
      }
      expect(await openSubscriptions(b.url)).toBe(3);
    } finally {
      thaw();
      await Promise.all(opened.map((s) => s.close()));
    }
  });

  it(`item 11: a resume across ${MAX_BUFFERED * 8} missed changes (maxBufferedEvents ${MAX_BUFFERED}) delivers every one once, in order, then live ones`, { timeout: 120_000 }, async () => {
    const opened: Sse[] = [];
    try {
      // Something holds the claim on the collection while the resuming subscriber is away (it follows nothing written here).
      const holder = await subscribe(a.url, 'resume-holder');
      opened.push(holder);
      const feedLength = () => client.xlen(redisKeys('outrigger', SERVICE).subscriptionFeed);
      const first = await subscribe(b.url, 'resume');
      opened.push(first);
      const before = await insert(a.url, 'resume');
      const lastEventId = (await first.waitForNexts(1))[0]!.id;
      expect(numbers(first)).toEqual([before]);
      await first.close();
      const missed = MAX_BUFFERED * 8;
      const published = await feedLength();
      const bulk = Array.from({ length: missed }, () => ({ number: ++number, status: 'resume' }));
      for (let i = 0; i < missed; i += 100) {
        const res = await call(a.url, '/shop/orders', { method: 'POST', auth: CAROL, body: bulk.slice(i, i + 100) });
        expect(res.status, res.text).toBe(200);
      }
      await until(async () => (await feedLength()) >= published + missed, 'every change published', 30_000);
      const resumed = await subscribe(b.url, 'resume', lastEventId);
      opened.push(resumed);
      expect(resumed.status).toBe(200);
      await until(() => numbers(resumed).length >= missed || errorsOf(resumed).length > 0 || resumed.ended, `${missed} missed changes`, 60_000);
      expect(errorsOf(resumed)).toEqual([]);
      expect(numbers(resumed)).toEqual(bulk.map((d) => d.number));
      const ids = resumed.nexts().map((e) => e.id!);
      expect(new Set(ids).size).toBe(ids.length);
      // Live ones follow.
      const live = await insert(a.url, 'resume');
      await resumed.waitForNexts(missed + 1);
      expect(numbers(resumed).at(-1)).toBe(live);
    } finally {
      await Promise.all(opened.map((s) => s.close()));
    }
  });

  it('item 11: writes made while Redis is frozen reach a live subscriber once each, and a resume after the thaw finds each once', { timeout: 120_000 }, async () => {
    const opened: Sse[] = [];
    try {
      const live = await subscribe(b.url, 'freeze');
      opened.push(live);
      const away = await subscribe(b.url, 'freeze');
      opened.push(away);
      const before = await insert(a.url, 'freeze');
      await live.waitForNexts(1);
      const lastEventId = (await away.waitForNexts(1))[0]!.id;
      await away.close();
      await freeze();
      const written: number[] = [before];
      // Spread over the freeze: past the command deadline (2 s) and the stall watchdog (3 s).
      for (let i = 0; i < 5; i++) {
        written.push(await insert(a.url, 'freeze'));
        await sleep(1200);
      }
      thaw();
      await live.waitForNexts(written.length, 30_000);
      // Anything resent twice would come within this.
      await sleep(3000);
      expect(errorsOf(live)).toEqual([]);
      expect(numbers(live)).toEqual(written);
      const ids = live.nexts().map((e) => e.id!);
      expect(new Set(ids).size).toBe(ids.length);
      const resumed = await subscribe(b.url, 'freeze', lastEventId);
      opened.push(resumed);
      await resumed.waitForNexts(written.length - 1, 30_000);
      await sleep(1000);
      expect(numbers(resumed)).toEqual(written.slice(1));
    } finally {
      thaw();
      await Promise.all(opened.map((s) => s.close()));
    }
  });

  it('item 11: a claim gone from Redis (restarted without its data) is told to the subscribers with CHANGES_LOST, and they go on', { timeout: 60_000 }, async () => {
    const opened: Sse[] = [];
    try {
      const sub = await subscribe(b.url, 'lapse');
      opened.push(sub);
      await client.del(redisKeys('outrigger', SERVICE).subscribedCollections);
      // A write while no claim exists is not published; the renewal (every 5 s) finds the claim gone and says so.
      await insert(a.url, 'lapse');
      await until(() => errorsOf(sub).length > 0, 'the subscriber told', 15_000);
      expect(errorsOf(sub)[0]!.extensions!.code).toBe('CHANGES_LOST');
      expect(errorsOf(sub)[0]!.message).toMatch(/re-read/);
      const after = await insert(a.url, 'lapse');
      await until(() => numbers(sub).includes(after), 'a later write delivered', 15_000);
    } finally {
      await Promise.all(opened.map((s) => s.close()));
    }
  });

  it('item 11: a feed that went back under its reader (a failover to a replica behind, with a slower clock) is read from its new end; a later write arrives', { timeout: 60_000 }, async () => {
    const feedKey = redisKeys('outrigger', SERVICE).subscriptionFeed;
    const sub = await subscribe(b.url, 'behind');
    try {
      // The old master's clock ran 10 minutes ahead: b's reader reaches ids from then.
      await client.xadd(feedKey, `${Date.now() + 600_000}-0`, 'c', JSON.stringify({ db: 'shop', collection: 'elsewhere', op: 'insert', _id: 'x' }));
      const ahead = await insert(a.url, 'behind');
      await until(() => numbers(sub).includes(ahead), 'a write appended after the future id');
      // The promoted replica had none of it (the stream gone), and the reader's connection moves there.
      await client.del(feedKey);
      const list = String(await client.client('LIST'));
      for (const line of list.split('\n').filter((l) => l.includes('name=outrigger:subs-redis-faults:subscription-feed'))) await client.client('KILL', 'ID', /id=(\d+)/.exec(line)![1]!);
      // Its id is now, before the reader's position: without reading from the feed's new end it would be skipped for 10 minutes.
      const later = await insert(a.url, 'behind');
      await until(() => numbers(sub).includes(later), 'the write after the feed went back', 15_000);
      expect(numbers(sub)).toEqual([ahead, later]);
    } finally {
      await sub.close();
    }
  });
});
