/**
 * Issue 53 item 4, "costs that are not charged": under `units: cost` (SPEC §10) an API key with
 * 150 units a day tries to read more than 150 documents' worth:
 * - through mutations whose selection joins 90 orders (charged 1 each before the fix, so the
 *   key could read 90 documents per unit); the second is refused 429 before any backend write;
 * - through a subscription whose every event joins 10 orders (events were never charged): the
 *   subscription ends with an error naming the policy and when to retry once the allowance is
 *   spent, over SSE and over WebSocket;
 * - through a resume (`Last-Event-ID`) that replays retained changes: replayed events are
 *   charged too, so a reconnect cannot replay the backlog for 1 unit.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStandinBackend, type StandinBackend } from '../../../examples/standin-backend/index.js';
import { startTestRedis, type TestRedis } from '../../support/redis/redis.js';
import { basic, startTestOutrigger, staticUsers } from '../../support/outrigger.js';
import { call } from '../../support/clients/http-client.js';
import { until } from '../../support/wait.js';
import { openSubscriptions, rawSse, sseSubscribe, subscribed, wsSubscribe } from '../../integration/subscriptions/graphql-subscriptions-helpers.js';
import { costData, usersApp } from '../../integration/limits/rate-limits-cost-helpers.js';

const ROOT = basic('root', 'root-password');
const ALICE = basic('alice', 'alice-password');
/** An event of this selection is estimated at 11 documents: the change's, and 10 joined orders. */
const JOINING = 'subscription { userChanged { op document { name orders(limit: 10) { n } } } }';
const REFUSAL = /^rate limit 'cost': 150 units per 86400 s \(each event of this subscription costs 11 units\); retry in \d+ s; this subscription ended/;

