/**
 * SPEC §11.1's list-changed notifications through the real proxy and Redis, with the official v2
 * SDK client on 2026-07-28 (`client.listen`): an agent listening on one replica is told
 * `notifications/tools/list_changed` and `notifications/resources/list_changed` when an app or a
 * permission saved through another replica changes its own lists, within 1 s (+ slack for a loaded
 * machine); an agent whose lists did not change is not told; a principal's streams are bounded.
 */
import type { Client as ClientV2 } from '@modelcontextprotocol/client';
import { afterAll, describe, expect, it } from 'vitest';
import { basic, BUS_ONLY_POLL_MS } from '../../support/outrigger.js';
import { useStack } from '../../support/fixtures.js';
import { call, pollUntil, shopData } from '../graphql/graphql-helpers.js';
import { mcpClientV2, shopAppWithTools } from './mcp-helpers.js';

const ROOT = basic('root', 'root-password');
const ALICE = basic('alice', 'alice-password');
const NORA = basic('nora', 'nora-password');
/** SPEC: within 1 s; + 3 s for a loaded machine (issue 40), which only the change bus can meet. */
const BOUND_MS = 1000 + 3000;

describe('Outrigger MCP server: subscriptions/listen (list changes)', () => {
  const stack = useStack({
    service: 'mcp-listen',
    backend: { data: shopData() },
    users: { root: ['root'], alice: ['user'], nora: ['nobody'] },
    config: { acl: { mode: 'enforce' }, subscriptions: { maxPerPrincipal: 3 }, mcp: { server: 'outrigger', resources: ['path-prefix(/shop/products)'] } },
    permissions: { graphql: { predicate: 'path-prefix(/graphql/shop)', roles: ['user'], priority: 1 } },
    apps: { shop: shopAppWithTools() },
  });
  const clients: ClientV2[] = [];
  afterAll(async () => {
    for (const c of clients) await c.close().catch(() => {});
  });

  async function listener(url: string, auth: string) {
    const client = await mcpClientV2(url, auth, 'auto');
    clients.push(client);
    const told: string[] = [];
    client.setNotificationHandler('notifications/tools/list_changed', () => void told.push('tools'));
    client.setNotificationHandler('notifications/resources/list_changed', () => void told.push('resources'));
    const subscription = await client.listen({ toolsListChanged: true, resourcesListChanged: true });
    return { client, told, subscription };
  }

  it('an app saved on one replica tells the listeners of another whose tools changed, and only them', async () => {
    const other = await stack.start({}, { documentPollMs: BUS_ONLY_POLL_MS });
    const alice = await listener(other.url, ALICE);
    expect(alice.subscription.honoredFilter).toEqual({ toolsListChanged: true, resourcesListChanged: true });
    const nora = await listener(other.url, NORA);
    // mutations: true shows add_product only to callers who may POST products: not alice, so she is not told.
    const save = (app: Record<string, unknown>) => call(stack.proxy.url, '/gql-apps/shop', { method: 'PUT', auth: ROOT, body: app });
    expect((await save(shopAppWithTools({ mutations: true }))).status).toBeLessThan(300);
    const disabled = shopAppWithTools({ mutations: true });
    (disabled.descriptor as Record<string, unknown>).enabled = false;
    expect((await save(disabled)).status).toBeLessThan(300);
    const ms = await pollUntil(async () => alice.told.includes('tools'), 2 * BOUND_MS, 10);
    expect(ms).toBeLessThan(BOUND_MS);
    expect(alice.told).toEqual(['tools']);
    expect((await alice.client.listTools()).tools).toEqual([]);
    expect((await save(shopAppWithTools())).status).toBeLessThan(300);
    await pollUntil(async () => alice.told.length === 2, 2 * BOUND_MS, 10);
    // nora may call no tool before or after: nothing changed for her.
    await new Promise((r) => setTimeout(r, 300));
    expect(nora.told).toEqual([]);
    expect(alice.told).not.toContain('resources');
    await alice.subscription.close();
    await nora.subscription.close();
  });

  it('a permission saved on one replica tells the listener whose resources and tools it changes', async () => {
    const other = await stack.start({}, { documentPollMs: BUS_ONLY_POLL_MS });
    const nora = await listener(other.url, NORA);
    const granted = await call(stack.proxy.url, '/_admin/acl/nora-reads', {
      method: 'PUT',
      auth: ROOT,
      body: { predicate: 'path-prefix(/shop/products) or path-prefix(/graphql/shop)', roles: ['nobody'], priority: 1 },
    });
    expect(granted.status, granted.text).toBeLessThan(300);
    const ms = await pollUntil(async () => nora.told.includes('tools') && nora.told.includes('resources'), 2 * BOUND_MS, 10);
    expect(ms).toBeLessThan(BOUND_MS);
    expect((await nora.client.listResources()).resources.map((r) => r.uri)).toEqual(['outrigger://shop/products']);
    await nora.subscription.close();
    await call(stack.proxy.url, '/_admin/acl/nora-reads', { method: 'DELETE', auth: ROOT });
  });

  it("one principal's open streams are bounded (subscriptions.maxPerPrincipal): the next listen is refused naming the setting", async () => {
    const held = [];
    for (let i = 0; i < 3; i++) held.push(await listener(stack.proxy.url, ALICE));
    const client = await mcpClientV2(stack.proxy.url, ALICE, 'auto');
    clients.push(client);
    await expect(client.listen({ toolsListChanged: true })).rejects.toThrow(/subscriptions\.maxPerPrincipal/);
    // Another principal is not held back by alice's streams.
    const nora = await listener(stack.proxy.url, NORA);
    await nora.subscription.close();
    await held[0]!.subscription.close();
    await pollUntil(
      async () => {
        try {
          const again = await client.listen({ toolsListChanged: true });
          await again.close();
          return true;
        } catch {
          return false;
        }
      },
      5000,
      50,
    );
    for (const h of held.slice(1)) await h.subscription.close();
  });
});
