/**
 * `cache.rules` reloaded (SPEC §15, ResponseCache.applyRules): the new rules decide from then on;
 * entries of a rule that is gone or changed are dropped, entries of an unchanged rule stay.
 */
import { describe, expect, it } from 'vitest';
import { primaryKey } from '../../../src/cache/cache-key.js';
import { ResponseCache } from '../../../src/cache/response-cache.js';
import { CACHE_DEFAULTS } from '../../../src/config/cache-config.js';

const NO_HEADERS = () => undefined;
const rule = (name: string, when: string, maxAgeSeconds = 60) => ({ name, when, maxAgeSeconds });

function store(cache: ResponseCache, path: string, ruleName: string): string {
  const key = primaryKey(path, '', NO_HEADERS);
  const fill = cache.begin(
    key,
    cache.scopeOf(path),
    cache.rules.find((r) => r.name === ruleName)!,
    NO_HEADERS,
  );
  expect(fill.head(200, { 'content-type': 'application/json' })).toBe(true);
  fill.data(Buffer.from('[]'));
  expect(fill.end()).toBe(true);
  return key;
}

describe('ResponseCache.applyRules', () => {
  it('keeps the entries of an unchanged rule and drops those of a removed or changed one', () => {
    const cache = new ResponseCache({
      config: { ...CACHE_DEFAULTS, rules: [rule('orders', 'path-prefix(/shop/orders)'), rule('users', 'path-prefix(/shop/users)'), rule('items', 'path-prefix(/shop/items)')] },
      collectionPath: '/{db}/{collection}',
    });
    const orders = store(cache, '/shop/orders', 'orders');
    const users = store(cache, '/shop/users', 'users');
    const items = store(cache, '/shop/items', 'items');

    cache.applyRules([rule('orders', 'path-prefix(/shop/orders)'), rule('items', 'path-prefix(/shop/items)', 5)]);

    expect(cache.lookup(orders, NO_HEADERS)).toBeDefined();
    expect(cache.lookup(users, NO_HEADERS)).toBeUndefined();
    expect(cache.lookup(items, NO_HEADERS)).toBeUndefined();
    expect(cache.rules.map((r) => [r.name, r.maxAgeSeconds])).toEqual([
      ['orders', 60],
      ['items', 5],
    ]);
    expect(cache.entries).toBe(1);
  });
});
