/**
 * SPEC §11.1's abuse rows for change notifications (issue 51) through the real proxy and Redis:
 * resource URIs with `..`, encoded separators, another scheme, another service's path or a
 * collection `mcp.resources` does not expose, in 2026-07-28's `resourceSubscriptions` and in
 * 2025-11-25's `resources/subscribe` (refused naming the URI, nothing held open); too many URIs
 * on one stream; two thousand listens from one agent (all but `subscriptions.maxPerPrincipal`
 * refused 429 naming it, the replica's count bounded); a document the listener may not read
 * (watched, but no write of it is ever told); a client's own `X-Outrigger-Outer-Answer` (the token
 * an MCP tool call's inner request names its `/mcp` answer by) holds nothing back; the state before
 * a write (issue 51) tells a collection listener only of documents its own readFilter showed before
 * (nothing of documents hidden before and after, also when the listener itself writes them).
 */
import { randomUUID } from 'node:crypto';
import type { Client as ClientV2 } from '@modelcontextprotocol/client';
import { afterAll, describe, expect, it } from 'vitest';
import { basic } from '../../support/outrigger.js';
import { useStack } from '../../support/fixtures.js';
import { call, shopData } from '../../integration/graphql/graphql-helpers.js';
import { mcpClientV2, shopAppWithTools } from '../../integration/mcp/mcp-helpers.js';
import { until } from '../../support/wait.js';

const ROOT = basic('root', 'root-password');
const ALICE = basic('alice', 'alice-password');
const MALLORY = basic('mallory', 'mallory-password');
const ORDERS = 'outrigger://shop/orders';
const PER_PRINCIPAL = 4;
const hex = (n: number) => n.toString(16).padStart(24, '0');

