import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawRequest, startHttpServer, type TestServer } from '../../support/peers/http-servers.js';
import { rawClient, readUntilClosed } from '../support.js';
import { basic, startTestOutrigger, staticUsers, type RawConfig } from '../../support/outrigger.js';
import { startTestRedis, type TestRedis } from '../../support/redis/redis.js';

/**
 * Issue 25 item 1, "two layers, two paths": every decision (route table, backend-token guard,
 * MCP sign-in challenge, ACL) must be taken on the path the backend will read, not on the raw
 * bytes. Each row sends a path in one disguise and checks that it is decided as the plain path:
 * an own route answers it as for the plain path, a guard stops it before the upstream, and a
 * disguise that changes segment boundaries (an encoded `/`, `;` parameters before the last
 * segment) is refused with 400.
 */
type Disguise = { name: string; apply(path: string): string };

/** The character at `at`, percent-encoded (lower- or upper-case hex). */
function encodeAt(path: string, at: number, upper = false): string {
  const hex = path.charCodeAt(at).toString(16);
  return `${path.slice(0, at)}%${upper ? hex.toUpperCase() : hex}${path.slice(at + 1)}`;
}
const lastSegment = (path: string) => path.lastIndexOf('/') + 1;

const DISGUISES: Disguise[] = [
  { name: 'an encoded letter', apply: (p) => encodeAt(p, lastSegment(p)) },
  // Upper-case hex for the first character, lower-case for the second: /%6B%65ys, /%5F%6detrics, /%6D%63p.
  { name: 'mixed-case hex', apply: (p) => encodeAt(p.length > lastSegment(p) + 1 ? encodeAt(p, lastSegment(p) + 1) : p, lastSegment(p), true) },
  { name: '`;x` parameters', apply: (p) => `${p};x=1` },
  { name: 'a trailing /', apply: (p) => `${p}/` },
  { name: 'a repeated /', apply: (p) => `${p.slice(0, lastSegment(p))}/${p.slice(lastSegment(p))}` },
  { name: 'an encoded letter and a repeated /', apply: (p) => `/${encodeAt(p, lastSegment(p))}` },
];

/** Disguises that change segment boundaries: 400, never decided or forwarded. */
const BOUNDARY_CHANGES: Disguise[] = [
  { name: 'an encoded / (%2F)', apply: (p) => `${p}%2Fx` },
  { name: 'an encoded / (%2f) between segments', apply: (p) => (lastSegment(p) > 1 ? `${p.slice(0, lastSegment(p) - 1)}%2f${p.slice(lastSegment(p))}` : `/%2f${p.slice(1)}`) },
  { name: 'an encoded \\ (%5c)', apply: (p) => `${p}%5cx` },
  { name: '`;` parameters before the last segment', apply: (p) => `${p};x/y` },
  { name: 'an invalid percent-encoding', apply: (p) => `${p}%zz` },
];

const ROOT = basic('root', 'root-password');
const ALICE = basic('alice', 'alice-password');

interface Upstream extends TestServer {
  reached: Array<{ url: string; authorization: string | undefined }>;
}

async function startUpstream(): Promise<Upstream> {
  const reached: Upstream['reached'] = [];
  const server = await startHttpServer((req, res) => {
    reached.push({ url: req.url!, authorization: req.headers.authorization });
    res.writeHead(200, { 'content-type': 'application/json', 'x-upstream': 'yes' });
    res.end(req.url?.startsWith('/token') ? '{"access_token":"backend-jwt"}' : '[]');
  });
  return Object.assign(server, { reached });
}

async function put(base: string, path: string, doc: unknown): Promise<void> {
  const res = await fetch(`${base}${path}`, { method: 'PUT', headers: { authorization: ROOT, 'content-type': 'application/json' }, body: JSON.stringify(doc) });
  if (res.status >= 300) throw new Error(`PUT ${path}: ${res.status} ${await res.text()}`);
}

async function issueKey(base: string): Promise<string> {
  const res = await fetch(`${base}/keys`, { method: 'POST', headers: { authorization: ALICE, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'canonical', roles: ['reader'] }) });
  const body = (await res.json()) as { key?: string };
  if (res.status !== 201 || !body.key) throw new Error(`no key: ${res.status} ${JSON.stringify(body)}`);
  return `Bearer ${body.key}`;
}

const KEY_PERMISSION = { predicate: 'path-prefix(/keys)', roles: ['user'], priority: 10, apiKeys: { roles: ['reader'] } };

let redis: TestRedis;
let users: RawConfig;
beforeAll(async () => {
  redis = await startTestRedis();
  users = await staticUsers({ root: ['root'], alice: ['user'], bob: ['filtered'] });
});
afterAll(async () => {
  await redis?.close();
});

