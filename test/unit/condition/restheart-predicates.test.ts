import { describe, expect, it } from 'vitest';
import { exchangeFromParts, parseCondition } from '../../../src/condition/index.js';
import { matches, syntaxError } from './helpers.js';

describe('qparams-*', () => {
  it('qparams-contain needs every listed parameter, with any value', () => {
    expect(matches('qparams-contain(foo, bar)', { path: '/c?foo=1&bar=2' })).toBe(true);
    expect(matches('qparams-contain(foo, bar)', { path: '/c?foo=1&bar' })).toBe(true);
    expect(matches('qparams-contain(foo, bar)', { path: '/c?foo=1' })).toBe(false);
    expect(syntaxError('qparams-contain({})').message).toMatch(/at least one/);
  });

  it('qparams-blacklist refuses any listed parameter', () => {
    expect(matches('qparams-blacklist(filter, sort)', { path: '/c?sort=x' })).toBe(false);
    expect(matches('qparams-blacklist(filter, sort)', { path: '/c?page=1' })).toBe(true);
    expect(matches('qparams-blacklist(filter)', { path: '/c' })).toBe(true);
  });

  it('qparams-whitelist allows only listed parameters, and none with an empty list', () => {
    expect(matches('qparams-whitelist(page, pagesize)', { path: '/c?page=1&other=2' })).toBe(false);
    expect(matches('qparams-whitelist(page, pagesize)', { path: '/c?page=1&page=2' })).toBe(true);
    expect(matches('qparams-whitelist()', { path: '/c?x=1' })).toBe(false);
    expect(matches('qparams-whitelist()', { path: '/c' })).toBe(true);
  });

  it('qparams-size counts distinct names', () => {
    expect(matches('qparams-size(2)', { path: '/c?a=1&b=2' })).toBe(true);
    expect(matches('qparams-size(1)', { path: '/c?a=1&a=2' })).toBe(true);
    expect(matches('qparams-size(0)', { path: '/c' })).toBe(true);
  });

  it('decodes parameter names', () => {
    expect(matches("qparams-contain('a b')", { path: '/c?a%20b=1' })).toBe(true);
    expect(matches("qparams-contain('a b')", { path: '/c?a+b=1' })).toBe(true);
  });
});

describe('bson-request-* (request body)', () => {
  const body = (value: unknown) => ({ method: 'POST', body: value });

  it('flags conditions that need the body', () => {
    expect(parseCondition('bson-request-contains(a)').usesRequestBody).toBe(true);
    expect(parseCondition("bson-request-prop-equals(key=a, value='1')").usesRequestBody).toBe(true);
    expect(parseCondition('method(POST) and qparams-size(0)').usesRequestBody).toBe(false);
  });

  it('bson-request-contains needs all keys, dot paths and update operators included', () => {
    expect(matches('bson-request-contains(name, age)', body({ name: 'a', age: 3 }))).toBe(true);
    expect(matches('bson-request-contains(name, age)', body({ name: 'a' }))).toBe(false);
    expect(matches('bson-request-contains(address.city)', body({ address: { city: 'Rome' } }))).toBe(true);
    expect(matches('bson-request-contains(address.city)', body({ 'address.city': 'Rome' }))).toBe(true);
    expect(matches('bson-request-contains(status)', body({ $set: { status: 'x' } }))).toBe(true);
    expect(matches('bson-request-contains(tags.name)', body({ tags: [{ name: 'a' }, { name: 'b' }] }))).toBe(true);
    expect(matches('bson-request-contains(a)', body([{ a: 1 }, { a: 2 }]))).toBe(true);
    expect(matches('bson-request-contains(a)', body([{ a: 1 }, { b: 2 }]))).toBe(false);
    expect(matches('bson-request-contains(a)', body(undefined))).toBe(false);
  });

  it('bson-request-blacklist refuses any listed key, and passes a request without a body', () => {
    expect(matches('bson-request-blacklist(roles, owner)', body({ name: 'x' }))).toBe(true);
    expect(matches('bson-request-blacklist(roles, owner)', body({ $set: { roles: ['admin'] } }))).toBe(false);
    expect(matches('bson-request-blacklist(roles)', body([{ a: 1 }, { roles: [] }]))).toBe(false);
    expect(matches('bson-request-blacklist(roles)', body(undefined))).toBe(true);
    expect(syntaxError('bson-request-blacklist({})').message).toMatch(/at least one/);
  });

  it('bson-request-whitelist allows only listed leaf keys (or keys under them)', () => {
    expect(matches('bson-request-whitelist(name, address)', body({ name: 'x', address: { city: 'Rome' } }))).toBe(true);
    expect(matches('bson-request-whitelist(name, address.city)', body({ name: 'x', address: { city: 'Rome', zip: 1 } }))).toBe(false);
    expect(matches('bson-request-whitelist(name)', body({ $set: { name: 'x' } }))).toBe(true);
    expect(matches('bson-request-whitelist(name)', body({ $set: { owner: 'x' } }))).toBe(false);
    expect(matches('bson-request-whitelist(name)', body({}))).toBe(true);
    expect(matches('bson-request-whitelist()', body({ a: 1 }))).toBe(false);
    expect(matches('bson-request-whitelist(a)', body(undefined))).toBe(true);
    expect(matches('bson-request-whitelist(a)', body('text'))).toBe(false);
  });

  it('bson-request-prop-equals compares a property with a JSON value', () => {
    expect(matches(`bson-request-prop-equals(key=status, value='"draft"')`, body({ status: 'draft' }))).toBe(true);
    expect(matches(`bson-request-prop-equals(key=status, value='"draft"')`, body({ status: 'final' }))).toBe(false);
    expect(matches(`bson-request-prop-equals(key=a.b, value='{"c": [1, 2]}')`, body({ a: { b: { c: [1, 2] } } }))).toBe(true);
    expect(matches(`bson-request-prop-equals(key='items[1].sku', value='"x2"')`, body({ items: [{ sku: 'x1' }, { sku: 'x2' }] }))).toBe(true);
    expect(matches(`bson-request-prop-equals(key=n, value=10)`, body({ n: 10 }))).toBe(true);
    expect(matches(`bson-request-prop-equals(key=missing, value=null)`, body({}))).toBe(false);
    expect(matches(`bson-request-prop-equals(key=a, value=notjson)`, body({ a: 'notjson' }))).toBe(false);
  });

  it('bson-request-prop-equals can compare with another attribute', () => {
    expect(matches(`bson-request-prop-equals(key=owner, value='"%{i,X-User}"')`, { ...body({ owner: 'bob' }), headers: { 'X-User': 'bob' } })).toBe(true);
  });

  it('is false when the exchange offers no body at all (not a BSON request)', () => {
    const exchange = exchangeFromParts({ method: 'POST' });
    expect(parseCondition('bson-request-blacklist(a)').evaluate(exchange)).toBe(false);
    expect(parseCondition('bson-request-whitelist(a)').evaluate(exchange)).toBe(false);
  });

  it('reads the body lazily, only when a body predicate is reached', () => {
    let reads = 0;
    const exchange = { ...exchangeFromParts({ method: 'GET' }), requestBody: () => (reads++, { a: 1 }) };
    expect(parseCondition('method(POST) and bson-request-contains(a)').evaluate(exchange)).toBe(false);
    expect(reads).toBe(0);
    expect(parseCondition('method(GET) and bson-request-contains(a)').evaluate(exchange)).toBe(true);
    expect(reads).toBe(1);
  });
});
