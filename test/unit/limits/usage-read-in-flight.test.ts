import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { UsageCounter } from '../../../src/limits/usage.js';
import { redisKeys, utcDay } from '../../../src/store/keys.js';
import { startTestRedis, type TestRedis } from '../../support/redis.js';

// A usage read races the periodic flush (seen as an under-count under load, issue 53's cost rows):
// whatever the order, a read counts each admitted request exactly once.
const keys = redisKeys('t', 'svc');

describe('UsageCounter.read beside a flush', () => {
  let redis: TestRedis;
  let conn: Redis;
  beforeAll(async () => {
    redis = await startTestRedis();
    conn = new Redis(redis.url, { maxRetriesPerRequest: 0 });
  });
  beforeEach(async () => {
    await redis.client.flushall();
  });
  afterAll(async () => {
    conn?.disconnect();
    await redis?.close();
  });

  it('a flush sent while the read is on its way: its counts are added once', async () => {
    const usage = new UsageCounter(conn, keys);
    const now = Date.now();
    const today = utcDay(now);
    usage.record('k', 1, 5, 0, now);
    const reading = usage.read('k', [today]);
    const flushing = usage.flush(); // sent after the read: Redis answers the read without these counts
    const [rows] = await Promise.all([reading, flushing]);
    expect(rows).toEqual([{ day: today, requests: 1, units: 5, refused: 0 }]);
    expect(await redis.client.hget(keys.keyUsage('k', today), 'units')).toBe('5');
  });

  it('a flush sent before the read: counted by Redis, not added again', async () => {
    const usage = new UsageCounter(conn, keys);
    const now = Date.now();
    const today = utcDay(now);
    usage.record('k', 1, 5, 0, now);
    const flushing = usage.flush();
    const reading = usage.read('k', [today]);
    usage.record('k', 1, 2, 0, now); // counted after the read was sent, not written yet
    const [rows] = await Promise.all([reading, flushing]);
    expect(rows).toEqual([{ day: today, requests: 2, units: 7, refused: 0 }]);
  });
});
