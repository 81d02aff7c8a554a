/**
 * The response cache through the real proxy, the RESTHeart stand-in and a real redis-server, one
 * replica (SPEC §12): hits and misses say so (Cache-Status, Age), a write drops its collection's
 * reads before its writer is answered, a refused write drops nothing, two callers whose
 * readFilters differ never share an answer, projections are applied per answer, a purge drops.
 */
import { describe, expect, it } from 'vitest';
import { call } from '../../support/clients/http-client.js';
import { as, ROOT, useStack } from '../../support/fixtures.js';

const orders = () => [
  { _id: 'o1', owner: 'alice', total: 10, secret: 's1' },
  { _id: 'o2', owner: 'bob', total: 20, secret: 's2' },
  { _id: 'o3', owner: 'alice', total: 30, secret: 's3' },
];

describe('response cache, one replica', () => {
  const stack = useStack({
    service: 'cache-one',
    jwtIdentity: true,
    backend: { data: { shop: { orders: orders(), products: [{ _id: 'p1', name: 'boat' }] } } },
    users: { root: ['root'], alice: ['user'], bob: ['user'] },
    config: { acl: { mode: 'enforce' }, cache: { rules: [{ name: 'shop', when: 'path-prefix(/shop)', maxAgeSeconds: 60 }] } },
    permissions: {
      'users-read-own': { predicate: 'method(GET) and path-prefix(/shop/orders)', roles: ['user'], priority: 10, mongo: { readFilter: { owner: '@user.id' }, projectResponse: { secret: 0 } } },
    },
  });
  const ALICE = as('alice');
  const BOB = as('bob');
  const backendReads = (path: string) => stack.backend.requests.filter((r) => r.method === 'GET' && r.path === path).length;

  it('answers the second read from memory, saying so with Cache-Status and Age', async () => {
    const before = backendReads('/shop/products');
    const first = await call(stack.proxy.url, '/shop/products', { auth: ROOT });
    expect(first.status).toBe(200);
    expect(first.headers['cache-status']).toBe('Outrigger;fwd=miss;stored');
    const second = await call(stack.proxy.url, '/shop/products', { auth: ROOT });
    expect(second.status).toBe(200);
    expect(second.json).toEqual(first.json);
    expect(second.headers['cache-status']).toMatch(/^Outrigger;hit;ttl=(60|59)$/);
    expect(second.headers.age).toMatch(/^\d+$/);
    expect(second.headers['x-request-id']).toBeDefined();
    expect(backendReads('/shop/products') - before).toBe(1);
  });

  it('never serves a read older than a write whose answer the client already has (same replica)', async () => {
    await call(stack.proxy.url, '/shop/orders/o1', { auth: ROOT });
    for (let i = 0; i < 20; i++) {
      const write = await call(stack.proxy.url, '/shop/orders/o1', { method: 'PATCH', auth: ROOT, body: { total: 100 + i } });
      expect(write.status).toBeLessThan(300);
      const doc = await call(stack.proxy.url, '/shop/orders/o1', { auth: ROOT });
      expect(doc.json.total).toBe(100 + i);
      const list = await call(stack.proxy.url, '/shop/orders', { auth: ROOT });
      expect(list.json.find((d: { _id: string }) => d._id === 'o1').total).toBe(100 + i);
      // Read again: now from memory, still the new state.
      const again = await call(stack.proxy.url, '/shop/orders/o1', { auth: ROOT });
      expect(again.headers['cache-status']).toMatch(/hit/);
      expect(again.json.total).toBe(100 + i);
    }
  });

  it('drops the collection for an insert (POST) and a delete', async () => {
    await call(stack.proxy.url, '/shop/products', { auth: ROOT });
    const inserted = await call(stack.proxy.url, '/shop/products', { method: 'POST', auth: ROOT, body: { _id: 'p2', name: 'oar' } });
    expect(inserted.status).toBe(201);
    const list = await call(stack.proxy.url, '/shop/products', { auth: ROOT });
    expect(list.headers['cache-status']).toBe('Outrigger;fwd=miss;stored');
    expect(list.json.map((d: { _id: string }) => d._id).sort()).toEqual(['p1', 'p2']);
    await call(stack.proxy.url, '/shop/products/p2', { method: 'DELETE', auth: ROOT });
    const after = await call(stack.proxy.url, '/shop/products', { auth: ROOT });
    expect(after.json.map((d: { _id: string }) => d._id)).toEqual(['p1']);
  });

  it('keeps its entries when the backend refuses a write with a 4xx', async () => {
    await call(stack.proxy.url, '/shop/products', { auth: ROOT });
    const refused = await call(stack.proxy.url, '/shop/products', { method: 'POST', auth: ROOT, rawBody: '{not json', headers: { 'content-type': 'application/json' } });
    expect(refused.status).toBeGreaterThanOrEqual(400);
    expect(refused.status).toBeLessThan(500);
    const read = await call(stack.proxy.url, '/shop/products', { auth: ROOT });
    expect(read.headers['cache-status']).toMatch(/hit/);
  });

  it('never serves one caller what another may read: readFilters differ, projections apply per answer', async () => {
    for (let round = 0; round < 3; round++) {
      const [alice, bob] = await Promise.all([call(stack.proxy.url, '/shop/orders', { auth: ALICE }), call(stack.proxy.url, '/shop/orders', { auth: BOB })]);
      expect(alice.status).toBe(200);
      expect(bob.status).toBe(200);
      expect(alice.json.every((d: { owner: string }) => d.owner === 'alice')).toBe(true);
      expect(bob.json.map((d: { _id: string }) => d._id)).toEqual(['o2']);
      for (const doc of [...alice.json, ...bob.json]) expect(doc.secret).toBeUndefined();
      if (round > 0) expect(alice.headers['cache-status']).toMatch(/hit/);
    }
    // Root reads the same path unfiltered and unprojected: a key of its own.
    const root = await call(stack.proxy.url, '/shop/orders', { auth: ROOT });
    expect(root.json.length).toBe(3);
    expect(root.json[0].secret).toBeDefined();
  });

  it('decides authentication before the cache: a bad password on a cached path is 401', async () => {
    await call(stack.proxy.url, '/shop/products', { auth: ROOT });
    const bad = await call(stack.proxy.url, '/shop/products', { auth: 'Basic ' + Buffer.from('root:wrong').toString('base64') });
    expect(bad.status).toBe(401);
    const none = await call(stack.proxy.url, '/shop/products');
    expect([401, 403]).toContain(none.status);
  });

  it('honours the client: no-cache forwards and refreshes, no-store bypasses', async () => {
    await call(stack.proxy.url, '/shop/products', { auth: ROOT });
    const before = backendReads('/shop/products');
    const refresh = await call(stack.proxy.url, '/shop/products', { auth: ROOT, headers: { 'cache-control': 'no-cache' } });
    expect(refresh.headers['cache-status']).toBe('Outrigger;fwd=request;stored');
    const bypass = await call(stack.proxy.url, '/shop/products', { auth: ROOT, headers: { 'cache-control': 'no-store' } });
    expect(bypass.headers['cache-status']).toBe('Outrigger;fwd=bypass');
    expect(backendReads('/shop/products') - before).toBe(2);
    const hit = await call(stack.proxy.url, '/shop/products', { auth: ROOT });
    expect(hit.headers['cache-status']).toMatch(/hit/);
  });

  it('answers HEAD from a GET entry', async () => {
    await call(stack.proxy.url, '/shop/products', { auth: ROOT });
    const head = await call(stack.proxy.url, '/shop/products', { method: 'HEAD', auth: ROOT });
    expect(head.status).toBe(200);
    expect(head.headers['cache-status']).toMatch(/hit/);
    expect(head.text).toBe('');
  });

  it('is purged by hand: DELETE /_admin/cache (everything or one collection), refused to non-admins', async () => {
    await call(stack.proxy.url, '/shop/products', { auth: ROOT });
    expect((await call(stack.proxy.url, '/_admin/cache', { method: 'DELETE', auth: ALICE })).status).toBe(403);
    const one = await call(stack.proxy.url, '/_admin/cache?collection=shop/products', { method: 'DELETE', auth: ROOT });
    expect(one.status).toBe(200);
    expect(one.json).toEqual({ purged: 'shop/products' });
    expect((await call(stack.proxy.url, '/shop/products', { auth: ROOT })).headers['cache-status']).toMatch(/fwd=miss/);
    const bad = await call(stack.proxy.url, '/_admin/cache?collection=a/b/c', { method: 'DELETE', auth: ROOT });
    expect(bad.status).toBe(400);
    expect(bad.json.message).toMatch(/collection must be db\/collection/);
    const all = await call(stack.proxy.url, '/_admin/cache', { method: 'DELETE', auth: ROOT });
    expect(all.json).toEqual({ purged: '*' });
    const state = await call(stack.proxy.url, '/_admin/cache', { auth: ROOT });
    expect(state.json).toMatchObject({ entries: 0, bytes: 0, storing: true });
  });

  it('counts hits and stores by rule in the metrics', async () => {
    await call(stack.proxy.url, '/shop/products', { auth: ROOT });
    await call(stack.proxy.url, '/shop/products', { auth: ROOT });
    const metrics = await call(stack.proxy.url, '/_metrics');
    expect(metrics.text).toMatch(/outrigger_cache_lookups_total\{result="hit",rule="shop"\} [1-9]/);
    expect(metrics.text).toMatch(/outrigger_cache_stores_total\{rule="shop"\} [1-9]/);
    expect(metrics.text).toMatch(/outrigger_cache_invalidations_total\{source="write"\} [1-9]/);
    expect(metrics.text).toMatch(/outrigger_cache_bytes\{rule="shop"\} \d+/);
  });
});
