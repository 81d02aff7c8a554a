/**
 * SPEC §10 on a Sentinel group (issue 35: "Redis Cluster and Sentinel work"): two replicas share one
 * `by: key` allowance through the master the sentinels name, and after the master is killed and a
 * replica promoted they share it again through the new master, answering no 5xx on the way.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStandinBackend, type StandinBackend } from '../../examples/standin-backend/index.js';
import { call } from '../support/http-client.js';
import { basic, staticUsers, startTestOutrigger } from '../support/outrigger.js';
import { startTestSentinel, type TestSentinel } from '../support/redis-topology.js';

describe('rate limits on a Redis Sentinel group', { timeout: 120_000 }, () => {
  let sentinel: TestSentinel;
  let backend: StandinBackend;
  const running: Array<{ url: string; stop(): Promise<void> }> = [];

  beforeAll(async () => {
    sentinel = await startTestSentinel({ downAfterMs: 1000, failoverTimeoutMs: 3000 });
    backend = await startStandinBackend({ data: { shop: { items: [{ _id: 'i1' }] } } });
    const raw = {
      service: { id: 'limits-sentinel' },
      upstream: { url: backend.url, identity: { mode: 'headers' } },
      redis: { sentinel: { masterName: sentinel.masterName, nodes: sentinel.seeds } },
      users: await staticUsers({ root: ['root'], alice: ['user'] }),
      acl: { mode: 'own-routes', bootstrap: null },
      features: { webhooks: 'disabled' },
      limits: { policies: [{ name: 'per-key', by: 'key', limit: 10, window: '1d' }] },
    };
    running.push(await startTestOutrigger(raw), await startTestOutrigger(raw));
    const put = await call(running[0]!.url, '/_admin/acl/keys', {
      method: 'PUT',
      auth: basic('root', 'root-password'),
      body: { predicate: 'path-prefix(/keys)', roles: ['user'], apiKeys: { roles: ['reader'] } },
    });
    expect(put.status, put.text).toBe(201);
  }, 120_000);

  afterAll(async () => {
    for (const r of running) await r.stop();
    await backend?.close();
    await sentinel?.close();
  });

  /** 6 requests through each replica with a new key: the two share one allowance of 10. */
  async function spendAcrossReplicas(name: string): Promise<number[]> {
    const a = running[0]!;
    const b = running[1]!;
    const issued = await call(a.url, '/keys', { method: 'POST', auth: basic('alice', 'alice-password'), body: { name, roles: ['reader'] } });
    expect(issued.status, issued.text).toBe(201);
    const key = `Bearer ${issued.json.key}`;
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await call(a.url, '/shop/items', { auth: key })).status);
    for (let i = 0; i < 6; i++) statuses.push((await call(b.url, '/shop/items', { auth: key })).status);
    return statuses;
  }

  it('two replicas share one allowance through the master, and again through the promoted replica', async () => {
    const before = await spendAcrossReplicas('before failover');
    expect(before.filter((s) => s === 200).length).toBeLessThanOrEqual(10);
    expect(before.filter((s) => s === 200).length).toBeGreaterThanOrEqual(9);
    expect(before.at(-1)).toBe(429);

    const oldPort = await sentinel.masterPort();
    await sentinel.master.kill('SIGKILL');
    await sentinel.waitForFailover(oldPort, 60_000);
    // Both replicas reach the new master (a key issued through each answers 201) before the
    // allowance is judged: during the switch onRedisUnavailable: local may count on its own.
    for (const r of running) {
      await expect
        .poll(async () => (await call(r.url, '/keys', { method: 'POST', auth: basic('alice', 'alice-password'), body: { name: 'probe', roles: ['reader'] } })).status, { timeout: 60_000, interval: 500 })
        .toBe(201);
    }

    const after = await spendAcrossReplicas('after failover');
    expect(after.filter((s) => s >= 500)).toEqual([]);
    expect(after.filter((s) => s === 200).length).toBeLessThanOrEqual(10);
    expect(after.filter((s) => s === 200).length).toBeGreaterThanOrEqual(9);
    expect(after.at(-1)).toBe(429);
  });
});
