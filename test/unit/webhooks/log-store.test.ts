import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { WebhookLogStore } from '../../../src/webhooks/logs/log-store.js';
import type { WebhookLogEntry } from '../../../src/webhooks/log-entry.js';
import { redisKeys } from '../../../src/store/keys.js';
import { startTestRedis, type TestRedis } from '../../support/redis/redis.js';

describe('webhook log store: index housekeeping', () => {
  let redis: TestRedis;
  let client: Redis;
  const keys = redisKeys('outrigger', 'log-store-test');

  beforeAll(async () => {
    redis = await startTestRedis();
    client = new Redis(redis.url);
  });
  afterAll(async () => {
    client.disconnect();
    await redis.close();
  });

  const entry = (i: number, at: number): WebhookLogEntry => ({ _id: `e${i}`, webhookId: 'busy', timestamp: { $date: at }, status: 'success' }) as WebhookLogEntry;
  async function calls(command: string): Promise<number> {
    return Number(new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(await redis.client.info('commandstats'))?.[1] ?? 0);
  }
  async function write(store: WebhookLogStore, e: WebhookLogEntry, now: number): Promise<void> {
    const multi = client.multi();
    store.add(multi, e, now);
    await multi.exec();
  }

  it('trims and renews each index once per interval, not on every write, and the index outlives its newest entry', async () => {
    const store = new WebhookLogStore(client, keys, 3_600_000);
    expect(store.maintenanceIntervalMs).toBe(36_000);
    await redis.client.config('RESETSTAT');
    const t0 = Date.now();
    for (let i = 0; i < 50; i++) await write(store, entry(i, t0 + i), t0 + i);
    expect(await calls('zadd')).toBe(100); // the index and the status index, every time
    expect(await calls('zremrangebyscore')).toBe(2); // once each
    expect(await calls('pexpire')).toBe(2);
    const indexTtl = await redis.client.pttl(keys.webhookLogIndex('busy'));
    expect(indexTtl).toBeGreaterThan(await redis.client.pttl(keys.webhookLogEntry('e49')));
    const page = await store.list('busy', { page: 1, pagesize: 3 });
    expect(page.total).toBe(50);
    expect(page.entries.map((e) => e._id)).toEqual(['e49', 'e48', 'e47']);

    // An interval later: housekeeping again, which trims ids past the retention.
    await redis.client.zadd(keys.webhookLogIndex('busy'), t0 - 3_600_000 - 1, 'ancient');
    await write(store, entry(50, t0 + 40_000), t0 + 40_000);
    expect(await calls('zremrangebyscore')).toBe(4);
    expect(await redis.client.zscore(keys.webhookLogIndex('busy'), 'ancient')).toBeNull();
  });

  it('keeps the interval within a minute and above zero for any retention', () => {
    expect(new WebhookLogStore(client, keys, 30 * 86_400_000).maintenanceIntervalMs).toBe(60_000);
    expect(new WebhookLogStore(client, keys, 2000).maintenanceIntervalMs).toBe(20);
    expect(new WebhookLogStore(client, keys, 50).maintenanceIntervalMs).toBe(1);
  });
});
