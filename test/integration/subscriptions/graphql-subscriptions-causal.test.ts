/**
 * The feed's order is the order clients saw their writes answered (SPEC §6.5; publisher.ts
 * `publishAround`): a client that writes through a load balancer sends each write, once it has the
 * previous one's answer, to whichever replica, and a subscriber keeping a view must not receive
 * the later write's change first. Replica a reaches Redis through a relay that delays every byte,
 * so a change a publishes after its answer arrives long after b's change of the client's next
 * write (the code that published only after the answer failed this row: [2, 4, 1, 3]). And the
 * wait is bounded: with a's Redis slower than the bound, a's answer goes at the bound, and its
 * change still arrives, once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AHEAD_WAIT_MS } from '../../../src/graphql/subscribe/feed/publisher.js';
import { startTestRedis, type TestRedis } from '../../support/redis/redis.js';
import { startTcpRelay, type TcpRelay } from '../../support/peers/tcp-relay.js';
import { rawSse } from './graphql-subscriptions-helpers.js';
import { CAROL, insertOrder, numbersOf, startSubscriptionFleet, type SubscriptionFleet } from './graphql-subscriptions-topology.js';

const QUERY = 'subscription { orderChanged(status: "c") { op document { number } } }';

describe('subscriptions: a client writing through two replicas is delivered in the order it was answered', { timeout: 60_000 }, () => {
  let redis: TestRedis;
  let relay: TcpRelay;
  let fleet: SubscriptionFleet;

  beforeAll(async () => {
    redis = await startTestRedis();
    relay = await startTcpRelay(redis.port);
    fleet = await startSubscriptionFleet('subs-causal', { url: redis.url }, { url: relay.url('redis') });
  }, 60_000);

  afterAll(async () => {
    await fleet?.close();
    await relay?.close();
    await redis?.close();
  });

  it('writes alternating between a (slow to Redis) and b arrive as they were answered', async () => {
    const sub = await rawSse(fleet.b.url, 'subs', QUERY, { auth: CAROL });
    try {
      expect(sub.status).toBe(200);
      relay.setDelay(100);
      for (const [n, replica] of [
        [1, fleet.a],
        [2, fleet.b],
        [3, fleet.a],
        [4, fleet.b],
      ] as const)
        expect(await insertOrder(replica.url, n, 'c')).toBe(201);
      await sub.waitForNexts(4, 20_000);
      expect(numbersOf(sub)).toEqual([1, 2, 3, 4]);
    } finally {
      relay.setDelay(0);
      await sub.close();
    }
  });

  it('a Redis slower than the bound holds an answer for the bound only, and the change still arrives once', async () => {
    const sub = await rawSse(fleet.b.url, 'subs', QUERY, { auth: CAROL });
    try {
      expect(sub.status).toBe(200);
      const delay = 2 * AHEAD_WAIT_MS;
      relay.setDelay(delay);
      const started = Date.now();
      expect(await insertOrder(fleet.a.url, 10, 'c')).toBe(201);
      const took = Date.now() - started;
      // The bound, not the round trip through the relay (2 × delay): a stalled Redis costs a write AHEAD_WAIT_MS.
      expect(took).toBeGreaterThanOrEqual(AHEAD_WAIT_MS - 50);
      expect(took).toBeLessThan(2 * delay);
      await sub.waitForNexts(1, 20_000);
      relay.setDelay(0);
      expect(await insertOrder(fleet.b.url, 11, 'c')).toBe(201);
      await sub.waitForNexts(2, 20_000);
      expect(numbersOf(sub)).toEqual([10, 11]);
    } finally {
      relay.setDelay(0);
      await sub.close();
    }
  });
});
