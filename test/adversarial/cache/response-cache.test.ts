/**
 * The response cache's abuse list (issue 47): a revoked key on a cached path, a flood of
 * distinct query strings, two users with different readFilters at once, garbage in the client's
 * Cache-Control and in the purge's collection, a backend that states absurd lifetimes. Every
 * bad input gets a clear 4xx or is ignored; nothing is served to a caller who may not read it.
 */
import { describe, expect, it } from 'vitest';
import { call } from '../../support/clients/http-client.js';
import { as, ROOT, useStack } from '../../support/fixtures.js';

const ALICE = as('alice');
const BOB = as('bob');

describe('response cache under abuse', () => {
  const stack = useStack({
    service: 'cache-abuse',
    jwtIdentity: true,
    backend: {
      data: {
        shop: {
          orders: Array.from({ length: 40 }, (_, n) => ({ _id: `o${n}`, owner: n % 2 ? 'alice' : 'bob', n })),
        },
      },
    },
    users: { root: ['root'], alice: ['user'], bob: ['user'] },
    config: {
      acl: { mode: 'enforce' },
      features: { webhooks: 'disabled' },
      cache: { rules: [{ when: 'path-prefix(/shop)', maxAgeSeconds: 60 }], maxBytes: 32 * 1024, maxEntryBytes: 16 * 1024 },
    },
    permissions: {
      keys: { predicate: 'path-prefix(/keys)', roles: ['user'], apiKeys: { roles: ['user'] } },
      own: { predicate: 'method(GET) and path-prefix(/shop/orders)', roles: ['user'], mongo: { readFilter: { owner: '@user.id' } } },
    },
  });

  it('refuses a revoked key on a cached path (401), though the answer is still in memory', async () => {
    const issued = await call(stack.proxy.url, '/keys', { method: 'POST', auth: ALICE, body: { name: 'cached', roles: ['user'] } });
    expect(issued.status, issued.text).toBe(201);
    const key = `Bearer ${issued.json.key}`;
    expect((await call(stack.proxy.url, '/shop/orders', { auth: key })).status).toBe(200);
    const hit = await call(stack.proxy.url, '/shop/orders', { auth: key });
    expect(hit.headers['cache-status']).toMatch(/hit/);
    expect((await call(stack.proxy.url, `/keys/${issued.json._id}`, { method: 'DELETE', auth: ALICE })).status).toBeLessThan(300);
    const refused = await call(stack.proxy.url, '/shop/orders', { auth: key });
    expect(refused.status).toBe(401);
    expect(refused.headers['cache-status']).toBeUndefined();
    expect(refused.text).not.toMatch(/"owner"/);
  });

  it('serves each of two users only their own documents while both hammer one path', async () => {
    const rounds = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        call(stack.proxy.url, `/shop/orders?page=${(i % 4 < 2 ? 0 : 1) + 1}&pagesize=10`, { auth: i % 2 ? ALICE : BOB }).then((res) => ({ res, who: i % 2 ? 'alice' : 'bob' })),
      ),
    );
    for (const { res, who } of rounds) {
      expect(res.status).toBe(200);
      expect(res.json.length).toBeGreaterThan(0);
      for (const doc of res.json) expect(doc.owner).toBe(who);
    }
  });

  it('keeps a flood of distinct query strings within the byte budget, every answer correct', async () => {
    const cache = stack.proxy.context.responseCache!.cache;
    for (let i = 0; i < 120; i += 6) {
      const batch = await Promise.all(Array.from({ length: 6 }, (_, j) => call(stack.proxy.url, `/shop/orders/o${(i + j) % 40}?junk=${i + j}`, { auth: ROOT })));
      for (const [j, res] of batch.entries()) {
        expect(res.status).toBe(200);
        expect(res.json._id).toBe(`o${(i + j) % 40}`);
      }
      expect(cache.bytes).toBeLessThanOrEqual(32 * 1024);
    }
  });

  it('ignores garbage in the client Cache-Control (the answer is still right)', async () => {
    for (const value of ['max-age=-1', 'max-age=abc', ',,,', 'no-store=', '"no-cache"', 'x'.repeat(4000)]) {
      const res = await call(stack.proxy.url, '/shop/orders/o1', { auth: ROOT, headers: { 'cache-control': value } });
      expect(res.status, value).toBe(200);
      expect(res.json._id).toBe('o1');
    }
  });

  it('answers a bad purge 400 naming the problem, and refuses it to non-admins', async () => {
    for (const [query, message] of [
      ['collection=a/b/c', /collection must be db\/collection/],
      ['collection=', /collection must be db\/collection/],
      ['collection=_admin', /collection must be db\/collection/],
      ['everything=1', /unknown query parameter "everything"/],
    ] as const) {
      const res = await call(stack.proxy.url, `/_admin/cache?${query}`, { method: 'DELETE', auth: ROOT });
      expect(res.status, query).toBe(400);
      expect(res.json.message).toMatch(message);
    }
    expect((await call(stack.proxy.url, '/_admin/cache', { method: 'POST', auth: ROOT })).status).toBe(405);
    expect((await call(stack.proxy.url, '/_admin/cache/more', { method: 'DELETE', auth: ROOT })).status).toBe(404);
    expect((await call(stack.proxy.url, '/_admin/cache', { method: 'DELETE', auth: BOB })).status).toBe(403);
    expect((await call(stack.proxy.url, '/_admin/cache', { method: 'DELETE' })).status).toBe(401);
  });
});
