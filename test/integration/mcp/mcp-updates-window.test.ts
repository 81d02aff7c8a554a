/**
 * SPEC §11.1 with issue 53 item 7: an MCP tool call's change goes to the feed ahead of the tool's
 * inner `POST /graphql/<uri>` answer (so a write answered after it is told after it), and what was
 * not appended then (its collection unclaimed) goes again once the agent has its `/mcp` answer
 * (the inner answer leaves first; the outer one is written after every call of the request ran).
 * So a listener registered, on any replica, before the agent has its answer receives the change,
 * and never twice (publisher.ts `publishAround`).
 *
 * Each row holds the window open with a JSON-RPC batch of two tool calls on replica A: the first,
 * `add_product`, inserts and is answered; the second, `list_orders`, waits at a gate in front of the
 * stand-in, so the `/mcp` answer cannot be written. Through the real proxy, Redis and the official
 * v2 SDK client on replica B. Each row closes what it opened in `finally`.
 */
import type { Client as ClientV2 } from '@modelcontextprotocol/client';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStandinBackend, type StandinBackend } from '../../../examples/standin-backend/index.js';
import { redisKeys } from '../../../src/store/keys.js';
import { startGate, type Gate } from '../../support/peers/backend-gate.js';
import { call } from '../../support/clients/http-client.js';
import { monitor, publishScriptWithin, type SeenCommand } from '../../support/redis/redis-monitor.js';
import { startTestRedis, type TestRedis } from '../../support/redis/redis.js';
import { basic, BUS_ONLY_POLL_MS, startTestOutrigger, staticUsers } from '../../support/outrigger.js';
import { until } from '../../support/wait.js';
import { shopData } from '../graphql/graphql-helpers.js';
import { mcpClientV2, shopAppWithTools } from './mcp-helpers.js';

const ROOT = basic('root', 'root-password');
const CAROL = basic('carol', 'carol-password');
const SERVICE = 'mcp-updates-window';
const PRODUCTS = 'outrigger://shop/products';

