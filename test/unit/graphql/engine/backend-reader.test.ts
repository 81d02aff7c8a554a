/**
 * The HTTP backend reader against the RESTHeart stand-in (real HTTP, mingo) and against small
 * servers that misbehave on purpose.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStandinBackend, type StandinBackend } from '../../../../examples/standin-backend/index.js';
import { createHttpBackendReader, encodedQueryLength, encodeQueryComponent } from '../../../../src/graphql/backend/http-reader.js';
import { OutriggerError } from '../../../../src/errors.js';
import { oid } from '../helpers.js';

let backend: StandinBackend;
beforeAll(async () => {
  backend = await startStandinBackend({
    data: {
      shop: {
        orders: Array.from({ length: 12 }, (_, i) => ({ _id: oid(i + 1), n: i, at: { $date: 1_700_000_000_000 + i * 1000 }, tag: i % 2 ? 'odd' : 'even' })),
      },
    },
    jwt: { secret: 'the-shared-secret' },
  });
});
afterAll(() => backend.close());

async function server(handler: (req: IncomingMessage, res: ServerResponse) => void) {
  const srv = createServer(handler);
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(srv.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        srv.closeAllConnections();
        srv.close(() => resolve());
      }),
  };
}

async function failure(p: Promise<unknown>): Promise<OutriggerError> {
  try {
    await p;
  } catch (error) {
    if (error instanceof OutriggerError) return error;
    throw error;
  }
  throw new Error('expected a failure');
}

describe('against the RESTHeart stand-in', () => {
  it('sends filter, sort, page and pagesize; extended JSON filters match', async () => {
    const reader = createHttpBackendReader({ baseUrl: backend.url });
    backend.clearRequests();
    const docs = await reader.find({ db: 'shop', collection: 'orders', filter: { tag: 'odd', at: { $gte: { $date: 1_700_000_003_000 } } }, sort: { n: -1 }, page: 2, pagesize: 2 }, {});
    expect(docs.map((d: any) => d.n)).toEqual([7, 5]);
    const q = backend.requests[0]!.query;
    expect(backend.requests[0]!.path).toBe('/shop/orders');
    expect(JSON.parse(q.get('filter')!)).toEqual({ tag: 'odd', at: { $gte: { $date: 1_700_000_003_000 } } });
    expect([q.get('sort'), q.get('page'), q.get('pagesize')]).toEqual(['{"n":-1}', '2', '2']);
    const byId = await reader.find({ db: 'shop', collection: 'orders', filter: { _id: { $in: [oid(3), oid(4)] } }, sort: { _id: 1 }, page: 1, pagesize: 10 }, {});
    expect(byId.map((d: any) => d._id)).toEqual([oid(3), oid(4)]);
    await reader.close();
  });

  it('never sends filter={} and reads a missing collection as empty', async () => {
    const reader = createHttpBackendReader({ baseUrl: backend.url });
    backend.clearRequests();
    expect(await reader.find({ db: 'shop', collection: 'orders', filter: {}, page: 1, pagesize: 3 }, {})).toHaveLength(3);
    expect(backend.requests[0]!.query.has('filter')).toBe(false);
    expect(await reader.find({ db: 'shop', collection: 'nope', page: 1, pagesize: 3 }, {})).toEqual([]);
    const strict = createHttpBackendReader({ baseUrl: backend.url, notFoundAsEmpty: false });
    expect((await failure(strict.find({ db: 'shop', collection: 'nope', page: 1, pagesize: 3 }, {}))).code).toBe('BACKEND_ERROR');
    await reader.close();
    await strict.close();
  });

  it("sends the caller's identity from headersFor (the backend sees who asked)", async () => {
    const { SignJWT } = await import('jose');
    const jwt = await new SignJWT({ roles: ['user'] }).setProtectedHeader({ alg: 'HS256' }).setSubject('alice').setExpirationTime('1m').sign(new TextEncoder().encode('the-shared-secret'));
    const reader = createHttpBackendReader({ baseUrl: backend.url, headersFor: (ctx) => ({ authorization: `Bearer ${String(ctx.backendHeaders?.token)}` }) });
    backend.clearRequests();
    await reader.find({ db: 'shop', collection: 'orders', page: 1, pagesize: 1 }, { backendHeaders: { token: jwt } });
    expect(backend.requests[0]!.identity).toEqual({ via: 'jwt', id: 'alice', roles: ['user'] });
    await reader.close();
  });

  it('uses a shared undici dispatcher when given one, and a base path and collection path template', async () => {
    const agent = new Agent();
    const reader = createHttpBackendReader({ baseUrl: `${backend.url}/`, collectionPath: '/{db}/{collection}', dispatcher: agent });
    expect(await reader.find({ db: 'shop', collection: 'orders', page: 1, pagesize: 1 }, {})).toHaveLength(1);
    await reader.close();
    await agent.close();
    const seen: string[] = [];
    const s = await server((req, res) => {
      seen.push(req.url ?? '');
      res.writeHead(200, { 'content-type': 'application/json' }).end('[]');
    });
    const prefixed = createHttpBackendReader({ baseUrl: `${s.url}/api/v1`, collectionPath: '/{collection}' });
    await prefixed.find({ db: 'ignored', collection: 'my coll', page: 1, pagesize: 5 }, {});
    expect(seen[0]).toBe('/api/v1/my%20coll?page=1&pagesize=5');
    await prefixed.close();
    await s.close();
  });

  it('reads the HAL representation too', async () => {
    const s = await server((_req, res) => res.writeHead(200).end(JSON.stringify({ _embedded: { 'rh:doc': [{ a: 1 }] }, _returned: 1 })));
    const reader = createHttpBackendReader({ baseUrl: s.url });
    expect(await reader.find({ db: 'd', collection: 'c', page: 1, pagesize: 1 }, {})).toEqual([{ a: 1 }]);
    await reader.close();
    await s.close();
  });
});

describe('failures map to BACKEND_UNAVAILABLE and BACKEND_ERROR', () => {
  it('connection refused → BACKEND_UNAVAILABLE', async () => {
    const s = await server(() => undefined);
    const url = s.url;
    await s.close();
    const reader = createHttpBackendReader({ baseUrl: url });
    const err = await failure(reader.find({ db: 'd', collection: 'c', page: 1, pagesize: 1 }, {}));
    expect(err.code).toBe('BACKEND_UNAVAILABLE');
    expect(err.message).toBe('the backend could not be reached to read d/c; try again later');
    await reader.close();
  });

  it('a connection reset mid-answer → BACKEND_UNAVAILABLE', async () => {
    const s = await server((req) => req.socket.destroy());
    const reader = createHttpBackendReader({ baseUrl: s.url });
    expect((await failure(reader.find({ db: 'd', collection: 'c', page: 1, pagesize: 1 }, {}))).code).toBe('BACKEND_UNAVAILABLE');
    await reader.close();
    await s.close();
  });

  it('non-2xx → BACKEND_ERROR naming the status, never the body', async () => {
    const s = await server((_req, res) => res.writeHead(403, { 'content-type': 'application/json' }).end('{"message":"internal detail"}'));
    const reader = createHttpBackendReader({ baseUrl: s.url });
    const err = await failure(reader.find({ db: 'd', collection: 'c', page: 1, pagesize: 1 }, {}));
    expect(err.code).toBe('BACKEND_ERROR');
    expect(err.message).toBe('the backend answered 403 Forbidden to a read of d/c');
    await reader.close();
    await s.close();
  });

  it('a body that is not JSON, not an array, or too large → BACKEND_ERROR', async () => {
    const bodies = ['<html>', '{"a":1}', JSON.stringify([{ pad: 'x'.repeat(2000) }])];
    let i = 0;
    const s = await server((_req, res) => res.writeHead(200).end(bodies[i++]));
    const reader = createHttpBackendReader({ baseUrl: s.url, maxResponseBytes: 1000 });
    for (const expected of [/not JSON/, /not an array of documents/, /more than 1000 bytes/]) {
      const err = await failure(reader.find({ db: 'd', collection: 'c', page: 1, pagesize: 1 }, {}));
      expect(err.code).toBe('BACKEND_ERROR');
      expect(err.message).toMatch(expected);
    }
    await reader.close();
    await s.close();
  });

  it('an aborted signal rejects with the abort, not a backend error', async () => {
    const s = await server(() => undefined);
    const reader = createHttpBackendReader({ baseUrl: s.url });
    const controller = new AbortController();
    const p = reader.find({ db: 'd', collection: 'c', page: 1, pagesize: 1 }, { signal: controller.signal });
    controller.abort();
    await expect(p).rejects.not.toBeInstanceOf(OutriggerError);
    await reader.close();
    await s.close();
  });
});

it('encodeQueryComponent keeps : , $ @ / readable and escapes the rest', () => {
  expect(encodeQueryComponent('{"$in":[1,2],"a b":"x&y=z+"}')).toBe('%7B%22$in%22:%5B1,2%5D,%22a%20b%22:%22x%26y%3Dz%2B%22%7D');
  expect(decodeURIComponent(encodeQueryComponent('{"$in":[1,2]}'))).toBe('{"$in":[1,2]}');
  for (const s of ['{"$in":[1,2],"a b":"x&y=z+"}', "città ✓ 😀 \u0000 ~*()'!", JSON.stringify({ _id: { $oid: '65a000000000000000000001' } })]) {
    expect(encodedQueryLength(s)).toBe(encodeQueryComponent(s).length);
  }
  // The ASCII table (issue 39) writes what encodeURIComponent with : , $ @ / put back writes.
  const reference = (s: string) => encodeURIComponent(s).replace(/%(3A|2C|24|40|2F)/g, (m) => decodeURIComponent(m));
  const ascii = Array.from({ length: 128 }, (_, c) => String.fromCharCode(c)).join('');
  for (const s of [ascii, `${ascii}é`, '', 'plain', '%41', ' ', 'a\u007f']) expect(encodeQueryComponent(s)).toBe(reference(s));
});
