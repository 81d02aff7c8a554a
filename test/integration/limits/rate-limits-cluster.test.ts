/**
 * SPEC §10 on Redis Cluster: the lease script and the usage writes touch only keys carrying the
 * service's hash tag, so two replicas on a 3-master cluster share one allowance and the usage
 * pipeline lands in one slot (no CROSSSLOT, no MOVED left unfollowed).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call } from '../../support/clients/http-client.js';
import { basic } from '../../support/outrigger.js';
import { startTestCluster, type TestCluster } from '../../support/redis/redis-topology.js';
import { spendAcrossReplicas, startLimitedFleet, type LimitedFleet } from './rate-limits-fleet.js';

describe('rate limits on Redis Cluster', { timeout: 90_000 }, () => {
  let cluster: TestCluster;
  let fleet: LimitedFleet;

  beforeAll(async () => {
    cluster = await startTestCluster({ masters: 3, replicas: 0 });
    fleet = await startLimitedFleet('limits-cluster', { cluster: { nodes: cluster.seeds } });
  }, 90_000);

  afterAll(async () => {
    await fleet?.close();
    await cluster?.close();
  });

  it('two replicas share one allowance, and the usage is written', async () => {
    const { keyId, statuses } = await spendAcrossReplicas(fleet, 'cluster');
    expect(statuses.filter((s) => s === 200).length).toBeLessThanOrEqual(10);
    expect(statuses.filter((s) => s === 200).length).toBeGreaterThanOrEqual(9);
    expect(statuses.at(-1)).toBe(429);
    await expect
      .poll(
        async () => {
          const usage = await call(fleet.replicas[0].url, `/_admin/keys/${keyId}/usage?from=${new Date().toISOString().slice(0, 10)}`, { auth: basic('root', 'root-password') });
          return usage.json?.[0] ? usage.json[0].requests + usage.json[0].refused : 0;
        },
        { timeout: 20_000, interval: 500 },
      )
      .toBe(12);
  });
});
