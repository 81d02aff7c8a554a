/**
 * SPEC §11.1's abuse rows (issue 51) through the real proxy: RESTHeart `mcp` blocks with unknown
 * keys or example queries that do not validate (400 naming the path), a mutation smuggled through
 * the read-only `<uri>_query` tool (refused, nothing sent to the backend), and a `<uri>_query`
 * name that shadows another app's tool.
 */
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import type { Client as ClientV2 } from '@modelcontextprotocol/client';
import { call } from '../support/http-client.js';
import { basic } from '../support/outrigger.js';
import { useStack } from '../support/fixtures.js';
import { shopData } from '../integration/graphql-helpers.js';
import { mcpClientV2, shopAppWithTools } from '../integration/mcp-helpers.js';

const ROOT = basic('root', 'root-password');
const ALICE = basic('alice', 'alice-password');
const textOf = (result: unknown) => (result as { content: Array<{ text: string }> }).content[0]!.text;
const RESTHEART = { enabled: true, description: 'The shop' };

describe('agents, second round: abuse', () => {
  const stack = useStack({
    service: 'mcp-agents-abuse',
    backend: { data: shopData() },
    users: { root: ['root'], alice: ['user'] },
    config: { acl: { mode: 'enforce' }, mcp: { server: 'outrigger' } },
    permissions: {
      graphql: { predicate: 'path-prefix(/graphql/shop)', roles: ['user'], priority: 1 },
      products: { predicate: 'path-prefix(/shop/products)', roles: ['user'], priority: 1 },
    },
    apps: { shop: shopAppWithTools({ ...RESTHEART, mutations: true }) },
  });
  const clients: ClientV2[] = [];
  beforeEach(() => stack.backend.clearRequests());
  afterAll(async () => {
    for (const c of clients) await c.close().catch(() => {});
  });
  const put = (id: string, body: unknown) => call(stack.proxy.url, `/gql-apps/${id}`, { method: 'PUT', auth: ROOT, body });

  it('RESTHeart blocks with unknown keys or example queries that do not validate: 400 naming the path, nothing stored', async () => {
    const rows: Array<[Record<string, unknown>, string]> = [
      [{ ...RESTHEART, exampels: [] }, 'mcp.exampels is not a field of the mcp block'],
      [{ ...RESTHEART, examples: [{ description: 'x', args: { body: { query: '{ products { name } }' }, method: 'GET' } }] }, 'mcp.examples[0].args.method is not a field'],
      [{ ...RESTHEART, examples: [{ args: { body: { query: '{ products { name } }', extensions: {} } } }] }, 'mcp.examples[0].args.body.extensions is not a field'],
      [{ ...RESTHEART, examples: [{ args: { body: { query: '{ products { nam } }' } } }] }, "mcp.examples[0].args.body.query does not validate against the app's schema"],
      [{ ...RESTHEART, examples: [{ args: { body: { query: '{ products { name }' } } }] }, 'mcp.examples[0].args.body.query does not parse'],
      [{ ...RESTHEART, examples: [{ args: { body: { query: `{ products ${'{ name '.repeat(1)}${'}'.repeat(1)} }`, variables: 'x=1' } } }] }, 'mcp.examples[0].args.body.variables must be an object'],
      [{ enabled: 'true' }, 'mcp.enabled must be true or false'],
    ];
    for (const [mcp, message] of rows) {
      const res = await put('other', { ...shopAppWithTools(), _id: 'other', descriptor: { uri: 'other' }, mcp });
      expect(res.status, JSON.stringify(mcp)).toBe(400);
      expect(res.text).toContain(message);
    }
    expect((await call(stack.proxy.url, '/gql-apps/other', { auth: ROOT })).status).toBe(404);
  });

  it("<uri>_query may not shadow another app's tool: 400 naming mcp.enabled and the app", async () => {
    const shadow = {
      descriptor: { uri: 'shadow' },
      schema: 'type Product { name: String } type Query { products: [Product] }',
      mappings: { Query: { products: { db: 'shop', collection: 'products' } } },
      mcp: { tools: [{ name: 'other_query', description: 'Not it', query: '{ products { name } }' }] },
    };
    expect((await put('shadow', shadow)).status).toBe(201);
    const res = await put('other', { ...shadow, descriptor: { uri: 'other' }, mcp: RESTHEART });
    expect(res.status).toBe(400);
    expect(res.text).toContain('mcp.enabled: the tool \\"other_query\\" is already a tool of the GraphQL app \\"shadow\\"');
    await call(stack.proxy.url, '/gql-apps/shadow', { method: 'DELETE', auth: ROOT });
  });

  it('a mutation through the read-only <uri>_query is refused however it is dressed, with nothing sent to the backend', async () => {
    const client = await mcpClientV2(stack.proxy.url, ALICE, 'auto');
    clients.push(client);
    // Alice may call add_product (mcp.mutations is on and she may POST products), but not through shop_query.
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(expect.arrayContaining(['add_product', 'shop_query']));
    const dressed = [
      { query: 'mutation { addProduct(name: "x") }' },
      { query: '  # a comment first\n mutation M { addProduct(name: "x") }' },
      { query: 'query Q { products { name } } mutation M { addProduct(name: "x") }', operationName: 'M' },
      { query: 'query Q { products { name } } mutation M { addProduct(name: "x") }', operationName: 'Q' },
      { query: 'query Q { products { name } } mutation M { addProduct(name: "x") }' },
      { query: 'subscription S { orderChanged { number } }' },
    ];
    for (const args of dressed) {
      const result = await client.callTool({ name: 'shop_query', arguments: args });
      expect(result.isError, JSON.stringify(args)).toBe(true);
      expect(textOf(result)).toMatch(/read-only/);
    }
    expect(stack.backend.requests).toHaveLength(0);
  });
});
