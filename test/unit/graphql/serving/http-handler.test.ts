/**
 * GraphQL over HTTP: every status code of SPEC §6.3, content negotiation, masking — through a real
 * node:http server wrapping handleGraphqlHttp, over the stand-in backend (or failing backends).
 */
import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpBackendReader } from '../../../../src/graphql/backend/http-reader.js';
import { compileApp, type CompiledApp } from '../../../../src/graphql/compile/compile-app.js';
import { executeGraphql } from '../../../../src/graphql/serve/execute.js';
import { negotiate } from '../../../../src/graphql/serve/http-handler.js';
import type { BackendReader } from '../../../../src/graphql/types.js';
import { validateAppDocument } from '../../../../src/graphql/document/validate-app.js';
import { waitFor } from '../../../support/wait.js';
import { serveApp, startEngine, type Engine } from '../helpers.js';

const appDoc = {
  descriptor: { uri: 'app' },
  schema: `
    type Item { id: Int, name: String, parent: Item, children: [Item] }
    type Query { items(limit: Int): [Item], item(id: Int!): Item, count: Item }
  `,
  mappings: {
    Query: { items: { collection: 'items', limit: { $arg: ['limit', 100] } }, item: { collection: 'items', find: { _id: { $arg: 'id' } } } },
    Item: {
      id: '_id',
      parent: { collection: 'items', find: { _id: { $fk: 'parentId' } } },
      children: { collection: 'items', find: { parentId: { $fk: '_id' } } },
    },
  },
};

function compiled(reader: BackendReader, extra: Record<string, unknown> = {}, doc: Record<string, unknown> = appDoc): CompiledApp {
  const v = validateAppDocument(doc, { defaultDb: 'restheart', maxLimit: 1000 });
  if (!v.ok) throw new Error(v.problems.join('; '));
  return compileApp(v.app, { reader, ...extra });
}

let e: Engine;
let server: { url: string; close(): Promise<void> };
beforeAll(async () => {
  e = await startEngine({ restheart: { items: Array.from({ length: 20 }, (_, i) => ({ _id: i, name: `item${i}`, parentId: i === 0 ? null : i - 1 })) } }, appDoc, { maxDepth: 5, maxBackendReads: 4 });
  server = await serveApp(e.app, (req) => ({ backendHeaders: { authorization: `Bearer for-${req.headers['x-user'] ?? 'anon'}` } }));
});
afterAll(async () => {
  await server.close();
  await e.close();
});

