/**
 * GraphQL apps served by a running Outrigger (SPEC §6.3), against the RESTHeart stand-in over
 * HTTP and a real Redis: every mapping form as the backend sees it, every status code, the
 * batched join's read count, and enabling/disabling without a restart.
 */
import { createServer as createHttpServer, request as httpRequest } from 'node:http';
import { createServer } from 'node:net';
import { beforeEach, describe, expect, it } from 'vitest';
import { basic, startTestOutrigger } from '../../support/outrigger.js';
import { call, collectionReads, filterOf, gql, oid, pollUntil, shopApp, shopData } from './graphql-helpers.js';
import { ROOT, useStack } from '../../support/fixtures.js';

const ALICE = basic('alice', 'alice-password');
const EVE = basic('eve', 'eve-password');
const data = shopData();
const orders = data.shop.orders;
const GRAPHQL_RESPONSE = /^application\/graphql-response\+json/;

/** A port nothing listens on. */
async function deadPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

describe('GraphQL apps served through Outrigger', () => {
  const stack = useStack({
    service: 'gql-serving',
    jwtIdentity: true,
    backend: { data },
    users: { root: ['root'], alice: ['user'], eve: ['guest'] },
    config: { acl: { mode: 'enforce' }, graphql: { maxDepth: 6, maxBackendReads: 20 } },
    permissions: {
      'users-graphql': { predicate: 'path-prefix(/graphql)', roles: ['user'], priority: 1 },
      'users-read-shop': { predicate: 'method(GET) and path-prefix(/shop)', roles: ['user'], priority: 1 },
    },
    apps: { shop: shopApp() },
  });

  beforeEach(() => stack.backend.clearRequests());

  const query = (q: string, variables?: Record<string, unknown>, auth = ALICE) => gql(stack.proxy.url, 'shop', q, { variables, auth });
  const numbers = (list: Array<{ number: number }>) => list.map((o) => o.number);
  /** The orders the stand-in holds, as a client would compute them. */
  const expectedOrders = (where: (o: (typeof orders)[number]) => boolean) => orders.filter(where).sort((a, b) => a.number - b.number);

  describe('mapping forms, as the backend sees them', () => {
    it('a root query mapping: $arg in find, sort, skip/limit to page/pagesize (skip a multiple of limit)', async () => {
      const res = await query('{ orders(status: OPEN, skip: 10, limit: 10) { number status } }');
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toMatch(GRAPHQL_RESPONSE);
      const open = expectedOrders((o) => o.status === 'open');
      expect(numbers(res.json.data.orders)).toEqual(numbers(open.slice(10, 20)));
      expect(res.json.data.orders.every((o: { status: string }) => o.status === 'OPEN')).toBe(true);
      const reads = collectionReads(stack.backend, 'orders');
      expect(reads).toHaveLength(1);
      expect(filterOf(reads[0]!)).toEqual({ status: 'open' });
      expect(JSON.parse(reads[0]!.query.get('sort')!)).toEqual({ number: 1 });
      expect([reads[0]!.query.get('page'), reads[0]!.query.get('pagesize')]).toEqual(['2', '10']);
    });

    it('skip not a multiple of limit: one covering page, sliced', async () => {
      const res = await query('{ orders(skip: 5, limit: 10) { number } }');
      expect(numbers(res.json.data.orders)).toEqual(numbers(expectedOrders(() => true).slice(5, 15)));
      const [read] = collectionReads(stack.backend, 'orders');
      expect([read!.query.get('page'), read!.query.get('pagesize')]).toEqual(['1', '15']);
    });

    it('an omitted optional argument drops its filter entry, and no filter at all is sent rather than filter={}', async () => {
      const res = await query('{ orders { number } }');
      expect(res.json.data.orders).toHaveLength(100);
      const [read] = collectionReads(stack.backend, 'orders');
      expect(read!.query.has('filter')).toBe(false);
      expect(read!.query.get('pagesize')).toBe('100');
    });

    it('an $arg default ([name, default]) and a literal limit', async () => {
      const byDefault = await query('{ openOrders { status } }');
      expect(byDefault.json.data.openOrders).toEqual(Array(5).fill({ status: 'OPEN' }));
      const explicit = await query('{ openOrders(status: CLOSED) { status } }');
      expect(explicit.json.data.openOrders).toEqual(Array(5).fill({ status: 'CLOSED' }));
      expect(collectionReads(stack.backend, 'orders').map(filterOf)).toEqual([{ status: 'open' }, { status: 'closed' }]);
      expect(collectionReads(stack.backend, 'orders').map((r) => r.query.get('pagesize'))).toEqual(['5', '5']);
    });

    it('$arg dot paths into an input object; an omitted one under an operator is a field error naming it', async () => {
      const res = await query('query($r: Range!) { ordersInRange(range: $r) { total } }', { r: { min: 100, max: 130 } });
      expect(res.json.data.ordersInRange.map((o: { total: number }) => o.total)).toEqual([100, 110, 120, 130]);
      expect(filterOf(collectionReads(stack.backend, 'orders')[0]!)).toEqual({ total: { $gte: 100, $lte: 130 } });

      stack.backend.clearRequests();
      const missing = await query('{ ordersInRange(range: {min: 100}) { total } }');
      expect(missing.status).toBe(200);
      expect(missing.json.data.ordersInRange).toBeNull();
      expect(missing.json.errors[0].extensions.code).toBe('MISSING_ARGUMENT');
      expect(missing.json.errors[0].message).toMatch(/range\.max/);
      expect(collectionReads(stack.backend)).toHaveLength(0);
    });

    it('a non-list type answers the first result or null, reading a page of one', async () => {
      const res = await query('{ seven: order(number: 7) { number total } none: order(number: 9999) { number } }');
      expect(res.json.data).toEqual({ seven: { number: 7, total: 70 }, none: null });
      expect(collectionReads(stack.backend, 'orders').map((r) => r.query.get('pagesize'))).toEqual(['1', '1']);
    });

    it('string mappings: renames, nested dot paths and array indexes; enum values mapped both ways', async () => {
      const res = await query('{ users(limit: 2) { id name city firstTag } order(number: 2) { firstSku status } }');
      expect(res.json.data).toEqual({
        users: [
          { id: 'u1', name: 'User 1', city: 'Rome', firstTag: 't1' },
          { id: 'u10', name: 'User 10', city: 'Oslo', firstTag: 't10' },
        ],
        order: { firstSku: 'sku-2', status: 'CLOSED' },
      });
    });

    it('passes extended JSON ($oid, $date) through as the backend sent it', async () => {
      const res = await query('{ order(number: 3) { _id createdAt } }');
      expect(res.json.data.order).toEqual({ _id: oid(3), createdAt: { $date: Date.UTC(2024, 0, 3) } });
    });

    it('a sort direction from an argument', async () => {
      const res = await query('{ ordersSorted(dir: -1) { number } }');
      expect(numbers(res.json.data.ordersSorted)).toEqual([1003, 1002, 1001]);
      expect(JSON.parse(collectionReads(stack.backend, 'orders')[0]!.query.get('sort')!)).toEqual({ number: -1 });
    });

    it('argument values are literals: an object with a $-key is refused (400) before any read', async () => {
      // GraphQL literals cannot spell a $-key at all (a syntax error); variables can, and are refused.
      const literal = await query('{ search(filter: {status: {$ne: "open"}}) { number } }');
      expect(literal.status).toBe(400);
      const variables = await query('query($f: BsonDocument) { search(filter: $f) { number } }', { f: { status: { $ne: 'open' } } });
      expect(variables.status).toBe(400);
      expect(variables.json.errors[0].message).toMatch(/\$ne/);
      const deep = await query('query($f: BsonDocument) { search(filter: $f) { number } }', { f: { $and: [{ $where: 'sleep(1000)' }] } });
      expect(deep.status).toBe(400);
      expect(collectionReads(stack.backend)).toHaveLength(0);
      const plain = await query('query($f: BsonDocument) { search(filter: $f) { status } }', { f: { status: 'closed', 'items.qty': 2 } });
      expect(plain.status).toBe(200);
      expect(plain.json.data.search).toHaveLength(5);
      expect(filterOf(collectionReads(stack.backend, 'orders')[0]!)).toEqual({ $and: [{ status: 'closed', 'items.qty': 2 }] });
    });

    it('a 100-parent query with a $fk join costs exactly 2 backend reads ($in of the foreign values)', async () => {
      const res = await query('{ orders(limit: 100) { number user { id name } } }');
      expect(res.status).toBe(200);
      expect(res.json.data.orders).toHaveLength(100);
      for (const o of res.json.data.orders) expect(o.user).toEqual({ id: `u${o.number}`, name: `User ${o.number}` });
      const reads = collectionReads(stack.backend);
      expect(reads.map((r) => r.path)).toEqual(['/shop/orders', '/shop/users']);
      const userFilter = filterOf(reads[1]!) as { _id: { $in: string[] } };
      expect(userFilter._id.$in).toHaveLength(100);
      expect(new Set(userFilter._id.$in)).toEqual(new Set(Array.from({ length: 100 }, (_, i) => `u${i + 1}`)));
      expect(stack.proxy.context.metrics.graphqlBackendReads.get()).toBeGreaterThanOrEqual(2);
    });

    it("a $fk join applies each parent's sort, skip and limit, in one read for all parents", async () => {
      const res = await query('{ users(limit: 3) { id top: orders { total } next: orders(skip: 1, limit: 2) { total } open: orders(status: OPEN, limit: 10) { number } } }');
      expect(res.json.data.users).toEqual([
        { id: 'u1', top: [{ total: 10 }, { total: 3 }], next: [{ total: 3 }, { total: 2 }], open: [{ number: 1 }, { number: 1003 }, { number: 1002 }, { number: 1001 }] },
        { id: 'u10', top: [{ total: 100 }], next: [], open: [] },
        { id: 'u100', top: [{ total: 1000 }], next: [], open: [] },
      ]);
      // One read for the users; the joins of all 3 parents are batched per find: "top" and "next"
      // share theirs (status omitted), so one read serves both; "open" has its own.
      const reads = collectionReads(stack.backend);
      expect(reads.map((r) => r.path)).toEqual(['/shop/users', '/shop/orders', '/shop/orders']);
      expect(reads.slice(1).map(filterOf)).toEqual(expect.arrayContaining([{ userId: { $in: ['u1', 'u10', 'u100'] } }, { userId: { $in: ['u1', 'u10', 'u100'] }, status: 'open' }]));
    });

    it('a $fk join that is not an equality is one $or read, split back per parent', async () => {
      const res = await query('{ products { name cheaper { name } } }');
      expect(res.json.data.products).toEqual([
        { name: 'dinghy', cheaper: [{ name: 'canoe' }, { name: 'kayak' }] },
        { name: 'canoe', cheaper: [{ name: 'kayak' }] },
        { name: 'kayak', cheaper: [] },
        { name: 'oar', cheaper: [{ name: 'rope' }] },
        { name: 'rope', cheaper: [] },
      ]);
      const reads = collectionReads(stack.backend, 'products');
      expect(reads).toHaveLength(2);
      expect(Object.keys(filterOf(reads[1]!) as object)).toEqual(['$or']);
    });

    it('GET serves queries too (GraphQL over HTTP)', async () => {
      const res = await call(stack.proxy.url, `/graphql/shop?query=${encodeURIComponent('{ order(number: 4) { total } }')}`, { auth: ALICE });
      expect(res.status).toBe(200);
      expect(res.json).toEqual({ data: { order: { total: 40 } } });
    });

    it('application/graphql bodies, and application/json answers when that is what the client accepts', async () => {
      const res = await call(stack.proxy.url, '/graphql/shop', {
        method: 'POST',
        auth: ALICE,
        rawBody: '{ order(number: 5) { total } }',
        headers: { 'content-type': 'application/graphql', accept: 'application/json' },
      });
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(res.json).toEqual({ data: { order: { total: 50 } } });
    });
  });

  describe('status codes (SPEC §6.3)', () => {
    it('200 with partial data and errors when one field fails at the backend', async () => {
      const res = await query('{ order(number: 1) { number } refused { number } }');
      expect(res.status).toBe(200);
      expect(res.json.data).toEqual({ order: { number: 1 }, refused: null });
      expect(res.json.errors[0].path).toEqual(['refused']);
      expect(res.json.errors[0].extensions.code).toBe('BACKEND_ERROR');
      expect(res.json.errors[0].message).toMatch(/400/);
    });

    it('502 when data is null because of the backend (BACKEND_ERROR)', async () => {
      const res = await query('{ refused { number } }');
      expect(res.status).toBe(502);
      expect(res.json.data).toEqual({ refused: null });
      expect(res.json.errors[0].extensions.code).toBe('BACKEND_ERROR');
    });

    it('a client that leaves mid-query aborts its backend read, and the time limit answers 504 and aborts it too', async () => {
      // A backend that never answers a read: each read's connection closing is Outrigger giving it up.
      const held: Array<{ closed: boolean }> = [];
      const backend = createHttpServer((req) => {
        const read = { closed: false };
        held.push(read);
        req.socket.on('close', () => (read.closed = true));
      });
      await new Promise<void>((r) => backend.listen(0, '127.0.0.1', r));
      const backendUrl = `http://127.0.0.1:${(backend.address() as { port: number }).port}`;
      const slow = await startTestOutrigger({ ...stack.raw, graphql: { ...stack.raw.graphql, timeoutMs: 30_000, backend: { url: backendUrl } } });
      const quick = await startTestOutrigger({ ...stack.raw, graphql: { ...stack.raw.graphql, timeoutMs: 300, backend: { url: backendUrl } } });
      try {
        const body = JSON.stringify({ query: '{ order(number: 1) { number } }' });
        const client = httpRequest(`${slow.url}/graphql/shop`, { method: 'POST', headers: { authorization: ALICE, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } });
        client.on('error', () => undefined);
        client.end(body);
        await pollUntil(async () => held.length === 1);
        client.destroy();
        await pollUntil(async () => held[0]!.closed);

        const timedOut = await gql(quick.url, 'shop', '{ order(number: 1) { number } }', { auth: ALICE });
        expect(timedOut.status).toBe(504);
        expect(timedOut.json.errors[0].extensions.code).toBe('TIMEOUT');
        await pollUntil(async () => held.length === 2 && held[1]!.closed);
      } finally {
        await slow.stop();
        await quick.stop();
        backend.closeAllConnections();
        await new Promise<void>((r) => backend.close(() => r()));
      }
    });

    it('502 when the backend cannot be reached (BACKEND_UNAVAILABLE), from a replica whose backend is down', async () => {
      const down = await startTestOutrigger({ ...stack.raw, graphql: { ...stack.raw.graphql, backend: { url: `http://127.0.0.1:${await deadPort()}` } } });
      try {
        const res = await gql(down.url, 'shop', '{ order(number: 1) { number } }', { auth: ALICE });
        expect(res.status).toBe(502);
        expect(res.json.data).toEqual({ order: null });
        expect(res.json.errors[0].extensions.code).toBe('BACKEND_UNAVAILABLE');
        expect(res.text).not.toMatch(/ECONNREFUSED|127\.0\.0\.1/);
      } finally {
        await down.stop();
      }
    });

    it('400 for an unparseable body, a syntax error, a validation error', async () => {
      const unparseable = await call(stack.proxy.url, '/graphql/shop', {
        method: 'POST',
        auth: ALICE,
        rawBody: '{"query": ',
        headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json' },
      });
      expect(unparseable.status).toBe(400);
      expect(unparseable.json.errors[0].message).toMatch(/not valid JSON/);
      const syntax = await query('{ orders { number }');
      expect(syntax.status).toBe(400);
      expect(syntax.json.errors[0].message).toMatch(/Syntax Error/);
      expect(syntax.json.data).toBeUndefined();
      const validation = await query('{ orders { numbr } }');
      expect(validation.status).toBe(400);
      expect(validation.json.errors[0].message).toMatch(/Cannot query field "numbr".*Did you mean "number"/);
      expect(collectionReads(stack.backend)).toHaveLength(0);
    });

    it('400 for a query deeper than graphql.maxDepth (6 here)', async () => {
      const ok = await query('{ users(limit: 1) { orders { user { orders { user { id } } } } } }');
      expect(ok.status).toBe(200);
      stack.backend.clearRequests();
      const deep = await query('{ users(limit: 1) { orders { user { orders { user { orders { number } } } } } } }');
      expect(deep.status).toBe(400);
      expect(deep.json.errors[0].message).toMatch(/depth/i);
      expect(collectionReads(stack.backend)).toHaveLength(0);
    });

    it('400 when a request needs more than graphql.maxBackendReads (20 here), without reading further', async () => {
      const aliases = (n: number) => Array.from({ length: n }, (_, i) => `o${i}: order(number: ${i + 1}) { number }`).join(' ');
      const fits = await query(`{ ${aliases(20)} }`);
      expect(fits.status).toBe(200);
      expect(collectionReads(stack.backend)).toHaveLength(20);
      stack.backend.clearRequests();
      const tooMany = await query(`{ ${aliases(21)} }`);
      expect(tooMany.status).toBe(400);
      expect(tooMany.json.errors[0].extensions.code).toBe('TOO_MANY_BACKEND_READS');
      expect(tooMany.json.errors[0].message).toMatch(/more than 20 backend reads/);
      expect(collectionReads(stack.backend).length).toBeLessThanOrEqual(20);
    });

    it('404 for an unknown app, before the ACL: anonymous callers get 404, wrong credentials still 401', async () => {
      const anonymous = await call(stack.proxy.url, '/graphql/nope', { method: 'POST', body: { query: '{ x }' } });
      expect(anonymous.status).toBe(404);
      // SPEC §15: GraphQL-shaped on /graphql/<uri> (it was RESTHeart's `http status code` body).
      expect(anonymous.json.errors[0].extensions.code).toBe('APP_NOT_FOUND');
      expect(anonymous.json.errors[0].message).toMatch(/no GraphQL app is served at \/graphql\/nope/);
      expect((await call(stack.proxy.url, '/graphql', { method: 'POST', body: { query: '{ x }' } })).status).toBe(404);
      expect((await call(stack.proxy.url, '/graphql/', { method: 'POST', body: { query: '{ x }' } })).status).toBe(404);
      const wrong = await call(stack.proxy.url, '/graphql/nope', { method: 'POST', auth: basic('alice', 'wrong'), body: { query: '{ x }' } });
      expect(wrong.status).toBe(401);
    });

    it('401 and 403 from the ACL on /graphql/<uri>', async () => {
      const anonymous = await call(stack.proxy.url, '/graphql/shop', { method: 'POST', body: { query: '{ orders { number } }' } });
      expect(anonymous.status).toBe(401);
      expect(anonymous.headers['www-authenticate']).toBe('Basic realm="gql-serving"');
      const eve = await gql(stack.proxy.url, 'shop', '{ orders { number } }', { auth: EVE });
      expect(eve.status).toBe(403);
      expect(eve.json.errors[0].message).toMatch(/no permission allows/); // SPEC §15: GraphQL-shaped
      expect(collectionReads(stack.backend)).toHaveLength(0);
    });

    it('405 for other methods, with Allow', async () => {
      const res = await call(stack.proxy.url, '/graphql/shop', { method: 'PUT', auth: ALICE, body: { query: '{ orders { number } }' } });
      expect(res.status).toBe(405);
      expect(res.headers.allow).toBe('GET, POST');
      const del = await call(stack.proxy.url, '/graphql/shop', { method: 'DELETE', auth: ROOT });
      expect(del.status).toBe(405);
    });

    it('413 for a query over 100 KiB, and for a body over 1 MiB', async () => {
      const padding = `#${'x'.repeat(100 * 1024)}\n`;
      const big = await query(`${padding}{ orders { number } }`);
      expect(big.status).toBe(413);
      expect(big.json.errors[0].message).toMatch(/100 KiB/);
      const justUnder = await query(`#${'x'.repeat(100 * 1024 - 40)}\n{ order(number: 1) { number } }`);
      expect(justUnder.status).toBe(200);
      const huge = await call(stack.proxy.url, '/graphql/shop', { method: 'POST', auth: ALICE, body: { query: '{ orders { number } }', variables: { pad: 'y'.repeat(1024 * 1024) } } });
      expect(huge.status).toBe(413);
      expect(collectionReads(stack.backend).length).toBe(1); // only the query just under the limit read
    });

    it('415 for a POST of another content type', async () => {
      const res = await call(stack.proxy.url, '/graphql/shop', { method: 'POST', auth: ALICE, rawBody: 'query={orders{number}}', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
      expect(res.status).toBe(415);
    });
  });

  describe('observed like every other request', () => {
    it('webhook recordings capture GraphQL requests with their body and status', async () => {
      expect((await call(stack.proxy.url, '/_admin/webhooks/recording', { method: 'POST', auth: ROOT })).status).toBe(201);
      try {
        const q = '{ order(number: 6) { total } }';
        expect((await query(q)).status).toBe(200);
        await pollUntil(async () => {
          const view = (await call(stack.proxy.url, '/_admin/webhooks/recording', { auth: ROOT })).json;
          const seen = view.requests.find((r: { path: string; body: { query?: string } }) => r.path === '/graphql/shop' && r.body?.query === q);
          return seen?.response.statusCode === 200 && seen.method === 'POST';
        });
      } finally {
        await call(stack.proxy.url, '/_admin/webhooks/recording', { method: 'DELETE', auth: ROOT });
      }
    });
  });

  describe('enabling and disabling without a restart', () => {
    it('a disabled app answers 404; re-enabled (PATCH descriptor.enabled) it answers 200 at once', async () => {
      const q = '{ order(number: 1) { number } }';
      expect((await query(q)).status).toBe(200);
      const disable = await call(stack.proxy.url, '/gql-apps/shop', { method: 'PATCH', auth: ROOT, body: { descriptor: { enabled: false } } });
      expect(disable.status).toBe(200);
      expect(disable.json.descriptor).toMatchObject({ enabled: false, uri: 'shop', name: 'Shop' });
      const disabled = await query(q);
      expect(disabled.status).toBe(404);
      expect(disabled.json.errors[0].message).toMatch(/no GraphQL app is served at \/graphql\/shop/); // SPEC §15: GraphQL-shaped
      // Not a hint for callers without rights either: same answer as an unknown app.
      expect((await call(stack.proxy.url, '/graphql/shop', { method: 'POST', body: { query: q } })).status).toBe(404);

      const enable = await call(stack.proxy.url, '/gql-apps/shop', {
        method: 'PATCH',
        auth: ROOT,
        headers: { 'content-type': 'application/merge-patch+json' },
        rawBody: JSON.stringify({ descriptor: { enabled: true } }),
      });
      expect(enable.status).toBe(200);
      const again = await query(q);
      expect(again.status).toBe(200);
      expect(again.json.data.order.number).toBe(1);
    });
  });
});
