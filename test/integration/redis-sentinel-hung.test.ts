import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestSentinel, type TestSentinel } from '../support/redis-topology.js';
import { crossProxyChecks, failoverUnderTraffic, serviceBackChecks, startFleet, type Fleet } from './scale-helpers.js';

/**
 * A master that hangs instead of dying (SIGSTOP: its sockets stay open and the kernel keeps
 * accepting bytes, as in a frozen VM or a partition that drops nothing): the sentinels promote
 * the replica, and the proxies and workers must leave the silent connection on their own, since
 * no error will ever come from it.
 */
describe('Redis Sentinel: the master hangs (SIGSTOP) under traffic', () => {
  let sentinel: TestSentinel;
  let fleet: Fleet;

  beforeAll(async () => {
    sentinel = await startTestSentinel({ downAfterMs: 1000, failoverTimeoutMs: 3000 });
    const nodes = sentinel.seeds;
    fleet = await startFleet('scale-hung', [
      { sentinel: { masterName: sentinel.masterName, nodes } },
      { sentinel: { masterName: sentinel.masterName, nodes } },
    ]);
  }, 90_000);

  afterAll(async () => {
    await fleet?.stop();
    await sentinel?.close(); // SIGKILL ends a stopped process too
  });

  it('follows the promoted replica; no request waits on the hung master; 0 events lost', { timeout: 150_000 }, async () => {
    const { key } = await crossProxyChecks(fleet, 'sentinel');
    const oldMaster = await sentinel.masterPort();
    const result = await failoverUnderTraffic(
      fleet,
      key,
      async () => void sentinel.master.child.kill('SIGSTOP'),
      () => sentinel.waitForFailover(oldMaster, 30_000),
    );
    console.log(`[sentinel, hung master] ${JSON.stringify(result)}`);
    expect(result.lost).toBe(0);
    expect(result.failedAnswers).toEqual([]);
    // Reads that need Redis answered again soon after the promotion, and none hung for long.
    expect(result.redisBackMs).toBeLessThan(result.promotionMs + 12_000);
    expect(result.slowestReadMs).toBeLessThan(15_000);
    const revocationMs = await serviceBackChecks(fleet);
    console.log(`[sentinel, hung master] revocation across proxies after the failover: ${Math.round(revocationMs)} ms`);
    expect(revocationMs).toBeLessThan(2_000);
  });
});
