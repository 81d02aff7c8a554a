import { describe, expect, it } from 'vitest';
import { canonicalPath, PathProblem } from '../../../src/http/canonical-path.js';

describe('canonicalPath (issue 25): the path every decision is taken on', () => {
  it('is the raw string itself when there is nothing to normalise', () => {
    const raw = '/shop/orders/o1';
    expect(canonicalPath(raw)).toBe(raw);
    expect(canonicalPath('/')).toBe('/');
    expect(canonicalPath('/a/b/')).toBe('/a/b/');
  });

  it.each([
    ['/%74oken', '/token'],
    ['/%74%6Fken', '/token'],
    ['/%54oken', '/Token'],
    ['/token;x=1', '/token'],
    ['/token;', '/token'],
    ['/;x', '/'],
    ['//token', '/token'],
    ['/a///b//', '/a/b/'],
    ['//%6dcp;x', '/mcp'],
    ['/graphql/%73hop', '/graphql/shop'],
    ['/db/coll/%5fsize', '/db/coll/_size'],
    // Decoded once: a double encoding stays one level deep, as a backend that decodes once reads it.
    ['/%2574oken', '/%2574oken'],
    ['/a%3Bb', '/a%3Bb'],
    ['/a%3bb', '/a%3Bb'],
    ['/a%20b', '/a%20b'],
    ['/a%3Fb%23c', '/a%3Fb%23c'],
    ['/caf%c3%a9', '/caf%C3%A9'],
    ['/a%3Ab%40c%2B', '/a:b@c+'],
  ])('%s decides as %s', (raw, canonical) => {
    expect(canonicalPath(raw)).toBe(canonical);
  });

  it('gives one form to every encoding of the same path', () => {
    const forms = ['/caf%C3%A9', '/caf%c3%a9', '/%63af%C3%a9', '//caf%C3%A9;v=2'].map(canonicalPath);
    expect(new Set(forms).size).toBe(1);
  });

  it.each([
    ['/token%2Fx', /encoded "\/"/],
    ['/a%2fb', /encoded "\/"/],
    ['/a%5Cb', /%5C/],
    ['/token;x/y', /";" parameters before its last segment/],
    ['/a;x/', /";" parameters before its last segment/],
    ['/a%zz', /malformed percent-encoding/],
    ['/a%', /malformed percent-encoding/],
    ['/a%c3', /malformed percent-encoding/],
    ['/a%ed%a0%80', /malformed percent-encoding/],
    ['http://host/token', /must be a path starting with "\/"/],
    ['*', /must be a path starting with "\/"/],
  ])('refuses %s', (raw, message) => {
    const result = canonicalPath(raw);
    expect(result).toBeInstanceOf(PathProblem);
    expect((result as PathProblem).message).toMatch(message);
  });
});
