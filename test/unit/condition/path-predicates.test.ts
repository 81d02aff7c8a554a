import { describe, expect, it } from 'vitest';
import { matches, syntaxError } from './helpers.js';

describe('path', () => {
  it('matches the whole relative path, ignoring the query', () => {
    expect(matches('path(/a/b)', { path: '/a/b?x=1' })).toBe(true);
    expect(matches("path('/a')", { path: '/a/b' })).toBe(false);
  });

  it('normalizes slashes on both sides and adds a missing leading slash', () => {
    expect(matches("path('/a')", { path: '/a/' })).toBe(true);
    expect(matches("path('a/')", { path: '/a' })).toBe(true);
    expect(matches("path('')", { path: '/' })).toBe(true);
  });

  it('is case-sensitive and matches any listed path', () => {
    expect(matches('path(/A)', { path: '/a' })).toBe(false);
    expect(matches('path(/x, /a)', { path: '/a' })).toBe(true);
  });

  it('matches the decoded path', () => {
    expect(matches("path('/a b')", { path: '/a%20b' })).toBe(true);
  });
});

describe('path-prefix', () => {
  it('matches on segment boundaries only', () => {
    expect(matches('path-prefix(/a)', { path: '/a' })).toBe(true);
    expect(matches('path-prefix(/a)', { path: '/a/' })).toBe(true);
    expect(matches('path-prefix(/a)', { path: '/a/b' })).toBe(true);
    expect(matches('path-prefix(/a)', { path: '/ab' })).toBe(false);
    expect(matches('path-prefix(/a/)', { path: '/a/b' })).toBe(true);
  });

  it('matches everything with /', () => {
    expect(matches("path-prefix('/')", { path: '/anything/at/all' })).toBe(true);
  });

  it('binds ${remaining}, the rest after the longest matching prefix', () => {
    expect(matches('path-prefix(/a, /a/b) and equals(${remaining}, /c)', { path: '/a/b/c' })).toBe(true);
    expect(matches('path-prefix(/a) and equals(${remaining}, "")', { path: '/a' })).toBe(true);
    expect(matches("path-prefix('/') and equals(${remaining}, /x/y)", { path: '/x/y' })).toBe(true);
  });

  it('does not see through ;path parameters (as Undertow, which strips them)', () => {
    expect(matches('path-prefix(/admin)', { path: '/admin;x=1' })).toBe(true);
    expect(matches('path(/admin)', { path: '/admin;jsessionid=1/other' })).toBe(true);
  });
});

describe('path-suffix', () => {
  it('is a plain endsWith on the relative path', () => {
    expect(matches('path-suffix(.json)', { path: '/a.json' })).toBe(true);
    expect(matches('path-suffix(b/)', { path: '/a/b/' })).toBe(true);
    expect(matches('path-suffix(.json)', { path: '/a.json/' })).toBe(false);
  });
});

describe('path-template', () => {
  it('binds named segments for later predicates', () => {
    expect(matches("path-template('/users/{id}') and equals(${id}, 42)", { path: '/users/42' })).toBe(true);
    expect(matches("path-template('/users/{id}') and equals(${id}, 42)", { path: '/users/43' })).toBe(false);
    expect(matches("path-template('/{db}/{coll}') and equals(${db}, shop) and equals(${coll}, orders)", { path: '/shop/orders' })).toBe(true);
  });

  it('accepts one trailing slash and binds an empty last segment (Undertow quirks)', () => {
    expect(matches("path-template('/users/{id}')", { path: '/users/42/' })).toBe(true);
    expect(matches("path-template('/users/{id}')", { path: '/users/42//' })).toBe(false);
    expect(matches("path-template('/users/{id}') and equals(${id}, '')", { path: '/users/' })).toBe(true);
  });

  it('matches literal segments after variables', () => {
    expect(matches("path-template(value='/users/{id}/orders')", { path: '/users/7/orders' })).toBe(true);
    expect(matches("path-template(value='/users/{id}/orders')", { path: '/users/7/items' })).toBe(false);
    expect(matches("path-template(value='/users/{id}/orders')", { path: '/users/7/orders/1' })).toBe(false);
  });

  it('treats a template without variables as exact, or as a prefix with *', () => {
    expect(matches("path-template('/api/x')", { path: '/api/x' })).toBe(true);
    expect(matches("path-template('/api/x')", { path: '/api/x/' })).toBe(false);
    expect(matches("path-template('/api/*') and equals(${*}, 'a/b')", { path: '/api/a/b' })).toBe(true);
    expect(matches("path-template('/api/*')", { path: '/api' })).toBe(false);
    expect(matches("path-template('/{v}/*') and equals(${*}, 'x/y')", { path: '/v1/x/y' })).toBe(true);
  });

  it('can match another attribute', () => {
    expect(matches("path-template(value='/t/{tenant}', match=%{i,X-Path}) and equals(${tenant}, acme)", { headers: { 'X-Path': '/t/acme' } })).toBe(true);
    expect(matches("path-template(value='/t/{tenant}', match=%{i,X-Path})")).toBe(false);
  });

  it('refuses malformed templates at parse time', () => {
    expect(syntaxError("path-template('/a/{id')").message).toMatch(/never closed/);
    expect(syntaxError("path-template('/a/{id}.json')").position).toBe(22);
  });
});
