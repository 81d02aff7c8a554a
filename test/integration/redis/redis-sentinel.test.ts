import { describe, expect, it } from 'vitest';
import { startTestSentinel } from '../../support/redis/redis-topology.js';
import { failoverUnderTraffic, serviceBackChecks, useFleet } from './scale-helpers.js';

/** The failover test's time bound. */
const FAILOVER = { timeout: 150_000 };

/**
 * One master, one replica and three sentinels (tuned to fail over in seconds) with two proxies
 * and two workers; then a SIGKILL of the master while traffic flows. Prints the figures.
 */
describe('Redis Sentinel: two proxies, two workers, the master killed under traffic', () => {
  // Either test can run alone (`-t`): scale.prepared() runs the cross-proxy set-up once.
  const scale = useFleet(
    'scale-sentinel',
    'sentinel',
    () => startTestSentinel({ downAfterMs: 1000, failoverTimeoutMs: 3000 }),
    (sentinel) => [{ sentinel: { masterName: sentinel.masterName, nodes: sentinel.seeds } }, { sentinel: { masterName: sentinel.masterName, nodes: sentinel.seeds.join(',') } }],
  );

  it('serves keys, apps, webhooks, logs and recording across proxies', async () => {
    const result = await scale.prepared();
    console.log(`[sentinel] revocation across proxies: ${Math.round(result.revocationMs)} ms`);
    expect(result.revocationMs).toBeLessThan(20_000); // SPEC §5.4: never later than 20 s (guarantee)
  }, 60_000);

  it('follows the promoted replica when the master is SIGKILLed: 0 events lost', FAILOVER, async () => {
    const { key } = await scale.prepared();
    const oldMaster = await scale.topology.masterPort();
    expect(oldMaster).toBe(scale.topology.master.port);
    const result = await failoverUnderTraffic(
      scale.fleet,
      key,
      () => scale.topology.master.kill('SIGKILL'),
      () => scale.topology.waitForFailover(oldMaster, 30_000),
    );
    console.log(`[sentinel] failover: ${JSON.stringify(result)}`);
    expect(result.lost).toBe(0);
    expect(result.failedAnswers).toEqual([]);
    expect(result.failedRequests).toBe(0);
    expect(await scale.topology.masterPort()).toBe(scale.topology.replica.port);
    const { revocationMs } = await serviceBackChecks(scale.fleet);
    console.log(`[sentinel] revocation across proxies after the failover: ${Math.round(revocationMs)} ms`);
    expect(revocationMs).toBeLessThan(20_000); // SPEC §5.4: never later than 20 s (guarantee)
  });
});
