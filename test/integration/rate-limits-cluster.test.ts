/**
 * SPEC §10 on Redis Cluster: the lease script and the usage writes touch only keys carrying the
 * service's hash tag, so two replicas on a 3-master cluster share one allowance and the usage
 * pipeline lands in one slot (no CROSSSLOT, no MOVED left unfollowed).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStandinBackend, type StandinBackend } from '../../examples/standin-backend/index.js';
import { call } from '../support/http-client.js';
import { basic, staticUsers, startTestOutrigger } from '../support/outrigger.js';
import { startTestCluster, type TestCluster } from '../support/redis-topology.js';

describe('rate limits on Redis Cluster', { timeout: 90_000 }, () => {
  let cluster: TestCluster;
  let backend: StandinBackend;
  const running: Array<{ url: string; stop(): Promise<void> }> = [];

  beforeAll(async () => {
    cluster = await startTestCluster({ masters: 3, replicas: 0 });
    backend = await startStandinBackend({ data: { shop: { items: [{ _id: 'i1' }] } } });
    const raw = {
      service: { id: 'limits-cluster' },
      upstream: { url: backend.url, identity: { mode: 'headers' } },
      redis: { cluster: { nodes: cluster.seeds } },
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
  }, 90_000);

  afterAll(async () => {
    for (const r of running) await r.stop();
    await backend?.close();
    await cluster?.close();
  });

  it('two replicas share one allowance, and the usage is written', async () => {
    const a = running[0]!;
    const b = running[1]!;
    const issued = await call(a.url, '/keys', { method: 'POST', auth: basic('alice', 'alice-password'), body: { name: 'cluster', roles: ['reader'] } });
    expect(issued.status, issued.text).toBe(201);
    const key = `Bearer ${issued.json.key}`;
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await call(a.url, '/shop/items', { auth: key })).status);
    // b learns the key on its first use (a cold read through the cluster).
    for (let i = 0; i < 6; i++) statuses.push((await call(b.url, '/shop/items', { auth: key })).status);
    expect(statuses.filter((s) => s === 200).length).toBeLessThanOrEqual(10);
    expect(statuses.filter((s) => s === 200).length).toBeGreaterThanOrEqual(9);
    expect(statuses.at(-1)).toBe(429);
    await expect
      .poll(async () => {
        const usage = await call(a.url, `/_admin/keys/${issued.json._id}/usage?from=${new Date().toISOString().slice(0, 10)}`, { auth: basic('root', 'root-password') });
        return usage.json?.[0] ? usage.json[0].requests + usage.json[0].refused : 0;
      }, { timeout: 20_000, interval: 500 })
      .toBe(12);
  });
});
