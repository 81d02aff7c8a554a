/** ResponseCache without HTTP (src/cache/response-cache.ts): fills, generations, coalescing and a reload's rules. */
import { describe, expect, it } from 'vitest';
import { ResponseCache } from '../../../src/cache/response-cache.js';

const config = (names: string[]) => ({ rules: names.map((name) => ({ name, when: 'true', maxAgeSeconds: 60 })), maxBytes: 1 << 20, maxEntryBytes: 1 << 16, consistency: 'local' as const });
const none = () => undefined;

function filled(cache: ResponseCache, key: string, path = '/db/c') {
  const fill = cache.begin(key, cache.scopeOf(path), cache.rules[0]!, none);
  expect(fill.head(200, { 'content-type': 'application/json' })).toBe(true);
  fill.data(Buffer.from('[]'));
  return fill;
}

describe('ResponseCache', () => {
  it('stores a fill, and not one a write overtook', () => {
    const cache = new ResponseCache({ config: config(['a']), collectionPath: '/{db}/{collection}' });
    expect(filled(cache, 'k1').end()).toBe(true);
    expect(cache.lookup('k1', none)?.entry.body.toString()).toBe('[]');
    const late = filled(cache, 'k2');
    cache.invalidateCollection('db', 'c');
    expect(late.end()).toBe(false);
    expect(cache.lookup('k1', none)).toBeUndefined();
    expect(cache.lookup('k2', none)).toBeUndefined();
  });

  it('lets readers join a current fill, never one a write overtook', async () => {
    const cache = new ResponseCache({ config: config(['a']), collectionPath: '/{db}/{collection}' });
    const fill = filled(cache, 'k');
    const waiting = cache.joinable('k');
    expect(waiting).toBeDefined();
    cache.invalidateCollection('db', 'other');
    expect(cache.joinable('k')).toBeDefined();
    cache.invalidateCollection('db', 'c');
    expect(cache.joinable('k')).toBeUndefined();
    fill.abandon();
    await waiting;
  });

  it('keeps its entries across a reload that keeps every rule, drops the entries of a rule that is gone', () => {
    const cache = new ResponseCache({ config: config(['a', 'b']), collectionPath: '/{db}/{collection}' });
    filled(cache, 'k').end();
    cache.applyRules(config(['a', 'b', 'c']).rules);
    expect(cache.rules.map((r) => r.name)).toEqual(['a', 'b', 'c']);
    expect(cache.lookup('k', none)).toBeDefined();
    cache.applyRules(config(['b']).rules);
    expect(cache.lookup('k', none)).toBeUndefined();
  });
});
