/**
 * Issue 38, bad input and abuse of GraphQL subscriptions (SPEC §6.5). Each row gets a clear error
 * and nothing grows without bound:
 * - a find widened through arguments (an operator object, a whole-find argument) is refused;
 * - thousands of subscriptions from one user or one address stop at `maxPerPrincipal`, and the
 *   process at `maxPerProcess`;
 * - WebSocket frames that are not the protocol, an oversize `connection_init`, a subscribe before
 *   `connection_init`, an unknown credentials shape;
 * - a WebSocket client that never reads is cut once its socket holds more than 1 MiB, and a
 *   shutdown gives SSE subscribers `retry:` and WebSocket ones 1001.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { startStandinBackend, type StandinBackend } from '../../../examples/standin-backend/index.js';
import { startTestRedis, type TestRedis } from '../../support/redis/redis.js';
import { basic, startTestOutrigger, staticUsers } from '../../support/outrigger.js';
import { until } from '../../support/wait.js';
import { call } from '../../support/clients/http-client.js';
import { openSubscriptions, putSubscriptionPermissions, rawSse, subscribed, subscriptionApp } from '../../integration/subscriptions/graphql-subscriptions-helpers.js';

const ROOT = basic('root', 'root-password');
const CAROL = basic('carol', 'carol-password');
const ALICE = basic('alice', 'alice-password');

/** A raw graphql-transport-ws socket: every message and the close, for rows the real client would not send. */
async function rawWs(base: string, path = '/graphql/subs', headers: Record<string, string> = {}) {
  const ws = new WebSocket(`${base.replace(/^http/, 'ws')}${path}`, 'graphql-transport-ws', { headers });
  const messages: Array<Record<string, unknown>> = [];
  let closed: { code: number; reason: string } | undefined;
  let refused: number | undefined;
  ws.on('message', (m) => messages.push(JSON.parse(String(m)) as Record<string, unknown>));
  ws.on('close', (code, reason) => (closed = { code, reason: String(reason) }));
  ws.on('unexpected-response', (_req, res) => {
    refused = res.statusCode;
    ws.terminate();
  });
  ws.on('error', () => {});
  await until(() => ws.readyState === WebSocket.OPEN || closed !== undefined || refused !== undefined, 'the socket opened or was refused');
  return {
    ws,
    messages,
    get closed() {
      return closed;
    },
    get refused() {
      return refused;
    },
    send: (m: unknown) => ws.send(typeof m === 'string' ? m : JSON.stringify(m)),
  };
}

