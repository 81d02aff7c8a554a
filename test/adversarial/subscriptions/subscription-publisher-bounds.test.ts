/**
 * Issue 53 item 11, the writer's side of the change feed against a real redis-server that stops:
 * changes written while Redis is away wait (bounded) and are appended once it is back, in order;
 * what the bound drops is never dropped silently: a gap entry naming the collection and the count
 * goes to the feed first. A batch sent twice (the same token) is appended once. With replicas
 * wanted (redis.waitForReplicas) a replica that stops acknowledging costs one batch 1 s, the next
 * ones nothing, and once it is back batches wait for it again.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redisKeys } from '../../../src/store/keys.js';
import { publishSubscribedChanges } from '../../../src/store/scripts/subscriptions/publish-subscribed-changes.js';
import { FeedPublisher } from '../../../src/graphql/subscribe/feed/publisher.js';
import { startTestRedis, type TestRedis } from '../../support/redis/redis.js';
import { until } from '../../support/wait.js';

const keys = redisKeys('outrigger', 'publisher-bounds');
const member = (db: string, collection: string) => JSON.stringify([db, collection]);

describe('the change feed publisher under a Redis outage (issue 53 item 11)', () => {
  let redis: TestRedis;
  let conn: Redis;
  const errors: string[] = [];

  beforeAll(async () => {
    redis = await startTestRedis();
    // As the commands connection is: no offline queue, one retry, reconnecting forever.
    conn = new Redis(redis.url, { enableOfflineQueue: false, maxRetriesPerRequest: 1, retryStrategy: () => 100 });
    conn.on('error', () => {});
    await until(() => conn.status === 'ready', 'connected');
  });

  afterAll(async () => {
    conn?.disconnect();
    await redis?.close();
  });

  it('10,005 changes written while Redis is stopped: a gap entry for the 5 the bound dropped, then the 10,000 kept, in order, once', { timeout: 120_000 }, async () => {
    await redis.client.zadd(keys.subscribedCollections, Date.now() + 3_600_000, member('shop', 'orders'));
    const publisher = new FeedPublisher({
      redis: conn,
      feedKey: keys.subscriptionFeed,
      claimsKey: keys.subscribedCollections,
      batchKey: keys.subscriptionFeedBatch,
      retention: { changes: 100_000, minutes: 10 },
      onError: (error) => errors.push(String(error)),
    });
    await redis.stop();
    const total = 10_005;
    for (let i = 0; i < total; i += 5)
      publisher.publish(
        Array.from({ length: 5 }, (_, j) => ({ db: 'shop', collection: 'orders', op: 'insert' as const, _id: i + j })),
        member,
      );
    expect(publisher.waiting).toBe(10_000);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    await redis.restart();
    await until(async () => (await redis.client.xlen(keys.subscriptionFeed).catch(() => 0)) >= 10_001, 'everything appended once Redis is back', 60_000);
    await until(() => publisher.waiting === 0, 'nothing left waiting');
    const entries = (await redis.client.xrange(keys.subscriptionFeed, '-', '+')) as Array<[string, string[]]>;
    expect(entries).toHaveLength(10_001);
    expect(entries[0]![1][0]).toBe('g');
    expect(JSON.parse(entries[0]![1][1]!)).toEqual({ db: 'shop', collection: 'orders', lost: 5 });
    expect(entries.slice(1).map(([, f]) => (JSON.parse(f[1]!) as { _id: number })._id)).toEqual(Array.from({ length: 10_000 }, (_, i) => i + 5));
    // The failure was reported once for the whole outage, not once per retry.
    expect(errors.length).toBe(1);
    await publisher.stop();
  });

  it('the same batch sent twice (a resend after a reconnect) is appended once; a change of an unclaimed collection not at all', async () => {
    const before = await redis.client.xlen(keys.subscriptionFeed);
    const args = [3, keys.subscriptionFeed, keys.subscribedCollections, keys.subscriptionFeedBatch('same-token'), 100_000, 60_000, 'same-token'];
    const change = (collection: string) => [member('shop', collection), 0, 'c', JSON.stringify({ db: 'shop', collection, op: 'insert', _id: 'x' })];
    const first = (await publishSubscribedChanges.runWith(redis.client, [...args, ...change('orders'), ...change('nobody')])) as unknown[];
    const again = (await publishSubscribedChanges.runWith(redis.client, [...args, ...change('orders'), ...change('nobody')])) as unknown[];
    expect(first).toEqual([1, member('shop', 'orders')]);
    expect(again).toEqual([-1]);
    expect(await redis.client.xlen(keys.subscriptionFeed)).toBe(before + 1);
  });

  it('a replica that stops acknowledging costs one batch the 1 s wait and later ones nothing; once it is back, batches wait for it again', { timeout: 60_000 }, async () => {
    const replica = await startTestRedis();
    const pid = Number(/process_id:(\d+)/.exec(await replica.client.info('server'))?.[1]);
    const shortfalls: string[] = [];
    const publisher = new FeedPublisher({
      redis: conn,
      feedKey: keys.subscriptionFeed,
      claimsKey: keys.subscribedCollections,
      batchKey: keys.subscriptionFeedBatch,
      retention: { changes: 100_000, minutes: 10 },
      waitForReplicas: 1,
      onError: (error) => shortfalls.push(String(error)),
    });
    const timed = async (i: number) => {
      const started = performance.now();
      await publisher.track([{ db: 'shop', collection: 'orders', op: 'insert' as const, _id: `r${i}` }], member).attempted;
      return performance.now() - started;
    };
    try {
      await replica.client.replicaof('127.0.0.1', redis.port);
      await until(async () => /master_link_status:up/.test(await replica.client.info('replication')), 'the replica in sync');
      expect(await timed(0)).toBeLessThan(500);
      process.kill(pid, 'SIGSTOP');
      expect(await timed(1)).toBeGreaterThanOrEqual(950);
      expect(shortfalls).toHaveLength(1);
      expect(shortfalls[0]).toMatch(/0 of 1 replica/);
      for (let i = 2; i < 12; i++) expect(await timed(i)).toBeLessThan(200);
      process.kill(pid, 'SIGCONT');
      // Back: a ROLE once a second finds it caught up; then a batch waits again, so a second freeze costs one batch 1 s again.
      for (let i = 12; i < 52; i++) {
        await timed(i);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      process.kill(pid, 'SIGSTOP');
      expect(await timed(52)).toBeGreaterThanOrEqual(950);
      expect(shortfalls).toHaveLength(2);
    } finally {
      process.kill(pid, 'SIGCONT');
      await publisher.stop();
      await replica.close();
    }
  });
});
