import { describe, expect, it } from 'vitest';
import { buildDefaultPayload, serializeDefaultPayload } from '../../../src/webhooks/deliver/attempt/default-payload.js';
import { captureBody } from '../../../src/webhooks/event.js';
import { createHeaderJsonRedactor, createHeaderRedactor, jsonString, redactHeaders, removeIssuedKey } from '../../../src/webhooks/capture/redaction.js';
import { sampleEvent } from './fixtures.js';

describe('buildDefaultPayload', () => {
  it('has exactly the documented shape', () => {
    const event = sampleEvent();
    const payload = buildDefaultPayload(event, { id: 'wh1', name: 'Orders' });
    expect(payload).toEqual({
      id: '1700000000000-0',
      timestamp: '2024-01-02T03:04:05.678Z',
      service: { id: 'demo' },
      webhook: { id: 'wh1', name: 'Orders' },
      request: {
        method: 'POST',
        path: '/shop/orders',
        query: event.request.query,
        headers: event.request.headers,
        body: event.request.body,
      },
      response: { statusCode: 201, headers: event.response.headers, body: event.response.body },
    });
    expect(Object.keys(payload)).toEqual(['id', 'timestamp', 'service', 'webhook', 'request', 'response']);
    expect(Object.keys(payload.request)).toEqual(['method', 'path', 'query', 'headers', 'body']);
    expect(Object.keys(payload.response)).toEqual(['statusCode', 'headers', 'body']);
  });

  it('flags truncated bodies and turns a missing body into null', () => {
    const base = sampleEvent();
    const event = sampleEvent({
      request: { ...base.request, body: 'partial te', bodyTruncated: true },
      response: { ...base.response, body: undefined, bodyTruncated: false },
    });
    const parsed = JSON.parse(serializeDefaultPayload(event, { id: 'w', name: 'n' }));
    expect(parsed.request.body).toBe('partial te');
    expect(parsed.request.bodyTruncated).toBe(true);
    expect(parsed.response.body).toBeNull();
    expect('bodyTruncated' in parsed.response).toBe(false);
  });
});

describe('redactHeaders', () => {
  it('redacts the always-secret headers and configured ones, in any case', () => {
    const out = redactHeaders(
      {
        Authorization: 'Bearer rig_abc',
        'proxy-authorization': 'Basic x',
        Cookie: 'sid=1',
        'set-cookie': ['a=1', 'b=2'],
        'X-Api-Key': 'k',
        'Content-Type': 'application/json',
        'x-multi': ['1', '2'],
        'x-undefined': undefined,
        'content-length': 12,
      },
      ['x-api-key'],
    );
    expect(out).toEqual({
      authorization: '[redacted]',
      'proxy-authorization': '[redacted]',
      cookie: '[redacted]',
      'set-cookie': '[redacted]',
      'x-api-key': '[redacted]',
      'content-type': 'application/json',
      'x-multi': ['1', '2'],
      'content-length': '12',
    });
  });

  it('redacts every spelling of a secret header and merges spellings of others', () => {
    const redact = createHeaderRedactor(['X-Secret ']);
    expect(redact({ 'x-secret': 'a', 'X-SECRET': 'b', 'X-Dup': 'a', 'x-dup': 'b' })).toEqual({ 'x-secret': '[redacted]', 'x-dup': ['a', 'b'] });
  });
});