describe('costs that are not charged (issue 53 item 4)', () => {
  let redis: TestRedis;
  let backend: StandinBackend;
  let proxy: Awaited<ReturnType<typeof startTestOutrigger>>;
  let n = 0;
  /** A write by root (no `by: key` policy covers it): one change of users. */
  const rename = async (id = 'u2') => expect((await call(proxy.url, `/shop/users/${id}`, { method: 'PATCH', auth: ROOT, body: { $set: { name: `v${++n}` } } })).status).toBe(200);
  const issue = async (name: string) => {
    const issued = await call(proxy.url, '/keys', { method: 'POST', auth: ALICE, body: { name, roles: ['reader'] } });
    expect(issued.status, issued.text).toBe(201);
    return { id: issued.json._id as string, bearer: `Bearer ${issued.json.key}` };
  };
  const noSubscriptions = () => until(async () => (await openSubscriptions(proxy.url)) === 0, 'earlier subscriptions closed');

  beforeAll(async () => {
    redis = await startTestRedis();
    backend = await startStandinBackend({ data: costData() });
    proxy = await startTestOutrigger({
      service: { id: 'cost-charging-abuse' },
      upstream: { url: backend.url },
      redis: { url: redis.url },
      users: await staticUsers({ root: ['root'], alice: ['user'] }),
      acl: { mode: 'enforce' },
      features: { webhooks: 'disabled' },
      limits: { policies: [{ name: 'cost', by: 'key', limit: 150, window: '1d', units: 'cost', condition: "path-prefix('/graphql')" }] },
    });
    const put = async (id: string, doc: unknown) => expect((await call(proxy.url, `/_admin/acl/${id}`, { method: 'PUT', auth: ROOT, body: doc })).status).toBe(201);
    await put('keys', { predicate: 'path-prefix(/keys)', roles: ['user'], priority: 1, apiKeys: { roles: ['reader'] } });
    await put('read', { predicate: 'method(GET) and path-prefix(/shop)', roles: ['reader'], priority: 1 });
    await put('write', { predicate: 'method(PATCH) and path-prefix(/shop/users)', roles: ['reader'], priority: 1 });
    await put('gql', { predicate: 'path-prefix(/graphql)', roles: ['reader'], priority: 1 });
    expect((await call(proxy.url, '/gql-apps/costs', { method: 'PUT', auth: ROOT, body: usersApp('costs') })).status).toBe(201);
    const tight = usersApp('tight') as { descriptor: Record<string, unknown> };
    tight.descriptor.maxCost = { documents: 50 };
    expect((await call(proxy.url, '/gql-apps/tight', { method: 'PUT', auth: ROOT, body: tight })).status).toBe(201);
  });

  afterAll(async () => {
    await proxy?.stop();
    await backend?.close();
    await redis?.close();
  });

  it('a mutation joining 90 orders costs 91 units, so the second is refused 429 before any backend write', async () => {
    const key = await issue('mutations');
    const mutate = (name: string) =>
      call(proxy.url, '/graphql/costs', { method: 'POST', auth: key.bearer, body: { query: `mutation { renameUser(id: "u1", name: "${name}") { name orders(limit: 90) { n } } }` } });
    const first = await mutate('first');
    expect(first.status, first.text).toBe(200);
    expect(first.json.data.renameUser.orders).toHaveLength(90);
    backend.clearRequests();
    const second = await mutate('second');
    expect(second.status, second.text).toBe(429);
    // SPEC §15: GraphQL-shaped on /graphql/<uri> (it was RESTHeart's body).
    expect(second.json.errors[0].extensions.code).toBe('TOO_MANY_REQUESTS');
    expect(second.json.errors[0].message).toMatch(/^rate limit 'cost': 150 units per 86400 s \(this request costs 91 units\); retry in \d+ s$/);
    expect(Number(second.headers['retry-after'])).toBeGreaterThan(0);
    expect(backend.requests).toEqual([]);
    expect((await call(proxy.url, '/shop/users/u1', { auth: ROOT })).json.name).toBe('first');
  });

  it('SSE: a subscriber gets the events its allowance pays for (1 + 13 × 11 of 150), then an error naming the policy and the retry time, then the end', async () => {
    await noSubscriptions();
    const key = await issue('sse-events');
    const sub = sseSubscribe(proxy.url, 'costs', JOINING, { auth: key.bearer });
    try {
      await subscribed(proxy.url, 1);
      for (let i = 0; i < 16; i++) await rename();
      await until(() => sub.completed || sub.error !== undefined || sub.values.length >= 16, 'the subscription ended or had every event');
      const data = sub.values.filter((v) => v.data);
      expect(data).toHaveLength(13);
      const last = sub.values.at(-1)!;
      expect(last.errors?.[0]?.message).toMatch(REFUSAL);
      expect(last.errors?.[0]?.extensions?.code).toBe('TOO_MANY_REQUESTS');
      await until(() => sub.completed, 'the subscription completed');
      await noSubscriptions();
    } finally {
      sub.close();
    }
  });

  it('WebSocket: the same subscriber is ended with an error message once the allowance is spent', async () => {
    await noSubscriptions();
    const key = await issue('ws-events');
    const sub = wsSubscribe(proxy.url, 'costs', JOINING, { auth: key.bearer });
    try {
      await subscribed(proxy.url, 1);
      for (let i = 0; i < 16; i++) await rename();
      await until(() => sub.error !== undefined || sub.completed || sub.values.length >= 16, 'the subscription ended or had every event');
      expect(sub.values).toHaveLength(13);
      const errors = sub.error as Array<{ message: string; extensions?: { code?: string } }>;
      expect(errors[0]?.message).toMatch(REFUSAL);
      await noSubscriptions();
    } finally {
      sub.close();
    }
  });

  it('a resume replaying 20 retained changes is charged per replayed event: 13 pass, then the error, not the whole backlog for 1 unit', async () => {
    await noSubscriptions();
    // Root keeps the collection subscribed (changes are published only then) and sees each change's id.
    const watcher = await rawSse(proxy.url, 'costs', 'subscription { userChanged { op } }', { auth: ROOT });
    let resumed: Awaited<ReturnType<typeof rawSse>> | undefined;
    try {
      await subscribed(proxy.url, 1);
      await rename('u3');
      const [marker] = await watcher.waitForNexts(1);
      for (let i = 0; i < 20; i++) await rename('u3');
      await watcher.waitForNexts(21);
      const key = await issue('resume');
      resumed = await rawSse(proxy.url, 'costs', JOINING, { auth: key.bearer, lastEventId: marker!.id! });
      expect(resumed.status).toBe(200);
      const r = resumed;
      await until(() => r.ended || r.nexts().some((e) => e.payload.errors) || r.nexts().length >= 20, 'the resume ended with an error or replayed everything');
      const nexts = r.nexts();
      expect(nexts.filter((e) => e.payload.data)).toHaveLength(13);
      expect(nexts.at(-1)!.payload.errors?.[0]?.message).toMatch(REFUSAL);
    } finally {
      await resumed?.close();
      await watcher.close();
    }
  });

  it('a subscription whose one event would read past maxCost is refused at the start (400 QUERY_TOO_COSTLY), as the same query is', async () => {
    const key = await issue('too-costly');
    const sub = await rawSse(proxy.url, 'tight', 'subscription { userChanged { document { orders(limit: 60) { n } } } }', { auth: key.bearer });
    try {
      expect(sub.status).toBe(400);
      const body = JSON.parse(await sub.text()) as { errors: Array<{ message: string; extensions: { code: string } }> };
      expect(body.errors[0]!.extensions.code).toBe('QUERY_TOO_COSTLY');
      expect(body.errors[0]!.message).toMatch(/^each event of this subscription may need 2 backend reads and 61 documents .* at most 50 reads, 50 documents/);
    } finally {
      await sub.close();
    }
    const query = await call(proxy.url, '/graphql/tight', { method: 'POST', auth: key.bearer, body: { query: '{ user(id: "u1") { orders(limit: 60) { n } } }' } });
    expect(query.status).toBe(400);
    expect(query.json.errors[0].extensions.code).toBe('QUERY_TOO_COSTLY');
  });
});
