/**
 * Idempotency-Key as a hostile client sends it (SPEC §14): every bad key a clear 400 naming the
 * header and nothing reaching the backend; a raw CRLF or a second header; a huge keyed body (413,
 * never buffered past the bound); a key reused by another principal is its own record.
 */
import { connect } from 'node:net';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import { call } from '../../support/clients/http-client.js';
import { as, useStack } from '../../support/fixtures.js';

let writes = 0;
function upstream(req: IncomingMessage, res: ServerResponse): void {
  req.resume();
  req.on('end', () => {
    writes++;
    res.writeHead(201, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ n: writes }));
  });
}

/** One request written byte for byte (a header no client library would send), its status line read back. */
function rawStatus(port: number, head: string, body = ''): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.end(head + body));
    let text = '';
    socket.on('data', (c) => (text += c.toString('latin1')));
    socket.on('end', () => resolve(text));
    socket.on('error', reject);
  });
}

describe('Idempotency-Key, adversarial', () => {
  const stack = useStack({
    service: 'idem-adv',
    upstream,
    users: { root: ['root'], alice: ['user'], bob: ['user'] },
    config: { idempotency: { maxRequestBytes: 2048 } },
    permissions: { 'users-write': { predicate: 'path-prefix(/)', roles: ['user'], priority: 10 } },
  });
  const keyed = (key: string, auth = as('alice'), body: unknown = { a: 1 }) => call(stack.proxy.url, '/orders', { method: 'POST', auth, body, headers: { 'idempotency-key': key } });

  const bad: Array<[string, string, RegExp]> = [
    ['empty', '', /empty/],
    ['an empty string', '""', /empty/],
    ['256 characters', `"${'k'.repeat(256)}"`, /256 characters/],
    ['a tab inside a bare token', 'a\tb', /whitespace/],
    ['an unclosed string', '"abc', /does not close/],
    ['a list', '"a", "b"', /two Idempotency-Key headers/],
  ];
  for (const [what, key, message] of bad)
    it(`refuses ${what} with 400 naming the header, the backend untouched`, async () => {
      const before = writes;
      const res = await keyed(key);
      expect(res.status).toBe(400);
      expect(res.json.message).toMatch(/Idempotency-Key/);
      expect(res.json.message).toMatch(message);
      expect(writes).toBe(before);
    });

  it('refuses a non-ASCII key (sent as raw bytes) with 400', async () => {
    const port = Number(new URL(stack.proxy.url).port);
    const head = `POST /orders HTTP/1.1\r\nHost: x\r\nAuthorization: ${as('alice')}\r\nContent-Type: application/json\r\nContent-Length: 2\r\nIdempotency-Key: "caf\u00e9"\r\nConnection: close\r\n\r\n`;
    const text = await rawStatus(port, Buffer.from(head, 'latin1').toString('latin1'), '{}');
    expect(text).toMatch(/^HTTP\/1\.1 400/);
    expect(text).toMatch(/non-ASCII/);
  });

  it('refuses two Idempotency-Key headers with 400 (and a CR/LF inside one never reaches a header)', async () => {
    const port = Number(new URL(stack.proxy.url).port);
    const two = `POST /orders HTTP/1.1\r\nHost: x\r\nAuthorization: ${as('alice')}\r\nContent-Type: application/json\r\nContent-Length: 2\r\nIdempotency-Key: "a"\r\nIdempotency-Key: "b"\r\nConnection: close\r\n\r\n`;
    expect(await rawStatus(port, two, '{}')).toMatch(/^HTTP\/1\.1 400[\s\S]*two Idempotency-Key headers/);
    // A bare CR inside the value is refused by node's parser before Outrigger sees it.
    const cr = `POST /orders HTTP/1.1\r\nHost: x\r\nAuthorization: ${as('alice')}\r\nContent-Length: 2\r\nIdempotency-Key: "a\rb"\r\nConnection: close\r\n\r\n`;
    expect(await rawStatus(port, cr, '{}')).toMatch(/^HTTP\/1\.1 400/);
    // So is another control character (0x01): node's parser or the key's own check, a 400 either way.
    const control = `POST /orders HTTP/1.1\r\nHost: x\r\nAuthorization: ${as('alice')}\r\nContent-Length: 2\r\nIdempotency-Key: "a\u0001b"\r\nConnection: close\r\n\r\n`;
    expect(await rawStatus(port, control, '{}')).toMatch(/^HTTP\/1\.1 400/);
  });

  it('refuses a keyed body over idempotency.maxRequestBytes with 413, announced or chunked', async () => {
    const before = writes;
    const res = await keyed('huge-1', as('alice'), { blob: 'y'.repeat(10_000) });
    expect(res.status).toBe(413);
    expect(res.json.message).toMatch(/maxRequestBytes/);
    const port = Number(new URL(stack.proxy.url).port);
    const chunk = 'z'.repeat(4000);
    const chunked = `POST /orders HTTP/1.1\r\nHost: x\r\nAuthorization: ${as('alice')}\r\nTransfer-Encoding: chunked\r\nIdempotency-Key: huge-2\r\nConnection: close\r\n\r\n`;
    expect(await rawStatus(port, chunked, `${chunk.length.toString(16)}\r\n${chunk}\r\n0\r\n\r\n`)).toMatch(/^HTTP\/1\.1 413/);
    expect(writes).toBe(before);
  });

  it('keeps a key reused by another principal apart: no replay of the first caller answer', async () => {
    const alice = await keyed('reused-1');
    const bob = await keyed('reused-1', as('bob'));
    expect(bob.status).toBe(201);
    expect(bob.headers['idempotent-replayed']).toBeUndefined();
    expect(bob.text).not.toBe(alice.text);
    // A wrong password is refused before any record is claimed or read.
    const wrong = await keyed('reused-1', 'Basic ' + Buffer.from('alice:nope').toString('base64'));
    expect(wrong.status).toBe(401);
  });
});