describe('GraphQL subscriptions under abuse (issue 38)', () => {
  let redis: TestRedis;
  let backend: StandinBackend;
  let proxy: Awaited<ReturnType<typeof startTestOutrigger>>;

  beforeAll(async () => {
    redis = await startTestRedis();
    backend = await startStandinBackend({ data: { shop: { orders: [] } } });
    proxy = await startTestOutrigger({
      service: { id: 'gql-subs-abuse' },
      upstream: { url: backend.url },
      redis: { url: redis.url },
      users: await staticUsers({ root: ['root'], alice: ['owner'], carol: ['everything'] }),
      acl: { mode: 'enforce' },
      subscriptions: { maxPerPrincipal: 5, maxPerProcess: 12 },
    });
    await putSubscriptionPermissions(proxy.url, ROOT);
    await call(proxy.url, '/_admin/acl/anonymous-graphql', { method: 'PUT', auth: ROOT, body: { predicate: 'path-prefix(/graphql/subs)', roles: ['$unauthenticated'], priority: 1 } });
    expect((await call(proxy.url, '/gql-apps/subs', { method: 'PUT', auth: ROOT, body: subscriptionApp() })).status).toBe(201);
  });

  afterAll(async () => {
    await proxy?.stop();
    await backend?.close();
    await redis?.close();
  });

  it('an argument holding an operator cannot widen the find (400 naming it); a whole-find argument is refused at write', async () => {
    const app = subscriptionApp() as { schema: string; mappings: { Subscription: Record<string, unknown> } };
    app.schema = app.schema.replace('orderById(id: ObjectId!): OrderChange', 'orderById(id: ObjectId!): OrderChange\n    anything(filter: BsonDocument, status: BsonDocument): OrderChange');
    app.mappings.Subscription.anything = { db: 'shop', collection: 'orders', on: ['insert'], find: { $arg: 'filter' } };
    const refused = await call(proxy.url, '/gql-apps/subs-wide', { method: 'PUT', auth: ROOT, body: { ...app, _id: 'subs-wide', descriptor: { uri: 'subs/wide' } } });
    expect(refused.status).toBe(400);
    expect(JSON.stringify(refused.json)).toContain('mappings.Subscription.anything.find must be a query document');
    app.mappings.Subscription.anything = { db: 'shop', collection: 'orders', on: ['insert'], find: { status: { $arg: 'status' } } };
    expect((await call(proxy.url, '/gql-apps/subs-wide', { method: 'PUT', auth: ROOT, body: { ...app, _id: 'subs-wide', descriptor: { uri: 'subs/wide' } } })).status).toBe(201);
    // The scalar's own guard refuses `$` keys in the variable (400 before the subscription starts).
    const sub = await rawSse(proxy.url, 'subs/wide', 'subscription($s: BsonDocument) { anything(status: $s) { op } }', { auth: CAROL, variables: { s: { $ne: 'nothing' } } });
    expect(sub.status).toBe(400);
    expect(await sub.text()).toMatch(/\$ne/);
  });

  it('thousands of subscriptions from one user, or one address, stop at maxPerPrincipal; the process at maxPerProcess', async () => {
    const attempts = await Promise.all(Array.from({ length: 40 }, () => rawSse(proxy.url, 'subs', 'subscription { myOrders { op } }', { auth: ALICE })));
    expect(attempts.filter((s) => s.status === 200)).toHaveLength(5);
    expect(attempts.filter((s) => s.status === 429)).toHaveLength(35);
    const anonymous = await Promise.all(Array.from({ length: 20 }, () => rawSse(proxy.url, 'subs', 'subscription { orderChanged { op } }')));
    expect(anonymous.filter((s) => s.status === 200).length).toBe(5);
    const more = await Promise.all(Array.from({ length: 5 }, () => rawSse(proxy.url, 'subs', 'subscription { orderChanged { op } }', { auth: CAROL })));
    // 5 + 5 open already: two more fit the process's 12.
    expect(more.filter((s) => s.status === 200)).toHaveLength(2);
    const refusal = await more.find((s) => s.status === 429)!.text();
    expect(refusal).toContain('maxPerProcess');
    await Promise.all([...attempts, ...anonymous, ...more].map((s) => s.close()));
    await until(async () => (await openSubscriptions(proxy.url)) === 0, 'every subscription released');
  });

  it('WebSocket frames that are not the protocol close the socket with 4400; subscribe before connection_init with 4401', async () => {
    const garbage = await rawWs(proxy.url);
    garbage.send('this is not json');
    await until(() => garbage.closed !== undefined, 'closed');
    expect(garbage.closed!.code).toBe(4400);
    const unknown = await rawWs(proxy.url);
    unknown.send({ type: 'connection_init' });
    await until(() => unknown.messages.length > 0, 'ack');
    unknown.send({ type: 'launch_missiles', id: '1' });
    await until(() => unknown.closed !== undefined, 'closed');
    expect(unknown.closed!.code).toBe(4400);
    const early = await rawWs(proxy.url);
    early.send({ type: 'subscribe', id: '1', payload: { query: 'subscription { orderChanged { op } }' } });
    await until(() => early.closed !== undefined, 'closed');
    expect(early.closed!.code).toBe(4401);
  });

  it('an oversize connection_init closes with 1009; a wrong credential in it with 4401 naming why; an upgrade with a wrong header is a 401', async () => {
    const big = await rawWs(proxy.url);
    big.send({ type: 'connection_init', payload: { authorization: CAROL, junk: 'x'.repeat(200 * 1024) } });
    await until(() => big.closed !== undefined, 'closed');
    expect(big.closed!.code).toBe(1009);
    const wrong = await rawWs(proxy.url);
    wrong.send({ type: 'connection_init', payload: { authorization: basic('carol', 'nope') } });
    await until(() => wrong.closed !== undefined, 'closed');
    expect(wrong.closed!.code).toBe(4401);
    const odd = await rawWs(proxy.url);
    odd.send({ type: 'connection_init', payload: { authorization: { bearer: 'x' } } });
    await until(() => odd.closed !== undefined, 'closed');
    expect(odd.closed!.code).toBe(4400);
    const header = await rawWs(proxy.url, '/graphql/subs', { authorization: basic('carol', 'nope') });
    expect(header.refused).toBe(401);
    const nowhere = await rawWs(proxy.url, '/graphql/nope');
    expect(nowhere.refused).toBe(404);
  });

  it('a WebSocket subscriber that never reads is cut; another gets its changes', async () => {
    const stuck = await rawWs(proxy.url);
    stuck.send({ type: 'connection_init', payload: { authorization: CAROL } });
    await until(() => stuck.messages.length > 0, 'ack');
    stuck.send({ type: 'subscribe', id: '1', payload: { query: 'subscription { orderChanged(status: "big") { document { pad } } }' } });
    const reader = await rawSse(proxy.url, 'subs', 'subscription { orderChanged(status: "big") { document { number } } }', { auth: CAROL });
    await subscribed(proxy.url, 2);
    (stuck.ws as unknown as { _socket: { pause(): void } })._socket.pause();
    const pad = 'x'.repeat(60_000);
    for (let i = 0; i < 300; i += 10) {
      await Promise.all(Array.from({ length: 10 }, (_, k) => call(proxy.url, '/shop/orders', { method: 'POST', auth: CAROL, body: { number: i + k, status: 'big', pad } })));
    }
    await reader.waitForNexts(300, 60_000);
    await until(async () => (await openSubscriptions(proxy.url)) === 1, 'the stuck WebSocket subscriber cut', 30_000);
    await reader.close();
  }, 120_000);

  it('on shutdown SSE subscribers get retry: (no complete) and WebSocket ones close 1001', async () => {
    const sse = await rawSse(proxy.url, 'subs', 'subscription { orderChanged { op } }', { auth: CAROL });
    const ws = await rawWs(proxy.url);
    ws.send({ type: 'connection_init', payload: { authorization: CAROL } });
    await until(() => ws.messages.length > 0, 'ack');
    ws.send({ type: 'subscribe', id: '1', payload: { query: 'subscription { orderChanged { op } }' } });
    await subscribed(proxy.url, 2);
    await proxy.stop();
    await until(() => sse.ended && ws.closed !== undefined, 'both ended');
    expect(sse.events.some((e) => e.retry === '1000')).toBe(true);
    expect(sse.events.some((e) => e.event === 'complete')).toBe(false);
    expect(ws.closed!.code).toBe(1001);
  });
});
