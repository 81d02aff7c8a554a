import { describe, expect, it } from 'vitest';
import { parseCondition, type ExchangeParts } from '../../../src/condition/index.js';
import { matches, syntaxError } from './helpers.js';

/** True when the attribute reads exactly `expected` (or is absent, for null). */
function reads(attribute: string, expected: string | null, parts: ExchangeParts = {}): boolean {
  if (expected === null) return matches(`not exists('${attribute}')`, parts) && matches(`equals('${attribute}', %{NULL})`, parts);
  // The expected text is itself parsed as an attribute value: % and $ must be doubled.
  const literal = expected.replace(/'/g, "\\'").replace(/%/g, '%%').replace(/\$/g, '$$$$');
  return matches(`equals('${attribute}', '${literal}')`, parts);
}

const request: ExchangeParts = {
  method: 'POST',
  path: '/a%20b/c;v=1?x=1&x=2&y=%41+b&z',
  headers: [
    ['Host', 'api.example.com:8443'],
    ['Accept', 'text/html'],
    ['accept', 'application/json'],
    ['Cookie', 'session=abc; theme="dark"; session=zzz'],
    ['User-Agent', 'curl/8'],
  ],
  remoteIp: '10.1.2.3',
  localIp: '10.0.0.5',
  localPort: 8443,
  secure: true,
  protocol: 'HTTP/1.1',
  user: { id: 'alice', roles: ['user'] },
  authenticationType: 'BASIC',
  startTime: Date.UTC(2000, 9, 10, 13, 55, 36),
  status: 201,
  responseHeaders: { 'Content-Type': 'application/json', 'Set-Cookie': ['a=1; Path=/', 'rh_auth=tok; HttpOnly'] },
  responseTimeMs: 1234.5,
  bytesSent: 0,
  bytesRead: 42,
  tls: { cipher: 'TLS_AES_128_GCM_SHA256', protocol: 'TLSv1.3', sessionId: 'ab12' },
  storedResponse: '{"ok":true}',
};

describe('request attributes', () => {
  const cases: Array<[string, string | null]> = [
    ['%m', 'POST'],
    ['%{METHOD}', 'POST'],
    ['%U', '/a%20b/c;v=1'],
    ['%{REQUEST_URL}', '/a%20b/c;v=1'],
    ['%R', '/a b/c'],
    ['%{RELATIVE_PATH}', '/a b/c'],
    ['%{REQUEST_PATH}', '/a b/c'],
    ['%{RESOLVED_PATH}', ''],
    ['%q', '?x=1&x=2&y=%41+b&z'],
    ['%{QUERY_STRING}', '?x=1&x=2&y=%41+b&z'],
    ['%{BARE_QUERY_STRING}', 'x=1&x=2&y=%41+b&z'],
    ['%{q,x}', '[1, 2]'],
    ['%{q,y}', 'A b'],
    ['%{q,z}', ''],
    ['%{q,missing}', null],
    ['%{p,v}', '1'],
    ['%{i,user-agent}', 'curl/8'],
    ['%{i,ACCEPT}', '[text/html, application/json]'],
    ['%{i,X-Missing}', null],
    ['%{c,session}', 'abc'],
    ['%{req-cookie,theme}', 'dark'],
    ['%{c,none}', null],
    ['%a', '10.1.2.3'],
    ['%{REMOTE_IP}', '10.1.2.3'],
    ['%h', '10.1.2.3'],
    ['%{REMOTE_HOST}', '10.1.2.3'],
    ['%o', '10.1.2.'],
    ['%{REMOTE_OBFUSCATED_IP}', '10.1.2.'],
    ['%A', '10.0.0.5'],
    ['%{LOCAL_IP}', '10.0.0.5'],
    ['%p', '8443'],
    ['%{LOCAL_PORT}', '8443'],
    ['%v', 'api.example.com'],
    ['%{LOCAL_SERVER_NAME}', 'api.example.com'],
    ['%{HOST_AND_PORT}', 'api.example.com:8443'],
    ['%H', 'HTTP/1.1'],
    ['%{PROTOCOL}', 'HTTP/1.1'],
    ['%{SCHEME}', 'https'],
    ['%{SECURE}', 'true'],
    ['%{TRANSPORT_PROTOCOL}', 'http/1.1'],
    ['%r', 'POST /a%20b/c;v=1?x=1&x=2&y=%41+b&z HTTP/1.1'],
    ['%{REQUEST_LINE}', 'POST /a%20b/c;v=1?x=1&x=2&y=%41+b&z HTTP/1.1'],
    ['%t', '[10/Oct/2000:13:55:36 +0000]'],
    ['%{DATE_TIME}', '[10/Oct/2000:13:55:36 +0000]'],
    ['%u', 'alice'],
    ['%{REMOTE_USER}', 'alice'],
    ['%{AUTHENTICATION_TYPE}', 'BASIC'],
    ['%l', null],
    ['%x', '42'],
    ['%X', '42'],
    ['%{BYTES_READ}', '42'],
    ['%{SSL_CIPHER}', 'TLS_AES_128_GCM_SHA256'],
    ['%{SECURE_PROTOCOL}', 'TLSv1.3'],
    ['%{SSL_SESSION_ID}', 'ab12'],
    ['%{SSL_CLIENT_CERT}', null],
    ['%I', 'main'],
    ['%{THREAD_NAME}', 'main'],
    ['%{NULL}', null],
  ];
  it.each(cases)('%s reads %j', (attribute, expected) => {
    expect(reads(attribute, expected, request)).toBe(true);
  });

  it('reads the local address when there is no Host header', () => {
    const parts: ExchangeParts = { localIp: '10.0.0.5', localPort: 8080 };
    expect(reads('%v', '10.0.0.5', parts)).toBe(true);
    expect(reads('%{HOST_AND_PORT}', '10.0.0.5:8080', parts)).toBe(true);
    expect(reads('%{HOST_AND_PORT}', '10.0.0.5', { localIp: '10.0.0.5', localPort: 80 })).toBe(true);
  });

  it('reads an IPv6 Host without its port and obfuscates IPv6 clients', () => {
    expect(reads('%v', '[::1]', { headers: { host: '[::1]:8080' } })).toBe(true);
    expect(reads('%o', '2001:db8:1:', { remoteIp: '2001:db8:1:2::5' })).toBe(true);
  });

  it('matches the decoded path before any ;parameters, keeping an encoded slash encoded', () => {
    expect(reads('%R', '/admin', { path: '/admin;jsessionid=1' })).toBe(true);
    expect(reads('%R', '/a%2Fb', { path: '/a%2fb' })).toBe(true);
    expect(reads('%R', '/a+b', { path: '/a+b' })).toBe(true);
    expect(reads('%R', '/caf\u00e9', { path: '/caf%C3%A9' })).toBe(true);
    expect(reads('%R', '/bad%zz', { path: '/bad%zz' })).toBe(true);
  });
});

describe('response attributes', () => {
  const cases: Array<[string, string | null]> = [
    ['%s', '201'],
    ['%{RESPONSE_CODE}', '201'],
    ['%{RESPONSE_REASON_PHRASE}', 'Created'],
    ['%{o,content-type}', 'application/json'],
    ['%{o,Set-Cookie}', '[a=1; Path=/, rh_auth=tok; HttpOnly]'],
    ['%{resp-cookie,rh_auth}', 'tok'],
    ['%D', '1234'],
    ['%{RESPONSE_TIME}', '1234'],
    ['%T', '1.234'],
    ['%{RESPONSE_TIME_MICROS}', '1234500'],
    ['%{RESPONSE_TIME_NANOS}', '1234500000'],
    ['%b', '-'],
    ['%B', '0'],
    ['%{BYTES_SENT}', '0'],
    ['%{STORED_RESPONSE}', '{"ok":true}'],
  ];
  it.each(cases)('%s reads %j', (attribute, expected) => {
    expect(reads(attribute, expected, request)).toBe(true);
  });

  it('reads absent before the response exists', () => {
    expect(reads('%s', null, {})).toBe(true);
    expect(reads('%{o,Content-Type}', null, {})).toBe(true);
  });

  it('flags conditions that read the response', () => {
    expect(parseCondition('equals(%s, 200)').usesResponse).toBe(true);
    expect(parseCondition("exists('%{o,ETag}')").usesResponse).toBe(true);
    expect(parseCondition("equals('x%{resp-cookie,a}', x)").usesResponse).toBe(true);
    expect(parseCondition('max-content-size(10)').usesResponse).toBe(true);
    expect(parseCondition("path-prefix(/a) and equals(%m, GET) and exists('%{i,X}')").usesResponse).toBe(false);
  });
});

describe('attribute values', () => {
  it('concatenates literal text and attributes, an absent part adding nothing', () => {
    expect(matches("equals('x%U', x/p)", { path: '/p' })).toBe(true);
    expect(matches("equals('[%{i,X}]', '[]')")).toBe(true);
    expect(matches("equals('%m %R', 'GET /p')", { path: '/p' })).toBe(true);
  });

  it('reads %% and $$ as literal characters', () => {
    expect(matches("equals('100%%', %{i,X})", { headers: { X: '100%' } })).toBe(true);
    expect(matches("equals('$$5', %{i,X})", { headers: { X: '$5' } })).toBe(true);
  });

  it('compares absent with absent as equal and absent with empty as different', () => {
    expect(matches('equals(%{i,A}, %{i,B})')).toBe(true);
    expect(matches("equals(%{i,A}, '')")).toBe(false);
  });

  it('refuses unknown attributes, unclosed braces and a lone %, with the position', () => {
    const unknown = syntaxError("equals('x%{m}', GET)");
    expect(unknown.message).toMatch(/unknown attribute '%\{m\}'/);
    expect(unknown.position).toBe(9);
    expect(syntaxError('equals(%Z, GET)').message).toMatch(/unknown attribute '%Z'/);
    expect(syntaxError("equals('%{i,X', a)").message).toMatch(/never closed/);
    expect(syntaxError('equals(%, a)').message).toMatch(/lone '%'/);
    expect(syntaxError("equals('%{time,yyyy}', a)").message).toMatch(/not supported/);
  });

  it('does not parse attributes in plain string parameters', () => {
    expect(matches("path-suffix('%m')", { path: '/x%25m' })).toBe(true);
  });
});