describe('own routes and the ACL decide on the canonical path (acl.mode enforce, default routes)', () => {
  let upstream: Upstream;
  let proxy: Awaited<ReturnType<typeof startTestOutrigger>>;
  let key: string;

  beforeAll(async () => {
    upstream = await startUpstream();
    proxy = await startTestOutrigger({ service: { id: 'canonical-a' }, upstream: { url: upstream.url }, redis: { url: redis.url }, users, acl: { mode: 'enforce' } });
    await put(proxy.url, '/_admin/acl/keys', KEY_PERMISSION);
    // alice may go anywhere but /secret: the ACL must see /secret in every disguise.
    await put(proxy.url, '/_admin/acl/all-but-secret', { predicate: "not path-prefix('/secret')", roles: ['user', 'reader'], priority: 1 });
    // bob reads /shop/orders through a readFilter: counts, metadata and aggregations are refused.
    await put(proxy.url, '/_admin/acl/filtered', { predicate: "path-prefix('/shop/orders')", roles: ['filtered'], mongo: { readFilter: { owner: '@user.id' } } });
    await put(proxy.url, '/gql-apps/shop', {
      descriptor: { name: 'shop', uri: 'shop' },
      schema: 'type Order { number: Int } type Query { orders(limit: Int): [Order] }',
      mappings: { Query: { orders: { db: 'shop', collection: 'orders', limit: { $arg: 'limit' } } } },
    });
    key = await issueKey(proxy.url);
  }, 30_000);
  afterAll(async () => {
    await proxy?.stop();
    await upstream?.close();
  });

  /** Own routes, each read with GET by someone allowed to (none of these GETs reaches the upstream). */
  const OWN: Array<[string, () => string]> = [
    ['/keys', () => ALICE],
    ['/gql-apps', () => ROOT],
    ['/gql-apps/shop', () => ROOT],
    ['/graphql/shop', () => ROOT],
    ['/_admin/acl', () => ROOT],
    ['/_admin/acl/keys', () => ROOT],
    ['/_health/live', () => ''],
    ['/_metrics', () => ''],
    ['/token', () => key],
    ['/register', () => ''],
    ['/.well-known/oauth-authorization-server', () => ''],
  ];

  async function get(path: string, authorization: string) {
    return rawRequest(proxy.url, path, { headers: authorization ? { authorization } : {} });
  }

  for (const [plain, auth] of OWN)
    for (const disguise of DISGUISES)
      it(`${plain} with ${disguise.name} is answered by Outrigger as the plain path`, async () => {
        const path = disguise.apply(plain);
        const before = upstream.reached.length;
        // A trailing / is kept (the backend reads it too): compare with the plain path plus /.
        const expected = await get(disguise.name === 'a trailing /' ? `${plain}/` : plain, auth());
        const res = await get(path, auth());
        expect(upstream.reached.slice(before)).toEqual([]);
        expect(res.headers['x-upstream']).toBeUndefined();
        expect({ path, status: res.status }).toEqual({ path, status: expected.status });
      });

  for (const [plain, auth] of OWN)
    for (const disguise of BOUNDARY_CHANGES)
      it(`${plain} with ${disguise.name} is refused with 400`, async () => {
        const before = upstream.reached.length;
        const res = await get(disguise.apply(plain), auth());
        expect(res.status).toBe(400);
        expect(JSON.parse(res.body)).toMatchObject({ 'http status code': 400, message: expect.any(String) });
        expect(upstream.reached.slice(before)).toEqual([]);
      });

  it('/graphql/<uri> with an encoded letter in the uri serves the same app', async () => {
    const query = `?query=${encodeURIComponent('{ orders(limit: 1) { number } }')}`;
    const plain = await get(`/graphql/shop${query}`, ROOT);
    const encoded = await get(`/graphql/%73h%6Fp${query}`, ROOT);
    expect(plain.status).toBe(200);
    expect(encoded.status).toBe(200);
    expect(JSON.parse(encoded.body)).toEqual(JSON.parse(plain.body));
  });

  it.each(['/secret', '/secret/ok', ...DISGUISES.map((d) => d.apply('/secret')), ...DISGUISES.map((d) => d.apply('/secret/ok'))])(
    'an ACL that keeps alice out of /secret stops %s before the upstream',
    async (path) => {
      const before = upstream.reached.length;
      const res = await get(path, ALICE);
      expect(res.status).toBe(403);
      expect(upstream.reached.slice(before)).toEqual([]);
    },
  );

  it.each(['/shop/orders/_size', '/shop/orders/%5Fsize', '/shop/orders/%5fmeta', '/shop/orders/_size;x=1', '/shop//orders/%5Fsize', '/shop/orders//_size/'])(
    'a readFilter is not walked around by %s (refused, never forwarded)',
    async (path) => {
      const before = upstream.reached.length;
      const res = await get(path, basic('bob', 'bob-password'));
      expect(res.status).toBe(403);
      expect(upstream.reached.slice(before)).toEqual([]);
    },
  );

  it('a filtered read of a document in disguise still carries the filter', async () => {
    const res = await get('/shop/%6Frders/o1', basic('bob', 'bob-password'));
    expect(res.status).toBe(200);
    expect(upstream.reached.at(-1)!.url).toBe(`/shop/%6Frders/o1?filter=${encodeURIComponent('{"owner":"bob"}')}`);
  });

  it('the ACL still lets alice through to a plain path it allows, forwarded as received', async () => {
    const res = await get('/shop/%6Frders;v=1', ALICE);
    expect(res.status).toBe(200);
    expect(upstream.reached.at(-1)!.url).toBe('/shop/%6Frders;v=1');
  });
});

