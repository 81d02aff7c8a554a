/**
 * Outrigger's own MCP server (SPEC §11), driven by the official SDK client through the real
 * proxy: tools from app documents (input schemas from the operations' variables, annotations,
 * structuredContent), the same door as POST /graphql/<uri> (ACL, readFilter, projectResponse, cost
 * limit), tools/list per caller, arguments checked before any read, and app changes seen by a
 * second replica. The browser sign-in and the adversarial rows have their own files.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { basic, BUS_ONLY_POLL_MS } from '../../support/outrigger.js';
import { useStack } from '../../support/fixtures.js';
import { call, collectionReads, pollUntil, shopData } from '../graphql/graphql-helpers.js';
import { mcpClient, mcpClientV2, shopAppWithTools } from './mcp-helpers.js';

const ROOT = basic('root', 'root-password');
const ALICE = basic('alice', 'alice-password');
const data = shopData();

describe('Outrigger MCP server: tools from GraphQL apps', () => {
  const stack = useStack({
    service: 'mcp-tools',
    backend: { data },
    users: { root: ['root'], alice: ['user'], nora: ['nobody'] },
    config: { acl: { mode: 'enforce' }, mcp: { server: 'outrigger' } },
    permissions: {
      graphql: { predicate: 'path-prefix(/graphql/shop)', roles: ['user'], priority: 1 },
      'own-orders': { predicate: 'method(GET) and path-prefix(/shop/orders)', roles: ['user'], priority: 10, mongo: { readFilter: { owner: '@user.id' }, projectResponse: { secret: 0 } } },
      'write-products': { predicate: 'method(POST) and path-prefix(/shop/products)', roles: ['user'], priority: 1 },
    },
    apps: { shop: shopAppWithTools() },
  });
  const clients: Client[] = [];
  const connect = async (auth: string, url = stack.proxy.url) => {
    const client = await mcpClient(url, auth);
    clients.push(client);
    return client;
  };
  beforeEach(() => stack.backend.clearRequests());
  const save = async (doc: Record<string, unknown>) => {
    const res = await call(stack.proxy.url, '/gql-apps/shop', { method: 'PUT', auth: ROOT, body: doc });
    expect(res.status, res.text.slice(0, 300)).toBeLessThan(300);
  };
  afterAll(async () => {
    for (const c of clients) await c.close().catch(() => {});
  });

  it('initializes over the SDK (protocol 2025-11-25, stateless: no session id) and lists the query tools with input schemas derived from the variables', async () => {
    const client = await connect(ALICE);
    expect(client.getServerVersion()?.name).toBe('outrigger');
    expect(client.getServerCapabilities()?.tools).toBeDefined();
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(['list_orders', 'order_by_number', 'orders_in_range']);
    const list = tools.find((t) => t.name === 'list_orders')!;
    expect(list.description).toBe('Orders by status, oldest first');
    expect(list.inputSchema).toEqual({
      type: 'object',
      properties: {
        status: { type: ['string', 'null'], enum: ['OPEN', 'CLOSED', null] },
        limit: { type: ['integer', 'null'], minimum: -2147483648, maximum: 2147483647, default: 3 },
      },
      additionalProperties: false,
    });
    expect(list.annotations).toEqual({ title: 'ListOrders', readOnlyHint: true, idempotentHint: true, openWorldHint: false });
    const one = tools.find((t) => t.name === 'order_by_number')!;
    expect(one.inputSchema.required).toEqual(['number']);
    const range = tools.find((t) => t.name === 'orders_in_range')!;
    expect(range.inputSchema.properties!.range).toEqual({
      type: 'object',
      properties: { min: { type: ['integer', 'null'], minimum: -2147483648, maximum: 2147483647 }, max: { type: ['integer', 'null'], minimum: -2147483648, maximum: 2147483647 } },
      additionalProperties: false,
    });
  });

  it('a call is POST /graphql/shop as the caller: readFilter and projectResponse apply; data is structuredContent with its JSON text', async () => {
    const client = await connect(ALICE);
    const result = await client.callTool({ name: 'list_orders', arguments: { limit: 5 } });
    expect(result.isError).toBeFalsy();
    const orders = (result.structuredContent as { orders: Array<Record<string, unknown>> }).orders;
    expect(orders).toHaveLength(5);
    // alice sees only her own orders, without the secret (projectResponse)
    expect(orders.map((o) => o.number)).toEqual([1, 4, 7, 10, 13]);
    expect(orders.every((o) => o.secret === null)).toBe(true);
    expect(JSON.parse((result.content as Array<{ text: string }>)[0]!.text)).toEqual(result.structuredContent);
    expect(collectionReads(stack.backend, 'orders')).toHaveLength(1);
  });

  it('arguments are checked against the input schema before any backend read: isError naming the argument', async () => {
    const client = await connect(ALICE);
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ limit: 'ten' }, /limit must be an integer or null \(got "ten"\)/],
      [{ status: 'LOST' }, /status must be one of "OPEN", "CLOSED", null/],
      [{ limit: 1, extra: true }, /extra is not an argument of this tool/],
      [{ limit: 2 ** 40 }, /limit must be at most 2147483647/],
    ];
    for (const [args, message] of cases) {
      const result = await client.callTool({ name: 'list_orders', arguments: args });
      expect(result.isError, JSON.stringify(args)).toBe(true);
      expect((result.content as Array<{ text: string }>)[0]!.text).toMatch(message);
    }
    const missing = await client.callTool({ name: 'order_by_number', arguments: {} });
    expect((missing.content as Array<{ text: string }>)[0]!.text).toMatch(/number is required/);
    const injected = await client.callTool({ name: 'orders_in_range', arguments: { range: { min: 1, $where: 'sleep(1000)' } } });
    expect((injected.content as Array<{ text: string }>)[0]!.text).toMatch(/range\.\$where is not a field of range \(allowed: min, max\)/);
    expect(stack.backend.requests).toHaveLength(0);
  });

  it('GraphQL errors are isError with their messages; an unknown tool is JSON-RPC -32602', async () => {
    const client = await connect(ROOT);
    const result = await client.callTool({ name: 'order_by_number', arguments: { number: 2 } });
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toEqual({ order: { number: 2, owner: 'bob', total: 20 } });
    await expect(client.callTool({ name: 'no_such_tool', arguments: {} })).rejects.toThrow(/-32602|no tool named/);
  });

  it('tools/list lists only the tools of apps the caller holds a permission on; nora gets none and cannot call one', async () => {
    const nora = await connect(basic('nora', 'nora-password'));
    expect((await nora.listTools()).tools).toEqual([]);
    await expect(nora.callTool({ name: 'list_orders', arguments: {} })).rejects.toThrow(/no tool named/);
    expect(stack.backend.requests).toHaveLength(0);
  });

  it('mutations are tools only with mcp.mutations: true, annotated; saving the app shows in tools/list on another replica within 1 s', async () => {
    // Its version poll is too far away to matter: only the change bus can bring the app (issue 54).
    const other = await stack.start({}, { documentPollMs: BUS_ONLY_POLL_MS });
    const client = await connect(ALICE, other.url);
    expect((await client.listTools()).tools.map((t) => t.name)).not.toContain('add_product');
    await save(shopAppWithTools({ mutations: true }));
    // SPEC §11: tools/list changes within 1 s; the bound is that goal + 3 s for a loaded machine
    // (issue 40), which the other replica meets through the change bus or not at all.
    const BOUND_MS = 1000 + 3000;
    const ms = await pollUntil(async () => (await client.listTools()).tools.some((t) => t.name === 'add_product'), 2 * BOUND_MS, 20);
    expect(ms).toBeLessThan(BOUND_MS);
    const tools = (await client.listTools()).tools;
    expect(tools.find((t) => t.name === 'add_product')!.annotations).toEqual({ title: 'AddProduct', readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false });
    // Alice may POST products but not PATCH orders: set_status is not hers to list (issue 53); root sees it.
    expect(tools.map((t) => t.name)).not.toContain('set_status');
    const admin = await connect(ROOT, other.url);
    const all = (await admin.listTools()).tools;
    expect(all.find((t) => t.name === 'set_status')!.annotations).toEqual({ title: 'SetStatus', readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false });
    const added = await client.callTool({ name: 'add_product', arguments: { name: 'sail', price: 90 } });
    expect(added.isError).toBeFalsy();
    expect(stack.backend.collection('shop', 'products').some((p) => p.name === 'sail')).toBe(true);
    // Disabling the app removes its tools everywhere.
    const disabled = shopAppWithTools({ mutations: true });
    (disabled.descriptor as Record<string, unknown>).enabled = false;
    await save(disabled);
    const gone = await pollUntil(async () => (await client.listTools()).tools.length === 0, 2 * BOUND_MS, 20);
    expect(gone).toBeLessThan(BOUND_MS);
    await save(shopAppWithTools());
  });

  it('protocol revisions 2025-06-18 and 2025-11-25: initialize negotiates each as asked, with no session id, and a later request needs none', async () => {
    const headers = { accept: 'application/json, text/event-stream' };
    for (const version of ['2025-06-18', '2025-11-25']) {
      const init = await call(stack.proxy.url, '/mcp', {
        method: 'POST',
        auth: ALICE,
        headers,
        body: { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: version, capabilities: {}, clientInfo: { name: 'raw', version: '1' } } },
      });
      expect(init.status).toBe(200);
      expect(init.headers['content-type']).toMatch(/^application\/json/);
      expect(init.json.result.protocolVersion).toBe(version);
      expect(init.headers['mcp-session-id']).toBeUndefined();
      // Stateless: a tools/list in a new request, without the session a stateful server would want.
      const list = await call(stack.proxy.url, '/mcp', {
        method: 'POST',
        auth: ALICE,
        headers: { ...headers, 'mcp-protocol-version': version },
        body: { jsonrpc: '2.0', id: 2, method: 'tools/list' },
      });
      expect(list.status).toBe(200);
      expect(list.json.result.tools.length).toBe(3);
      const called = await call(stack.proxy.url, '/mcp', {
        method: 'POST',
        auth: ALICE,
        headers: { ...headers, 'mcp-protocol-version': version },
        body: { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'list_orders', arguments: { limit: 1 } } },
      });
      expect(called.json.result.isError).toBeFalsy();
      expect(called.json.result.structuredContent.orders.length).toBe(1);
    }
  });

  it('protocol revision 2026-07-28, stateless: no initialize; server/discover names it; tools/list and tools/call with their _meta and Mcp-Method/Mcp-Name headers; bad envelopes and headers are 400', async () => {
    const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {}, 'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' } };
    const post = (method: string, params: Record<string, unknown>, extra: Record<string, string> = {}, auth = ALICE) =>
      call(stack.proxy.url, '/mcp', {
        method: 'POST',
        auth,
        headers: { accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2026-07-28', 'mcp-method': method, ...extra },
        body: { jsonrpc: '2.0', id: 7, method, params: { ...params, _meta: meta } },
      });
    const discover = await post('server/discover', {});
    expect(discover.status).toBe(200);
    expect(discover.json.result.supportedVersions).toEqual(['2026-07-28']);
    expect(discover.json.result.capabilities.tools).toBeDefined();
    expect(discover.json.result._meta['io.modelcontextprotocol/serverInfo'].name).toBe('outrigger');
    const list = await post('tools/list', {});
    expect(list.status).toBe(200);
    expect(list.headers['mcp-session-id']).toBeUndefined();
    expect(list.json.result.tools.map((t: { name: string }) => t.name).sort()).toEqual(['list_orders', 'order_by_number', 'orders_in_range']);
    // The same door: readFilter and projectResponse apply to alice's call as to her POST /graphql/shop.
    const called = await post('tools/call', { name: 'list_orders', arguments: { limit: 10 } }, { 'mcp-name': 'list_orders' });
    expect(called.status).toBe(200);
    expect(called.json.result.isError).toBeFalsy();
    const orders = called.json.result.structuredContent.orders as { number: number; secret?: unknown }[];
    expect(orders.length).toBeGreaterThan(0);
    expect(orders.every((o) => o.secret === null || o.secret === undefined)).toBe(true);
    expect(collectionReads(stack.backend, 'orders').length).toBeGreaterThan(0);
    // Arguments are still checked before any read, as an isError result.
    stack.backend.clearRequests();
    const wrong = await post('tools/call', { name: 'list_orders', arguments: { limit: 'ten' } }, { 'mcp-name': 'list_orders' });
    expect(wrong.json.result.isError).toBe(true);
    expect(wrong.json.result.content[0].text).toMatch(/limit/);
    expect(collectionReads(stack.backend, 'orders')).toHaveLength(0);
    // nora holds no permission on the app: no tools, and a call is refused as an unknown tool.
    const nora = basic('nora', 'nora-password');
    expect((await post('tools/list', {}, {}, nora)).json.result.tools).toEqual([]);
    const refused = await post('tools/call', { name: 'list_orders', arguments: {} }, { 'mcp-name': 'list_orders' }, nora);
    expect(refused.json.error.code).toBe(-32602);
    // The 2026-07-28 rules, answered by the SDK: Mcp-Method required, Mcp-Name must match, _meta required, unknown revisions named.
    const noMethod = await call(stack.proxy.url, '/mcp', {
      method: 'POST',
      auth: ALICE,
      headers: { accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2026-07-28' },
      body: { jsonrpc: '2.0', id: 8, method: 'tools/list', params: { _meta: meta } },
    });
    expect([noMethod.status, noMethod.json.error.code, noMethod.json.id]).toEqual([400, -32020, 8]);
    const wrongName = await post('tools/call', { name: 'list_orders', arguments: {} }, { 'mcp-name': 'set_status' });
    expect([wrongName.status, wrongName.json.error.code]).toEqual([400, -32020]);
    const noEnvelope = await call(stack.proxy.url, '/mcp', {
      method: 'POST',
      auth: ALICE,
      headers: { accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/list' },
      body: { jsonrpc: '2.0', id: 9, method: 'tools/list' },
    });
    expect([noEnvelope.status, noEnvelope.json.error.code]).toEqual([400, -32602]);
    const future = await call(stack.proxy.url, '/mcp', {
      method: 'POST',
      auth: ALICE,
      headers: { accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2027-01-01', 'mcp-method': 'tools/list' },
      body: { jsonrpc: '2.0', id: 10, method: 'tools/list', params: { _meta: { ...meta, 'io.modelcontextprotocol/protocolVersion': '2027-01-01' } } },
    });
    expect(future.status).toBe(400);
    expect(future.json.error.data).toMatchObject({ supported: ['2026-07-28'], requested: '2027-01-01' });
    // subscriptions/listen is offered (issue 51, mcp-listen.test.ts); one asking for nothing offered is acknowledged empty and ends.
    const listen = await post('subscriptions/listen', { notifications: { promptsListChanged: true } });
    expect(listen.status).toBe(200);
    expect(listen.text).toContain('notifications/subscriptions/acknowledged');
  });

  it("the v2 SDK client negotiates 2026-07-28 by server/discover (no initialize) and lists and calls; in 'legacy' mode it still gets 2025-11-25", async () => {
    for (const [mode, version] of [
      ['auto', '2026-07-28'],
      ['legacy', '2025-11-25'],
    ] as const) {
      const client = await mcpClientV2(stack.proxy.url, ALICE, mode);
      try {
        expect(client.getNegotiatedProtocolVersion()).toBe(version);
        expect((await client.listTools()).tools.map((t) => t.name).sort()).toEqual(['list_orders', 'order_by_number', 'orders_in_range']);
        const result = await client.callTool({ name: 'order_by_number', arguments: { number: 1 } });
        expect(result.isError).toBeFalsy();
        expect(result.structuredContent).toMatchObject({ order: { number: 1, owner: 'alice' } });
      } finally {
        await client.close();
      }
    }
  });

  it("a call stays in the agent's trace: the backend read carries the trace id of the /mcp request's traceparent", async () => {
    const trace = '55555555555555555555555555555555';
    const res = await call(stack.proxy.url, '/mcp', {
      method: 'POST',
      auth: ALICE,
      headers: { accept: 'application/json, text/event-stream', traceparent: `00-${trace}-00f067aa0ba902b7-01` },
      body: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'list_orders', arguments: { limit: 1 } } },
    });
    expect(res.json.result.isError).toBeFalsy();
    const read = collectionReads(stack.backend, 'orders')[0]!;
    expect(String(read.headers.traceparent)).toMatch(new RegExp(`^00-${trace}-[0-9a-f]{16}-01$`));
  });

  it('answers GET /mcp 405, an anonymous POST 401 with the sign-in challenge, a batch over 10 messages 400', async () => {
    const get = await call(stack.proxy.url, '/mcp', { auth: ALICE });
    expect(get.status).toBe(405);
    const anonymous = await call(stack.proxy.url, '/mcp', { method: 'POST', body: { jsonrpc: '2.0', id: 1, method: 'tools/list' } });
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers['www-authenticate']).toMatch(/^Bearer resource_metadata="http:\/\/[^"]+\/.well-known\/oauth-protected-resource\/mcp"$/);
    const batch = Array.from({ length: 11 }, (_, i) => ({ jsonrpc: '2.0', id: i, method: 'tools/list' }));
    const big = await call(stack.proxy.url, '/mcp', { method: 'POST', auth: ALICE, headers: { accept: 'application/json, text/event-stream' }, body: batch });
    expect(big.status).toBe(400);
    expect(big.text).toMatch(/at most 10/);
  });
});
