/**
 * A write to one document drops that document's reads and the collection's queries, and keeps
 * every other document read by its own path (src/cache/cache-scope.ts), through the real proxy,
 * the RESTHeart stand-in and a real redis-server; a bulk write drops them all.
 */
import { describe, expect, it } from 'vitest';
import { call } from '../../support/clients/http-client.js';
import { ROOT, useStack } from '../../support/fixtures.js';

describe('response cache: document writes', () => {
  const stack = useStack({
    service: 'cache-documents',
    backend: { data: { shop: { orders: [1, 2, 3].map((n) => ({ _id: `o${n}`, total: n })) } } },
    users: { root: ['root'] },
    config: { cache: { rules: [{ name: 'shop', when: 'path-prefix(/shop)', maxAgeSeconds: 60 }] } },
  });
  const read = (path: string) => call(stack.proxy.url, path, { auth: ROOT });

  it('a PATCH of o1 drops o1 and the list, and keeps o2', async () => {
    for (const path of ['/shop/orders/o1', '/shop/orders/o2', '/shop/orders']) await read(path);
    expect((await read('/shop/orders/o2')).headers['cache-status']).toMatch(/hit/);
    const write = await call(stack.proxy.url, '/shop/orders/o1', { method: 'PATCH', auth: ROOT, body: { total: 100 } });
    expect(write.status).toBeLessThan(300);
    const o1 = await read('/shop/orders/o1');
    expect(o1.headers['cache-status']).toMatch(/fwd=miss/);
    expect(o1.json.total).toBe(100);
    const list = await read('/shop/orders');
    expect(list.headers['cache-status']).toMatch(/fwd=miss/);
    expect(list.json.find((d: { _id: string }) => d._id === 'o1').total).toBe(100);
    expect((await read('/shop/orders/o2')).headers['cache-status']).toMatch(/hit/);
  });

  it('a bulk PATCH (/shop/orders/*?filter=) drops every document', async () => {
    await read('/shop/orders/o3');
    expect((await read('/shop/orders/o3')).headers['cache-status']).toMatch(/hit/);
    const bulk = await call(stack.proxy.url, `/shop/orders/*?filter=${encodeURIComponent('{"total":{"$gte":3}}')}`, { method: 'PATCH', auth: ROOT, body: { flagged: true } });
    expect(bulk.status).toBeLessThan(300);
    const o3 = await read('/shop/orders/o3');
    expect(o3.headers['cache-status']).toMatch(/fwd=miss/);
    expect(o3.json.flagged).toBe(true);
  });
});