describe("the backend-token guard and the MCP challenge decide on the canonical path (acl.mode own-routes, Outrigger's token endpoint moved)", () => {
  let upstream: Upstream;
  let proxy: Awaited<ReturnType<typeof startTestOutrigger>>;
  let key: string;

  beforeAll(async () => {
    upstream = await startUpstream();
    proxy = await startTestOutrigger({
      service: { id: 'canonical-b' },
      upstream: { url: upstream.url },
      redis: { url: redis.url },
      users,
      acl: { mode: 'own-routes' },
      routes: { oauth: { token: '/oauth/token' } },
    });
    await put(proxy.url, '/_admin/acl/keys', KEY_PERMISSION);
    key = await issueKey(proxy.url);
  }, 30_000);
  afterAll(async () => {
    await proxy?.stop();
    await upstream?.close();
  });

  const TOKEN_PATHS = ['/token', '/token/cookie', ...DISGUISES.map((d) => d.apply('/token')), ...DISGUISES.map((d) => d.apply('/token/cookie'))];
  it.each(TOKEN_PATHS)('an API key is never forwarded to the backend token endpoint at %s', async (path) => {
    const before = upstream.reached.length;
    const res = await rawRequest(proxy.url, path, { headers: { authorization: key } });
    expect(res.status).toBe(403);
    expect(res.body).not.toContain('backend-jwt');
    expect(upstream.reached.slice(before)).toEqual([]);
  });

  it.each(BOUNDARY_CHANGES.map((d) => d.apply('/token')))('an API key at %s is refused with 400', async (path) => {
    const before = upstream.reached.length;
    const res = await rawRequest(proxy.url, path, { headers: { authorization: key } });
    expect(res.status).toBe(400);
    expect(upstream.reached.slice(before)).toEqual([]);
  });

  // Absolute form: Undertow reads `POST http://host/token` as `/token`.
  it.each([
    ['an API key', 'http://127.0.0.1/token', () => key],
    ['a foreign bearer token', 'http://127.0.0.1/mcp', () => 'Bearer someone-elses-token'],
    ['a foreign bearer token', '*', () => 'Bearer someone-elses-token'],
  ])('%s at the absolute-form target %s is refused with 400', async (_, target, auth) => {
    const before = upstream.reached.length;
    const socket = await rawClient(proxy.url, `POST ${target} HTTP/1.1\r\nHost: x\r\nAuthorization: ${auth()}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`);
    const { text } = await readUntilClosed(socket, 5000);
    expect(text.split('\r\n')[0]).toBe('HTTP/1.1 400 Bad Request');
    expect(upstream.reached.slice(before)).toEqual([]);
  });

  it('the key still reaches other backend paths', async () => {
    const res = await rawRequest(proxy.url, '/tokens', { headers: { authorization: key } });
    expect(res.status).toBe(200);
    expect(upstream.reached.at(-1)!.url).toBe('/tokens');
  });

  const MCP_PATHS = ['/mcp', '/mcp/ok', ...DISGUISES.map((d) => d.apply('/mcp')), ...DISGUISES.map((d) => d.apply('/mcp/ok'))];
  it.each(MCP_PATHS)('a foreign bearer token at %s meets the sign-in challenge, never the backend', async (path) => {
    const before = upstream.reached.length;
    const res = await rawRequest(proxy.url, path, { method: 'POST', headers: { authorization: 'Bearer someone-elses-token' } });
    expect(res.status).toBe(401);
    expect(String(res.headers['www-authenticate'])).toMatch(/^Bearer resource_metadata=/);
    expect(upstream.reached.slice(before)).toEqual([]);
  });

  it.each(BOUNDARY_CHANGES.map((d) => d.apply('/mcp')))('a foreign bearer token at %s is refused with 400', async (path) => {
    const before = upstream.reached.length;
    const res = await rawRequest(proxy.url, path, { method: 'POST', headers: { authorization: 'Bearer someone-elses-token' } });
    expect(res.status).toBe(400);
    expect(upstream.reached.slice(before)).toEqual([]);
  });
});
