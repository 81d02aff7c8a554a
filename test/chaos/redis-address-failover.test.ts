/**
 * A plain `redis.url` that is a service in front of a failover (a Kubernetes Service, a TCP load
 * balancer): after the failover the address leads to the new master, but the open connection
 * still reaches the old one, now a replica answering READONLY. Outrigger probes the address
 * (at most every 5 s) and reconnects only when the probe finds a master there; a replica that
 * stays a replica is not reconnected to over and over (tests in redis-refusals.test.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/util/free-port.js';
import { startTestRedis, type TestRedis } from '../support/redis/redis.js';
import { startTcpRelay, type TcpRelay } from '../support/peers/tcp-relay.js';
import { until } from '../support/wait.js';
import { startChaosStack, type ChaosStack } from './support.js';

describe('chaos: the Redis address fails over to a new master', () => {
  let newMaster: TestRedis;
  let service: TcpRelay;
  let stack: ChaosStack;

  beforeAll(async () => {
    newMaster = await startTestRedis();
    stack = await startChaosStack({
      service: 'chaos-address',
      redisUrl: async (oldMaster) => {
        service = await startTcpRelay(oldMaster.port);
        return service.url();
      },
    });
  }, 60_000);

  afterAll(async () => {
    await stack?.stop();
    await service?.close();
    await newMaster?.close();
  });

  it('writes answer 503 READONLY at first, then succeed on the new master without a restart', async () => {
    const issue = () => stack.issueKey('after failover');
    expect((await issue()).status).toBe(201);
    // The failover: the old master becomes a replica (of an address that is gone, so it keeps its
    // data), and the service now leads new connections to the new master.
    await stack.redis.client.replicaof('127.0.0.1', String(await freePort()));
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
