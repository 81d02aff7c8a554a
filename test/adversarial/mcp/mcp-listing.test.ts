/**
 * Issue 53 item 7 (second half): a tool is listed only when it can be called. In the demo a
 * `reader` was offered `place_order` while every call of it was FORBIDDEN by the mutation's write
 * policy. Listing now decides as the call would: the GraphQL door, then each backend write of a
 * mutation tool as the write policy decides it (the REST write allowed, not under a readFilter;
 * an update answering the document also needs the read). A tool not listed is not callable.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { as, useStack } from '../../support/fixtures.js';
import { shopData } from '../../integration/graphql/graphql-helpers.js';
import { mcpClient, shopAppWithTools } from '../../integration/mcp/mcp-helpers.js';

/** The shop's tools with mutations on, plus an update that answers the product (so it reads it first). */
function app(): Record<string, unknown> {
  const base = shopAppWithTools({ mutations: true });
  const mappings = base.mappings as Record<string, Record<string, unknown>>;
  const mcp = base.mcp as { tools: unknown[] };
  return {
    ...base,
    schema: `${base.schema as string}\n extend type Mutation { renameProduct(id: String!, name: String!): Product }`,
    mappings: { ...mappings, Mutation: { ...mappings.Mutation, renameProduct: { db: 'shop', collection: 'products', find: { _id: { $arg: 'id' } }, update: { $set: { name: { $arg: 'name' } } } } } },
    mcp: {
      ...mcp,
      tools: [...mcp.tools, { name: 'rename_product', description: 'Renames a product', query: 'mutation Rename($id: String!, $name: String!) { renameProduct(id: $id, name: $name) { name } }' }],
    },
  };
}

const QUERIES = ['list_orders', 'order_by_number', 'orders_in_range'];
const ALL = ['add_product', ...QUERIES, 'rename_product', 'set_status'];

describe('MCP tools/list decides as the call would, backend writes included (issue 53 item 7)', () => {
  const stack = useStack({
    service: 'mcp-listing',
    backend: { data: shopData() },
    users: { root: ['root'], reader: ['reader'], writer: ['writer'], filtered: ['filtered'], blind: ['blind'] },
    config: { acl: { mode: 'enforce' }, mcp: { server: 'outrigger' } },
    permissions: {
      graphql: { predicate: 'path-prefix(/graphql/shop)', roles: ['reader', 'writer', 'filtered', 'blind'], priority: 1 },
      read: { predicate: 'method(GET) and path-prefix(/shop)', roles: ['reader', 'writer'], priority: 1 },
      write: { predicate: '(method(POST) or method(PATCH)) and path-prefix(/shop)', roles: ['writer'], priority: 1 },
      // Allowed the writes, but through a readFilter: the write policy refuses writes under one (SPEC §3.6).
      'filtered-writes': { predicate: 'path-prefix(/shop)', roles: ['filtered'], priority: 1, mongo: { readFilter: { owner: '@user.id' } } },
      // May write products but read nothing: an update answering the product reads it first.
      'blind-writes': { predicate: '(method(POST) or method(PATCH)) and path-prefix(/shop/products)', roles: ['blind'], priority: 1 },
    },
    apps: { shop: app() },
  });
  const clients: Client[] = [];
  const connect = async (user: string) => {
    const client = await mcpClient(stack.proxy.url, as(user));
    clients.push(client);
    return client;
  };
  const names = async (client: Client) => (await client.listTools()).tools.map((t) => t.name).sort();
  afterAll(async () => {
    for (const c of clients) await c.close().catch(() => {});
  });

  it('a reader is offered the queries only: the mutation tools, whose writes it may not make, are neither listed nor callable, and nothing is written', async () => {
    const reader = await connect('reader');
    expect(await names(reader)).toEqual(QUERIES);
    stack.backend.clearRequests();
    await expect(reader.callTool({ name: 'add_product', arguments: { name: 'raft', price: 1 } })).rejects.toThrow(/no tool named "add_product" is offered to you/);
    await expect(reader.callTool({ name: 'set_status', arguments: { number: 1, status: 'OPEN' } })).rejects.toThrow(/no tool named "set_status"/);
    expect(stack.backend.requests.filter((r) => r.method !== 'GET')).toHaveLength(0);
    // The door it was refused at is the real one: the same mutation straight to GraphQL is FORBIDDEN by the write policy.
    const direct = await fetch(`${stack.proxy.url}/graphql/shop`, {
      method: 'POST',
      headers: { authorization: as('reader'), 'content-type': 'application/json' },
      body: JSON.stringify({ query: 'mutation { addProduct(name: "raft", price: 1) }' }),
    });
    const text = JSON.stringify(await direct.json());
    expect(text, text).toMatch(/FORBIDDEN/);
  });

  it('a writer is offered every tool and its mutation tool writes', async () => {
    const writer = await connect('writer');
    expect(await names(writer)).toEqual(ALL);
    const added = await writer.callTool({ name: 'add_product', arguments: { name: 'raft', price: 1 } });
    expect(added.isError, JSON.stringify(added.content)).toBeFalsy();
    expect(stack.backend.collection('shop', 'products').some((p) => p.name === 'raft')).toBe(true);
  });

  it('writes allowed only under a readFilter are refused by the write policy, so those tools are not listed', async () => {
    expect(await names(await connect('filtered'))).toEqual(QUERIES);
  });

  it('an update that answers the document needs the read too: a role that may write products but read nothing is offered add_product, not rename_product', async () => {
    const blind = await connect('blind');
    expect(await names(blind)).toEqual(['add_product', ...QUERIES]);
    await expect(blind.callTool({ name: 'rename_product', arguments: { id: 'p1', name: 'x' } })).rejects.toThrow(/no tool named "rename_product"/);
  });

  it('root lists everything', async () => {
    expect(await names(await connect('root'))).toEqual(ALL);
  });
});
