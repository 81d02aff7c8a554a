/**
 * GraphQL subscriptions through a Sentinel failover (issue 53 item 11 on a real topology): a
 * subscriber on one replica keeps its stream while the master is SIGKILLed and the replica
 * promoted; the writes proxied meanwhile (their changes kept by the publisher and sent again until
 * the new master takes them, once per batch token) reach it exactly once each, or the subscriber
 * is told CHANGES_LOST to re-read; nothing arrives twice; and it goes on with later writes, live and
 * by a resume on the new master. Bounded: the topology and the replicas stop in afterAll.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestSentinel, type TestSentinel } from '../../support/redis/redis-topology.js';
import { until } from '../../support/wait.js';
import { rawSse } from './graphql-subscriptions-helpers.js';
import { CAROL, errorCodesOf, insertOrder, numbersOf, startSubscriptionFleet, type SubscriptionFleet } from './graphql-subscriptions-topology.js';

const QUERY = 'subscription { orderChanged(status: "s") { op document { number } } }';

describe('GraphQL subscriptions through a Sentinel failover (issue 53)', { timeout: 150_000 }, () => {
  let sentinel: TestSentinel;
  let fleet: SubscriptionFleet;

  beforeAll(async () => {
    sentinel = await startTestSentinel({ downAfterMs: 1000, failoverTimeoutMs: 3000 });
    fleet = await startSubscriptionFleet('subs-sentinel', { sentinel: { masterName: sentinel.masterName, nodes: sentinel.seeds } });
  }, 120_000);

  afterAll(async () => {
    await fleet?.close();
    await sentinel?.close();
  });

  it('writes during and after the failover reach the subscriber once each, or it is told CHANGES_LOST; nothing twice; it goes on and resumes', async () => {
    let sub = await rawSse(fleet.b.url, 'subs', QUERY, { auth: CAROL });
    try {
      expect(sub.status).toBe(200);
      expect(await insertOrder(fleet.a.url, 1, 's')).toBe(201);
      await sub.waitForNexts(1);
      expect(numbersOf(sub)).toEqual([1]);

      const oldPort = await sentinel.masterPort();
      await sentinel.master.kill('SIGKILL');
      // Proxied while there is no master: the backend answers, the changes wait in the publishers.
      expect(await insertOrder(fleet.a.url, 2, 's')).toBe(201);
      expect(await insertOrder(fleet.b.url, 3, 's')).toBe(201);
      await sentinel.waitForFailover(oldPort, 60_000);
      expect(await insertOrder(fleet.a.url, 4, 's')).toBe(201);
      // The last write arrives (its batch follows the earlier ones in each publisher), or the loss is told.
      await until(() => numbersOf(sub).includes(4) || errorCodesOf(sub).includes('CHANGES_LOST'), 'the write after the failover, or CHANGES_LOST', 60_000);
      if (!errorCodesOf(sub).includes('CHANGES_LOST')) await until(() => [2, 3, 4].every((n) => numbersOf(sub).includes(n)), 'every write of the failover', 30_000);
      const got = numbersOf(sub);
      const told = errorCodesOf(sub);
      console.info(`[sentinel] subscriber got ${JSON.stringify(got)}, told ${JSON.stringify(told)}`);
      // Nothing twice, whatever ioredis resent after reconnecting.
      expect(new Set(got).size).toBe(got.length);
      // Nothing lost silently: every write is there, or the subscriber was told to re-read.
      if (!told.includes('CHANGES_LOST')) expect([...got].sort((x, y) => x - y)).toEqual([1, 2, 3, 4]);
      expect(told.filter((c) => c !== 'CHANGES_LOST')).toEqual([]);

      // It goes on: a later write, live.
      expect(await insertOrder(fleet.b.url, 5, 's')).toBe(201);
      await until(() => numbersOf(sub).includes(5), 'a write after the failover', 30_000);
      const last = sub.nexts().at(-1)!.id!;
      await sub.close();
      // And a resume reads the new master's feed.
      expect(await insertOrder(fleet.a.url, 6, 's')).toBe(201);
      sub = await rawSse(fleet.b.url, 'subs', QUERY, { auth: CAROL, lastEventId: last });
      expect(sub.status).toBe(200);
      await until(() => numbersOf(sub).includes(6), 'the missed write, resumed', 30_000);
      expect(numbersOf(sub)).toEqual([6]);
      expect(errorCodesOf(sub)).toEqual([]);
    } finally {
      await sub.close();
    }
  });
});