async function post(body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(server.url, {
    method: 'POST',
    // RESTHeart's media type, so RESTHeart's status codes (audit.test.ts covers application/json).
    headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as any };
}

describe('200', () => {
  it('answers a query with data, as application/graphql-response+json when asked', async () => {
    const r = await post({ query: '{ item(id: 3) { name parent { name } } }' });
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('application/graphql-response+json; charset=utf-8');
    expect(r.body).toEqual({ data: { item: { name: 'item3', parent: { name: 'item2' } } } });
  });

  it('accepts application/graphql bodies and GET queries with variables', async () => {
    const a = await fetch(server.url, { method: 'POST', headers: { 'content-type': 'application/graphql' }, body: '{ item(id: 1) { name } }' });
    expect(await a.json()).toEqual({ data: { item: { name: 'item1' } } });
    const url = new URL(server.url);
    url.searchParams.set('query', 'query($id: Int!) { item(id: $id) { name } }');
    url.searchParams.set('variables', JSON.stringify({ id: 2 }));
    const b = await fetch(url);
    expect(b.status).toBe(200);
    expect(await b.json()).toEqual({ data: { item: { name: 'item2' } } });
  });

  it('selects the operation by operationName', async () => {
    const r = await post({ query: 'query A { item(id: 1) { name } } query B { item(id: 2) { name } }', operationName: 'B' });
    expect(r.body).toEqual({ data: { item: { name: 'item2' } } });
  });

  it('sends the identity headers the server put in the context to the backend', async () => {
    e.backend.clearRequests();
    await post({ query: '{ item(id: 1) { name } }' }, { 'x-user': 'alice' });
    expect(e.backend.requests[0]!.headers.authorization).toBe('Bearer for-alice');
  });
});

describe('automatic persisted queries without a store (the engine alone)', () => {
  it("a hash alone answers PersistedQueryNotSupported (Apollo's link then sends texts); a text with its hash runs", async () => {
    const query = '{ item(id: 1) { name } }';
    const sha256Hash = createHash('sha256').update(query).digest('hex');
    const alone = await post({ extensions: { persistedQuery: { version: 1, sha256Hash } } });
    expect(alone.status).toBe(200);
    expect(alone.body).toEqual({ errors: [{ message: 'PersistedQueryNotSupported', extensions: { code: 'PERSISTED_QUERY_NOT_SUPPORTED' } }] });
    const withText = await post({ query, extensions: { persistedQuery: { version: 1, sha256Hash } } });
    expect(withText.body).toEqual({ data: { item: { name: 'item1' } } });
    const mismatch = await post({ query, extensions: { persistedQuery: { version: 1, sha256Hash: sha256Hash.replace(/^./, (c) => (c === '0' ? '1' : '0')) } } });
    expect(mismatch.status).toBe(400);
    expect(mismatch.body.errors[0].extensions.code).toBe('PERSISTED_QUERY_HASH_MISMATCH');
  });
});

describe('content negotiation', () => {
  it('answers application/json when the client prefers it, 406 when Accept admits neither', async () => {
    expect((await post({ query: '{ count { id } }' }, { accept: 'application/json' })).headers.get('content-type')).toBe('application/json; charset=utf-8');
    const r = await post({ query: '{ count { id } }' }, { accept: 'text/html' });
    expect(r.status).toBe(406);
    expect(r.body.errors[0].extensions.code).toBe('NOT_ACCEPTABLE');
  });

  it('follows q-values and specificity', () => {
    expect(negotiate(undefined)).toBe('application/json');
    expect(negotiate('*/*')).toBe('application/json');
    expect(negotiate(undefined, 'restheart')).toBe('application/graphql-response+json');
    expect(negotiate('*/*', 'restheart')).toBe('application/graphql-response+json');
    expect(negotiate('application/graphql-response+json, application/json')).toBe('application/graphql-response+json');
    expect(negotiate('application/json, application/graphql-response+json')).toBe('application/graphql-response+json');
    expect(negotiate('application/graphql-response+json, application/json;q=0.9')).toBe('application/graphql-response+json');
    expect(negotiate('application/json, application/graphql-response+json;q=0.5')).toBe('application/json');
    expect(negotiate('application/*;q=0.2, application/json')).toBe('application/json');
    expect(negotiate('text/html, */*;q=0.1')).toBe('application/json');
    expect(negotiate('application/json;q=0, text/html')).toBeUndefined();
  });
});

describe('400', () => {
  it.each([
    ['unparseable JSON', '{"query": '],
    ['a JSON array (batching)', [{ query: '{ count { id } }' }]],
    ['a missing query', { variables: {} }],
    ['a query that is not a string', { query: 5 }],
    ['variables that are not an object', { query: '{ count { id } }', variables: [1] }],
    ['an operationName that is not a string', { query: '{ count { id } }', operationName: 1 }],
  ])('for %s', async (_name, body) => {
    const r = await post(body);
    expect(r.status).toBe(400);
    expect(r.body.errors[0].message).toBeTypeOf('string');
    expect(r.body.data).toBeUndefined();
  });

  it('for an empty body', async () => {
    const res = await fetch(server.url, { method: 'POST', headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(400);
  });

  it('for syntax and validation errors, without data', async () => {
    const syntax = await post({ query: '{ items { ' });
    expect(syntax.status).toBe(400);
    expect(syntax.body.errors[0].message).toMatch(/^Syntax Error/);
    expect(syntax.body).not.toHaveProperty('data');
    const invalid = await post({ query: '{ items { nope } }' });
    expect(invalid.status).toBe(400);
    expect(invalid.body.errors[0].message).toContain('Cannot query field "nope"');
    expect(invalid.body).not.toHaveProperty('data');
  });

  it('for variable coercion failures and unknown or ambiguous operations', async () => {
    expect((await post({ query: 'query($id: Int!) { item(id: $id) { name } }', variables: { id: 'x' } })).status).toBe(400);
    expect((await post({ query: '{ count { id } }', operationName: 'Nope' })).status).toBe(400);
    const both = await post({ query: 'query A { count { id } } query B { count { id } }' });
    expect(both.status).toBe(400);
    expect(both.body.errors[0].extensions.code).toBe('OPERATION_NOT_FOUND');
  });

  it('for a query deeper than maxDepth (introspection is not counted)', async () => {
    const r = await post({ query: '{ items { parent { parent { parent { parent { parent { id } } } } } } }' });
    expect(r.status).toBe(400);
    expect(r.body.errors[0]).toMatchObject({ extensions: { code: 'DEPTH_LIMIT_EXCEEDED' } });
    const viaFragments = await post({ query: 'fragment F on Item { parent { parent { parent { id } } } } { items { parent { ...F } } }' });
    expect(viaFragments.status).toBe(400);
    const introspection = await post({
      query: '{ __schema { types { name fields { type { ofType { ofType { ofType { ofType { ofType { name } } } } } } } } } }',
    });
    expect(introspection.status).toBe(200);
  });

  it('for a request needing more than maxBackendReads, before reading further', async () => {
    e.backend.clearRequests();
    const r = await post({ query: '{ a: items(limit: 1) { id } b: items(limit: 2) { id } c: items(limit: 3) { id } d: items(limit: 4) { id } e: items(limit: 5) { id } }' });
    expect(r.status).toBe(400);
    expect(r.body.errors[0].extensions.code).toBe('TOO_MANY_BACKEND_READS');
    expect(r.body).not.toHaveProperty('data');
    expect(e.backend.requests.length).toBeLessThanOrEqual(4);
    // Joins stay within budget: three levels of nesting over 20 items cost 3 reads.
    expect((await post({ query: '{ items { children { children { id } } } }' })).status).toBe(200);
  });
});

describe('405, 413, 415', () => {
  it('405 with Allow for other methods, and for a mutation over GET', async () => {
    const put = await fetch(server.url, { method: 'PUT' });
    expect(put.status).toBe(405);
    expect(put.headers.get('allow')).toBe('GET, POST');
    const url = new URL(server.url);
    url.searchParams.set('query', 'mutation { x }');
    const get = await fetch(url);
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST');
  });

  it('413 for a query over 100 KiB, and for a body over 1 MiB', async () => {
    const big = await post({ query: `{ count { id } } # ${'x'.repeat(100 * 1024)}` });
    expect(big.status).toBe(413);
    const huge = await post({ query: '{ count { id } }', variables: { pad: 'x'.repeat(1024 * 1024) } });
    expect(huge.status).toBe(413);
  });

  it('415 for a missing or unsupported content type or charset', async () => {
    expect((await fetch(server.url, { method: 'POST', body: new Uint8Array(Buffer.from('{"query":"{ count { id } }"}')) })).status).toBe(415);
    expect((await post('{"query":"{ count { id } }"}', { 'content-type': 'text/plain' })).status).toBe(415);
    expect((await post('{"query":"{ count { id } }"}', { 'content-type': 'application/json; charset=latin1' })).status).toBe(415);
    expect((await post('{"query":"{ count { id } }"}', { 'content-type': 'application/json; charset=UTF-8' })).status).toBe(200);
  });
});

describe('introspection', () => {
  it('is on by default and can be turned off by the app', async () => {
    expect((await post({ query: '{ __schema { queryType { name } } }' })).body.data.__schema.queryType.name).toBe('Query');
    const off = compiled(e.reader, {}, { ...appDoc, descriptor: { uri: 'app', introspection: false } });
    const r = await executeGraphql(off, { query: '{ __schema { queryType { name } } }' }, {});
    expect(r.status).toBe(400);
    expect((await executeGraphql(off, { query: '{ __typename }' }, {})).status).toBe(200);
  });

  it('caches parsed and validated documents per app', () => {
    const a = e.app.prepare('{ count { id } }');
    expect(e.app.prepare('{ count { id } }')).toBe(a);
  });
});

describe('backend failures: field errors with extensions.code, 502 when no data is left', () => {
  let down: CompiledApp;
  let failing: { url: string; close(): Promise<void> };
  let failingApp: CompiledApp;
  beforeAll(async () => {
    // A port nobody listens on: connection refused.
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const { port } = probe.address() as AddressInfo;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    down = compiled(createHttpBackendReader({ baseUrl: `http://127.0.0.1:${port}` }));
    // A backend answering 500 for items with a long stack trace in its body.
    const srv = createServer((req, res) => {
      if (req.url?.includes('/items')) res.writeHead(500, { 'content-type': 'application/json' }).end('{"exception":"java.lang.NullPointerException at org.secret.Internal"}');
      else res.writeHead(200, { 'content-type': 'application/json' }).end('[]');
    });
    await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
    failing = {
      url: `http://127.0.0.1:${(srv.address() as AddressInfo).port}`,
      close: () =>
        new Promise<void>((resolve) => {
          srv.closeAllConnections();
          srv.close(() => resolve());
        }),
    };
    failingApp = compiled(createHttpBackendReader({ baseUrl: failing.url }));
  });
  afterAll(() => failing.close());

  it('BACKEND_UNAVAILABLE → 502', async () => {
    const r = await executeGraphql(down, { query: '{ items { id } }' }, {});
    expect(r.status).toBe(502);
    expect(r.body.data).toEqual({ items: null });
    expect(r.body.errors?.[0]).toMatchObject({ path: ['items'], extensions: { code: 'BACKEND_UNAVAILABLE' } });
  });

  it('BACKEND_ERROR → 502, naming the backend status but no internals', async () => {
    const r = await executeGraphql(failingApp, { query: '{ items { id } }' }, {});
    expect(r.status).toBe(502);
    const text = JSON.stringify(r.body);
    expect(r.body.errors?.[0]?.extensions?.code).toBe('BACKEND_ERROR');
    expect(r.body.errors?.[0]?.message).toContain('500');
    expect(text).not.toMatch(/NullPointer|secret|stack/i);
  });

  it('partial data with errors stays 200', async () => {
    const r = await executeGraphql(failingApp, { query: '{ __typename items { id } }' }, {});
    expect(r.status).toBe(200);
    expect(r.body.data).toEqual({ __typename: 'Query', items: null });
  });
});

describe('timeouts and masking', () => {
  it('504 when the request takes longer than timeoutMs; pending reads are aborted', async () => {
    let received = 0;
    let aborted = 0;
    const slow = createServer((req, res) => {
      received++;
      req.on('close', () => {
        if (!res.writableEnded) aborted++;
      });
      // Never answers: only the timeout can end the request, so the 504 alone shows it fired.
      void res;
    });
    await new Promise<void>((resolve) => slow.listen(0, '127.0.0.1', resolve));
    const reader = createHttpBackendReader({ baseUrl: `http://127.0.0.1:${(slow.address() as AddressInfo).port}` });
    // 1 s rather than 100 ms: on a loaded machine a shorter deadline can pass before the read has
    // even reached the backend, and then there is no pending read to see aborted.
    const app = compiled(reader, { timeoutMs: 1000 });
    const r = await executeGraphql(app, { query: '{ items { id } }' }, {});
    expect(r.status).toBe(504);
    expect(r.body.errors?.[0]?.extensions?.code).toBe('TIMEOUT');
    await waitFor(
      () => aborted,
      (n) => n >= 1,
      10_000,
      'the backend to see its pending read aborted',
    );
    expect(aborted).toBe(1);
    expect(received).toBe(1);
    await reader.close();
    slow.closeAllConnections();
    await new Promise<void>((resolve) => slow.close(() => resolve()));
  });

  it('stops at once when the client has gone away (ctx.signal aborted)', async () => {
    const controller = new AbortController();
    controller.abort();
    e.backend.clearRequests();
    const r = await executeGraphql(e.app, { query: '{ items { id } }' }, { signal: controller.signal });
    expect(r.status).toBe(499);
    expect(e.backend.requests).toHaveLength(0);
  });

  it('masks unexpected errors and hands them to onError', async () => {
    const seen: unknown[] = [];
    const broken: BackendReader = {
      find: () => Promise.reject(new TypeError('cannot read x of undefined at /srv/outrigger/secret.js:12')),
    };
    const app = compiled(broken, { onError: (err: unknown) => seen.push(err) });
    const r = await executeGraphql(app, { query: '{ items { id } }' }, {});
    expect(r.status).toBe(200);
    expect(r.body.errors?.[0]).toMatchObject({ message: 'internal error while resolving this field', extensions: { code: 'INTERNAL_SERVER_ERROR' } });
    expect(JSON.stringify(r.body)).not.toContain('secret');
    expect(seen).toHaveLength(1);
  });
});