describe('agents listening: abuse', () => {
  const stack = useStack({
    service: 'mcp-listeners-abuse',
    backend: { data: shopData() },
    users: { root: ['root'], alice: ['user'], mallory: ['writer'] },
    config: { acl: { mode: 'enforce' }, subscriptions: { maxPerPrincipal: PER_PRINCIPAL }, mcp: { server: 'outrigger', resources: ['path-prefix(/shop/orders)', 'path-prefix(/shop/products)'] } },
    permissions: {
      products: { predicate: 'method(GET) and path-prefix(/shop/products)', roles: ['user'], priority: 1 },
      'own-orders': { predicate: 'method(GET) and path-prefix(/shop/orders)', roles: ['user'], priority: 10, mongo: { readFilter: { owner: '@user.id' } } },
      users: { predicate: 'method(GET) and path-prefix(/shop/users)', roles: ['user'], priority: 1 },
      // mallory may rewrite and delete any order, and read only her own.
      'writer-reads': { predicate: 'method(GET) and path-prefix(/shop/orders)', roles: ['writer'], priority: 10, mongo: { readFilter: { owner: '@user.id' } } },
      'writer-writes': { predicate: '(method(PATCH) or method(DELETE)) and path-prefix(/shop/orders)', roles: ['writer'], priority: 5 },
    },
    apps: { shop: shopAppWithTools({ mutations: true }) },
  });
  const clients: ClientV2[] = [];
  afterAll(async () => {
    for (const c of clients) await c.close().catch(() => {});
  });
  const connect = async (mode: 'auto' | 'legacy', auth = ALICE) => {
    const client = await mcpClientV2(stack.proxy.url, auth, mode);
    clients.push(client);
    return client;
  };

  /** Ids named ambiguously or in a form that is not the one URI of the document (SPEC §11.1; resource-uris.ts). */
  const ID_FORMS: Array<[string, RegExp]> = [
    ['outrigger://shop/products/01?id_type=NUMBER', /"01" with id_type=NUMBER: a number is written as JSON writes it \(this one is 1\)/],
    ['outrigger://shop/products/1e3?id_type=NUMBER', /this one is 1000\)/],
    ['outrigger://shop/products/1.0?id_type=NUMBER', /this one is 1\)/],
    ['outrigger://shop/products/%201?id_type=NUMBER', /" 1" with id_type=NUMBER/],
    ['outrigger://shop/products/abc?id_type=NUMBER', /"abc" with id_type=NUMBER.*as 42 or -1\.5/],
    ['outrigger://shop/products/Infinity?id_type=NUMBER', /"Infinity" with id_type=NUMBER/],
    ['outrigger://shop/products/1?id_type=DATE', /id_type="DATE"; it is one of STRING_OID, OID, STRING, NUMBER/],
    ['outrigger://shop/products/1?id_type=number', /id_type="number"/],
    ['outrigger://shop/products/1?id_type=NUMBER&id_type=STRING', /gives id_type twice/],
    ['outrigger://shop/products/1?id_type=NUMBER&filter=%7B%7D', /a document URI takes id_type alone/],
    ['outrigger://shop/products/xyz?id_type=OID', /"xyz" with id_type=OID: an ObjectId is 24 hex digits/],
    ['outrigger://shop/products?id_type=NUMBER', /the query parameter "id_type"; the template takes filter, sort, pagesize, page/],
  ];

  const HOSTILE: Array<[string, RegExp]> = [
    ['outrigger://shop/../_admin', /outrigger:\/\/shop\/\.\.\/_admin.*(collection|name)/],
    ['outrigger://shop/orders/..', /"\.\."/],
    ['outrigger://shop/orders/a%2Fb', /path separator/],
    ['outrigger://shop/orders/a%5Cb', /path separator/],
    ['outrigger://shop/orders/%2e%2e', /"\.\."/],
    ['outrigger://_admin/keys', /_admin/],
    ['https://other.example/shop/orders', /not one of this service's resources/],
    ['outrigger://other-db/orders', /mcp\.resources does not expose/],
    ['outrigger://shop/users', /mcp\.resources does not expose \/shop\/users/],
    ['outrigger://shop/orders?filter=%7B%7D', /is a query; subscribe to its collection/],
    ...ID_FORMS,
  ];

  it('hostile URIs in resourceSubscriptions are refused naming the URI; nothing is held open', async () => {
    const client = await connect('auto');
    for (const [uri, why] of HOSTILE) {
      const refused = client.listen({ resourceSubscriptions: ['outrigger://shop/products', uri] });
      await expect(refused, uri).rejects.toThrow(why);
    }
    // Too many URIs on one stream.
    const many = Array.from({ length: 101 }, (_, i) => `outrigger://shop/products/p${i}`);
    await expect(client.listen({ resourceSubscriptions: many })).rejects.toThrow(/101 resource URIs; one stream may watch at most 100/);
    // None of the refusals was counted: alice still holds her whole bound.
    const held = [];
    for (let i = 0; i < PER_PRINCIPAL; i++) held.push(await client.listen({ resourceSubscriptions: ['outrigger://shop/products'] }));
    for (const h of held) await h.close();
  });

  it('hostile URIs in 2025-11-25 resources/subscribe are refused naming the URI', async () => {
    const client = await connect('legacy');
    for (const [uri, why] of HOSTILE) await expect(client.subscribeResource({ uri }), uri).rejects.toThrow(why);
  });

  it('ids in a form that is not their one URI are refused by resources/read too, naming the form; nothing is read', async () => {
    const client = await connect('auto');
    stack.backend.clearRequests();
    for (const [uri, why] of ID_FORMS) await expect(client.readResource({ uri }), uri).rejects.toThrow(why);
    expect(stack.backend.requests).toHaveLength(0);
  });

  it('two thousand listens from one agent: all but subscriptions.maxPerPrincipal are refused 429 naming it', async () => {
    const aborts: AbortController[] = [];
    const statuses: number[] = [];
    const open: Response[] = [];
    let named = 0;
    const listen = async (i: number) => {
      const abort = new AbortController();
      aborts.push(abort);
      const res = await fetch(`${stack.proxy.url}/mcp`, {
        method: 'POST',
        headers: { authorization: ALICE, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: i, method: 'subscriptions/listen', params: { notifications: { resourceSubscriptions: ['outrigger://shop/products'] } } }),
        signal: abort.signal,
      });
      statuses.push(res.status);
      // Held: fetch cancels the body of a response it collects (a held stream would then close and free its place).
      if (res.status === 200) open.push(res);
      if (res.status === 429 && (await res.text()).includes('subscriptions.maxPerPrincipal')) named++;
    };
    try {
      for (let at = 0; at < 2000; at += 200) await Promise.all(Array.from({ length: 200 }, (_, k) => listen(at + k)));
      expect(statuses.filter((s) => s === 200)).toHaveLength(PER_PRINCIPAL);
      expect(statuses.filter((s) => s === 429)).toHaveLength(2000 - PER_PRINCIPAL);
      expect(named).toBe(2000 - PER_PRINCIPAL);
    } finally {
      for (const a of aborts) a.abort();
    }
  });

  it('a document the listener may not read is watched, but none of its writes is told', async () => {
    const client = await connect('auto');
    const told: string[] = [];
    client.setNotificationHandler('notifications/resources/updated', (n) => void told.push(n.params.uri));
    // Order 2 is bob's: alice's readFilter hides it before and after; order 1 is hers.
    const sub = await client.listen({ resourceSubscriptions: [`outrigger://shop/orders/${hex(2)}`, `outrigger://shop/orders/${hex(1)}`] });
    for (const n of [2, 2, 1]) {
      const res = await call(stack.proxy.url, `/shop/orders/${hex(n)}`, { method: 'PATCH', auth: ROOT, body: { $set: { total: n * 7 } } });
      expect(res.status, res.text).toBeLessThan(300);
    }
    const started = Date.now();
    while (told.length === 0 && Date.now() - started < 5000) await new Promise((r) => setTimeout(r, 10));
    await new Promise((r) => setTimeout(r, 300));
    expect(told).toEqual([`outrigger://shop/orders/${hex(1)}`]);
    await sub.close();
  });

  /** A write through the proxy (the state before it is read first, as the writer: issue 51). */
  const write = async (auth: string, method: 'PATCH' | 'DELETE', n: number, set?: Record<string, unknown>) => {
    const res = await call(stack.proxy.url, `/shop/orders/${hex(n)}`, { method, auth, ...(set ? { body: { $set: set } } : {}) });
    expect(res.status, res.text).toBeLessThan(300);
  };
  /** Told of `uri` (the last write of a row is one the listener must be told of): by then, feed order, every earlier one was decided. */
  const toldOnce = async (told: string[], uri: string) => {
    await until(() => told.length > 0, 'the listener told of the last write');
    await new Promise((r) => setTimeout(r, 300));
    expect(told).toEqual([uri]);
  };

  it('the state before a write never tells a collection listener of a document its readFilter hid before and after; its own order given away is told', async () => {
    const client = await connect('auto');
    const told: string[] = [];
    client.setNotificationHandler('notifications/resources/updated', (n) => void told.push(n.params.uri));
    const sub = await client.listen({ resourceSubscriptions: [ORDERS] });
    // Orders 26 and 29 are bob's, 27 carol's: given away, rewritten, deleted, alice never could read them.
    await write(ROOT, 'PATCH', 26, { owner: 'carol' });
    await write(ROOT, 'PATCH', 27, { total: 1 });
    await write(ROOT, 'DELETE', 29);
    // Order 31 is alice's, untouched since she listens: given to bob, she is told (she could read it before).
    await write(ROOT, 'PATCH', 31, { owner: 'bob' });
    await toldOnce(told, ORDERS);
    await sub.close();
  });

  it('a listener that writes learns nothing through the state its own writes read first: alice’s orders it rewrites or deletes are not told, its own given away is', async () => {
    await write(ROOT, 'PATCH', 32, { owner: 'mallory' });
    const client = await connect('auto', MALLORY);
    const told: string[] = [];
    client.setNotificationHandler('notifications/resources/updated', (n) => void told.push(n.params.uri));
    const sub = await client.listen({ resourceSubscriptions: [ORDERS] });
    // Orders 34 and 37 are alice's: the state before each is read as mallory writes it, and her readFilter still decides.
    await write(MALLORY, 'PATCH', 34, { owner: 'alice', total: 0 });
    await write(MALLORY, 'DELETE', 37);
    await write(MALLORY, 'PATCH', 32, { owner: 'alice' });
    await toldOnce(told, ORDERS);
    await sub.close();
  });

  it("a client's own X-Outrigger-Outer-Answer (a made-up token, garbage) holds nothing: its mutation's change is told once its own answer left", async () => {
    const client = await connect('auto');
    const told: string[] = [];
    client.setNotificationHandler('notifications/resources/updated', (n) => void told.push(n.params.uri));
    const sub = await client.listen({ resourceSubscriptions: ['outrigger://shop/products'] });
    for (const [i, token] of [randomUUID(), 'x'.repeat(5000), ''].entries()) {
      const res = await call(stack.proxy.url, '/graphql/shop', {
        method: 'POST',
        auth: ROOT,
        headers: { 'x-outrigger-outer-answer': token },
        body: { query: `mutation { addProduct(name: "forged-${i}", price: 1) }` },
      });
      expect(res.status, res.text).toBe(200);
      expect(res.json.errors).toBeUndefined();
      await until(() => told.length === i + 1, `the mutation with token #${i} told`);
    }
    await sub.close();
  });
});
