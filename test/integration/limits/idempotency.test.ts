/**
 * Idempotency keys through the real proxy, a real redis-server and a scripted upstream that counts
 * its writes, one replica (SPEC §14): the first keyed write runs and its answer is recorded; a
 * repeat replays it (Idempotent-Replayed: true) without reaching the backend; a repeat while it
 * runs is 409, another request under the key 422; bodies differing only in member order are one
 * request; a 5xx is not recorded; an answer over maxBodyBytes replays as 409; another principal's
 * key is its own; unkeyed writes and own routes are untouched; `required` refuses a write without it.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import { call } from '../../support/clients/http-client.js';
import { as, useStack } from '../../support/fixtures.js';

interface Write {
  path: string;
  body: string;
  key: string | undefined;
}

const writes: Write[] = [];
const failuresLeft = new Map<string, number>();

function upstream(req: IncomingMessage, res: ServerResponse): void {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks).toString();
    const path = req.url ?? '/';
    const delay = Number(req.headers['x-delay-ms'] ?? 0);
    setTimeout(() => {
      if (path.startsWith('/fail')) {
        const left = failuresLeft.get(path) ?? 1;
        failuresLeft.set(path, left - 1);
        if (left > 0) {
          res.writeHead(503, { 'content-type': 'application/json' });
          return res.end('{"error":"backend busy"}');
        }
      }
      writes.push({ path, body, key: req.headers['idempotency-key'] as string | undefined });
      const n = writes.length;
      if (path.startsWith('/big')) {
        res.writeHead(200, { 'content-type': 'text/plain' });
        return res.end('x'.repeat(2048));
      }
      if (path.startsWith('/refuse')) {
        res.writeHead(400, { 'content-type': 'application/json' });
        return res.end(JSON.stringify({ error: 'bad order', n }));
      }
      res.writeHead(201, { 'content-type': 'application/json', location: `${path}/${n}`, 'x-per-request': String(n) });
      res.end(JSON.stringify({ n, body }));
    }, delay);
  });
}

const ALICE = as('alice');
const BOB = as('bob');
const writesTo = (path: string) => writes.filter((w) => w.path === path).length;

describe('idempotency keys, one replica', () => {
  const stack = useStack({
    service: 'idem-one',
    upstream,
    users: { root: ['root'], alice: ['user'], bob: ['user'] },
    config: { idempotency: { maxBodyBytes: 1024, maxRequestBytes: 4096, required: ['path-prefix(/strict)'] } },
    permissions: { 'users-write': { predicate: 'path-prefix(/)', roles: ['user', '$unauthenticated'], priority: 10 } },
  });
  const post = (path: string, key: string | undefined, body: unknown = { item: 'oar', qty: 1 }, auth: string | undefined = ALICE, headers: Record<string, string> = {}) =>
    call(stack.proxy.url, path, { method: 'POST', auth, body, headers: { ...(key === undefined ? {} : { 'idempotency-key': key }), ...headers } });

  it('runs the first keyed write and replays its answer to a repeat without reaching the backend', async () => {
    const first = await post('/orders', '"k-first"');
    expect(first.status).toBe(201);
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    const again = await post('/orders', '"k-first"');
    expect(again.status).toBe(201);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.text).toBe(first.text);
    expect(again.headers.location).toBe(first.headers.location);
    expect(again.headers['content-type']).toBe('application/json');
    // A header that is not the answer's (per request) is not repeated; the request id is this request's.
    expect(again.headers['x-per-request']).toBeUndefined();
    expect(again.headers['x-request-id']).not.toBe(first.headers['x-request-id']);
    expect(writesTo('/orders')).toBe(1);
    // The key reaches the backend with the write that ran.
    expect(writes.at(-1)!.key).toBe('"k-first"');
  });

  it('treats a bare token and the quoted string of the same text as one key', async () => {
    const first = await post('/orders-bare', 'k-bare');
    const again = await post('/orders-bare', '"k-bare"');
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.text).toBe(first.text);
  });

  it('answers 409 naming the key while the first still runs, then the recorded answer', async () => {
    const running = post('/orders-slow', 'k-slow', undefined, ALICE, { 'x-delay-ms': '400' });
    await new Promise((r) => setTimeout(r, 100));
    const meanwhile = await post('/orders-slow', 'k-slow', undefined, ALICE, { 'x-delay-ms': '400' });
    expect(meanwhile.status).toBe(409);
    expect(meanwhile.json.message).toContain('"k-slow"');
    expect(meanwhile.json.message).toMatch(/still being processed/);
    const first = await running;
    expect(first.status).toBe(201);
    const after = await post('/orders-slow', 'k-slow', undefined, ALICE, { 'x-delay-ms': '400' });
    expect(after.headers['idempotent-replayed']).toBe('true');
    expect(after.text).toBe(first.text);
    expect(writesTo('/orders-slow')).toBe(1);
  });

  it('answers 422 for the same key with another body, path or method', async () => {
    await post('/orders-m', 'k-mismatch', { item: 'oar' });
    const body = await post('/orders-m', 'k-mismatch', { item: 'sail' });
    expect(body.status).toBe(422);
    expect(body.json.message).toMatch(/"k-mismatch" was already used for a different request/);
    expect((await post('/orders-m?x=1', 'k-mismatch', { item: 'oar' })).status).toBe(422);
    const patch = await call(stack.proxy.url, '/orders-m', { method: 'PATCH', auth: ALICE, body: { item: 'oar' }, headers: { 'idempotency-key': 'k-mismatch' } });
    expect(patch.status).toBe(422);
    expect(writesTo('/orders-m')).toBe(1);
  });

  it('takes bodies that differ only in member order and whitespace as the same request', async () => {
    await post('/orders-order', 'k-order', '{"item":"oar","qty":2}');
    const again = await post('/orders-order', 'k-order', '{ "qty": 2,\n "item": "oar" }');
    expect(again.status).toBe(201);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(writesTo('/orders-order')).toBe(1);
  });

  it('keeps another principal under the same key a separate record (and an anonymous caller by address)', async () => {
    const alice = await post('/orders-p', 'k-shared');
    const bob = await post('/orders-p', 'k-shared', { item: 'different' }, BOB);
    expect(bob.status).toBe(201);
    expect(bob.headers['idempotent-replayed']).toBeUndefined();
    expect(bob.json.n).not.toBe(alice.json.n);
    const anonymous = await post('/orders-p', 'k-shared', undefined, '');
    expect(anonymous.status).toBe(201);
    expect(anonymous.headers['idempotent-replayed']).toBeUndefined();
    expect((await post('/orders-p', 'k-shared', undefined, '')).headers['idempotent-replayed']).toBe('true');
    expect(writesTo('/orders-p')).toBe(3);
  });

  it('records no 5xx: the retry runs, and its answer is the one kept', async () => {
    failuresLeft.set('/fail', 1);
    const failed = await post('/fail', 'k-fail');
    expect(failed.status).toBe(503);
    const retry = await post('/fail', 'k-fail');
    expect(retry.status).toBe(201);
    expect(retry.headers['idempotent-replayed']).toBeUndefined();
    const again = await post('/fail', 'k-fail');
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(writesTo('/fail')).toBe(1);
  });

  it("records the backend's 4xx: a repeat gets the same refusal without reaching it", async () => {
    const first = await post('/refuse', 'k-refuse');
    expect(first.status).toBe(400);
    const again = await post('/refuse', 'k-refuse');
    expect(again.status).toBe(400);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.text).toBe(first.text);
    expect(writesTo('/refuse')).toBe(1);
  });

  it('keeps only the status of an answer over maxBodyBytes: a repeat is 409 saying it was too large to keep', async () => {
    const first = await post('/big', 'k-big');
    expect(first.status).toBe(200);
    expect(first.text.length).toBe(2048);
    const again = await post('/big', 'k-big');
    expect(again.status).toBe(409);
    expect(again.json.message).toMatch(/already ran \(status 200\), but its answer was too large to keep/);
    expect(writesTo('/big')).toBe(1);
  });

  it('refuses a keyed body over maxRequestBytes with 413 naming the bound', async () => {
    const res = await post('/orders-huge', 'k-huge', { blob: 'y'.repeat(5000) });
    expect(res.status).toBe(413);
    expect(res.json.message).toMatch(/idempotency.maxRequestBytes \(4096 bytes\)/);
    expect(writesTo('/orders-huge')).toBe(0);
  });

  it('leaves writes without the header alone, and refuses one where idempotency.required matches', async () => {
    await post('/orders-plain', undefined);
    await post('/orders-plain', undefined);
    expect(writesTo('/orders-plain')).toBe(2);
    const refused = await post('/strict/orders', undefined);
    expect(refused.status).toBe(400);
    expect(refused.json.message).toMatch(/must carry an Idempotency-Key header/);
    expect((await post('/strict/orders', 'k-strict')).status).toBe(201);
    expect(writesTo('/strict/orders')).toBe(1);
  });

  it('ignores the header on GET and on own routes', async () => {
    const read = await call(stack.proxy.url, '/orders-get', { auth: ALICE, headers: { 'idempotency-key': '"' } });
    expect(read.status).toBe(201); // the stand-in answers every request as a write; the header was not even parsed
    const own = await call(stack.proxy.url, '/_admin/acl', { auth: ALICE, headers: { 'idempotency-key': '' } });
    expect(own.status).not.toBe(400);
  });
});
