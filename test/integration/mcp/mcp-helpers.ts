/** Shared by the MCP server tests: the shop app with tools, and an SDK client with fixed credentials. */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client as ClientV2, StreamableHTTPClientTransport as StreamableHTTPClientTransportV2 } from '@modelcontextprotocol/client';
import { shopApp, shopData } from '../graphql/graphql-helpers.js';

/** The shop app with tools: two queries, an input object, an enum, a mutation (hidden until allowed). */
export function shopAppWithTools(mcp: Record<string, unknown> = {}): Record<string, unknown> {
  const app = shopApp();
  return {
    ...app,
    schema: `${app.schema as string}
      """Changes to the shop"""
      type Mutation { setStatus(number: Int!, status: Status!): Boolean, addProduct(name: String!, price: Int): ID }`,
    mappings: {
      ...(app.mappings as Record<string, unknown>),
      Mutation: {
        setStatus: { db: 'shop', collection: 'orders', find: { _id: { $arg: 'number' } }, update: { $set: { status: { $arg: 'status' } } } },
        addProduct: { db: 'shop', collection: 'products', insert: { name: { $arg: 'name' }, price: { $arg: 'price' } } },
      },
    },
    mcp: {
      tools: [
        {
          name: 'list_orders',
          description: 'Orders by status, oldest first',
          query: 'query ListOrders($status: Status, $limit: Int = 3) { orders(status: $status, limit: $limit) { number status total secret } }',
        },
        { name: 'order_by_number', description: 'One order', query: 'query OneOrder($number: Int!) { order(number: $number) { number owner total } }' },
        { name: 'orders_in_range', description: 'Orders whose total is in a range', query: 'query InRange($range: Range!) { ordersInRange(range: $range) { number total } }' },
        { name: 'add_product', description: 'Adds a product', query: 'mutation AddProduct($name: String!, $price: Int) { addProduct(name: $name, price: $price) }' },
        { name: 'set_status', description: 'Sets an order status', query: 'mutation SetStatus($number: Int!, $status: Status!) { setStatus(number: $number, status: $status) }' },
      ],
      ...mcp,
    },
  };
}

/** An SDK client sending one Authorization header (Basic, or a key) on every request. */
export async function mcpClient(url: string, authorization: string): Promise<Client> {
  const client = new Client({ name: 'outrigger-mcp-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { requestInit: { headers: { authorization } } }));
  return client;
}

/** The v2 SDK client (`@modelcontextprotocol/client`): `auto` probes with server/discover and speaks 2026-07-28 when offered; `legacy` runs the 2025 handshake. */
export async function mcpClientV2(url: string, authorization: string, mode: 'auto' | 'legacy'): Promise<ClientV2> {
  const client = new ClientV2({ name: 'outrigger-mcp-test-v2', version: '1.0.0' }, { versionNegotiation: { mode } });
  await client.connect(new StreamableHTTPClientTransportV2(new URL(`${url}/mcp`), { requestInit: { headers: { authorization } } }));
  return client;
}

/** The shop app's mutation tool, as an operation (the idempotency rows send it at both doors). */
export const ADD_PRODUCT = 'mutation AddProduct($name: String!, $price: Int) { addProduct(name: $name, price: $price) }';

/**
 * The stack the idempotency rows at the GraphQL and MCP doors share (SPEC §14): the shop app with
 * mutation tools, alice and carol as users, and `idempotency.required` for carol's GraphQL calls.
 */
export function idempotentShopStack(service: string) {
  return {
    service,
    backend: { data: shopData() },
    users: { root: ['root'], alice: ['user'], carol: ['user'] },
    config: {
      acl: { mode: 'enforce' as const },
      mcp: { server: 'outrigger' as const },
      features: { webhooks: 'disabled' as const },
      idempotency: { required: ['path-prefix(/graphql/shop) and equals(%u, carol)'] },
    },
    permissions: {
      graphql: { predicate: 'path-prefix(/graphql/shop)', roles: ['user'], priority: 1 },
      'read-orders': { predicate: 'method(GET) and path-prefix(/shop/orders)', roles: ['user'], priority: 10 },
      'write-products': { predicate: 'method(POST) and path-prefix(/shop/products)', roles: ['user'], priority: 1 },
    },
    apps: { shop: shopAppWithTools({ mutations: true }) },
  };
}
