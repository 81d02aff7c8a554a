/**
 * SPEC §11 with §5.6: an MCP client built on the official SDK meets Outrigger's own MCP server's
 * 401 challenge, signs its user in through the browser (Chromium), and with the key it received
 * lists the tools its roles allow and calls them; the calls read the backend as that key.
 */
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser } from '../../support/clients/browser.js';
import { approveInBrowser, connectMcp, finishAuth, freePort, startCallback, TestOAuthProvider } from '../../support/clients/agent-sign-in.js';
import { useStack } from '../../support/fixtures.js';
import { collectionReads, shopData } from '../graphql/graphql-helpers.js';
import { shopAppWithTools } from './mcp-helpers.js';

describe('Outrigger MCP server: an SDK client signs in through the browser, then lists and calls tools', () => {
  let callback: Awaited<ReturnType<typeof startCallback>>;
  let browser: Browser;
  let port = 0;
  // Before the stack starts: publicUrl must name the port the SDK client will discover.
  beforeAll(async () => {
    port = await freePort();
  });
  const stack = useStack({
    service: 'mcp-sign-in',
    backend: { data: shopData() },
    users: { root: ['root'], alice: ['user'] },
    config: (s) => ({
      service: { id: 'mcp-sign-in', publicUrl: `http://127.0.0.1:${port}` },
      listen: { port },
      acl: { mode: 'enforce' },
      mcp: { server: 'outrigger' },
      upstream: { url: s.upstreamUrl, identity: { mode: 'headers' } },
    }),
    permissions: {
      'issue-keys': { predicate: 'path-prefix(/keys)', roles: ['user'], priority: 10, apiKeys: { roles: ['reader', 'writer'] } },
      'read-shop': { predicate: 'path-prefix(/graphql/shop)', roles: ['reader'], priority: 1 },
      'reader-orders': { predicate: 'method(GET) and path-prefix(/shop/orders)', roles: ['reader'], priority: 1, mongo: { projectResponse: { secret: 0 } } },
    },
    apps: { shop: shopAppWithTools({ mutations: true }) },
  });

  beforeAll(async () => {
    callback = await startCallback();
    browser = await launchBrowser();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await callback?.close();
  });

  it('401 challenge → discovery → registration → browser sign-in and consent → key → tools/list and tools/call as the key', async () => {
    const base = stack.proxy.url;
    expect(base).toBe(`http://127.0.0.1:${port}`);
    const provider = new TestOAuthProvider(`${callback.url}/callback`, 'Tools Agent');
    expect(await connectMcp(`${base}/mcp`, provider)).toBeNull();
    expect(provider.authorizationUrl).not.toBeNull();
    await approveInBrowser(browser, provider.authorizationUrl!, { user: 'alice', password: 'alice-password', roles: ['reader'], lifetime: '30 days' });
    const query = await callback.next();
    await finishAuth(`${base}/mcp`, provider, query.get('code')!);
    const client = await connectMcp(`${base}/mcp`, provider);
    expect(client).not.toBeNull();
    try {
      const { tools } = await client!.listTools();
      // The query tools of the app; its mutations (mcp.mutations is true) write what the key's role may not, so they are not offered (issue 53).
      expect(tools.map((t) => t.name).sort()).toEqual(['list_orders', 'order_by_number', 'orders_in_range']);
      stack.backend.clearRequests();
      const result = await client!.callTool({ name: 'list_orders', arguments: { status: 'OPEN', limit: 2 } });
      expect(result.isError).toBeFalsy();
      expect(result.structuredContent).toEqual({
        orders: [
          { number: 1, status: 'OPEN', total: 10, secret: null },
          { number: 5, status: 'OPEN', total: 50, secret: null },
        ],
      });
      const reads = collectionReads(stack.backend, 'orders');
      expect(reads).toHaveLength(1);
      // The backend saw alice with the key's roles (identity headers), never the key itself.
      expect(reads[0]!.headers['x-forwarded-user']).toBe('alice');
      expect(reads[0]!.headers['x-forwarded-roles']).toBe('reader');
      expect(JSON.stringify(reads[0]!.headers)).not.toContain(provider.saved!.access_token);
      // A write the key's roles do not allow on the backend: not offered, so not callable (and nothing written).
      await expect(client!.callTool({ name: 'add_product', arguments: { name: 'sail', price: 5 } })).rejects.toThrow(/no tool named "add_product"/);
      expect(stack.backend.requests.filter((r) => r.method !== 'GET')).toHaveLength(0);
    } finally {
      await client!.close();
    }
  });
});
