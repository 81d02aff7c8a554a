/**
 * GraphQL subscriptions through a Sentinel failover that loses what the master had not replicated
 * (issue 53 item 11's last gap). The replica is frozen (SIGSTOP) and 40 MB written to the master
 * behind it, more than the sockets between them buffer, so a write's change after that stays in
 * the master's memory (its output buffer to the replica); the master is SIGKILLed while the writer waits for a replica's acknowledgement,
 * and the replica is thawed and promoted. The live subscriber had read the change from the old
 * master and must not get it twice; a resume from before it must find it on the new master (its
 * writer sent the unacknowledged batch again); nothing is lost silently. Without the fix the
 * resume finds nothing (the change died with the master, and nobody is told). Bounded: the
 * topology and the replicas stop in afterAll.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redisKeys } from '../../../src/store/keys.js';
import { startTestSentinel, type TestSentinel } from '../../support/redis/redis-topology.js';
import { until } from '../../support/wait.js';
import { rawSse } from './graphql-subscriptions-helpers.js';
import { CAROL, errorCodesOf, insertOrder, numbersOf, startSubscriptionFleet, type SubscriptionFleet } from './graphql-subscriptions-topology.js';

const QUERY = 'subscription { orderChanged(status: "s") { op document { number } } }';
const SERVICE = 'subs-sentinel-unreplicated';

describe('GraphQL subscriptions through a failover that loses unreplicated changes (issue 53)', { timeout: 150_000 }, () => {
  let sentinel: TestSentinel;
  let fleet: SubscriptionFleet;

  beforeAll(async () => {
    sentinel = await startTestSentinel({ downAfterMs: 1000, failoverTimeoutMs: 3000 });
    fleet = await startSubscriptionFleet(SERVICE, { sentinel: { masterName: sentinel.masterName, nodes: sentinel.seeds } });
  }, 120_000);

  afterAll(async () => {
    if (sentinel?.replica.alive()) sentinel.replica.child.kill('SIGCONT');
    await fleet?.close();
    await sentinel?.close();
  });

  it('a change the dead master never replicated reaches a resume from before it, once; the live subscriber that read it gets no copy', async () => {
    const feedKey = redisKeys('outrigger', SERVICE).subscriptionFeed;
    const live = await rawSse(fleet.b.url, 'subs', QUERY, { auth: CAROL });
    let resumed: Awaited<ReturnType<typeof rawSse>> | undefined;
    const master = new Redis(await sentinel.masterPort(), '127.0.0.1', { maxRetriesPerRequest: 0, retryStrategy: () => null });
    master.on('error', () => {});
    try {
      expect(live.status).toBe(200);
      expect(await insertOrder(fleet.a.url, 1, 's')).toBe(201);
      await live.waitForNexts(1);
      const since = live.nexts().at(-1)!.id!;
      const before = await master.xlen(feedKey);

      // The replica freezes, and the socket buffers to it fill up: what the master appends now is on the master only.
      sentinel.replica.child.kill('SIGSTOP');
      for (let i = 0; i < 4; i++) await master.set(`ballast-${i}`, Buffer.alloc(10 * 1024 * 1024, 'x'));
      const oldPort = await sentinel.masterPort();
      const started = Date.now();
      const write = insertOrder(fleet.a.url, 2, 's');
      // The master dies once it holds the change, while a's publisher waits for the replica's acknowledgement.
      await until(async () => (await master.xlen(feedKey)) > before, 'the change on the master', 5000);
      await sentinel.master.kill('SIGKILL');
      sentinel.replica.child.kill('SIGCONT');
      expect(await write).toBe(201);
      console.info(`[sentinel-unreplicated] the write's answer after ${Date.now() - started} ms`);
      const newPort = await sentinel.waitForFailover(oldPort, 60_000);
      // The promoted replica really lacks what the master took after the freeze.
      const promoted = new Redis(newPort, '127.0.0.1', { maxRetriesPerRequest: 0, retryStrategy: () => null });
      promoted.on('error', () => {});
      expect(await promoted.exists('ballast-3').finally(() => promoted.disconnect())).toBe(0);

      // A later write through the same replica follows the resent batch in its publisher.
      expect(await insertOrder(fleet.a.url, 3, 's')).toBe(201);
      await until(() => numbersOf(live).includes(3) || errorCodesOf(live).length > 0, 'the write after the failover', 60_000);
      const got = numbersOf(live);
      console.info(`[sentinel-unreplicated] live subscriber got ${JSON.stringify(got)}, told ${JSON.stringify(errorCodesOf(live))}`);
      // The live subscriber read 2 from the old master: the copy appended to the new master is not sent again.
      expect(got).toEqual([1, 2, 3]);
      expect(errorCodesOf(live)).toEqual([]);

      // A resume from before 2 finds it on the new master (without the fix: lost with the master, silently).
      resumed = await rawSse(fleet.b.url, 'subs', QUERY, { auth: CAROL, lastEventId: since });
      expect(resumed.status).toBe(200);
      await until(() => numbersOf(resumed!).includes(3) || errorCodesOf(resumed!).length > 0, 'the resume to reach 3', 30_000);
      console.info(`[sentinel-unreplicated] resume from 1 got ${JSON.stringify(numbersOf(resumed))}, told ${JSON.stringify(errorCodesOf(resumed))}`);
      expect(numbersOf(resumed)).toEqual([2, 3]);
      expect(errorCodesOf(resumed)).toEqual([]);
      await resumed.close();

      // A resume from 2 as the live subscriber got it (its id from the old master): the copy of 2 is not sent again.
      const afterTwo = live.nexts()[1]!.id!;
      resumed = await rawSse(fleet.b.url, 'subs', QUERY, { auth: CAROL, lastEventId: afterTwo });
      expect(resumed.status).toBe(200);
      await until(() => numbersOf(resumed!).includes(3) || errorCodesOf(resumed!).length > 0, 'the resume from 2 to reach 3', 30_000);
      expect(numbersOf(resumed)).toEqual([3]);
      expect(errorCodesOf(resumed)).toEqual([]);
    } finally {
      master.disconnect();
      await live.close();
      await resumed?.close();
    }
  });
});
