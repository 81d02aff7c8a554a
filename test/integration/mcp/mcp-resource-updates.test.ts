/**
 * SPEC §11.1's per-URI change notifications through the real proxy and Redis, with two replicas
 * and the official v2 SDK client on 2026-07-28 (`listen` with `resourceSubscriptions`) and on
 * 2025-11-25 (`subscribeResource`, answered on the POST's own stream that stays open): a REST
 * write on replica A tells a listener on B of the document URI and of the collection URI; a
 * reader whose readFilter excludes the document is not told; a document leaving a reader's
 * readFilter tells it once; a listener that lost its permission is told nothing; a 2025 client's
 * stream also carries its list changes; the capability announces `subscribe`; changes the feed
 * lost (a claim gone from Redis: GraphQL subscribers' CHANGES_LOST) tell the listener of every URI
 * it watches of that collection, so it reads them again.
 */
import { Redis } from 'ioredis';
import type { Client as ClientV2 } from '@modelcontextprotocol/client';
import { afterAll, describe, expect, it } from 'vitest';
import { redisKeys } from '../../../src/store/keys.js';
import { basic, BUS_ONLY_POLL_MS } from '../../support/outrigger.js';
import { until } from '../../support/wait.js';
import { useStack, type Running } from '../../support/fixtures.js';
import { call, pollUntil, shopData } from '../graphql/graphql-helpers.js';
import { mcpClientV2 } from './mcp-helpers.js';

const ROOT = basic('root', 'root-password');
const ALICE = basic('alice', 'alice-password');
const BOB = basic('bob', 'bob-password');
/** The SPEC's 100 ms at p99 is the bench's (bench/subscriptions.mjs); here a loaded CI machine gets slack. */
const BOUND_MS = 3000;
const hex = (n: number) => n.toString(16).padStart(24, '0');
const ORDERS = 'outrigger://shop/orders';
const orderUri = (n: number) => `${ORDERS}/${hex(n)}`;

