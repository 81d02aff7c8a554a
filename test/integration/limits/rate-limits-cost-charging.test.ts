/**
 * Issue 53 item 4, through the real proxy, Redis and the RESTHeart stand-in: under `units: cost`
 * (SPEC §10) a GraphQL mutation is charged what it reads (its read-back and the joins of its
 * selection), as the same selection is as a query; each delivered subscription event is charged
 * its estimated cost (SPEC §6.5), counted in the key's usage; and charging events takes slices
 * ahead like requests do: no Redis round trip per event in the steady state. A reload of
 * `limits.policies` (issue 48) applies to a subscription already running.
 */
import { describe, expect, it } from 'vitest';
import { call } from '../../support/clients/http-client.js';
import { as, ROOT, useStack } from '../../support/fixtures.js';
import { until } from '../../support/wait.js';
import { rateLimitHeaders } from './rate-limit-helpers.js';
import { openSubscriptions, rawSse, subscribed } from '../subscriptions/graphql-subscriptions-helpers.js';
import { costData, usersApp } from './rate-limits-cost-helpers.js';

const ALICE = as('alice');
const today = () => new Date().toISOString().slice(0, 10);

describe('units: cost charges mutations by what they read and subscription events by their estimate (issue 53)', () => {
  const stack = useStack({
    service: 'limits-cost-charging',
    backend: { data: costData() },
    users: { root: ['root'], alice: ['user'] },
    config: {
      upstream: { identity: { mode: 'headers' } },
      acl: { mode: 'enforce' },
      features: { webhooks: 'disabled' },
      limits: {
        policies: [
          { name: 'cost', by: 'key', limit: 500, window: '1d', units: 'cost', condition: "path-prefix('/graphql/costs')" },
          { name: 'big', by: 'key', limit: 100_000, window: '1d', units: 'cost', condition: "path-prefix('/graphql/big')" },
        ],
      },
    },
    permissions: {
      keys: { predicate: 'path-prefix(/keys)', roles: ['user'], apiKeys: { roles: ['reader'] } },
      read: { predicate: 'method(GET) and path-prefix(/shop)', roles: ['reader'] },
      write: { predicate: 'method(PATCH) and path-prefix(/shop/users)', roles: ['reader'] },
      gql: { predicate: 'path-prefix(/graphql)', roles: ['reader'] },
    },
    apps: { costs: usersApp('costs'), big: usersApp('big') },
  });

  async function issue(name: string): Promise<{ id: string; bearer: string }> {
    const issued = await call(stack.proxy.url, '/keys', { method: 'POST', auth: ALICE, body: { name, roles: ['reader'] } });
    expect(issued.status, issued.text).toBe(201);
    return { id: issued.json._id, bearer: `Bearer ${issued.json.key}` };
  }
  const gql = (uri: string, auth: string, query: string) =>
    call(stack.proxy.url, `/graphql/${uri}`, { method: 'POST', auth, headers: { accept: 'application/graphql-response+json' }, body: { query } });
  const remaining = (res: Parameters<typeof rateLimitHeaders>[0]) => rateLimitHeaders(res).limit?.r;
  const usageOf = async (keyId: string) => (await call(stack.proxy.url, `/keys/${keyId}/usage?from=${today()}&to=${today()}`, { auth: ALICE })).json[0];

  it('a mutation costs its read-back and its joins, as the same selection does as a query (91, not 1); one answering a Boolean costs 1', async () => {
    const key = await issue('mutation');
    const query = await gql('costs', key.bearer, '{ user(id: "u1") { name orders(limit: 90) { n } } }');
    expect(query.status, query.text).toBe(200);
    expect(query.json.data.user.orders).toHaveLength(90);
    expect(remaining(query)).toBe(500 - 91);
    const mutation = await gql('costs', key.bearer, 'mutation { renameUser(id: "u1", name: "Ada") { name orders(limit: 90) { n } } }');
    expect(mutation.status, mutation.text).toBe(200);
    expect(mutation.json.data.renameUser.name).toBe('Ada');
    expect(remaining(mutation)).toBe(500 - 91 - 91);
    const flag = await gql('costs', key.bearer, 'mutation { setName(id: "u1", name: "Ada") }');
    expect(flag.status, flag.text).toBe(200);
    expect(remaining(flag)).toBe(500 - 91 - 91 - 1);
    await expect.poll(() => usageOf(key.id), { timeout: 10_000, interval: 300 }).toEqual({ day: today(), requests: 3, units: 183, refused: 0 });
  });

  it('each delivered subscription event is charged its estimate (11 units: the change and 10 joined orders), in the key usage', async () => {
    const key = await issue('events');
    const sub = await rawSse(stack.proxy.url, 'costs', 'subscription { userChanged { op document { name orders(limit: 10) { n } } } }', { auth: key.bearer });
    expect(sub.status).toBe(200);
    try {
      await subscribed(stack.proxy.url, 1);
      for (let i = 0; i < 5; i++) expect((await call(stack.proxy.url, '/shop/users/u2', { method: 'PATCH', auth: ROOT, body: { $set: { name: `n${i}` } } })).status).toBe(200);
      const events = await sub.waitForNexts(5);
      expect(events.map((e) => (e.payload.data?.userChanged as { document: { orders: unknown[] } }).document.orders.length)).toEqual([10, 10, 10, 10, 10]);
      // The start (1) and five events of 11; what is left shows on the next request (a query costing 1).
      await until(async () => (await usageOf(key.id)).units === 1 + 5 * 11, 'the events counted in the usage');
      const next = await gql('costs', key.bearer, '{ user(id: "u3") { name } }');
      expect(remaining(next)).toBe(500 - 1 - 55 - 1);
      await expect.poll(() => usageOf(key.id), { timeout: 10_000, interval: 300 }).toEqual({ day: today(), requests: 2, units: 57, refused: 0 });
    } finally {
      await sub.close();
    }
    await until(async () => (await openSubscriptions(stack.proxy.url)) === 0, 'the subscription closed');
  });

  it('charging 200 events sends Redis a handful of leases, not one per event (slices taken ahead)', async () => {
    const key = await issue('hot-path');
    const sub = await rawSse(stack.proxy.url, 'big', 'subscription { userChanged { op document { name } } }', { auth: key.bearer });
    expect(sub.status, await sub.text()).toBe(200);
    let leases = 0;
    try {
      await subscribed(stack.proxy.url, 1);
      const monitor = await stack.redis.client.monitor();
      monitor.on('monitor', (_time: string, args: string[]) => {
        if (/^evalsha$/i.test(args[0] ?? '') && args.some((a) => a.includes(':rl:big:'))) leases++;
      });
      try {
        for (let i = 0; i < 200; i++) {
          const res = await call(stack.proxy.url, '/shop/users/u3', { method: 'PATCH', auth: ROOT, body: { $set: { name: `m${i}` } } });
          expect(res.status, res.text).toBe(200);
        }
        await sub.waitForNexts(200, 30_000);
      } finally {
        monitor.disconnect();
      }
      await until(async () => (await usageOf(key.id)).units === 1 + 200, 'the events counted in the usage');
    } finally {
      await sub.close();
    }
    // Slices of 5,000 units (5 % of 100,000): the start's lease covers all 200 events of 1 unit.
    expect(leases).toBeLessThanOrEqual(2);
  }, 60_000);
  // Last in the file: it lowers the `cost` policy the tests above count on, and puts it back after.
  it('a reload lowering a units: cost policy charges a running subscription under the new limit: its next event is refused (issue 48)', async () => {
    const key = await issue('reloaded');
    const sub = await rawSse(stack.proxy.url, 'costs', 'subscription { userChanged { op document { name orders(limit: 10) { n } } } }', { auth: key.bearer });
    expect(sub.status).toBe(200);
    const config = stack.proxy.context.config;
    const reload = stack.proxy.reloadables.find((r) => r.path === 'limits.policies')!;
    const withCostLimit = (limit: number) => ({ ...config, limits: { ...config.limits, policies: config.limits.policies.map((p) => (p.name === 'cost' ? { ...p, limit } : p)) } });
    try {
      await subscribed(stack.proxy.url, 1);
      expect((await call(stack.proxy.url, '/shop/users/u2', { method: 'PATCH', auth: ROOT, body: { $set: { name: 'before' } } })).status).toBe(200);
      await sub.waitForNexts(1);
      // 1 + 11 units spent, and a slice of 25 leased; of a limit of 30 the next event's 11 no longer fit.
      reload.apply(withCostLimit(30));
      expect((await call(stack.proxy.url, '/shop/users/u2', { method: 'PATCH', auth: ROOT, body: { $set: { name: 'after' } } })).status).toBe(200);
      const [, refused] = await sub.waitForNexts(2);
      expect(refused!.payload.errors?.[0]?.message).toMatch(/^rate limit 'cost': 30 units per 86400 s \(each event of this subscription costs 11 units\); retry in \d+ s; this subscription ended/);
    } finally {
      reload.apply(withCostLimit(500));
      await sub.close();
    }
    await until(async () => (await openSubscriptions(stack.proxy.url)) === 0, 'the subscription closed');
  });
});
