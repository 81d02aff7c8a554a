import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestSentinel, type TestSentinel } from '../support/redis-topology.js';
import { crossProxyChecks, failoverUnderTraffic, serviceBackChecks, startFleet, type CrossProxyResult, type Fleet } from './scale-helpers.js';

/** The failover test's time bound. */
const FAILOVER = { timeout: 150_000 };

/**
 * One master, one replica and three sentinels (tuned to fail over in seconds) with two proxies
 * and two workers; then a SIGKILL of the master while traffic flows. Prints the figures.
 */
describe('Redis Sentinel: two proxies, two workers, the master killed under traffic', () => {
  let sentinel: TestSentinel;
  let fleet: Fleet;
  // Either test can run alone (`-t`): the cross-proxy set-up runs once, in whichever comes first.
  let crossProxy: Promise<CrossProxyResult> | undefined;
  const prepared = () => (crossProxy ??= crossProxyChecks(fleet, 'sentinel'));

  beforeAll(async () => {
    sentinel = await startTestSentinel({ downAfterMs: 1000, failoverTimeoutMs: 3000 });
    const nodes = sentinel.seeds;
    fleet = await startFleet('scale-sentinel', [
      { sentinel: { masterName: sentinel.masterName, nodes } },
      { sentinel: { masterName: sentinel.masterName, nodes: nodes.join(',') } },
    ]);
  }, 90_000);

  afterAll(async () => {
    await fleet?.stop();
    await sentinel?.close();
  });

  it('serves keys, apps, webhooks, logs and recording across proxies', async () => {
    const result = await prepared();
    console.log(`[sentinel] revocation across proxies: ${Math.round(result.revocationMs)} ms`);
    expect(result.revocationMs).toBeLessThan(20_000);
  }, 60_000);

  it('follows the promoted replica when the master is SIGKILLed: 0 events lost', FAILOVER, async () => {
    const { key } = await prepared();
    const oldMaster = await sentinel.masterPort();
    expect(oldMaster).toBe(sentinel.master.port);
    const result = await failoverUnderTraffic(
      fleet,
      key,
      () => sentinel.master.kill('SIGKILL'),
      () => sentinel.waitForFailover(oldMaster, 30_000),
    );
    console.log(`[sentinel] failover: ${JSON.stringify(result)}`);
    expect(result.lost).toBe(0);
    expect(result.failedAnswers).toEqual([]);
    expect(result.failedRequests).toBe(0);
    expect(await sentinel.masterPort()).toBe(sentinel.replica.port);
    const revocationMs = await serviceBackChecks(fleet);
    console.log(`[sentinel] revocation across proxies after the failover: ${Math.round(revocationMs)} ms`);
    expect(revocationMs).toBeLessThan(20_000);
  });
});
