import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { FailureCounters } from '../../../src/access/failure-counters.js';
import { startTestRedis, type TestRedis } from '../../support/redis/redis.js';
import { until } from '../../support/wait.js';

// FailureCounters' writes: one in flight per key with the rest following, what a refusal tells,
// and what happens to counts and clears made while Redis is away (issue 54, `npm run mutate`).
const WINDOW = 60_000;

describe('FailureCounters writes', () => {
  let redis: TestRedis;
  const open: Redis[] = [];
  const connect = async (url = redis.url): Promise<Redis> => {
    const conn = new Redis(url, { maxRetriesPerRequest: 0, enableOfflineQueue: false, retryStrategy: () => 50 });
    conn.on('error', () => {});
    open.push(conn);
    await until(() => conn.status === 'ready', 'the connection ready', 5000);
    return conn;
  };

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

  it('failures that arrive while a write is in flight all reach Redis, in fewer writes', async () => {
    const counters = new FailureCounters(await connect());
    const before = await redis.client.info('commandstats');
    const totals = await Promise.all(Array.from({ length: 20 }, () => counters.add('burst', WINDOW)));
    expect(Math.max(...totals)).toBe(20);
    await until(async () => (await redis.client.get('burst')) === '20', 'all 20 failures in Redis');
    const incrby = (text: string) => Number(/cmdstat_incrby:calls=(\d+)/.exec(text)?.[1] ?? 0);
    expect(incrby(await redis.client.info('commandstats')) - incrby(before)).toBeLessThan(20);
    expect(counters.peek('burst').count).toBe(20);
  });

  it('a refusal on a counter Redis holds without a TTL says the whole window', async () => {
    const counters = new FailureCounters(await connect());
    await redis.client.set('nottl', '3');
    expect(await counters.reserve([{ key: 'nottl', limit: 3, windowMs: WINDOW }])).toEqual({ locked: 0, remainingMs: WINDOW });
    expect(counters.peek('nottl').count).toBe(3);
  });

  it('a refusal gives the attempt back on the other counters of the reservation', async () => {
    const counters = new FailureCounters(await connect());
    await redis.client.set('b-full', '2', 'PX', WINDOW);
    const result = await counters.reserve([
      { key: 'a-free', limit: 10, windowMs: WINDOW },
      { key: 'b-full', limit: 2, windowMs: WINDOW },
    ]);
    expect(result.locked).toBe(1);
    expect(counters.peek('a-free').count).toBe(0);
    expect(await redis.client.exists('a-free')).toBe(0);
    // b-full is now locked here, with no I/O; a-free alone then counts one, not two.
    expect((await counters.reserve([{ key: 'b-full', limit: 2, windowMs: WINDOW }])).locked).toBe(0);
    expect(await counters.reserve([{ key: 'a-free', limit: 10, windowMs: WINDOW }])).toEqual({ locked: -1, remainingMs: 0 });
    expect(await redis.client.get('a-free')).toBe('1');
  });

  describe('Redis away', () => {
    let own: TestRedis;
    let conn: Redis;
    let counters: FailureCounters;
    beforeEach(async () => {
      own = await startTestRedis();
      conn = await connect(own.url);
      counters = new FailureCounters(conn);
    });
    const away = async () => {
      await own.stop();
      await until(() => conn.status !== 'ready', 'the connection lost');
    };
    const back = async () => {
      await own.restart();
      await until(() => conn.status === 'ready', 'the connection back', 10_000);
    };

    it('a reservation Redis never heard of is given back here only', async () => {
      try {
        await away();
        await counters.reserve([{ key: 'r', limit: 10, windowMs: WINDOW }]);
        await counters.reserve([{ key: 'r', limit: 10, windowMs: WINDOW }]);
        await counters.release('r');
        expect(counters.peek('r').count).toBe(1);
        await back();
        await until(async () => (await own.client.get('r')) === '1', 'the one remaining attempt sent');
      } finally {
        await own.close();
      }
    });

    it('a clear made while away goes before the failures counted after it', async () => {
      try {
        await counters.add('c', WINDOW);
        await counters.add('c', WINDOW);
        await away();
        await counters.clear('c');
        expect(await counters.add('c', WINDOW)).toBe(1);
        await back();
        await until(async () => (await own.client.get('c')) === '1', 'the clear, then one failure');
        expect(await own.client.pttl('c')).toBeGreaterThan(0);
      } finally {
        await own.close();
      }
    });

    it('a reservation made with a clear still unsent counts here and sends the clear first', async () => {
      try {
        await counters.reserve([{ key: 'u', limit: 5, windowMs: WINDOW }]);
        await away();
        await counters.clear('u');
        await back();
        // A clear already waiting is sent before the reservation's script runs.
        expect(await counters.reserve([{ key: 'u', limit: 5, windowMs: WINDOW }])).toEqual({ locked: -1, remainingMs: 0 });
        await until(async () => (await own.client.get('u')) === '1', 'the clear, then the reservation');
      } finally {
        await own.close();
      }
    });

    it('read answers what this process counted, and Redis learns it on the next read once back', async () => {
      try {
        await counters.add('k', WINDOW);
        await away();
        await counters.add('k', WINDOW);
        const [offline] = await counters.read(['k']);
        expect(offline!.count).toBe(2);
        expect(offline!.remainingMs).toBeGreaterThan(WINDOW - 5000);
        await back();
        await until(async () => (await own.client.get('k')) === '2', 'the pending failure sent');
        const [online] = await counters.read(['k']);
        expect(online!.count).toBe(2);
      } finally {
        await own.close();
      }
    });

    it('does not send failures whose window ended while Redis was away', async () => {
      let now = Date.now();
      const clocked = new FailureCounters(conn, 100, () => now);
      try {
        await away();
        // Both counted only here: Redis never heard of 'old' before its window ended.
        await clocked.add('old', 1000);
        await clocked.add('fresh', WINDOW);
        now += 2000;
        await back();
        // 'old' comes first in the process's table: had it been sent, it would have reached Redis
        // (one connection, in order) before 'fresh'.
        await until(async () => (await own.client.get('fresh')) === '1', 'the live counter sent');
        expect(await own.client.exists('old')).toBe(0);
      } finally {
        await own.close();
      }
    });
  });
});
