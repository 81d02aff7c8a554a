import { describe, expect, it } from 'vitest';
import { startTestSentinel } from '../../support/redis/redis-topology.js';
import { failoverUnderTraffic, serviceBackChecks, useFleet } from './scale-helpers.js';

/**
 * A master that hangs instead of dying (SIGSTOP: its sockets stay open and the kernel keeps
 * accepting bytes, as in a frozen VM or a partition that drops nothing): the sentinels promote
 * the replica, and the proxies and workers must leave the silent connection on their own, since
 * no error will ever come from it.
 */
describe('Redis Sentinel: the master hangs (SIGSTOP) under traffic', () => {
  // The topology's close SIGKILLs its processes, which ends a stopped one too.
  const scale = useFleet(
    'scale-hung',
    'sentinel',
    () => startTestSentinel({ downAfterMs: 1000, failoverTimeoutMs: 3000 }),
    (sentinel) => [{ sentinel: { masterName: sentinel.masterName, nodes: sentinel.seeds } }, { sentinel: { masterName: sentinel.masterName, nodes: sentinel.seeds } }],
  );

  it('follows the promoted replica; no request waits on the hung master; 0 events lost', { timeout: 150_000 }, async () => {
    const { key } = await scale.prepared();
    const oldMaster = await scale.topology.masterPort();
    const result = await failoverUnderTraffic(
      scale.fleet,
      key,
      async () => void scale.topology.master.child.kill('SIGSTOP'),
      () => scale.topology.waitForFailover(oldMaster, 30_000),
    );
    console.log(`[sentinel, hung master] ${JSON.stringify(result)}`);
    expect(result.lost).toBe(0);
    expect(result.failedAnswers).toEqual([]);
    // Reads that need Redis answered again soon after the promotion, and none hung for long.
    expect(result.redisBackMs).toBeLessThan(result.promotionMs + 12_000);
    expect(result.slowestReadMs).toBeLessThan(15_000);
    const { revocationMs, goalBoundMs } = await serviceBackChecks(scale.fleet);
    console.log(`[sentinel, hung master] revocation across proxies after the failover: ${Math.round(revocationMs)} ms (bound ${Math.round(goalBoundMs)} ms)`);
    // SPEC §5.4: 1 s goal (the change bus followed the topology), with the margin this machine
    // needs now: 2 s, or ten requests as slow as one timed just before (issues 40, 54).
    expect(revocationMs).toBeLessThan(goalBoundMs);
  });
});