describe('Outrigger MCP server: resource change notifications (two replicas)', () => {
  const stack = useStack({
    service: 'mcp-updates',
    backend: { data: shopData() },
    users: { root: ['root'], alice: ['user'], bob: ['user'] },
    config: { acl: { mode: 'enforce' }, subscriptions: { maxPerPrincipal: 5 }, mcp: { server: 'outrigger', resources: ['path-prefix(/shop/orders)', 'path-prefix(/shop/products)'] } },
    permissions: {
      'own-orders': { predicate: 'method(GET) and path-prefix(/shop/orders)', roles: ['user'], priority: 10, mongo: { readFilter: { owner: '@user.id' } } },
      products: { predicate: 'method(GET) and path-prefix(/shop/products)', roles: ['user'], priority: 1 },
      keys: { predicate: 'path-prefix(/keys)', roles: ['user'], priority: 1, apiKeys: { roles: ['user'] } },
    },
  });
  const clients: ClientV2[] = [];
  let other: Running | undefined;
  const replicaB = async () => (other ??= await stack.start({}, { documentPollMs: BUS_ONLY_POLL_MS }));
  afterAll(async () => {
    for (const c of clients) await c.close().catch(() => {});
  });

  async function connect(url: string, auth: string, mode: 'auto' | 'legacy') {
    const client = await mcpClientV2(url, auth, mode);
    clients.push(client);
    const told: Array<{ uri: string; keys: string[]; at: number }> = [];
    const lists: string[] = [];
    client.setNotificationHandler('notifications/resources/updated', (n) => void told.push({ uri: n.params.uri, keys: Object.keys(n.params).sort(), at: performance.now() }));
    client.setNotificationHandler('notifications/tools/list_changed', () => void lists.push('tools'));
    client.setNotificationHandler('notifications/resources/list_changed', () => void lists.push('resources'));
    return { client, told, lists };
  }

  /** A REST write through replica A, as root; resolves when it was answered. */
  async function patch(n: number, set: Record<string, unknown>): Promise<number> {
    const started = performance.now();
    const res = await call(stack.proxy.url, `/shop/orders/${hex(n)}`, { method: 'PATCH', auth: ROOT, body: { $set: set } });
    expect(res.status, res.text).toBeLessThan(300);
    return started;
  }

  it('2026-07-28: a write on A tells a listener on B of the document URI and the collection URI; a reader whose readFilter excludes it is not told', async () => {
    const b = await replicaB();
    const alice = await connect(b.url, ALICE, 'auto');
    const sub = await alice.client.listen({ resourceSubscriptions: [orderUri(1), ORDERS] });
    expect(sub.honoredFilter).toEqual({ resourceSubscriptions: [orderUri(1), ORDERS] });
    const bob = await connect(b.url, BOB, 'auto');
    const bobSub = await bob.client.listen({ resourceSubscriptions: [ORDERS, orderUri(1)] });
    expect(alice.client.getServerCapabilities()?.resources).toMatchObject({ subscribe: true });

    const started = await patch(1, { total: 11 });
    await pollUntil(async () => alice.told.length === 2, BOUND_MS, 5);
    expect(alice.told.map((t) => t.uri).sort()).toEqual([ORDERS, orderUri(1)]);
    // The URI and the listen's id, never anything of the document.
    expect(alice.told[0]!.keys).toEqual(['_meta', 'uri']);
    expect(Math.max(...alice.told.map((t) => t.at - started))).toBeLessThan(BOUND_MS);
    // Order 2 is bob's: alice's collection listener is not told of it; bob is, of the collection only.
    await patch(2, { total: 22 });
    await pollUntil(async () => bob.told.length === 1, BOUND_MS, 5);
    await new Promise((r) => setTimeout(r, 300));
    expect(bob.told.map((t) => t.uri)).toEqual([ORDERS]);
    expect(alice.told).toHaveLength(2);
    // A notification carries the URI and nothing of the document.
    await sub.close();
    await bobSub.close();
  });

  it('a document leaving a reader\u2019s readFilter tells it once; then it is told nothing of that document', async () => {
    const b = await replicaB();
    const alice = await connect(b.url, ALICE, 'auto');
    const sub = await alice.client.listen({ resourceSubscriptions: [orderUri(4)] });
    const bob = await connect(b.url, BOB, 'auto');
    const bobSub = await bob.client.listen({ resourceSubscriptions: [ORDERS] });
    await patch(4, { owner: 'bob' });
    await pollUntil(async () => alice.told.length === 1 && bob.told.length === 1, BOUND_MS, 5);
    await patch(4, { total: 44 });
    await pollUntil(async () => bob.told.length === 2, BOUND_MS, 5);
    await new Promise((r) => setTimeout(r, 300));
    expect(alice.told.map((t) => t.uri)).toEqual([orderUri(4)]);
    await patch(4, { owner: 'alice' });
    await pollUntil(async () => alice.told.length === 2, BOUND_MS, 5);
    await sub.close();
    await bobSub.close();
  });

  it('2025-11-25: resources/subscribe is answered on a stream that stays open and carries the URI\u2019s updates and list changes', async () => {
    const b = await replicaB();
    const alice = await connect(b.url, ALICE, 'legacy');
    expect(alice.client.getServerCapabilities()?.resources).toMatchObject({ subscribe: true, listChanged: true });
    await alice.client.subscribeResource({ uri: orderUri(7) });
    await patch(7, { total: 77 });
    await pollUntil(async () => alice.told.length === 1, BOUND_MS, 5);
    expect(alice.told[0]).toMatchObject({ uri: orderUri(7), keys: ['uri'] });
    // A permission saved elsewhere that changes alice's resource list reaches her on that stream.
    const products = { predicate: 'method(GET) and path-prefix(/shop/products)', roles: ['user'], priority: 1 };
    const removed = await call(stack.proxy.url, '/_admin/acl/products', { method: 'DELETE', auth: ROOT });
    expect(removed.status, removed.text).toBeLessThan(300);
    await pollUntil(async () => alice.lists.includes('resources'), BOUND_MS, 10);
    expect((await call(stack.proxy.url, '/_admin/acl/products', { method: 'PUT', auth: ROOT, body: products })).status).toBeLessThan(300);
    // resources/unsubscribe closes the caller's stream of that URI: later writes are not told.
    await alice.client.unsubscribeResource({ uri: orderUri(7) });
    await new Promise((r) => setTimeout(r, 200));
    await patch(7, { total: 78 });
    await new Promise((r) => setTimeout(r, 500));
    expect(alice.told).toHaveLength(1);
  });

  it('a listener whose API key is revoked is closed within the key cache\u2019s bound, and told nothing after', async () => {
    const b = await replicaB();
    const issued = await call(stack.proxy.url, '/keys', { method: 'POST', auth: ALICE, body: { name: 'listener', roles: ['user'] } });
    expect(issued.status, issued.text).toBe(201);
    const alice = await connect(b.url, `Bearer ${issued.json.key as string}`, 'auto');
    const sub = await alice.client.listen({ toolsListChanged: true, resourceSubscriptions: [ORDERS] });
    let closedAt = 0;
    void sub.closed.then(() => (closedAt = performance.now()));
    await patch(13, { total: 131 });
    await pollUntil(async () => alice.told.length === 1, BOUND_MS, 5);
    const revoked = performance.now();
    expect((await call(stack.proxy.url, `/keys/${issued.json._id as string}`, { method: 'DELETE', auth: ALICE })).status).toBe(204);
    // Revocation reaches every replica within a second (SPEC §5.4) and listeners are checked every second; 20 s only ends a hang.
    await pollUntil(async () => closedAt > 0, 20_000, 20);
    expect(closedAt - revoked).toBeLessThan(5000);
    console.log(`listener closed ${Math.round(closedAt - revoked)} ms after its key was revoked`);
    await patch(13, { total: 132 });
    await new Promise((r) => setTimeout(r, 500));
    expect(alice.told).toHaveLength(1);
  });

  it('changes the feed lost (the claim on orders gone from Redis) tell a listener of every orders URI it watches, not its products ones; later writes are told as before', async () => {
    const b = await replicaB();
    const alice = await connect(b.url, ALICE, 'auto');
    const product = 'outrigger://shop/products/p4';
    const sub = await alice.client.listen({ resourceSubscriptions: [ORDERS, orderUri(16), product] });
    const redis = new Redis(stack.redis.url);
    try {
      // As a Redis restarted without its data would: the replica's claim on shop.orders is gone, and a write meanwhile is appended for nobody.
      expect(await redis.zrem(redisKeys('outrigger', 'mcp-updates').subscribedCollections, JSON.stringify(['shop', 'orders']))).toBe(1);
      await patch(16, { total: 161 });
      // B's renewal (every 5 s) finds its claim lapsed: what it watches of orders may have changed unseen.
      await until(() => alice.told.length >= 2, 'the listener told of the lost changes', 15_000);
      // A products write after that is told next: the lost orders changes told nothing of products.
      const res = await call(stack.proxy.url, '/shop/products/p4', { method: 'PATCH', auth: ROOT, body: { $set: { price: 21 } } });
      expect(res.status, res.text).toBeLessThan(300);
      await until(() => alice.told.some((t) => t.uri === product), 'the products write told');
      expect(alice.told.map((t) => t.uri)).toEqual([ORDERS, orderUri(16), product]);
      // The claim is back: the next orders write is told as any write is.
      await patch(16, { total: 162 });
      await until(() => alice.told.length === 5, 'the next orders write told', 15_000);
      expect(alice.told.slice(3).map((t) => t.uri)).toEqual([ORDERS, orderUri(16)]);
    } finally {
      redis.disconnect();
      await sub.close();
    }
  });

  it('a number _id and the string of its digits are two documents, each with one URI that reads, listens (both revisions) and notifications agree on', async () => {
    const b = await replicaB();
    const NUM = 'outrigger://shop/products/7?id_type=NUMBER';
    const STR = 'outrigger://shop/products/7';
    for (const _id of [7, '7']) {
      const res = await call(stack.proxy.url, '/shop/products', { method: 'POST', auth: ROOT, body: { _id, name: `seven-${typeof _id}`, price: 7 } });
      expect(res.status, res.text).toBe(201);
    }
    const alice = await connect(b.url, ALICE, 'auto');
    const num = await alice.client.readResource({ uri: NUM });
    expect(num.contents[0]).toMatchObject({ uri: NUM, mimeType: 'application/json' });
    expect(JSON.parse((num.contents[0] as { text: string }).text)).toMatchObject({ _id: 7, name: 'seven-number' });
    const str = await alice.client.readResource({ uri: STR });
    expect(JSON.parse((str.contents[0] as { text: string }).text)).toMatchObject({ _id: '7', name: 'seven-string' });
    const sub = await alice.client.listen({ resourceSubscriptions: [NUM, STR] });
    const legacy = await connect(b.url, ALICE, 'legacy');
    await legacy.client.subscribeResource({ uri: NUM });
    const patch7 = async (path: string, price: number) => {
      const res = await call(stack.proxy.url, path, { method: 'PATCH', auth: ROOT, body: { $set: { price } } });
      expect(res.status, res.text).toBeLessThan(300);
    };
    await patch7('/shop/products/7', 71);
    await until(() => alice.told.length === 1, 'the string document\u2019s write told');
    await patch7('/shop/products/7?id_type=NUMBER', 72);
    await until(() => alice.told.length === 2 && legacy.told.length === 1, 'the number document\u2019s write told');
    expect(alice.told.map((t) => t.uri)).toEqual([STR, NUM]);
    expect(legacy.told.map((t) => t.uri)).toEqual([NUM]);
    await sub.close();
  });

  it('a listener that lost its permission to read the collection is told nothing of it', async () => {
    const b = await replicaB();
    const alice = await connect(b.url, ALICE, 'auto');
    const sub = await alice.client.listen({ resourceSubscriptions: [ORDERS, orderUri(10)] });
    const removed = await call(stack.proxy.url, '/_admin/acl/own-orders', { method: 'DELETE', auth: ROOT });
    expect(removed.status, removed.text).toBeLessThan(300);
    // Wait until B heard it: alice's GET of the orders through B is refused.
    await pollUntil(async () => (await call(b.url, '/shop/orders/' + hex(10), { auth: ALICE })).status === 403, BOUND_MS, 20);
    await patch(10, { total: 101 });
    await new Promise((r) => setTimeout(r, 700));
    expect(alice.told).toEqual([]);
    await sub.close();
  });
});
