/** RFC 9111 as a shared cache (src/cache/freshness.ts): what may be stored, for how long, and the client's directives. */
import { describe, expect, it } from 'vitest';
import { cacheControl, clientDirective, etagMatches, storability, varyNames } from '../../../src/cache/freshness.js';

const NOW = Date.parse('2026-12-07T04:00:00Z');

describe('storability', () => {
  it('stores a plain 200 for the rule lifetime (the backend stated none)', () => {
    expect(storability(200, {}, 60, false, NOW)).toEqual({ store: true, lifetimeMs: 60_000, revalidateEachUse: false, vary: [] });
  });

  it.each([
    [201, {}],
    [204, {}],
    [206, {}],
    [301, {}],
    [404, {}],
    [500, {}],
    [200, { 'set-cookie': 'a=1' }],
    [200, { 'cache-control': 'no-store' }],
    [200, { 'cache-control': 'Private, max-age=60' }],
    [200, { vary: 'Accept, *' }],
  ] as const)('never stores status %s with %j', (status, headers) => {
    expect(storability(status, { ...headers }, 60, false, NOW).store).toBe(false);
  });

  it('stores a 404 only for one document', () => {
    expect(storability(404, {}, 60, true, NOW).store).toBe(true);
    expect(storability(404, {}, 60, false, NOW).store).toBe(false);
  });

  it('lets a shorter s-maxage, max-age or Expires win, never a longer one', () => {
    expect(storability(200, { 'cache-control': 's-maxage=5, max-age=100' }, 60, false, NOW)).toMatchObject({ lifetimeMs: 5000 });
    expect(storability(200, { 'cache-control': 'max-age=10' }, 60, false, NOW)).toMatchObject({ lifetimeMs: 10_000 });
    expect(storability(200, { 'cache-control': 'max-age=600' }, 60, false, NOW)).toMatchObject({ lifetimeMs: 60_000 });
    const date = new Date(NOW).toUTCString();
    expect(storability(200, { date, expires: new Date(NOW + 20_000).toUTCString() }, 60, false, NOW)).toMatchObject({ lifetimeMs: 20_000 });
    expect(storability(200, { date, expires: 'not a date' }, 60, false, NOW)).toMatchObject({ lifetimeMs: 0, revalidateEachUse: true });
  });

  it('subtracts an upstream Age', () => {
    expect(storability(200, { age: '15' }, 60, false, NOW)).toMatchObject({ lifetimeMs: 45_000 });
    expect(storability(200, { age: '90' }, 60, false, NOW)).toMatchObject({ lifetimeMs: 0, revalidateEachUse: true });
  });

  it('stores no-cache and max-age=0 but revalidates them at every use', () => {
    expect(storability(200, { 'cache-control': 'no-cache' }, 60, false, NOW)).toMatchObject({ store: true, revalidateEachUse: true });
    expect(storability(200, { 'cache-control': 'max-age=0' }, 60, false, NOW)).toMatchObject({ store: true, revalidateEachUse: true });
  });

  it('keys Vary names lowercase, sorted, once', () => {
    expect(varyNames('X-B, accept,x-b')).toEqual(['accept', 'x-b']);
    expect(varyNames(['a', '*'])).toBe('*');
  });
});

describe('directives', () => {
  it('reads Cache-Control with quoted values and odd spacing', () => {
    const cc = cacheControl(' Max-Age = "30" , no-cache,,private="set-cookie"');
    expect(cc.get('max-age')).toBe('30');
    expect(cc.get('no-cache')).toBe(true);
    expect(cc.get('private')).toBe('set-cookie');
  });

  it("honours the client's no-store, no-cache, max-age=0 and Pragma", () => {
    expect(clientDirective(undefined, undefined)).toBe('use');
    expect(clientDirective('no-store', undefined)).toBe('bypass');
    expect(clientDirective('no-cache', undefined)).toBe('revalidate');
    expect(clientDirective('max-age=0', undefined)).toBe('revalidate');
    expect(clientDirective('max-age=10', undefined)).toBe('use');
    expect(clientDirective(undefined, 'no-cache')).toBe('revalidate');
  });

  it('compares ETags weakly, in lists and with *', () => {
    expect(etagMatches('"a", W/"b"', '"b"')).toBe(true);
    expect(etagMatches('"a"', 'W/"a"')).toBe(true);
    expect(etagMatches('*', '"x"')).toBe(true);
    expect(etagMatches('"a"', '"b"')).toBe(false);
  });
});
