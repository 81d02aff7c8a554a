/**
 * The response cache honours the backend's word and its own bounds (SPEC §12), through the real
 * proxy, a real upstream that counts its reads, and a real redis-server: what is never stored,
 * Vary, ETag revalidation, coalescing, the byte budget under a flood of query strings, writes
 * that fail or are refused, and a rate limit that counts every hit.
 */
import { describe, expect, it } from 'vitest';
import { parseList } from 'structured-headers';
import { call } from '../../support/clients/http-client.js';
import { useStack } from '../../support/fixtures.js';
import { cacheUpstream } from './response-cache-upstream.js';

const MAX_BYTES = 64 * 1024;

describe('response cache: the backend word and the bounds', () => {
  const upstream = cacheUpstream();
  const stack = useStack({
    service: 'cache-answers',
    upstream: (req, res) => upstream.handle(req, res),
    config: {
      acl: { mode: 'own-routes' },
      cache: { rules: [{ name: 'db', when: 'path-prefix(/db)', maxAgeSeconds: 60 }], maxBytes: MAX_BYTES, maxEntryBytes: 1024 },
      limits: { policies: [{ name: 'limited', by: 'client', limit: 3, window: '1h', condition: 'path-prefix(/db/limited)' }] },
    },
  });
  const get = (path: string, headers: Record<string, string> = {}) => call(stack.proxy.url, path, { headers });
  const cacheStatus = (value: unknown) => parseList(String(value))[0]![1];

  it('stores a plain 200 and says so in a valid Structured Field', async () => {
    const first = await get('/db/plain');
    const params = cacheStatus(first.headers['cache-status']);
    expect(params.get('fwd')?.toString()).toBe('miss');
    expect(params.get('stored')).toBe(true);
    const second = await get('/db/plain');
    const hit = cacheStatus(second.headers['cache-status']);
    expect(hit.get('hit')).toBe(true);
    expect(hit.get('ttl')).toBeGreaterThan(50);
    expect(upstream.readsOf('/db/plain')).toBe(1);
  });

  for (const path of ['/db/nostore', '/db/private', '/db/cookie', '/db/varystar', '/db/big', '/db/missing']) {
    it(`never stores ${path}`, async () => {
      const before = upstream.readsOf(path);
      for (let i = 0; i < 2; i++) {
        const res = await get(path);
        expect(res.headers['cache-status']).toBe('Outrigger;fwd=miss');
      }
      expect(upstream.readsOf(path) - before).toBe(2);
    });
  }

  it('stores a 404 for one document', async () => {
    await get('/db/coll/gone');
    const again = await get('/db/coll/gone');
    expect(again.status).toBe(404);
    expect(again.headers['cache-status']).toMatch(/hit/);
    expect(upstream.readsOf('/db/coll/gone')).toBe(1);
  });

  it('keeps one variant per value of the headers Vary names', async () => {
    const a = await get('/db/vary', { 'x-flavor': 'a' });
    const b = await get('/db/vary', { 'x-flavor': 'b' });
    expect(a.json.flavor).toBe('a');
    expect(b.json.flavor).toBe('b');
    const a2 = await get('/db/vary', { 'x-flavor': 'a' });
    const b2 = await get('/db/vary', { 'x-flavor': 'b' });
    expect(a2.headers['cache-status']).toMatch(/hit/);
    expect(a2.json.flavor).toBe('a');
    expect(b2.headers['cache-status']).toMatch(/hit/);
    expect(b2.json.flavor).toBe('b');
    expect(upstream.readsOf('/db/vary')).toBe(2);
  });

  it('revalidates an ETag entry with If-None-Match; a 304 refreshes it, a change replaces it', async () => {
    const first = await get('/db/etag');
    expect(first.headers['cache-status']).toBe('Outrigger;fwd=miss;stored');
    const second = await get('/db/etag');
    expect(upstream.conditional.get('/db/etag')).toBe(first.headers.etag);
    expect(second.status).toBe(200);
    expect(second.json).toEqual(first.json);
    expect(second.headers['cache-status']).toBe('Outrigger;fwd=stale;fwd-status=304');
    expect(second.headers['x-refreshed']).toBeDefined();
    // A write by another road: the backend's version moves, Outrigger never saw it.
    upstream.version += 10;
    const third = await get('/db/etag');
    expect(third.json.version).toBe(upstream.version);
    expect(third.headers['cache-status']).toBe('Outrigger;fwd=stale;stored');
  });

  it("answers a client's matching If-None-Match with a 304 from memory", async () => {
    await get('/db/tagged');
    const notModified = await get('/db/tagged', { 'if-none-match': '"other", "t1"' });
    expect(notModified.status).toBe(304);
    expect(notModified.text).toBe('');
    expect(notModified.headers['cache-status']).toMatch(/hit/);
    const changed = await get('/db/tagged', { 'if-none-match': '"other"' });
    expect(changed.status).toBe(200);
    expect(upstream.readsOf('/db/tagged')).toBe(1);
  });

  it('collapses concurrent misses for one key into one backend read', async () => {
    const answers = await Promise.all(Array.from({ length: 10 }, () => get('/db/slow?n=1')));
    expect(upstream.readsOf('/db/slow?n=1')).toBe(1);
    for (const res of answers) {
      expect(res.status).toBe(200);
      expect(res.json.url).toBe('/db/slow?n=1');
    }
    expect(answers.filter((res) => /hit/.test(String(res.headers['cache-status']))).length).toBe(9);
  });

  it('keeps its bytes within cache.maxBytes under a flood of distinct query strings', async () => {
    const cache = stack.proxy.context.responseCache!.cache;
    for (let i = 0; i < 400; i += 4) {
      const batch = await Promise.all(Array.from({ length: 4 }, (_, j) => get(`/db/flood?q=${i + j}&pad=${'y'.repeat(300)}`)));
      for (const res of batch) expect(res.status).toBe(200);
      expect(cache.bytes).toBeLessThanOrEqual(MAX_BYTES);
    }
    expect(cache.bytes).toBeGreaterThan(MAX_BYTES / 2);
    const metrics = await call(stack.proxy.url, '/_metrics');
    expect(metrics.text).toMatch(/outrigger_cache_evictions_total\{rule="db"\} [1-9]/);
  });

  it('drops on a write the backend answered 5xx (it may have happened), not on a 4xx', async () => {
    await get('/db/w');
    expect((await call(stack.proxy.url, '/db/w/refuse', { method: 'POST', body: {} })).status).toBe(400);
    expect((await get('/db/w')).headers['cache-status']).toMatch(/hit/);
    expect((await call(stack.proxy.url, '/db/w/fail', { method: 'POST', body: {} })).status).toBe(500);
    expect((await get('/db/w')).headers['cache-status']).toBe('Outrigger;fwd=miss;stored');
  });

  it("drops what a write's Location names", async () => {
    await get('/other/place');
    expect((await get('/other/place')).headers['cache-status']).toBeUndefined();
    await get('/db/elsewhere');
    await call(stack.proxy.url, '/db/x/moved', { method: 'PUT', body: {} });
    expect((await get('/db/elsewhere')).headers['cache-status']).toMatch(/hit/);
  });

  it('counts every hit against a rate limit', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) statuses.push((await get('/db/limited')).status);
    expect(statuses).toEqual([200, 200, 200, 429, 429]);
    expect(upstream.readsOf('/db/limited')).toBe(1);
  });
});
