import { describe, expect, it } from 'vitest';
import { redisKeys } from '../../../src/store/keys.js';
import { requireBuiltCli, runCli, writeTempFile } from '../../support/clients/cli.js';
import { call } from '../../support/clients/http-client.js';
import { startTestCluster, type RedisNodeProcess, type TestCluster } from '../../support/redis/redis-topology.js';
import { ALICE, bearer, expectNoRoutingErrors, failoverUnderTraffic, serviceBackChecks, useFleet } from './scale-helpers.js';
import { waitFor } from '../webhooks/webhooks-helpers.js';

const SERVICE = 'scale-cluster';

/** The failover tests' time bound. */
const FAILOVER = { timeout: 150_000 };

/**
 * A 3-master + 3-replica Redis Cluster with two proxies and two workers, then a SIGKILL of the
 * master that holds the service's slot while traffic flows. Prints the figures the issue asks for.
 */
describe('Redis Cluster: two proxies, two workers, a master killed under traffic', () => {
  // Each test can run alone (`-t`): scale.prepared() runs the cross-proxy set-up once.
  const scale = useFleet(
    SERVICE,
    'cluster',
    () => startTestCluster({ masters: 3, replicas: 1, nodeTimeoutMs: 1000 }),
    (cluster) => [
      // Both spellings of the node list: a YAML list and one comma-separated string.
      { cluster: { nodes: cluster.seeds } },
      { cluster: { nodes: cluster.seeds.slice(0, 2).join(',') } },
    ],
  );
  const slotKey = redisKeys('outrigger', SERVICE).features;
  /** A master to kill must have a replica to promote: an earlier failover may have left the slot on one without. */
  const onMasterWithReplica = async () => {
    if ((await scale.topology.replicasOf(slotKey)) === 0) await scale.topology.moveSlotOf(slotKey);
    expect(await scale.topology.replicasOf(slotKey)).toBeGreaterThan(0);
  };
  /** Traffic through both proxies while `fail` befalls the master of the service slot (one with a replica), until the replica takes over. */
  const masterFailsUnderTraffic = async (fail: (master: RedisNodeProcess) => Promise<void>) => {
    const { key } = await scale.prepared();
    await onMasterWithReplica();
    const master = await scale.topology.masterOf(slotKey);
    return failoverUnderTraffic(
      scale.fleet,
      key,
      () => fail(scale.topology.node(master)),
      () => scale.topology.waitForFailover(slotKey, master, 30_000),
    );
  };

  it('serves keys, apps, webhooks, logs and recording across proxies', async () => {
    const result = await scale.prepared();
    console.log(`[cluster] revocation across proxies: ${Math.round(result.revocationMs)} ms`);
    expect(result.revocationMs).toBeLessThan(20_000); // SPEC §5.4: never later than 20 s (guarantee)
    expectNoRoutingErrors(scale.fleet);
  }, 60_000);

  // The built CLI (`npm test` builds first): `outrigger keys` and `outrigger check` on a cluster config.
  it('lists and revokes keys with `outrigger keys` on the cluster; `check` names a bad node', async () => {
    requireBuiltCli('this test runs `outrigger keys` and `outrigger check` from dist/');
    await scale.prepared();
    const [a, b] = scale.fleet.proxies;
    const file = writeTempFile('outrigger.yaml', { service: { id: SERVICE }, upstream: { url: 'http://127.0.0.1:1' }, redis: { cluster: { nodes: scale.topology.seeds.join(',') } } });
    const issued = await call(a.url, '/keys', { method: 'POST', auth: ALICE, body: { name: 'cli-doomed', roles: ['reader'] } });
    expect(issued.status).toBe(201);
    expect((await call(b.url, '/shop/users', { auth: bearer(issued.json.key) })).status).toBe(200);
    const listed = await runCli(['keys', 'list', '-c', file, '--owner', 'alice', '--json']);
    expect(listed.code, listed.stderr).toBe(0);
    expect(JSON.parse(listed.stdout).map((k: { name: string }) => k.name)).toContain('cli-doomed');
    const revoked = await runCli(['keys', 'revoke', issued.json._id, '-c', file]);
    expect(revoked.code, revoked.stderr).toBe(0);
    const at = performance.now();
    await waitFor(
      () => call(b.url, '/shop/users', { auth: bearer(issued.json.key) }),
      (r) => r.status === 401,
      20_000,
      'proxy B to refuse the key revoked by the CLI',
    );
    console.log(`[cluster] revocation by \`outrigger keys revoke\` seen by a proxy after ${Math.round(performance.now() - at)} ms`);

    const bad = writeTempFile('bad.yaml', { service: { id: SERVICE }, upstream: { url: 'http://127.0.0.1:1' }, redis: { url: scale.topology.seeds.slice(0, 2).join(',') } });
    const checked = await runCli(['check', '-c', bad]);
    expect(checked.code).toBe(1);
    expect(checked.stdout + checked.stderr).toMatch(/redis\.url: takes one node; for several use redis\.cluster\.nodes/);
    expectNoRoutingErrors(scale.fleet);
  }, 60_000);

  it('keeps serving while the service slot moves to another master (live resharding): 0 events lost, pub/sub follows', FAILOVER, async () => {
    const { key } = await scale.prepared();
    let moving: ReturnType<TestCluster['moveSlotOf']> | undefined;
    // The traffic goes on while the slot moves: started at a third of the requests, awaited after.
    const result = await failoverUnderTraffic(
      scale.fleet,
      key,
      async () => void (moving = scale.topology.moveSlotOf(slotKey)),
      () => moving!,
    );
    const moved = await moving;
    // promotionMs here: from the start of the move until every node named the new owner.
    console.log(`[cluster] resharding: ${JSON.stringify({ ...moved, ...result })}`);
    expect(moved!.toPort).not.toBe(moved!.fromPort);
    expect(await scale.topology.masterOf(slotKey)).toBe(moved!.toPort);
    expect(result.lost).toBe(0);
    expect(result.failedAnswers).toEqual([]);
    // The change bus's sharded subscription moved with the slot: a revocation still reaches the other proxy at once.
    const { revocationMs, goalBoundMs } = await serviceBackChecks(scale.fleet);
    console.log(`[cluster] revocation across proxies after the resharding: ${Math.round(revocationMs)} ms (bound ${Math.round(goalBoundMs)} ms)`);
    // SPEC §5.4: 1 s goal (the change bus followed the topology), with the margin this machine
    // needs now: 2 s, or ten requests as slow as one timed just before (issues 40, 54).
    expect(revocationMs).toBeLessThan(goalBoundMs);
    expectNoRoutingErrors(scale.fleet);
  });

  it('follows the promoted replica when the master of the service slot is SIGKILLed: 0 events lost', FAILOVER, async () => {
    const result = await masterFailsUnderTraffic((master) => master.kill('SIGKILL'));
    console.log(`[cluster] failover: ${JSON.stringify(result)}`);
    expect(result.lost).toBe(0);
    expect(result.failedAnswers).toEqual([]);
    expect(result.failedRequests).toBe(0);
    const { revocationMs } = await serviceBackChecks(scale.fleet);
    console.log(`[cluster] revocation across proxies after the failover: ${Math.round(revocationMs)} ms`);
    expect(revocationMs).toBeLessThan(20_000); // SPEC §5.4: never later than 20 s (guarantee)
    expectNoRoutingErrors(scale.fleet);
  });

  it('follows the promoted replica when the master of the service slot hangs (SIGSTOP): no request waits on it, 0 events lost', FAILOVER, async () => {
    const result = await masterFailsUnderTraffic(async (master) => void master.child.kill('SIGSTOP'));
    console.log(`[cluster] hung master: ${JSON.stringify(result)}`);
    expect(result.lost).toBe(0);
    expect(result.failedAnswers).toEqual([]);
    expect(result.redisBackMs).toBeLessThan(result.promotionMs + 12_000);
    expect(result.slowestReadMs).toBeLessThan(15_000);
    const { revocationMs, goalBoundMs } = await serviceBackChecks(scale.fleet);
    console.log(`[cluster] revocation across proxies after the hung master's failover: ${Math.round(revocationMs)} ms (bound ${Math.round(goalBoundMs)} ms)`);
    // SPEC §5.4: 1 s goal (the change bus followed the topology), with the margin this machine
    // needs now: 2 s, or ten requests as slow as one timed just before (issues 40, 54).
    expect(revocationMs).toBeLessThan(goalBoundMs);
  });
});
