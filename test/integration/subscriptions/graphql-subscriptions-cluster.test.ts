/**
 * GraphQL subscriptions on Redis Cluster (issue 53): the feed, the claims and each batch's token
 * carry the service's hash tag, so the publish and renew scripts (store/scripts/subscriptions/)
 * run in one slot with no CROSSSLOT, and a subscriber on one replica gets the writes proxied by
 * the other, in order, live and by a resume (`Last-Event-ID`, XRANGE and XINFO on the slot's
 * master). Bounded: the cluster and the replicas stop in afterAll, each row closes its subscriber.
 */
import { Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redisKeys } from '../../../src/store/keys.js';
import { startTestCluster, type TestCluster } from '../../support/redis/redis-topology.js';
import { gql } from '../graphql/graphql-helpers.js';
import { rawSse } from './graphql-subscriptions-helpers.js';
import { CAROL, insertOrder, numbersOf, startSubscriptionFleet, type SubscriptionFleet } from './graphql-subscriptions-topology.js';

const SERVICE = 'subs-cluster';
const QUERY = 'subscription { orderChanged(status: "c") { op document { number } } }';

describe('GraphQL subscriptions on Redis Cluster (issue 53)', { timeout: 120_000 }, () => {
  let cluster: TestCluster;
  let fleet: SubscriptionFleet;
  let client: Cluster;
  const keys = redisKeys('outrigger', SERVICE);

  beforeAll(async () => {
    cluster = await startTestCluster({ masters: 3, replicas: 0 });
    fleet = await startSubscriptionFleet(SERVICE, { cluster: { nodes: cluster.seeds } });
    const [host, port] = cluster.seeds[0]!.split(':');
    client = new Cluster([{ host: host!, port: Number(port) }]);
  }, 120_000);

  afterAll(async () => {
    client?.disconnect();
    await fleet?.close();
    await cluster?.close();
  });

  it('the feed, the claims and the batch tokens share one slot; writes through one replica reach a subscriber of the other, in order, live and resumed', async () => {
    const slot = async (key: string) => Number(await client.call('CLUSTER', 'KEYSLOT', key));
    const feedSlot = await slot(keys.subscriptionFeed);
    expect(await slot(keys.subscribedCollections)).toBe(feedSlot);
    expect(await slot(keys.subscriptionFeedBatch('any-token'))).toBe(feedSlot);
    // Not a slot every key falls in by chance: another service's feed is elsewhere.
    expect(await slot(redisKeys('outrigger', 'another-service').subscriptionFeed)).not.toBe(feedSlot);

    let sub = await rawSse(fleet.b.url, 'subs', QUERY, { auth: CAROL });
    try {
      expect(sub.status).toBe(200);
      // Claimed in the cluster (the renew script ran on the slot's master).
      expect(await client.zscore(keys.subscribedCollections, JSON.stringify(['shop', 'orders']))).not.toBeNull();
      expect(await insertOrder(fleet.a.url, 1, 'c')).toBe(201);
      expect((await gql(fleet.b.url, 'subs', 'mutation { createOrder(number: 2, status: "c") { number } }', { auth: CAROL })).json.data).toEqual({ createOrder: { number: 2 } });
      expect(await insertOrder(fleet.a.url, 3, 'c')).toBe(201);
      await sub.waitForNexts(3);
      expect(numbersOf(sub)).toEqual([1, 2, 3]);
      expect(await client.xlen(keys.subscriptionFeed)).toBe(3);
      const last = sub.nexts().at(-1)!.id!;
      await sub.close();

      // Missed while away, read back from the cluster on reconnect with the last id.
      expect(await insertOrder(fleet.a.url, 4, 'c')).toBe(201);
      expect(await insertOrder(fleet.b.url, 5, 'c')).toBe(201);
      // In the feed though nobody is subscribed now: b's claim outlives its last subscriber by 20 s.
      await expect.poll(() => client.xlen(keys.subscriptionFeed), { timeout: 10_000 }).toBe(5);
      sub = await rawSse(fleet.b.url, 'subs', QUERY, { auth: CAROL, lastEventId: last });
      expect(sub.status).toBe(200);
      await sub.waitForNexts(2);
      expect(await insertOrder(fleet.a.url, 6, 'c')).toBe(201);
      await sub.waitForNexts(3);
      expect(numbersOf(sub)).toEqual([4, 5, 6]);
      expect(sub.nexts().every((e) => e.payload.errors === undefined)).toBe(true);
    } finally {
      await sub.close();
    }
  });
});
