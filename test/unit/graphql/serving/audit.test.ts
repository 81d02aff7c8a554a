/**
 * graphql-http's GraphQL-over-HTTP server audit, run against a real node:http server wrapping
 * handleGraphqlHttp: 61/61 with the default `graphql-over-http` profile. RESTHeart clients keep
 * RESTHeart's answers when they ask for application/graphql-response+json (the media type
 * RESTHeart answers with), and every answer with the `restheart` profile.
 */
import { auditServer } from 'graphql-http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileApp } from '../../../../src/graphql/compile/compile-app.js';
import { serveApp, startEngine, type Engine } from '../helpers.js';

const appDoc = {
  descriptor: { uri: 'app' },
  schema: 'type Item { name: String } type Query { items: [Item] }',
  mappings: { Query: { items: { collection: 'items' } } },
};

let e: Engine;
let server: { url: string; close(): Promise<void> };
let restheart: { url: string; close(): Promise<void> };
beforeAll(async () => {
  e = await startEngine({ restheart: { items: [{ _id: 1, name: 'a' }] } }, appDoc);
  server = await serveApp(e.app);
  restheart = await serveApp(compileApp(appDoc as any, { reader: e.reader, httpProfile: 'restheart' }));
});
afterAll(async () => {
  await server.close();
  await restheart.close();
  await e.close();
});

it('passes every item of the GraphQL-over-HTTP server audit, SHOULDs included', async () => {
  const results = await auditServer({ url: server.url, fetchFn: fetch });
  const failures = results.filter((r) => r.status !== 'ok');
  console.log(`graphql-http audit: ${results.length - failures.length}/${results.length} ok`);
  expect(failures.map((r) => `${r.status} ${r.id} ${r.name}: ${'reason' in r ? r.reason : ''}`)).toEqual([]);
  expect(results).toHaveLength(61);
});

const post = (url: string, body: string, accept?: string) => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...(accept ? { accept } : {}) }, body });

describe('what RESTHeart clients see', () => {
  it('application/graphql-response+json: 400 for syntax and validation errors, as RESTHeart', async () => {
    for (const accept of ['application/graphql-response+json', 'application/graphql-response+json, application/json']) {
      const r = await post(server.url, JSON.stringify({ query: '{ items { nope } }' }), accept);
      expect(r.status).toBe(400);
      expect(r.headers.get('content-type')).toBe('application/graphql-response+json; charset=utf-8');
      expect((await r.json()).errors[0].extensions.code).toBe('GRAPHQL_VALIDATION_FAILED');
    }
  });
  it('application/json or no Accept: 200 with the same errors (GraphQL-over-HTTP legacy rule), data answers alike', async () => {
    const r = await post(server.url, JSON.stringify({ query: '{ items {' }));
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('application/json; charset=utf-8');
    const body = await r.json();
    expect(body.errors[0].extensions.code).toBe('GRAPHQL_PARSE_FAILED');
    expect(body.data).toBeUndefined();
    const ok = await post(server.url, JSON.stringify({ query: '{ items { name } }' }), '*/*');
    expect(await ok.json()).toEqual({ data: { items: [{ name: 'a' }] } });
  });
  it("the restheart profile answers RESTHeart's media type and 400 whatever the Accept", async () => {
    for (const accept of [undefined, '*/*', 'application/json']) {
      const r = await post(restheart.url, JSON.stringify({ query: '{ items { nope } }' }), accept);
      expect(r.status).toBe(400);
      expect(r.headers.get('content-type')).toBe(accept === 'application/json' ? 'application/json; charset=utf-8' : 'application/graphql-response+json; charset=utf-8');
    }
    const bad = await post(restheart.url, JSON.stringify({ query: '{ items(x: $v) { name } }' }));
    expect((await bad.json()).errors.every((x: any) => typeof x.extensions.code === 'string')).toBe(true);
  });
});
