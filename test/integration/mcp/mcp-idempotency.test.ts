/**
 * SPEC §14 for agents: a mutation tool takes an optional `idempotencyKey` argument (in tools/list's
 * input schema, only for mutation tools), sent as the inner `POST /graphql/<uri>`'s
 * `Idempotency-Key`, so the GraphQL door claims it: a retried call with one key writes once, and
 * the replay answers the first result under the retry's own JSON-RPC id (the SDK clients match
 * answers by id: a wrong one would never resolve), marked in `_meta`. Driven by the official
 * SDK clients, 2025-era and 2026-07-28, through the real proxy, Redis and the stand-in.
 * `idempotency.required` (here: carol on /graphql/shop) reaches both doors: carol's mutation
 * without the header is a 400 naming it and the setting (her queries, and alice's mutations, run
 * as before), and her tools/list marks `idempotencyKey` required on the mutation tools, a call
 * without it an error naming `idempotencyKey`, with nothing written.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { as, useStack } from '../../support/fixtures.js';
import { call } from '../graphql/graphql-helpers.js';
import { ADD_PRODUCT as ADD, idempotentShopStack, mcpClient, mcpClientV2 } from './mcp-helpers.js';

const ALICE = as('alice');
const CAROL = as('carol');
const ROOT = as('root');

describe('MCP mutation tools take idempotencyKey (SPEC §14)', () => {
  const stack = useStack(idempotentShopStack('mcp-idempotency'));
  const clients: Array<{ close(): Promise<void> }> = [];
  const connect = async (auth = ALICE): Promise<Client> => {
    const client = await mcpClient(stack.proxy.url, auth);
    clients.push(client);
    return client;
  };
  const productWrites = () => stack.backend.requests.filter((r) => r.method === 'POST' && r.path === '/shop/products').length;
  beforeEach(() => stack.backend.clearRequests());
  afterAll(async () => {
    for (const c of clients) await c.close().catch(() => {});
  });

  it('tools/list: the mutation tools have an optional idempotencyKey string; the query tools do not', async () => {
    const { tools } = await (await connect(ROOT)).listTools();
    for (const name of ['add_product', 'set_status']) {
      const schema = tools.find((t) => t.name === name)!.inputSchema;
      expect(schema.properties!.idempotencyKey, name).toMatchObject({ type: 'string', pattern: '^[!-~]([ -~]{0,253}[!-~])?$' });
      expect((schema.properties!.idempotencyKey as { description: string }).description).toMatch(/happen once/);
      expect(schema.required ?? []).not.toContain('idempotencyKey');
    }
    for (const name of ['list_orders', 'order_by_number', 'orders_in_range']) expect(tools.find((t) => t.name === name)!.inputSchema.properties, name).not.toHaveProperty('idempotencyKey');
  });

  it('two calls with one key write once: the second is the first result, marked as a replay', async () => {
    const client = await connect();
    const args = { name: 'hawser', price: 12, idempotencyKey: 'add hawser #1' };
    const first = await client.callTool({ name: 'add_product', arguments: args });
    expect(first.isError, JSON.stringify(first)).toBeFalsy();
    expect(first._meta?.idempotentReplayed).toBeUndefined();
    const second = await client.callTool({ name: 'add_product', arguments: args });
    expect(second.isError).toBeFalsy();
    expect(second.structuredContent).toEqual(first.structuredContent);
    expect(second._meta).toEqual({ idempotentReplayed: true });
    expect(productWrites()).toBe(1);
    // The key is not a variable: the product holds only its own fields.
    const hawser = stack.backend.collection('shop', 'products').find((p) => p.name === 'hawser')!;
    expect(hawser).toMatchObject({ name: 'hawser', price: 12 });
    expect(hawser).not.toHaveProperty('idempotencyKey');
    // Without a key each call writes.
    await client.callTool({ name: 'add_product', arguments: { name: 'hawser', price: 12 } });
    await client.callTool({ name: 'add_product', arguments: { name: 'hawser', price: 12 } });
    expect(productWrites()).toBe(3);
  });

  it('the key with other arguments is an error naming the key, and writes nothing', async () => {
    const client = await connect();
    const mast = await client.callTool({ name: 'add_product', arguments: { name: 'mast', price: 40, idempotencyKey: 'k-mast' } });
    expect(mast.isError, JSON.stringify(mast)).toBeFalsy();
    stack.backend.clearRequests();
    const other = await client.callTool({ name: 'add_product', arguments: { name: 'boom', price: 40, idempotencyKey: 'k-mast' } });
    expect(other.isError).toBe(true);
    expect((other.content as Array<{ text: string }>)[0]!.text).toMatch(/IDEMPOTENCY_KEY_REUSED.*k-mast/);
    expect(productWrites()).toBe(0);
  });

  it('the 2026-07-28 client: a retried call with its key is answered under its own id, the write made once', async () => {
    const client = await mcpClientV2(stack.proxy.url, ALICE, 'auto');
    clients.push(client);
    const args = { name: 'keel', price: 300, idempotencyKey: '0b5f4c56-7a4e-4f0e-9b1e-3c7d7f2b8a11' };
    const results = [];
    for (let i = 0; i < 3; i++) results.push(await client.callTool({ name: 'add_product', arguments: args }));
    expect(results.map((r) => r.isError ?? false)).toEqual([false, false, false]);
    expect(results[1]!.structuredContent).toEqual(results[0]!.structuredContent);
    expect(results.map((r) => (r._meta as { idempotentReplayed?: boolean } | undefined)?.idempotentReplayed ?? false)).toEqual([false, true, true]);
    expect(productWrites()).toBe(1);
  });

  it('idempotency.required at the GraphQL door: a mutation without the header is 400 naming it and the setting; queries and unmatched callers run', async () => {
    const send = (auth: string, query: string, key?: string) =>
      call(stack.proxy.url, '/graphql/shop', { method: 'POST', auth, headers: key ? { 'idempotency-key': key } : {}, body: { query, variables: { name: 'cleat', price: 3 } } });
    const refused = await send(CAROL, ADD);
    expect(refused.status, refused.text).toBe(400);
    expect(refused.headers['content-type']).toMatch(/^application\/(graphql-response\+)?json/);
    expect(refused.json.errors[0].extensions.code).toBe('IDEMPOTENCY_KEY_REQUIRED');
    expect(refused.json.errors[0].message).toMatch(/must carry an Idempotency-Key header \(idempotency\.required\)/);
    expect(productWrites()).toBe(0);
    // A query is not a write: the setting does not ask it for a key.
    const read = await send(CAROL, '{ orders(limit: 1) { number } }');
    expect(read.status, read.text).toBe(200);
    expect(read.json.data.orders).toHaveLength(1);
    // With the key it runs (once); alice matches no condition and runs without one.
    expect((await send(CAROL, ADD, 'carol-cleat')).json.errors).toBeUndefined();
    expect((await send(CAROL, ADD, 'carol-cleat')).headers['idempotent-replayed']).toBe('true');
    expect((await send(ALICE, ADD)).status).toBe(200);
    expect(productWrites()).toBe(2);
  });

  it('idempotency.required for MCP: tools/list marks idempotencyKey required for the caller it matches; a call without it is an error naming idempotencyKey, and writes nothing', async () => {
    const carol = await connect(CAROL);
    const { tools } = await carol.listTools();
    // set_status is not offered to a caller who may not write orders (may-call.ts).
    expect(tools.find((t) => t.name === 'add_product')!.inputSchema.required).toEqual(['name', 'idempotencyKey']);
    for (const name of ['list_orders', 'order_by_number']) expect(tools.find((t) => t.name === name)!.inputSchema.required ?? [], name).not.toContain('idempotencyKey');
    // Per caller: alice's listing keeps the key optional.
    const alice = await (await connect(ALICE)).listTools();
    expect(alice.tools.find((t) => t.name === 'add_product')!.inputSchema.required).toEqual(['name']);

    const without = await carol.callTool({ name: 'add_product', arguments: { name: 'fid', price: 2 } });
    expect(without.isError).toBe(true);
    const text = (without.content as Array<{ text: string }>)[0]!.text;
    expect(text).toMatch(/^IDEMPOTENCY_KEY_REQUIRED: add_product must be called with an idempotencyKey argument here \(idempotency\.required\)/);
    expect(text).toMatch(/nothing ran/);
    expect(productWrites()).toBe(0);
    const keyed = await carol.callTool({ name: 'add_product', arguments: { name: 'fid', price: 2, idempotencyKey: 'carol-fid-1' } });
    expect(keyed.isError, JSON.stringify(keyed)).toBeFalsy();
    expect(productWrites()).toBe(1);
    // A query tool needs none.
    expect((await carol.callTool({ name: 'list_orders', arguments: {} })).isError).toBeFalsy();
  });
});
