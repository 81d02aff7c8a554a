/**
 * SPEC §11.1's abuse rows (issue 51) through the real proxy: RESTHeart `mcp` blocks with unknown
 * keys or example queries that do not validate (400 naming the path), a mutation smuggled through
 * the read-only `<uri>_query` tool (refused, nothing sent to the backend), and a `<uri>_query`
 * name that shadows another app's tool; resource URIs with `..`, encoded separators, another
 * scheme, Outrigger's own `/_admin` or a collection `mcp.resources` does not expose (refused, nothing
 * read), and a query template's filter that tries to widen a readFilter (the REST door ANDs it).
 */
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import type { Client as ClientV2 } from '@modelcontextprotocol/client';
import { call } from '../../support/clients/http-client.js';
import { basic } from '../../support/outrigger.js';
import { useStack } from '../../support/fixtures.js';
import { shopData } from '../../integration/graphql/graphql-helpers.js';
import { mcpClientV2, shopAppWithTools } from '../../integration/mcp/mcp-helpers.js';

const ROOT = basic('root', 'root-password');
const ALICE = basic('alice', 'alice-password');
const textOf = (result: unknown) => (result as { content: Array<{ text: string }> }).content[0]!.text;
const RESTHEART = { enabled: true, description: 'The shop' };

describe('agents, second round: abuse', () => {
  const stack = useStack({
    service: 'mcp-agents-abuse',
    backend: { data: shopData() },
    users: { root: ['root'], alice: ['user'] },
    config: { acl: { mode: 'enforce' }, mcp: { server: 'outrigger', resources: ['path-prefix(/shop/orders)', 'path-prefix(/shop/products)'] } },
    permissions: {
      graphql: { predicate: 'path-prefix(/graphql/shop)', roles: ['user'], priority: 1 },
      products: { predicate: 'path-prefix(/shop/products)', roles: ['user'], priority: 1 },
      'own-orders': { predicate: 'method(GET) and path-prefix(/shop/orders)', roles: ['user'], priority: 10, mongo: { readFilter: { owner: '@user.id' } } },
      users: { predicate: 'method(GET) and path-prefix(/shop/users)', roles: ['user'], priority: 1 },
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

  it("resource URIs with .., encoded separators, another scheme, Outrigger's own paths or an unexposed collection are refused by name, nothing read", async () => {
    const client = await mcpClientV2(stack.proxy.url, ALICE, 'auto');
    clients.push(client);
    const rows: Array<[string, RegExp]> = [
      ['outrigger://shop/../_admin/acl', /must name a collection|names the collection/],
      ['outrigger://shop/orders/..', /has the id "\.\.", which is not a document/],
      ['outrigger://shop/orders/%2E%2E', /has the id "\.\.", which is not a document/],
      ['outrigger://shop/orders/a%2Fb', /path separator/],
      ['outrigger://shop/orders/a%5Cb', /path separator/],
      ['outrigger://shop/orders/a%00b', /control character/],
      ['outrigger://shop%2Forders/x', /names the database "shop%2Forders"/],
      ['outrigger://_admin/acl', /names the database "_admin"/],
      ['outrigger://shop/orders/_size', /ids starting with _ name RESTHeart's own resources/],
      ['outrigger://other/shop/orders/1', /must name a collection .* or a document/],
      ['https://other.example/shop/orders', /is not one of this service's resources/],
      ['outrigger://shop/orders?where=1', /has the query parameter "where"/],
      ['outrigger://shop/orders?filter=owner:bob', /has a filter that is not a JSON object/],
      ['outrigger://shop/orders?pagesize=100000', /pagesize=.* it must be a whole number from 1 to 1000/],
      ['outrigger://shop/orders/1?filter=%7B%7D', /names a document and carries a query/],
      ['outrigger://shop/users', /outrigger:\/\/shop\/users is not a resource of this service/],
    ];
    for (const [uri, message] of rows) await expect(client.readResource({ uri }), uri).rejects.toThrow(message);
    expect(stack.backend.requests).toHaveLength(0);
  });

  it("a query template's filter cannot widen the readFilter: the REST door ANDs it, so only the caller's own documents come back", async () => {
    const client = await mcpClientV2(stack.proxy.url, ALICE, 'legacy');
    clients.push(client);
    const widening = [{ owner: 'bob' }, { $or: [{ owner: 'bob' }, { owner: { $exists: true } }] }, { owner: { $ne: 'alice' } }];
    for (const filter of widening) {
      const uri = `outrigger://shop/orders?filter=${encodeURIComponent(JSON.stringify(filter))}&pagesize=1000`;
      const read = await client.readResource({ uri });
      const orders = JSON.parse((read.contents[0] as { text: string }).text) as Array<{ owner: string }>;
      expect(
        orders.every((o) => o.owner === 'alice'),
        JSON.stringify(filter),
      ).toBe(true);
      const rest = await call(stack.proxy.url, `/shop/orders?filter=${encodeURIComponent(JSON.stringify(filter))}&pagesize=1000`, { auth: ALICE });
      expect(orders).toEqual(rest.json);
    }
  });
});
