/**
 * GraphQL subscriptions (SPEC §6.5) over two replicas when their test-owned redis-server stops
 * and comes back (issue 53 item 11), with the default bounds: starts refused during the outage
 * (SSE 503 with Retry-After, WebSocket an error) leave nothing counted; writes proxied during it
 * reach the subscriber once each after Redis returns; a resume across more missed changes than
 * `maxBufferedEvents` (1,000) delivers them all, and a subscriber that drops out halfway goes on
 * from its own `Last-Event-ID` (never the same backlog again).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStandinBackend, type StandinBackend } from '../../../examples/standin-backend/index.js';
import { startTestRedis, type TestRedis } from '../../support/redis/redis.js';
import { basic, startTestOutrigger, staticUsers } from '../../support/outrigger.js';
import { sleep, until } from '../../support/wait.js';
import { call } from '../graphql/graphql-helpers.js';
import { openSubscriptions, putSubscriptionPermissions, rawSse, subscriptionApp, wsSubscribe } from './graphql-subscriptions-helpers.js';

const ROOT = basic('root', 'root-password');
const CAROL = basic('carol', 'carol-password');
const SERVICE = 'gql-subs-faults';

type Sse = Awaited<ReturnType<typeof rawSse>>;
const numbers = (s: Sse) =>
  s
    .nexts()
    .filter((n) => n.payload.data)
    .map((n) => (n.payload.data!.orderChanged as { document: { number: number } }).document.number);
const errorsOf = (s: Sse) => s.nexts().flatMap((n) => n.payload.errors ?? []);

describe('GraphQL subscriptions when Redis stops and comes back (issue 53 item 11)', () => {
  let redis: TestRedis;
  let backend: StandinBackend;
  let a: Awaited<ReturnType<typeof startTestOutrigger>>;
  let b: Awaited<ReturnType<typeof startTestOutrigger>>;
  let number = 0;
  const insert = async (base: string, status: string) => {
    const n = ++number;
    const res = await call(base, '/shop/orders', { method: 'POST', auth: CAROL, body: { number: n, status } });
    expect(res.status, res.text).toBe(201);
    return n;
  };
  const subscribe = (base: string, status: string, lastEventId?: string) =>
    rawSse(base, 'subs', `subscription { orderChanged(status: "${status}") { document { number } } }`, { auth: CAROL, ...(lastEventId ? { lastEventId } : {}) });
  const redisBack = async () => {
    await redis.restart();
    await until(async () => (await redis.client.ping().catch(() => '')) === 'PONG', 'Redis answering again', 30_000);
  };

  beforeAll(async () => {
    redis = await startTestRedis();
    backend = await startStandinBackend({ data: { shop: { orders: [] } } });
    const config = async () => ({
      service: { id: SERVICE },
      upstream: { url: backend.url },
      redis: { url: redis.url },
      users: await staticUsers({ root: ['root'], carol: ['everything'] }),
      acl: { mode: 'enforce' as const },
      subscriptions: { maxPerPrincipal: 3 },
    });
    a = await startTestOutrigger(await config());
    b = await startTestOutrigger(await config());
    await putSubscriptionPermissions(a.url, ROOT);
    expect((await call(a.url, '/gql-apps/subs', { method: 'PUT', auth: ROOT, body: subscriptionApp() })).status).toBe(201);
    for (const r of [a, b]) await until(async () => (await call(r.url, '/graphql/subs', { method: 'POST', auth: CAROL, body: { query: '{ __typename }' } })).status === 200, 'the app served');
  }, 120_000);

  afterAll(async () => {
    await a?.stop();
    await b?.stop();
    await backend?.close();
    await redis?.close();
  });

  it('starts refused while Redis is down (SSE 503 with Retry-After, WebSocket an error) leave nothing counted: three start once it is back', { timeout: 120_000 }, async () => {
    const opened: Sse[] = [];
    const sockets: Array<ReturnType<typeof wsSubscribe>> = [];
    try {
      // Warm: carol's credentials and the permissions are cached, so only the start needs Redis.
      const warm = await subscribe(b.url, 'warm');
      expect(warm.status).toBe(200);
      await warm.close();
      await until(async () => (await openSubscriptions(b.url)) === 0, 'the warm-up closed');
      await redis.stop();
      for (let i = 0; i < 20; i++) {
        const refused = await subscribe(b.url, `down-${i}`);
        expect(refused.status).toBe(503);
        expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
        const body = JSON.parse(await refused.text()) as { errors: Array<{ message: string; extensions: { code: string } }> };
        expect(body.errors[0]!.extensions.code).toBe('SUBSCRIPTIONS_UNAVAILABLE');
        expect(body.errors[0]!.message).toMatch(/Redis/);
      }
      const ws = wsSubscribe(b.url, 'subs', 'subscription { orderChanged(status: "down-ws") { op } }', { auth: CAROL });
      sockets.push(ws);
      await until(() => ws.error !== undefined, 'the WebSocket start refused');
      expect(JSON.stringify(ws.error)).toContain('SUBSCRIPTIONS_UNAVAILABLE');
      expect(await openSubscriptions(b.url)).toBe(0);
      await redisBack();
      await until(
        async () => {
          const s = await subscribe(b.url, 'back');
          if (s.status === 200) opened.push(s);
          else await s.close();
          return s.status === 200;
        },
        'a start served after Redis came back',
        30_000,
      );
      for (let i = 0; i < 2; i++) {
        const s = await subscribe(b.url, 'back');
        opened.push(s);
        expect(s.status).toBe(200);
      }
      expect(await openSubscriptions(b.url)).toBe(3);
    } finally {
      for (const s of sockets) s.close();
      await Promise.all(opened.map((s) => s.close()));
    }
  });

  it('writes proxied while Redis is down reach a subscriber of the other replica once each after it comes back', { timeout: 120_000 }, async () => {
    const opened: Sse[] = [];
    try {
      await until(async () => (await openSubscriptions(b.url)) === 0, 'earlier subscriptions closed');
      const sub = await subscribe(b.url, 'outage');
      opened.push(sub);
      const written = [await insert(a.url, 'outage')];
      await sub.waitForNexts(1);
      await redis.stop();
      for (let i = 0; i < 4; i++) {
        written.push(await insert(a.url, 'outage'));
        await sleep(500);
      }
      await redisBack();
      await until(() => numbers(sub).length >= written.length || errorsOf(sub).length > 0, 'every write, or a notice', 30_000);
      await sleep(2000);
      // Nothing lost, nothing twice (or told: CHANGES_LOST, never silence).
      if (errorsOf(sub).length > 0) expect(errorsOf(sub).map((e) => e.extensions!.code)).toContain('CHANGES_LOST');
      else expect(numbers(sub)).toEqual(written);
      const ids = sub
        .nexts()
        .map((e) => e.id)
        .filter((id) => id !== undefined);
      expect(new Set(ids).size).toBe(ids.length);
    } finally {
      await Promise.all(opened.map((s) => s.close()));
    }
  });

  it('a resume across 1,500 missed changes (maxBufferedEvents 1,000) delivers them all once; dropping out halfway goes on from the last id received', { timeout: 180_000 }, async () => {
    const opened: Sse[] = [];
    try {
      // Holds the claim on the collection meanwhile; follows nothing written here.
      opened.push(await subscribe(a.url, 'resume-holder'));
      const first = await subscribe(b.url, 'resume');
      opened.push(first);
      await insert(a.url, 'resume');
      const since = (await first.waitForNexts(1))[0]!.id!;
      await first.close();
      const missed = Array.from({ length: 1500 }, () => ({ number: ++number, status: 'resume' }));
      for (let i = 0; i < missed.length; i += 250) expect((await call(a.url, '/shop/orders', { method: 'POST', auth: CAROL, body: missed.slice(i, i + 250) })).status).toBe(200);
      await sleep(500);
      // Drops out after some of them.
      const partial = await subscribe(b.url, 'resume', since);
      opened.push(partial);
      expect(partial.status).toBe(200);
      await partial.waitForNexts(300, 60_000);
      await partial.close();
      const got = numbers(partial);
      expect(errorsOf(partial)).toEqual([]);
      const lastId = partial.nexts().at(-1)!.id!;
      // Comes back with the last id it received, as an EventSource would: the rest, once.
      const rest = await subscribe(b.url, 'resume', lastId);
      opened.push(rest);
      await until(() => numbers(rest).length >= missed.length - got.length || errorsOf(rest).length > 0, 'the rest of the backlog', 60_000);
      expect(errorsOf(rest)).toEqual([]);
      expect([...got, ...numbers(rest)]).toEqual(missed.map((d) => d.number));
    } finally {
      await Promise.all(opened.map((s) => s.close()));
    }
  });
});
