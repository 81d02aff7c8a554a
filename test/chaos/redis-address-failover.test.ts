/**
 * A plain `redis.url` that is a service in front of a failover (a Kubernetes Service, a TCP load
 * balancer): after the failover the address leads to the new master, but the open connection
 * still reaches the old one, now a replica answering READONLY. Outrigger probes the address
 * (at most every 5 s) and reconnects only when the probe finds a master there; a replica that
 * stays a replica is not reconnected to over and over (tests in redis-refusals.test.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStandinBackend, type StandinBackend } from '../../examples/standin-backend/index.js';
import { freePort } from '../../src/util/free-port.js';
import { call } from '../support/http-client.js';
import { basic, startTestOutrigger, staticUsers } from '../support/outrigger.js';
import { startTestRedis, type TestRedis } from '../support/redis.js';
import { startTcpRelay, type TcpRelay } from '../support/tcp-relay.js';
import { until } from '../support/wait.js';

const ALICE = basic('alice', 'alice-password');
const ROOT = basic('root', 'root-password');

describe('chaos: the Redis address fails over to a new master', () => {
  let oldMaster: TestRedis;
  let newMaster: TestRedis;
  let service: TcpRelay;
  let backend: StandinBackend;
  let proxy: Awaited<ReturnType<typeof startTestOutrigger>>;

  beforeAll(async () => {
    oldMaster = await startTestRedis();
    newMaster = await startTestRedis();
    service = await startTcpRelay(oldMaster.port);
    backend = await startStandinBackend({ data: { shop: { orders: [] } } });
    proxy = await startTestOutrigger({
      service: { id: 'chaos-address' },
      upstream: { url: backend.url },
      redis: { url: service.url() },
      users: await staticUsers({ alice: ['user'], root: ['root'] }),
      acl: { mode: 'own-routes' },
    });
    expect((await call(proxy.url, '/_admin/acl/keys', { method: 'PUT', auth: ROOT, body: { predicate: 'path-prefix(/keys)', roles: ['user'], priority: 1, apiKeys: { roles: ['user'], 'max-keys-per-user': 100 } } })).status).toBe(201);
  }, 60_000);

  afterAll(async () => {
    await oldMaster?.client.replicaof('NO', 'ONE').catch(() => {});
    await proxy?.stop();
    await backend?.close();
    await service?.close();
    await newMaster?.close();
    await oldMaster?.close();
  });

  it('writes answer 503 READONLY at first, then succeed on the new master without a restart', async () => {
    const issue = () => call(proxy.url, '/keys', { method: 'POST', auth: ALICE, body: { name: 'after failover', roles: ['user'] } });
    expect((await issue()).status).toBe(201);
    // The failover: the old master becomes a replica (of an address that is gone, so it keeps its
    // data), and the service now leads new connections to the new master.
    await oldMaster.client.replicaof('127.0.0.1', String(await freePort()));
    service.retarget(newMaster.port);
    const first = await issue();
    expect(first.status).toBe(503);
    expect(first.json.message).toMatch(/READONLY/);
    await until(async () => (await issue()).status === 201, 'a key issued on the new master', 15_000);
    // The key went to the new master, which held nothing before.
    const [records] = await newMaster.client.keys('*:apikeys');
    expect(records, 'no key records on the new master').toBeDefined();
    expect(await newMaster.client.hlen(records!)).toBe(1);
  }, 60_000);
});
