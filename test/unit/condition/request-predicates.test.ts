import { describe, expect, it } from 'vitest';
import type { ExchangeParts } from '../../../src/condition/index.js';
import { matches, syntaxError } from './helpers.js';

describe('method, secure, idempotent', () => {
  it('compares methods case-insensitively against any listed method', () => {
    expect(matches('method(get)', { method: 'GET' })).toBe(true);
    expect(matches('method(GET)', { method: 'get' })).toBe(true);
    expect(matches('method(GET, HEAD)', { method: 'POST' })).toBe(false);
    expect(matches('method( GET )')).toBe(true);
  });

  it('tells secure requests', () => {
    expect(matches('secure', { secure: true })).toBe(true);
    expect(matches('secure', { secure: false })).toBe(false);
  });

  it('counts GET, HEAD, OPTIONS, PUT and DELETE as idempotent', () => {
    for (const method of ['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE', 'put']) expect(matches('idempotent', { method })).toBe(true);
    for (const method of ['POST', 'PATCH']) expect(matches('idempotent', { method })).toBe(false);
  });
});

describe('equals, contains, exists, in', () => {
  it('equals compares every value as a string', () => {
    expect(matches('equals(%{i,X-Tenant}, acme)', { headers: { 'x-tenant': 'acme' } })).toBe(true);
    expect(matches('equals({%m, GET, GET})')).toBe(true);
    expect(matches('equals(%m, GET, POST)')).toBe(false);
    expect(matches('equals(%{q,n}, 10)', { path: '/?n=010' })).toBe(false);
  });

  it('equals with fewer than two values is true', () => {
    expect(matches('equals(%m)', { method: 'PUT' })).toBe(true);
  });

  it('reads multi-valued headers and parameters as [a, b]', () => {
    expect(matches("equals(%{q,tag}, '[a, b]')", { path: '/t?tag=a&tag=b' })).toBe(true);
    expect(
      matches("equals(%{i,Accept}, '[a, b]')", {
        headers: [
          ['Accept', 'a'],
          ['accept', 'b'],
        ],
      }),
    ).toBe(true);
  });

  it('contains needs a present value containing any search string', () => {
    expect(matches('contains(value=%{i,User-Agent}, search={bot, spider})', { headers: { 'User-Agent': 'Googlebot/2.1' } })).toBe(true);
    expect(matches('contains(value=%{i,User-Agent}, search=bot)', { headers: { 'User-Agent': 'curl' } })).toBe(false);
    expect(matches('contains(value=%{i,User-Agent}, search="")')).toBe(false);
    expect(syntaxError('contains(%{i,A}, x)').message).toMatch(/no positional value/);
  });

  it('exists needs a present, non-empty value', () => {
    expect(matches('exists(%{q,debug})', { path: '/?debug=1' })).toBe(true);
    expect(matches('exists(%{q,debug})', { path: '/?debug=' })).toBe(false);
    expect(matches('exists(%{q,debug})', { path: '/?debug' })).toBe(false);
    expect(matches('exists(%{i,Content-Length}) or exists(value=%{i,Trailer}) and exists(%{i,Other})', { headers: { Trailer: 'a' } })).toBe(false);
  });

  it('in compares a value with an array', () => {
    expect(matches('in(value=%m, array={GET, HEAD})', { method: 'HEAD' })).toBe(true);
    expect(matches('in(value=%m, array={GET, HEAD})', { method: 'POST' })).toBe(false);
    expect(matches('in(value=%{i,X}, array={a})')).toBe(false);
    expect(syntaxError('in(value=%m)').message).toMatch(/required parameters \[array\]/);
  });
});

describe('gte and lte (RESTHeart)', () => {
  it('compares two values as numbers', () => {
    expect(matches('gte(%{q,n}, 10)', { path: '/?n=10' })).toBe(true);
    expect(matches('gte(%{q,n}, 9)', { path: '/?n=10' })).toBe(true);
    expect(matches('lte(%{q,n}, 9)', { path: '/?n=10' })).toBe(false);
    expect(matches('lte(%{q,n}, 1e2)', { path: '/?n=99.5' })).toBe(true);
  });

  it('is false when a side is not a number', () => {
    expect(matches('gte(%{q,n}, 1)', { path: '/?n=abc' })).toBe(false);
    expect(matches('lte(%{q,n}, 1)')).toBe(false);
  });

  it('needs exactly two values', () => {
    expect(syntaxError('gte(1, 2, 3)').message).toMatch(/exactly two values/);
  });
});

describe('content size predicates (read the response Content-Length, as in Undertow)', () => {
  const response = (length?: string): ExchangeParts => ({ status: 200, responseHeaders: length === undefined ? {} : { 'Content-Length': length } });

  it('max-content-size and request-larger-than are true above the limit', () => {
    expect(matches('max-content-size(10)', response('11'))).toBe(true);
    expect(matches('max-content-size(10)', response('10'))).toBe(false);
    expect(matches('request-larger-than(10)', response('11'))).toBe(true);
  });

  it('min-content-size and request-smaller-than are true below the limit', () => {
    expect(matches('min-content-size(10)', response('9'))).toBe(true);
    expect(matches('request-smaller-than(size=10)', response('10'))).toBe(false);
  });

  it('ignore the request Content-Length and a missing response length', () => {
    expect(matches('request-larger-than(10)', { headers: { 'Content-Length': '100' } })).toBe(false);
    expect(matches('max-content-size(10)', response())).toBe(false);
  });

  it('need a whole number', () => {
    expect(syntaxError('max-content-size(ten)').message).toMatch(/must be an integer/);
  });
});

describe('ip-match', () => {
  it('applies the first matching rule of the family, else the default', () => {
    const condition = "ip-match(acl={'10.0.0.1 deny', '10.0.0.0/8 allow'})";
    expect(matches(condition, { remoteIp: '10.1.2.3' })).toBe(true);
    expect(matches(condition, { remoteIp: '10.0.0.1' })).toBe(false);
    expect(matches(condition, { remoteIp: '192.168.0.1' })).toBe(false);
    expect(matches(`ip-match(acl='10.0.0.1 deny', default-allow=true)`, { remoteIp: '192.168.0.1' })).toBe(true);
  });

  it('supports octet wildcards and IPv4-mapped clients', () => {
    expect(matches("ip-match('192.168.*.* allow')", { remoteIp: '192.168.7.9' })).toBe(true);
    expect(matches("ip-match('127.0.0.1 allow')", { remoteIp: '::ffff:127.0.0.1' })).toBe(true);
  });

  it('supports IPv6 exact, wildcard and prefix rules', () => {
    expect(matches("ip-match('::1 allow')", { remoteIp: '::1' })).toBe(true);
    expect(matches("ip-match('2001:db8:*:*:*:*:*:* allow')", { remoteIp: '2001:db8::5' })).toBe(true);
    expect(matches("ip-match('2001:db8:0:0:0:0:0:0/32 allow')", { remoteIp: '2001:db8:ffff::1' })).toBe(true);
    expect(matches("ip-match('2001:db8:0:0:0:0:0:0/32 allow')", { remoteIp: '2001:db9::1' })).toBe(false);
  });

  it('refuses malformed rules at parse time', () => {
    expect(syntaxError("ip-match('10.0.0.1')").message).toMatch(/allow.*deny/);
    expect(syntaxError("ip-match('10.0.0.1 permit')").message).toMatch(/allow or deny/);
    expect(syntaxError("ip-match('example.com allow')").message).toMatch(/not an IP address/);
  });
});
