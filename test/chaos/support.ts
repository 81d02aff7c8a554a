/**
 * What the Redis chaos files share: Outrigger over the RESTHeart stand-in with static users
 * (alice: user, root: root), in own-routes mode, with a permission that lets users issue keys.
 * Each file chooses where Redis is reached (directly, or through a relay that slows it or
 * stands in for a service in front of a failover) and whether the worker runs.
 */
import { expect } from 'vitest';
import { startStandinBackend, type StandinBackend } from '../../examples/standin-backend/index.js';
import { call } from '../support/clients/http-client.js';
import { basic, startTestOutrigger, staticUsers, type RawConfig } from '../support/outrigger.js';
import { startTestRedis, type TestRedis } from '../support/redis/redis.js';

export const ALICE = basic('alice', 'alice-password');
export const ROOT = basic('root', 'root-password');

export interface ChaosStack {
  redis: TestRedis;
  backend: StandinBackend;
  proxy: Awaited<ReturnType<typeof startTestOutrigger>>;
  /** Issues alice a key (POST /keys) and answers the call. */
  issueKey(name: string): ReturnType<typeof call>;
  /** Adds an HTTP webhook to `url` for POSTs under /shop/orders; its id. */
  ordersWebhook(url: string): Promise<string>;
  stop(): Promise<void>;
}

export async function startChaosStack(o: { service: string; redisUrl?: (redis: TestRedis) => Promise<string> | string; worker?: boolean; config?: RawConfig }): Promise<ChaosStack> {
  const redis = await startTestRedis();
  const backend = await startStandinBackend({ data: { shop: { orders: [] } } });
  const proxy = await startTestOutrigger(
    {
      service: { id: o.service },
      upstream: { url: backend.url },
      redis: { url: (await o.redisUrl?.(redis)) ?? redis.url },
      users: await staticUsers({ alice: ['user'], root: ['root'] }),
      acl: { mode: 'own-routes' },
      webhooks: { allowPrivateTargets: ['127.0.0.0/8'], retrySchedule: ['300ms'] },
      ...o.config,
    },
    { worker: o.worker ?? false },
  );
  const permission = await call(proxy.url, '/_admin/acl/keys', {
    method: 'PUT',
    auth: ROOT,
    body: { predicate: 'path-prefix(/keys)', roles: ['user'], priority: 1, apiKeys: { roles: ['user'], 'max-keys-per-user': 1000 } },
  });
  expect(permission.status, permission.text).toBe(201);
  return {
    redis,
    backend,
    proxy,
    issueKey: (name) => call(proxy.url, '/keys', { method: 'POST', auth: ALICE, body: { name, roles: ['user'] } }),
    async ordersWebhook(url) {
      const hook = await call(proxy.url, '/_admin/webhooks', { method: 'POST', auth: ROOT, body: { name: 'orders', type: 'http', url, condition: "method(POST) and path-prefix('/shop/orders')" } });
      expect(hook.status, hook.text).toBe(201);
      return hook.json._id;
    },
    async stop() {
      await redis.client.replicaof('NO', 'ONE').catch(() => {});
      await proxy.stop();
      await backend.close();
      await redis.close();
    },
  };
}
