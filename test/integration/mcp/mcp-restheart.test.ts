/**
 * SPEC §11.1, RESTHeart's `mcp` block through the real proxy and Redis, with the official SDK
 * client on 2026-07-28 and on 2025-11-25: an app whose block carries RESTHeart's keys beside
 * Outrigger's tools is stored unchanged, offered as one read-only `<uri>_query` tool to callers
 * who hold the app's permission, and a call is the same `POST /graphql/<uri>` (readFilter,
 * projectResponse). A mutation through it is refused before anything is sent.
 */
import type { Client as ClientV2 } from '@modelcontextprotocol/client';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { basic } from '../../support/outrigger.js';
import { useStack } from '../../support/fixtures.js';
import { call, collectionReads, shopData } from '../graphql/graphql-helpers.js';
import { mcpClientV2, shopAppWithTools } from './mcp-helpers.js';

const ROOT = basic('root', 'root-password');
const ALICE = basic('alice', 'alice-password');
const RESTHEART_KEYS = {
  enabled: true,
  description: 'The shop: orders, users and products',
  examples: [{ description: 'The first orders', args: { body: { query: 'query First($n: Int) { orders(limit: $n) { number total } }', variables: { n: 2 } } } }],
};
const textOf = (result: unknown) => (result as { content: Array<{ text: string }> }).content[0]!.text;

describe("RESTHeart's mcp block: one read-only <uri>_query tool", () => {
  const app = shopAppWithTools(RESTHEART_KEYS);
  const stack = useStack({
    service: 'mcp-restheart',
    backend: { data: shopData() },
    users: { root: ['root'], alice: ['user'], nora: ['nobody'] },
    config: { acl: { mode: 'enforce' }, mcp: { server: 'outrigger' } },
    permissions: {
      graphql: { predicate: 'path-prefix(/graphql/shop)', roles: ['user'], priority: 1 },
      'own-orders': { predicate: 'method(GET) and path-prefix(/shop/orders)', roles: ['user'], priority: 10, mongo: { readFilter: { owner: '@user.id' }, projectResponse: { secret: 0 } } },
    },
    apps: { shop: app },
  });
  const clients: ClientV2[] = [];
  const connect = async (auth: string, mode: 'auto' | 'legacy') => {
    const client = await mcpClientV2(stack.proxy.url, auth, mode);
    clients.push(client);
    return client;
  };
  beforeEach(() => stack.backend.clearRequests());
  afterAll(async () => {
    for (const c of clients) await c.close().catch(() => {});
  });

  it('the document is stored as written, RESTHeart keys beside the tools', async () => {
    const stored = await call(stack.proxy.url, '/gql-apps/shop', { auth: ROOT });
    expect(stored.json.mcp).toEqual(app.mcp);
  });

  for (const mode of ['auto', 'legacy'] as const) {
    it(`${mode === 'auto' ? '2026-07-28' : '2025-11-25'}: shop_query is listed beside the tools, described by the block, the schema and the examples; a call runs under readFilter and projectResponse`, async () => {
      const client = await connect(ALICE, mode);
      expect(client.getNegotiatedProtocolVersion()).toBe(mode === 'auto' ? '2026-07-28' : '2025-11-25');
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name).sort()).toEqual(['list_orders', 'order_by_number', 'orders_in_range', 'shop_query']);
      const tool = tools.find((t) => t.name === 'shop_query')!;
      expect(tool.description).toMatch(/^The shop: orders, users and products\n\nThe app's schema \(GraphQL SDL\):\n/);
      expect(tool.description).toContain('type Order {');
      expect(tool.description).toContain('- The first orders:\n  query First($n: Int) { orders(limit: $n) { number total } }\n  variables: {"n":2}');
      expect(tool.annotations).toMatchObject({ readOnlyHint: true });
      expect(tool.inputSchema.required).toEqual(['query']);
      const result = await client.callTool({ name: 'shop_query', arguments: { query: 'query Q($n: Int) { orders(limit: $n) { number owner secret } }', variables: { n: 4 } } });
      expect(result.isError).toBeFalsy();
      const orders = (result.structuredContent as { orders: Array<Record<string, unknown>> }).orders;
      expect(orders.map((o) => o.number)).toEqual([1, 4, 7, 10]);
      expect(orders.every((o) => o.owner === 'alice' && o.secret === null)).toBe(true);
      expect(collectionReads(stack.backend, 'orders')).toHaveLength(1);
    });
  }

  it("a mutation sent through it is refused before anything is sent; a query that does not validate is the GraphQL door's error", async () => {
    const client = await connect(ROOT, 'auto');
    const refused = await client.callTool({ name: 'shop_query', arguments: { query: 'mutation { addProduct(name: "x", price: 1) }' } });
    expect(refused.isError).toBe(true);
    expect(textOf(refused)).toMatch(/shop_query: the tool is read-only: the document holds a mutation/);
    const named = await client.callTool({ name: 'shop_query', arguments: { query: 'query A { products { name } } mutation B { addProduct(name: "x") }', operationName: 'B' } });
    expect(textOf(named)).toMatch(/holds a mutation \(B\)/);
    const wrong = await client.callTool({ name: 'shop_query', arguments: { query: '{ orders { numbr } }' } });
    expect(wrong.isError).toBe(true);
    expect(textOf(wrong)).toMatch(/Cannot query field "numbr"/);
    const badArgs = await client.callTool({ name: 'shop_query', arguments: { variables: {} } });
    expect(textOf(badArgs)).toMatch(/query is required/);
    expect(stack.backend.requests).toHaveLength(0);
  });

  it("a caller without the app's permission is not offered it and cannot call it", async () => {
    const nora = await connect(basic('nora', 'nora-password'), 'auto');
    expect((await nora.listTools()).tools).toEqual([]);
    await expect(nora.callTool({ name: 'shop_query', arguments: { query: '{ orders { number } }' } })).rejects.toThrow(/no tool named/);
  });

  it('enabled: false hides it; the document still saves', async () => {
    const off = shopAppWithTools({ ...RESTHEART_KEYS, enabled: false });
    const saved = await call(stack.proxy.url, '/gql-apps/shop', { method: 'PUT', auth: ROOT, body: off });
    expect(saved.status).toBeLessThan(300);
    const client = await connect(ALICE, 'auto');
    expect((await client.listTools()).tools.map((t) => t.name)).not.toContain('shop_query');
    await call(stack.proxy.url, '/gql-apps/shop', { method: 'PUT', auth: ROOT, body: app });
  });
});