describe('SPEC §11.1: a tool call\u2019s change follows the agent\u2019s /mcp answer', () => {
  let redis: TestRedis;
  let client: Redis;
  let backend: StandinBackend;
  let gate: Gate;
  let a: Awaited<ReturnType<typeof startTestOutrigger>>;
  let b: Awaited<ReturnType<typeof startTestOutrigger>>;
  const keys = redisKeys('outrigger', SERVICE);
  const publishedWithin = (seen: SeenCommand[], ms: number) => publishScriptWithin(seen, keys, ms);

  beforeAll(async () => {
    redis = await startTestRedis();
    client = new Redis(redis.url);
    backend = await startStandinBackend({ data: shopData() });
    gate = await startGate(backend.url);
    const config = async () => ({
      service: { id: SERVICE },
      upstream: { url: gate.url },
      redis: { url: redis.url },
      users: await staticUsers({ root: ['root'], carol: ['everything'] }),
      acl: { mode: 'enforce' as const },
      mcp: { server: 'outrigger' as const, resources: ['path-prefix(/shop/products)'] },
    });
    a = await startTestOutrigger(await config());
    b = await startTestOutrigger(await config(), { documentPollMs: BUS_ONLY_POLL_MS });
    const put = async (id: string, doc: unknown) => expect((await call(a.url, `/_admin/acl/${id}`, { method: 'PUT', auth: ROOT, body: doc })).status).toBe(201);
    await put('graphql', { predicate: 'path-prefix(/graphql/shop)', roles: ['everything'], priority: 1 });
    await put('shop', { predicate: 'path-prefix(/shop/products) or path-prefix(/shop/orders)', roles: ['everything'], priority: 1 });
    expect((await call(a.url, '/gql-apps/shop', { method: 'PUT', auth: ROOT, body: shopAppWithTools({ mutations: true }) })).status).toBe(201);
    await until(async () => (await call(b.url, '/graphql/shop', { method: 'POST', auth: CAROL, body: { query: '{ __typename }' } })).status === 200, 'replica b serving the app');
  });

  afterAll(async () => {
    gate?.release();
    await a?.stop();
    await b?.stop();
    await gate?.close();
    client?.disconnect();
    await backend?.close();
    await redis?.close();
  });

  /** The batch on A: `add_product` (answered at once), then `list_orders` (held at the gate while `gate.held` says so). */
  const batch = (name: string) =>
    call(a.url, '/mcp', {
      method: 'POST',
      auth: CAROL,
      headers: { accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-03-26' },
      body: [
        { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'add_product', arguments: { name, price: 1 } } },
        { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'list_orders', arguments: { limit: 1 } } },
      ],
    });

  async function listener(uris = [PRODUCTS]): Promise<{ sdk: ClientV2; told: string[]; close: () => Promise<void> }> {
    const sdk = await mcpClientV2(b.url, CAROL, 'auto');
    const told: string[] = [];
    sdk.setNotificationHandler('notifications/resources/updated', (n) => void told.push(n.params.uri));
    const sub = await sdk.listen({ resourceSubscriptions: uris });
    expect(sub.honoredFilter).toEqual({ resourceSubscriptions: uris });
    return { sdk, told, close: async () => (await sub.close().catch(() => {}), await sdk.close().catch(() => {})) };
  }

  const expectAnswered = (answered: Awaited<ReturnType<typeof batch>>) => {
    expect(answered.status, answered.text).toBe(200);
    const results = answered.json as Array<{ id: number; result: { isError?: boolean; content: Array<{ text: string }> } }>;
    expect(results.map((r) => [r.id, r.result.isError ?? false])).toEqual([
      [1, false],
      [2, false],
    ]);
  };

  it('a listener on B acknowledged after the inner GraphQL answer left, before the agent has its /mcp answer, is told of the insert', async () => {
    // Nobody claims shop.products yet: the listen below is the first claim.
    expect(await client.zscore(keys.subscribedCollections, JSON.stringify(['shop', 'products']))).toBeNull();
    const watch = await monitor(redis.port);
    let listening: Awaited<ReturnType<typeof listener>> | undefined;
    try {
      gate.held = (method, url) => method === 'GET' && url.startsWith('/shop/orders');
      const answer = batch('windowed-1');
      // The second call waits at the gate: the first one's inner answer has left, the agent has nothing yet.
      await until(() => gate.waiting > 0, 'list_orders reading the orders');
      expect(backend.collection('shop', 'products').some((d) => d.name === 'windowed-1')).toBe(true);
      await publishedWithin(watch.seen, 1000);
      listening = await listener();
      gate.release();
      expectAnswered(await answer);
      await until(() => listening!.told.length > 0, 'the listener told of the tool\u2019s insert', 15_000);
      expect(listening.told).toEqual([PRODUCTS]);
    } finally {
      gate.release();
      await watch.stop();
      await listening?.close();
    }
  });

  it('a listener on B is told of the tool\u2019s insert before a REST write answered after it, and once', async () => {
    // The collection and the REST write's document: each write tells the collection, the REST one its document too.
    const later = `${PRODUCTS}/later-2`;
    const listening = await listener([PRODUCTS, later]);
    try {
      gate.held = (method, url) => method === 'GET' && url.startsWith('/shop/orders');
      const answer = batch('windowed-2');
      await until(() => gate.waiting > 0, 'list_orders reading the orders');
      expect(backend.collection('shop', 'products').some((d) => d.name === 'windowed-2')).toBe(true);
      // The insert's change went to the feed before its inner answer left (publisher.ts `publishAround`):
      // a write answered after it is told after it, while the agent still waits for its /mcp answer.
      await until(() => listening.told.length > 0, 'the tool\u2019s insert told');
      const rest = await call(a.url, '/shop/products', { method: 'POST', auth: ROOT, body: { _id: 'later-2', name: 'later', price: 2 } });
      expect(rest.status, rest.text).toBe(201);
      await until(() => listening.told.includes(later), 'the REST write told');
      expect(gate.waiting).toBeGreaterThan(0);
      expect(listening.told.slice(0, 1)).toEqual([PRODUCTS]);
      expect(listening.told.slice(1).sort()).toEqual([PRODUCTS, later].sort());
      gate.release();
      expectAnswered(await answer);
      // Nothing again once the agent has its answer: the insert was appended ahead, so it is not published twice.
      const marker = await call(a.url, '/shop/products', { method: 'POST', auth: ROOT, body: { _id: 'marker-2', name: 'marker', price: 3 } });
      expect(marker.status, marker.text).toBe(201);
      await until(() => listening.told.length === 4, 'the marker write told');
      expect(listening.told.filter((u) => u === PRODUCTS)).toHaveLength(3);
    } finally {
      gate.release();
      await listening.close();
    }
  });
});
