/**
 * SPEC §11.1's resources through the real proxy and Redis, with the official SDK client on
 * 2026-07-28 and 2025-11-25: `mcp.resources` exposes collections; `resources/list` lists the
 * literal ones the caller may read, `resources/templates/list` offers the document and query
 * templates, and `resources/read` answers exactly what the same caller's REST GET answers
 * (readFilter, projectResponse), with `ttlMs` (a §12 cache rule's age) and `cacheScope` on 2026-07-28. A resource the caller may
 * not read is an error naming it, never its content.
 */
import type { Client as ClientV2 } from '@modelcontextprotocol/client';
import { afterAll, describe, expect, it } from 'vitest';
import { basic } from '../../support/outrigger.js';
import { useStack } from '../../support/fixtures.js';
import { call, shopData } from '../graphql/graphql-helpers.js';
import { mcpClientV2 } from './mcp-helpers.js';

const ALICE = basic('alice', 'alice-password');
const NORA = basic('nora', 'nora-password');
const textOf = (result: { contents: Array<Record<string, unknown>> }) => result.contents[0]!.text as string;

describe('Outrigger MCP server: resources', () => {
  const stack = useStack({
    service: 'mcp-resources',
    backend: { data: shopData() },
    users: { root: ['root'], alice: ['user'], nora: ['nobody'] },
    config: {
      acl: { mode: 'enforce' },
      cache: { rules: [{ when: "path-prefix('/shop/products')", maxAgeSeconds: 30 }] },
      mcp: { server: 'outrigger', resources: ["path-prefix('/shop/orders')", 'path-prefix(/shop/products)', "path-prefix('/shop/users') and method(GET)"] },
    },
    permissions: {
      'own-orders': { predicate: 'method(GET) and path-prefix(/shop/orders)', roles: ['user'], priority: 10, mongo: { readFilter: { owner: '@user.id' }, projectResponse: { secret: 0 } } },
      products: { predicate: 'method(GET) and path-prefix(/shop/products)', roles: ['user'], priority: 1 },
    },
  });
  const clients: ClientV2[] = [];
  const connect = async (auth: string, mode: 'auto' | 'legacy') => {
    const client = await mcpClientV2(stack.proxy.url, auth, mode);
    clients.push(client);
    return client;
  };
  afterAll(async () => {
    for (const c of clients) await c.close().catch(() => {});
  });

  for (const mode of ['auto', 'legacy'] as const) {
    describe(mode === 'auto' ? '2026-07-28' : '2025-11-25', () => {
      it('lists the literal collections the caller may read, and the templates for a document and a query', async () => {
        const client = await connect(ALICE, mode);
        expect(client.getServerCapabilities()?.resources).toBeDefined();
        const { resources } = await client.listResources();
        expect(resources.map((r) => r.uri)).toEqual(['outrigger://shop/orders', 'outrigger://shop/products']);
        expect(resources[0]).toMatchObject({ name: 'shop/orders', mimeType: 'application/json' });
        const { resourceTemplates } = await client.listResourceTemplates();
        expect(resourceTemplates.map((t) => t.uriTemplate)).toEqual([
          'outrigger://shop/orders/{id}',
          'outrigger://shop/orders{?filter,sort,pagesize,page}',
          'outrigger://shop/products/{id}',
          'outrigger://shop/products{?filter,sort,pagesize,page}',
          'outrigger://{db}/{collection}/{id}',
          'outrigger://{db}/{collection}{?filter,sort,pagesize,page}',
        ]);
        const nora = await connect(NORA, mode);
        expect((await nora.listResources()).resources).toEqual([]);
      });

      it('a read answers exactly what the REST GET answers the same caller: readFilter and projectResponse, a filter, a document', async () => {
        const client = await connect(ALICE, mode);
        const pairs: Array<[string, string]> = [
          ['outrigger://shop/orders', '/shop/orders'],
          [
            'outrigger://shop/orders?filter=%7B%22status%22%3A%22open%22%7D&sort=%7B%22total%22%3A-1%7D&pagesize=3&page=2',
            '/shop/orders?filter=%7B%22status%22%3A%22open%22%7D&sort=%7B%22total%22%3A-1%7D&pagesize=3&page=2',
          ],
          ['outrigger://shop/orders/000000000000000000000001', '/shop/orders/000000000000000000000001'],
          ['outrigger://shop/products/p2', '/shop/products/p2'],
        ];
        for (const [uri, path] of pairs) {
          const read = await client.readResource({ uri });
          const rest = await call(stack.proxy.url, path, { auth: ALICE });
          expect(rest.status, path).toBe(200);
          expect(read.contents[0]).toMatchObject({ uri, mimeType: 'application/json' });
          expect(JSON.parse(textOf(read))).toEqual(rest.json);
        }
        const orders = JSON.parse(textOf(await client.readResource({ uri: 'outrigger://shop/orders' }))) as Array<Record<string, unknown>>;
        expect(orders.length).toBeGreaterThan(0);
        expect(orders.every((o) => o.owner === 'alice' && !('secret' in o))).toBe(true);
      });

      it("a resource the caller may not read is an error naming it, never its content: bob's order, nora's read, an unexposed collection", async () => {
        const client = await connect(ALICE, mode);
        await expect(client.readResource({ uri: 'outrigger://shop/orders/000000000000000000000002' })).rejects.toThrow(/outrigger:\/\/shop\/orders\/000000000000000000000002: not found/);
        await expect(client.readResource({ uri: 'outrigger://shop/users' })).rejects.toThrow(/outrigger:\/\/shop\/users may not be read: GET \/shop\/users answered 403/);
        await expect(client.readResource({ uri: 'outrigger://shop/secrets' })).rejects.toThrow(/is not a resource of this service/);
        const nora = await connect(NORA, mode);
        const refused = nora.readResource({ uri: 'outrigger://shop/products/p1' });
        await expect(refused).rejects.toThrow(/outrigger:\/\/shop\/products\/p1 may not be read: GET \/shop\/products\/p1 answered 403/);
        await expect(refused).rejects.not.toThrow(/dinghy/);
      });
    });
  }

  it('2026-07-28 list and read results carry ttlMs (the matching cache rule\'s maxAgeSeconds × 1000, else 0) and cacheScope "private"', async () => {
    const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };
    const post = (method: string, params: Record<string, unknown>, name?: string) =>
      call(stack.proxy.url, '/mcp', {
        method: 'POST',
        auth: ALICE,
        headers: { accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2026-07-28', 'mcp-method': method, ...(name ? { 'mcp-name': name } : {}) },
        body: { jsonrpc: '2.0', id: 1, method, params: { ...params, _meta: meta } },
      });
    for (const [method, params, name, ttlMs] of [
      ['resources/list', {}, undefined, 0],
      ['resources/templates/list', {}, undefined, 0],
      ['resources/read', { uri: 'outrigger://shop/products' }, 'outrigger://shop/products', 30_000],
      ['resources/read', { uri: 'outrigger://shop/orders' }, 'outrigger://shop/orders', 0],
    ] as const) {
      const res = await post(method, params, name);
      expect(res.status, res.text).toBe(200);
      expect([res.json.result.ttlMs, res.json.result.cacheScope], method).toEqual([ttlMs, 'private']);
    }
  });
});