describe('createHeaderJsonRedactor', () => {
  it('writes exactly JSON.stringify of what createHeaderRedactor gives', () => {
    const toJson = createHeaderJsonRedactor(['X-Api-Secret']);
    const redact = createHeaderRedactor(['X-Api-Secret']);
    const withProto = JSON.parse('{"__proto__": "p", "a": "1"}') as Record<string, string>;
    const sets: Array<Record<string, string | string[] | number | undefined | null>> = [
      {},
      { host: 'h:1', authorization: 'Bearer rig_secret', 'x-api-secret': 's', cookie: 'c=1', 'set-cookie': ['a=1', 'b=2'] },
      { 'content-length': 12, 'x-list': ['a', 'b"c'], 'x-none': undefined, 'x-null': null, 'x-empty': '' },
      { 'x-quote': 'say "hi" \\ there', 'x-control': 'a\u0001b\tc', 'x-latin': 'caf\u00e9', 'x-emoji': '\ud83d\ude00', 'x-lone': '\ud800' },
      { 'Content-Type': 'text/plain', 'content-type': 'x', Authorization: 'secret' },
      { '123': 'numeric name first', b: '2', "x-odd!#$%&'*+.^_`|~": 'token characters' },
      { 'x"quote': 'a name to escape' },
      withProto,
    ];
    for (const headers of sets) {
      const text = toJson(headers);
      expect(text).toBe(JSON.stringify(redact(headers)));
      expect(JSON.parse(text)).toEqual(redact(headers));
      expect(text).not.toContain('rig_secret');
    }
    for (const text of ['', 'plain', 'a"b', 'a\\b', '\n', '\u007f', '\u2028', 'é', '\udfff']) expect(jsonString(text)).toBe(JSON.stringify(text));
  });
});

describe('removeIssuedKey', () => {
  it('removes the key of a POST /keys answer without touching the input', () => {
    const body = { _id: 'k1', name: 'ci', roles: ['r'], expiresAt: { $date: 1 }, key: 'rig_secret' };
    expect(removeIssuedKey(body)).toEqual({ _id: 'k1', name: 'ci', roles: ['r'], expiresAt: { $date: 1 } });
    expect(body.key).toBe('rig_secret');
  });

  it('handles text bodies, parsed or not', () => {
    expect(removeIssuedKey('{"_id":"k1","key":"rig_secret"}')).toEqual({ _id: 'k1' });
    const truncated = removeIssuedKey('{"_id":"k1","key":"rig_sec');
    expect(truncated).not.toContain('rig_sec');
    expect(removeIssuedKey('{"key" : "rig_x", "name": "n", ')).toBe('{"key" : "[redacted]", "name": "n", ');
  });

  it('leaves other bodies alone', () => {
    const body = { _id: 'x' };
    expect(removeIssuedKey(body)).toBe(body);
    expect(removeIssuedKey(null)).toBeNull();
    expect(removeIssuedKey([1])).toEqual([1]);
  });
});

describe('captureBody', () => {
  const enc = (s: string) => new TextEncoder().encode(s);

  it('parses complete JSON bodies', () => {
    expect(captureBody(enc('{"a":1}'), { contentType: 'application/json; charset=utf-8' })).toEqual({ body: { a: 1 }, truncated: false });
    expect(captureBody(enc('{"a":1}'), { contentType: 'application/vnd.api+json' })).toEqual({ body: { a: 1 }, truncated: false });
    expect(captureBody(enc('{bad'), { contentType: 'application/json' })).toEqual({ body: '{bad', truncated: false });
  });

  it('keeps text, cuts at the cap without splitting a character, and flags it', () => {
    expect(captureBody(enc('hello'), { contentType: 'text/plain' })).toEqual({ body: 'hello', truncated: false });
    expect(captureBody(enc('{"a":"ééé"}'), { contentType: 'application/json', limit: 9 })).toEqual({ body: '{"a":"é', truncated: true });
    expect(captureBody(enc('abc'), { limit: 10, totalBytes: 100 })).toEqual({ body: 'abc', truncated: true });
  });

  it('uses null for no body and placeholders for binary or compressed data', () => {
    expect(captureBody(new Uint8Array(0))).toEqual({ body: null, truncated: false });
    expect(captureBody(new Uint8Array([0xff, 0xfe, 0x00]), { contentType: 'image/png' })).toEqual({ body: '[3 bytes of binary data, image/png]', truncated: false });
    expect(captureBody(enc('xx'), { contentEncoding: 'gzip' })).toEqual({ body: '[2 bytes, content-encoding gzip]', truncated: false });
  });
});
