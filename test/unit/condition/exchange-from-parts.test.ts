import { describe, expect, it } from 'vitest';
import { exchangeFromParts } from '../../../src/condition/index.js';

describe('exchangeFromParts', () => {
  it('has request defaults', () => {
    const exchange = exchangeFromParts({});
    expect(exchange.method).toBe('GET');
    expect(exchange.path).toBe('/');
    expect(exchange.rawQuery).toBe('');
    expect(exchange.protocol).toBe('HTTP/1.1');
    expect(exchange.secure).toBe(false);
    expect(exchange.statusCode).toBeUndefined();
    expect(exchange.requestBody).toBeUndefined();
    expect(exchange.responseHeader).toBeUndefined();
  });

  it('splits a query string off the path and appends an explicit query', () => {
    expect(exchangeFromParts({ path: '/c?a=1&b=2' })).toMatchObject({ path: '/c', rawQuery: 'a=1&b=2' });
    expect(exchangeFromParts({ path: '/c?a=1', query: { b: ['2', '3'], 'c d': 'é' } }).rawQuery).toBe('a=1&b=2&b=3&c%20d=%C3%A9');
    expect(exchangeFromParts({ path: '/c', query: '?x=1' }).rawQuery).toBe('x=1');
  });

  it('looks headers up by lower-case name and keeps every value', () => {
    const exchange = exchangeFromParts({
      headers: [
        ['Accept', 'a'],
        ['ACCEPT', 'b'],
        ['X-One', '1'],
      ],
    });
    expect(exchange.requestHeader('accept')).toBe('a');
    expect(exchange.requestHeaderValues?.('accept')).toEqual(['a', 'b']);
    expect(exchange.requestHeader('x-one')).toBe('1');
    expect(exchange.requestHeader('missing')).toBeUndefined();
    expect(exchangeFromParts({ headers: { Accept: ['a', 'b'] } }).requestHeaderValues?.('accept')).toEqual(['a', 'b']);
  });

  it('describes a response and a body when given', () => {
    const exchange = exchangeFromParts({ status: 404, responseHeaders: { 'Content-Type': 'text/plain' }, body: { a: 1 } });
    expect(exchange.statusCode).toBe(404);
    expect(exchange.responseHeader?.('content-type')).toBe('text/plain');
    expect(exchange.requestBody?.()).toEqual({ a: 1 });
    expect(exchangeFromParts({ body: undefined }).requestBody?.()).toBeUndefined();
    expect('requestBody' in exchangeFromParts({ body: undefined })).toBe(true);
  });
});
