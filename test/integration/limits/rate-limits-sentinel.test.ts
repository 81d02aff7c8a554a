/**
 * SPEC §10 on a Sentinel group (issue 35: "Redis Cluster and Sentinel work"): two replicas share one
 * `by: key` allowance through the master the sentinels name, and after the master is killed and a
 * replica promoted they share it again through the new master, answering no 5xx on the way.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call } from '../../support/clients/http-client.js';
import { basic } from '../../support/outrigger.js';
import { startTestSentinel, type TestSentinel } from '../../support/redis/redis-topology.js';
import { spendAcrossReplicas, startLimitedFleet, type LimitedFleet } from './rate-limits-fleet.js';

describe('rate limits on a Redis Sentinel group', { timeout: 120_000 }, () => {
  let sentinel: TestSentinel;
  let fleet: LimitedFleet;

  beforeAll(async () => {
    sentinel = await startTestSentinel({ downAfterMs: 1000, failoverTimeoutMs: 3000 });
    fleet = await startLimitedFleet('limits-sentinel', { sentinel: { masterName: sentinel.masterName, nodes: sentinel.seeds } });
  }, 120_000);

  afterAll(async () => {
    await fleet?.close();
    await sentinel?.close();
  });

  it('two replicas share one allowance through the master, and again through the promoted replica', async () => {
    const before = (await spendAcrossReplicas(fleet, 'before failover')).statuses;
    expect(before.filter((s) => s === 200).length).toBeLessThanOrEqual(10);
    expect(before.filter((s) => s === 200).length).toBeGreaterThanOrEqual(9);
    expect(before.at(-1)).toBe(429);

    const oldPort = await sentinel.masterPort();
    await sentinel.master.kill('SIGKILL');
    await sentinel.waitForFailover(oldPort, 60_000);
    // Both replicas reach the new master (a key issued through each answers 201) before the
    // allowance is judged: during the switch onRedisUnavailable: local may count on its own.
    for (const r of fleet.replicas) {
      await expect
        .poll(async () => (await call(r.url, '/keys', { method: 'POST', auth: basic('alice', 'alice-password'), body: { name: 'probe', roles: ['reader'] } })).status, {
          timeout: 60_000,
          interval: 500,
        })
        .toBe(201);
    }

    const after = (await spendAcrossReplicas(fleet, 'after failover')).statuses;
    expect(after.filter((s) => s >= 500)).toEqual([]);
    expect(after.filter((s) => s === 200).length).toBeLessThanOrEqual(10);
    expect(after.filter((s) => s === 200).length).toBeGreaterThanOrEqual(9);
    expect(after.at(-1)).toBe(429);
  });
});
