/**
 * Two replicas serving GraphQL subscriptions over a Redis topology (Cluster or Sentinel), for the
 * rows that run the subscription scripts (store/scripts/subscriptions/) there: the stand-in
 * backend, carol reading every order, the `subs` app, and helpers to write and to read what a
 * subscriber got (issue 53).
 */
import { expect } from 'vitest';
import { startStandinBackend, type StandinBackend } from '../../../examples/standin-backend/index.js';
import { basic, startTestOutrigger, staticUsers } from '../../support/outrigger.js';
import { until } from '../../support/wait.js';
import { call } from '../graphql/graphql-helpers.js';
import { putSubscriptionPermissions, subscriptionApp, type rawSse } from './graphql-subscriptions-helpers.js';

export const ROOT = basic('root', 'root-password');
export const CAROL = basic('carol', 'carol-password');

export interface SubscriptionFleet {
  backend: StandinBackend;
  a: Awaited<ReturnType<typeof startTestOutrigger>>;
  b: Awaited<ReturnType<typeof startTestOutrigger>>;
  close(): Promise<void>;
}

/** Two replicas of `serviceId` on the topology `redis` names (replica a on `redisOfA` when given: a relay, say), both serving the `subs` app. */
export async function startSubscriptionFleet(serviceId: string, redis: Record<string, unknown>, redisOfA = redis): Promise<SubscriptionFleet> {
  const backend = await startStandinBackend({ data: { shop: { orders: [] } } });
  const raw = {
    service: { id: serviceId },
    upstream: { url: backend.url, identity: { mode: 'headers' } },
    redis,
    users: await staticUsers({ root: ['root'], carol: ['everything'] }),
    acl: { mode: 'enforce' as const },
    features: { webhooks: 'disabled' },
  };
  const a = await startTestOutrigger({ ...raw, redis: redisOfA });
  const b = await startTestOutrigger(raw);
  await putSubscriptionPermissions(a.url, ROOT);
  expect((await call(a.url, '/gql-apps/subs', { method: 'PUT', auth: ROOT, body: subscriptionApp() })).status).toBe(201);
  await until(async () => (await call(b.url, '/graphql/subs', { method: 'POST', auth: CAROL, body: { query: '{ __typename }' } })).status === 200, 'replica b serving the app', 20_000);
  return {
    backend,
    a,
    b,
    async close() {
      await a.stop();
      await b.stop();
      await backend.close();
    },
  };
}

/** A REST insert of order `number` (status `status`) through `base`; its answer's status. */
export async function insertOrder(base: string, number: number, status: string): Promise<number> {
  return (await call(base, '/shop/orders', { method: 'POST', auth: CAROL, body: { number, status } })).status;
}

type Sub = Awaited<ReturnType<typeof rawSse>>;

/** The order numbers a subscriber of `orderChanged { document { number } }` got, in order. */
export function numbersOf(sub: Sub): number[] {
  return sub
    .nexts()
    .map((e) => (e.payload.data?.orderChanged as { document?: { number?: number } } | undefined)?.document?.number)
    .filter((n): n is number => typeof n === 'number');
}

/** The error codes a subscriber was told (CHANGES_LOST and the like), in order. */
export function errorCodesOf(sub: Sub): string[] {
  return sub
    .nexts()
    .flatMap((e) => e.payload.errors ?? [])
    .map((e) => String(e.extensions?.code));
}
