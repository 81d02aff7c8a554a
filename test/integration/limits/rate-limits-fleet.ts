/**
 * Two Outrigger replicas on one Redis topology (Cluster, Sentinel) with one `by: key` policy of 10
 * a day, and alice allowed to issue reader keys: what the topology rows of SPEC §10 share.
 */
import { expect } from 'vitest';
import { startStandinBackend, type StandinBackend } from '../../../examples/standin-backend/index.js';
import { call } from '../../support/clients/http-client.js';
import { basic, staticUsers, startTestOutrigger } from '../../support/outrigger.js';

export interface LimitedFleet {
  backend: StandinBackend;
  replicas: [{ url: string; stop(): Promise<void> }, { url: string; stop(): Promise<void> }];
  close(): Promise<void>;
}

export async function startLimitedFleet(serviceId: string, redis: Record<string, unknown>): Promise<LimitedFleet> {
  const backend = await startStandinBackend({ data: { shop: { items: [{ _id: 'i1' }] } } });
  const raw = {
    service: { id: serviceId },
    upstream: { url: backend.url, identity: { mode: 'headers' } },
    redis,
    users: await staticUsers({ root: ['root'], alice: ['user'] }),
    acl: { mode: 'own-routes', bootstrap: null },
    features: { webhooks: 'disabled' },
    limits: { policies: [{ name: 'per-key', by: 'key', limit: 10, window: '1d' }] },
  };
  const replicas: LimitedFleet['replicas'] = [await startTestOutrigger(raw), await startTestOutrigger(raw)];
  const put = await call(replicas[0].url, '/_admin/acl/keys', {
    method: 'PUT',
    auth: basic('root', 'root-password'),
    body: { predicate: 'path-prefix(/keys)', roles: ['user'], apiKeys: { roles: ['reader'] } },
  });
  expect(put.status, put.text).toBe(201);
  return {
    backend,
    replicas,
    async close() {
      for (const r of replicas) await r.stop();
      await backend.close();
    },
  };
}

/** Issues alice a key through the first replica, then sends 6 requests through each replica with it. */
export async function spendAcrossReplicas(fleet: LimitedFleet, name: string): Promise<{ keyId: string; statuses: number[] }> {
  const [a, b] = fleet.replicas;
  const issued = await call(a.url, '/keys', { method: 'POST', auth: basic('alice', 'alice-password'), body: { name, roles: ['reader'] } });
  expect(issued.status, issued.text).toBe(201);
  const key = `Bearer ${issued.json.key}`;
  const statuses: number[] = [];
  for (let i = 0; i < 6; i++) statuses.push((await call(a.url, '/shop/items', { auth: key })).status);
  // b learns the key on its first use (a cold read through the topology).
  for (let i = 0; i < 6; i++) statuses.push((await call(b.url, '/shop/items', { auth: key })).status);
  return { keyId: issued.json._id, statuses };
}
