/**
 * SPEC §11's "same door": rate limits and quotas (§10) apply to a tool call exactly as to the
 * `POST /graphql/<uri>` it is. A policy on `/graphql/shop` counts each call of a key; under
 * `units: cost` a call costs its GraphQL estimate; the refusal reaches the agent as `isError`
 * naming the policy and when to retry, and the backend never sees the refused call.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { call } from '../../support/clients/http-client.js';
import { basic } from '../../support/outrigger.js';
import { useStack } from '../../support/fixtures.js';
import { collectionReads, shopData } from '../graphql/graphql-helpers.js';
import { mcpClient, shopAppWithTools } from './mcp-helpers.js';

const ALICE = basic('alice', 'alice-password');
const textOf = (result: unknown) => (result as { content: Array<{ text: string }> }).content[0]!.text;

describe('Outrigger MCP server: rate limits apply to tool calls', () => {
  const stack = useStack({
    service: 'mcp-limits',
    backend: { data: shopData() },
    users: { root: ['root'], alice: ['user'] },
    config: {
      acl: { mode: 'enforce' },
      mcp: { server: 'outrigger' },
      limits: {
        policies: [
          { name: 'shop-calls', by: 'key', limit: 3, window: '1d', condition: "path-prefix('/graphql/shop')", roles: ['reader'] },
          { name: 'shop-cost', by: 'key', limit: 10, window: '1d', units: 'cost', condition: "path-prefix('/graphql/shop')", roles: ['costed'] },
        ],
      },
    },
    permissions: {
      keys: { predicate: 'path-prefix(/keys)', roles: ['user'], priority: 10, apiKeys: { roles: ['reader', 'costed'] } },
      graphql: { predicate: 'path-prefix(/graphql/shop)', roles: ['reader', 'costed'], priority: 1 },
      orders: { predicate: 'method(GET) and path-prefix(/shop/orders)', roles: ['reader', 'costed'], priority: 1 },
    },
    apps: { shop: shopAppWithTools() },
  });
  const clients: Client[] = [];
  const keyClient = async (role: string) => {
    const issued = await call(stack.proxy.url, '/keys', { method: 'POST', auth: ALICE, body: { name: role, roles: [role] } });
    expect(issued.status, issued.text).toBe(201);
    const client = await mcpClient(stack.proxy.url, `Bearer ${issued.json.key as string}`);
    clients.push(client);
    return client;
  };
  afterAll(async () => {
    for (const c of clients) await c.close().catch(() => {});
  });

  it('a key limited to 3 requests on /graphql/shop makes 3 tool calls; the 4th is isError 429 naming the policy, with no backend read', async () => {
    const client = await keyClient('reader');
    for (let i = 0; i < 3; i++) {
      const ok = await client.callTool({ name: 'order_by_number', arguments: { number: i + 1 } });
      expect(ok.isError, textOf(ok)).toBeFalsy();
    }
    stack.backend.clearRequests();
    const refused = await client.callTool({ name: 'order_by_number', arguments: { number: 4 } });
    expect(refused.isError).toBe(true);
    expect(textOf(refused)).toMatch(/^429: rate limit 'shop-calls': 3 requests per 86400 s; retry in \d+ s \(retry after \d+ s\)$/);
    expect(collectionReads(stack.backend)).toHaveLength(0);
    // tools/list is a request to /mcp, which the policy does not cover: still answered.
    expect((await client.listTools()).tools.length).toBeGreaterThan(0);
  });

  it('under units: cost a call costs its estimate: two calls of 5 documents fill 10 units, the third is refused before any read', async () => {
    const client = await keyClient('costed');
    for (let i = 0; i < 2; i++) {
      const ok = await client.callTool({ name: 'list_orders', arguments: { limit: 5 } });
      expect(ok.isError, textOf(ok)).toBeFalsy();
    }
    stack.backend.clearRequests();
    const refused = await client.callTool({ name: 'list_orders', arguments: { limit: 5 } });
    expect(refused.isError).toBe(true);
    expect(textOf(refused)).toMatch(/^429: rate limit 'shop-cost'/);
    expect(collectionReads(stack.backend)).toHaveLength(0);
  });
});
