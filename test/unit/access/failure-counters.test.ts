import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { FailureCounters } from '../../../src/access/failure-counters.js';
import { startTestRedis, type TestRedis } from '../../support/redis/redis.js';
import { until } from '../../support/wait.js';

// FailureCounters (the sign-in and bearer-flood guards' shared counts) over a real Redis, one
// behaviour a row (issue 54: written so that `npm run mutate` kills its mutants): what each call
// answers, what Redis holds after it, and what a second replica sees.
const WINDOW = 60_000;

describe('FailureCounters', () => {
  let redis: TestRedis;
  const open: Redis[] = [];
  const connect = (url = redis.url): Redis => {
    // Fails fast while the server is away, as Outrigger's connections do: no offline queue.
    const conn = new Redis(url, { maxRetriesPerRequest: 0, enableOfflineQueue: false, retryStrategy: () => 50 });
    conn.on('error', () => {});
    open.push(conn);
    return conn;
  };
  const ready = async (conn: Redis) => until(() => conn.status === 'ready', 'the connection ready', 5000);

  beforeAll(async () => {
    redis = await startTestRedis();
  });
  beforeEach(async () => {
    await redis.client.flushall();
  });
  afterAll(async () => {
    for (const conn of open) conn.disconnect();
    await redis?.close();
  });

  it('add counts a failure here and in Redis, with the window as its TTL, and answers the total', async () => {
    const conn = connect();
    await ready(conn);
    const counters = new FailureCounters(conn);
    expect(counters.knows('k')).toBe(false);
    expect(counters.peek('k')).toEqual({ count: 0, remainingMs: 0 });
    expect(await counters.add('k', WINDOW)).toBe(1);
    expect(await counters.add('k', WINDOW)).toBe(2);
    expect(await redis.client.get('k')).toBe('2');
    const ttl = await redis.client.pttl('k');
    expect(ttl).toBeGreaterThan(WINDOW - 5000);
    expect(ttl).toBeLessThanOrEqual(WINDOW);
    expect(counters.knows('k')).toBe(true);
    const peeked = counters.peek('k');
    expect(peeked.count).toBe(2);
    expect(peeked.remainingMs).toBeGreaterThan(WINDOW - 5000);
    expect(peeked.remainingMs).toBeLessThanOrEqual(WINDOW);
  });

  it("add answers the shared total: another replica's failures count", async () => {
    const [a, b] = [connect(), connect()];
    await Promise.all([ready(a), ready(b)]);
    const one = new FailureCounters(a);
    const two = new FailureCounters(b);
    await one.add('shared', WINDOW);
    await one.add('shared', WINDOW);
    expect(await two.add('shared', WINDOW)).toBe(3);
    expect(two.peek('shared').count).toBe(3);
  });

  it('read answers the shared counts and remembers those another replica set, for when Redis goes away', async () => {
    const [a, b] = [connect(), connect()];
    await Promise.all([ready(a), ready(b)]);
    const one = new FailureCounters(a);
    const two = new FailureCounters(b);
    await one.add('x', WINDOW);
    await one.add('x', WINDOW);
    const [x, none] = await two.read(['x', 'none']);
    expect(x!.count).toBe(2);
    expect(x!.remainingMs).toBeGreaterThan(WINDOW - 5000);
    expect(x!.remainingMs).toBeLessThanOrEqual(WINDOW);
    expect(none).toEqual({ count: 0, remainingMs: 0 });
    expect(two.knows('x')).toBe(true);
    expect(two.knows('none')).toBe(false);
    expect(two.peek('x').count).toBe(2);
    // The remembered copy answers while Redis does not.
    b.disconnect();
    const [offline] = await two.read(['x']);
    expect(offline!.count).toBe(2);
    expect(offline!.remainingMs).toBeGreaterThan(0);
  });

  it("read of a counter this process knows adds Redis's newer total to it", async () => {
    const [a, b] = [connect(), connect()];
    await Promise.all([ready(a), ready(b)]);
    const one = new FailureCounters(a);
    const two = new FailureCounters(b);
    await one.add('y', WINDOW);
    await two.add('y', WINDOW);
    await two.add('y', WINDOW);
    expect(one.peek('y').count).toBe(1);
    const [y] = await one.read(['y']);
    expect(y!.count).toBe(3);
    expect(one.peek('y').count).toBe(3);
    // What it learned is not owed to Redis: its next failure adds one to the shared total.
    expect(await one.add('y', WINDOW)).toBe(4);
    expect(await redis.client.get('y')).toBe('4');
  });

  it('read tells Redis again what it lost (restarted empty), and answers the count it knew', async () => {
    const conn = connect();
    await ready(conn);
    const counters = new FailureCounters(conn);
    await counters.add('lost', WINDOW);
    await counters.add('lost', WINDOW);
    await counters.add('lost', WINDOW);
    await redis.client.flushall();
    const [lost] = await counters.read(['lost']);
    expect(lost!.count).toBe(3);
    await until(async () => (await redis.client.get('lost')) === '3', 'the lost count written back');
    expect(await redis.client.pttl('lost')).toBeGreaterThan(0);
  });

  it('forgets a counter whose window has passed, on its own clock', async () => {
    const conn = connect();
    await ready(conn);
    let now = 1_000_000;
    const counters = new FailureCounters(conn, 100, () => now);
    await counters.add('t', 1000);
    expect(counters.peek('t')).toEqual({ count: 1, remainingMs: 1000 });
    now += 999;
    expect(counters.knows('t')).toBe(true);
    expect(counters.peek('t')).toEqual({ count: 1, remainingMs: 1 });
    now += 1;
    expect(counters.knows('t')).toBe(false);
    expect(counters.peek('t')).toEqual({ count: 0, remainingMs: 0 });
  });

  it('keeps at most maxEntries counters, dropping the oldest', async () => {
    const conn = connect();
    await ready(conn);
    const counters = new FailureCounters(conn, 2);
    await counters.add('first', WINDOW);
    await counters.add('second', WINDOW);
    expect(counters.knows('first')).toBe(true);
    await counters.add('third', WINDOW);
    expect(counters.knows('first')).toBe(false);
    expect(counters.knows('second')).toBe(true);
    expect(counters.knows('third')).toBe(true);
  });

  it('clear starts a counter again from zero, here and in Redis', async () => {
    const conn = connect();
    await ready(conn);
    const counters = new FailureCounters(conn);
    await counters.add('c', WINDOW);
    await counters.add('c', WINDOW);
    await counters.clear('c');
    expect(counters.knows('c')).toBe(false);
    expect(await redis.client.exists('c')).toBe(0);
    expect(await counters.add('c', WINDOW)).toBe(1);
  });

  describe('reserve', () => {
    const limits = (a: number, b: number) => [
      { key: 'r:user', limit: a, windowMs: WINDOW },
      { key: 'r:ip', limit: b, windowMs: 2 * WINDOW },
    ];

    it('counts each attempt on every counter before it is checked, and refuses at the first full one', async () => {
      const conn = connect();
      await ready(conn);
      const counters = new FailureCounters(conn);
      for (let i = 0; i < 3; i++) expect(await counters.reserve(limits(3, 10))).toEqual({ locked: -1, remainingMs: 0 });
      expect(await redis.client.get('r:user')).toBe('3');
      expect(await redis.client.get('r:ip')).toBe('3');
      expect(await redis.client.pttl('r:ip')).toBeGreaterThan(WINDOW);
      const refused = await counters.reserve(limits(3, 10));
      expect(refused.locked).toBe(0);
      expect(refused.remainingMs).toBeGreaterThan(WINDOW - 5000);
      expect(refused.remainingMs).toBeLessThanOrEqual(WINDOW);
      // All or none: the refused attempt counted on neither counter.
      expect(await redis.client.get('r:ip')).toBe('3');
      // The second counter full: refused naming it.
      expect((await counters.reserve(limits(10, 3))).locked).toBe(1);
    });

    it('refuses by the shared count another replica reached, writes nothing then, and then refuses with no I/O', async () => {
      const [a, b] = [connect(), connect()];
      await Promise.all([ready(a), ready(b)]);
      const one = new FailureCounters(a);
      const two = new FailureCounters(b);
      for (let i = 0; i < 3; i++) await one.reserve(limits(3, 10));
      const refused = await two.reserve(limits(3, 10));
      expect(refused.locked).toBe(0);
      expect(refused.remainingMs).toBeGreaterThan(WINDOW - 5000);
      expect(refused.remainingMs).toBeLessThanOrEqual(WINDOW);
      expect(await redis.client.get('r:user')).toBe('3');
      expect(await redis.client.get('r:ip')).toBe('3');
      expect(two.peek('r:user').count).toBe(3);
      // The other counter is given its attempt back here too.
      expect(two.peek('r:ip').count).toBe(0);
      const baseline = (await redis.commandsProcessed()) - (await redis.commandsProcessed());
      const before = await redis.commandsProcessed();
      expect((await two.reserve(limits(3, 10))).locked).toBe(0);
      expect(before - (await redis.commandsProcessed())).toBe(baseline);
    });

    it('while Redis is away counts here, holds the limit, and hands the count to Redis when it answers', async () => {
      const own = await startTestRedis();
      try {
        const conn = connect(own.url);
        await ready(conn);
        const counters = new FailureCounters(conn);
        await counters.reserve(limits(3, 10));
        await own.stop();
        await until(() => conn.status !== 'ready', 'the connection lost');
        expect(await counters.reserve(limits(3, 10))).toEqual({ locked: -1, remainingMs: 0 });
        expect(await counters.reserve(limits(3, 10))).toEqual({ locked: -1, remainingMs: 0 });
        const refused = await counters.reserve(limits(3, 10));
        expect(refused.locked).toBe(0);
        expect(refused.remainingMs).toBeGreaterThan(WINDOW - 5000);
        await own.restart();
        await until(async () => (await own.client.get('r:user').catch(() => null)) === '3', 'the outage count handed to Redis');
        expect(await own.client.get('r:ip')).toBe('3');
      } finally {
        await own.close();
      }
    });
  });

  describe('release', () => {
    it('gives back one reserved attempt, here and in Redis, never below zero', async () => {
      const conn = connect();
      await ready(conn);
      const counters = new FailureCounters(conn);
      const one = [{ key: 'rel', limit: 10, windowMs: WINDOW }];
      await counters.reserve(one);
      await counters.reserve(one);
      await counters.release('rel');
      expect(counters.peek('rel').count).toBe(1);
      expect(await redis.client.get('rel')).toBe('1');
      await counters.release('rel');
      await counters.release('rel');
      expect(counters.peek('rel').count).toBe(0);
      expect(await redis.client.get('rel')).toBe('0');
      // A counter only another replica knows is lowered in Redis.
      await redis.client.set('other', '2', 'PX', WINDOW);
      await counters.release('other');
      expect(await redis.client.get('other')).toBe('1');
    });
  });

  describe('Redis away', () => {
    it('add counts here, and the failures reach Redis when it answers again', async () => {
      const own = await startTestRedis();
      try {
        const conn = connect(own.url);
        await ready(conn);
        const counters = new FailureCounters(conn);
        expect(await counters.add('o', WINDOW)).toBe(1);
        await own.stop();
        await until(() => conn.status !== 'ready', 'the connection lost');
        expect(await counters.add('o', WINDOW)).toBe(2);
        expect(await counters.add('o', WINDOW)).toBe(3);
        expect(counters.peek('o').count).toBe(3);
        const [read] = await counters.read(['o']);
        expect(read!.count).toBe(3);
        await own.restart();
        // Sent on 'ready' with no further call: Redis restarted empty, so it learns all three.
        await until(async () => (await own.client.get('o').catch(() => null)) === '3', 'the pending failures sent on ready');
        expect(await own.client.pttl('o')).toBeGreaterThan(0);
      } finally {
        await own.close();
      }
    });

    it('a clear made while Redis is away is sent when it answers, before later failures', async () => {
      const own = await startTestRedis();
      try {
        const conn = connect(own.url);
        await ready(conn);
        const counters = new FailureCounters(conn);
        await counters.add('s', WINDOW);
        await counters.add('s', WINDOW);
        // Redis keeps the two (a pause, not a restart: the data survive).
        const pauser = new Redis(own.url);
        await pauser.client('PAUSE', 1500, 'ALL');
        pauser.disconnect();
        conn.disconnect(true);
        await counters.clear('s');
        await until(() => conn.status === 'ready', 'the connection back', 10_000);
        await until(async () => (await own.client.exists('s')) === 0, 'the clear sent on ready');
        expect(await counters.add('s', WINDOW)).toBe(1);
        expect(await own.client.get('s')).toBe('1');
      } finally {
        await own.close();
      }
    });
  });
});
