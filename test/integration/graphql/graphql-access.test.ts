/**
 * Who GraphQL reads run as (SPEC §6.3, §3.4, §3.6): with `graphql.backend.auth: caller` the
 * caller's identity reaches the backend (a minted JWT, an API key's roles, a Basic header the
 * backend verifies itself) and the caller's readFilter/projectResponse narrow GraphQL results as
 * they narrow REST reads; with `auth: service` the configured credentials are used and no
 * per-caller filter applies. Also the graphql-http server audit against an app Outrigger serves.
 */
import { auditServer } from 'graphql-http';
import { jwtVerify } from 'jose';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { basic, startTestOutrigger } from '../../support/outrigger.js';
import { call, collectionReads, filterOf, gql, shopApp, shopData } from './graphql-helpers.js';
import { JWT_SECRET, ROOT, useStack } from '../../support/fixtures.js';

type Running = Awaited<ReturnType<typeof startTestOutrigger>>;

const ALICE = basic('alice', 'alice-password');
const CAROL = basic('carol', 'carol-password');
const data = shopData();
const ordersOf = (owner: string) =>
  data.shop.orders
    .filter((o) => o.owner === owner)
    .map((o) => o.number)
    .sort((a, b) => a - b);

describe('GraphQL reads as the caller, or as the service', () => {
  const stack = useStack({
    service: 'gql-access',
    jwtIdentity: true,
    backend: {
      data,
      users: [
        { id: 'svc', password: 'svc-password', roles: ['service'] },
        { id: 'dave', password: 'dave-password', roles: ['user'] },
      ],
    },
    users: { root: ['root'], alice: ['user'], carol: ['auditor'] },
    config: { acl: { mode: 'enforce' } },
    permissions: {
      graphql: { predicate: 'path-prefix(/graphql/shop)', roles: ['user', 'auditor'], priority: 1 },
      'own-orders': {
        predicate: 'method(GET) and path-prefix(/shop/orders)',
        roles: ['user'],
        priority: 10,
        mongo: { readFilter: { owner: '@user.id' }, projectResponse: { secret: 0 } },
      },
      'read-users': { predicate: 'method(GET) and path-prefix(/shop/users)', roles: ['user'], priority: 1 },
      // Decided on the caller's own headers and on the read's query string, as the same REST GET would be.
      'team-users': { predicate: 'method(GET) and path-prefix(/shop/users) and equals(%{i,x-team}, red) and qparams-contain(page)', roles: ['auditor'], priority: 1 },
      keys: { predicate: 'path-prefix(/keys)', roles: ['user'], priority: 1, apiKeys: { roles: ['user'] } },
      // The audited app: open to anonymous callers, reading a collection they may read.
      'anonymous-audit': { predicate: 'path-prefix(/graphql/audit) or (method(GET) and path-prefix(/shop/products))', roles: ['$unauthenticated'], priority: 1 },
    },
    apps: {
      shop: shopApp(),
      audit: {
        descriptor: { uri: 'audit' },
        schema: 'type Product { name: String, price: Int } type Query { products: [Product] }',
        mappings: { Query: { products: { db: 'shop', collection: 'products' } } },
      },
    },
  });

  beforeEach(() => stack.backend.clearRequests());

  describe('auth: caller (default)', () => {
    it("the caller's readFilter narrows GraphQL results and projectResponse hides fields, as on REST", async () => {
      const res = await gql(stack.proxy.url, 'shop', '{ orders(limit: 1000) { number owner secret } }', { auth: ALICE });
      expect(res.status).toBe(200);
      const got = res.json.data.orders as Array<{ number: number; owner: string; secret: string | null }>;
      expect(got.map((o) => o.number)).toEqual(ordersOf('alice'));
      expect(got.every((o) => o.owner === 'alice' && o.secret === null)).toBe(true);
      // The read carried the readFilter, ANDed with the mapping's find (here: none).
      const [read] = collectionReads(stack.backend, 'orders');
      expect(filterOf(read!)).toEqual({ owner: 'alice' });

      // The same caller over REST sees the same documents.
      stack.backend.clearRequests();
      const rest = await call(stack.proxy.url, '/shop/orders?pagesize=1000', { auth: ALICE });
      expect(rest.status).toBe(200);
      expect((rest.json as Array<{ number: number }>).map((o) => o.number).sort((a, b) => a - b)).toEqual(ordersOf('alice'));
      expect((rest.json as Array<Record<string, unknown>>).some((o) => 'secret' in o)).toBe(false);
    });

    it('the readFilter is ANDed with the mapping find, and applies to batched joins too', async () => {
      const res = await gql(stack.proxy.url, 'shop', '{ orders(status: OPEN, limit: 1000) { owner } users(limit: 6) { id orders(limit: 10) { owner number } } }', { auth: ALICE });
      expect(res.status).toBe(200);
      expect(res.json.data.orders.every((o: { owner: string }) => o.owner === 'alice')).toBe(true);
      const joined = (res.json.data.users as Array<{ orders: Array<{ owner: string; number: number }> }>).flatMap((u) => u.orders);
      expect(joined.length).toBeGreaterThan(0);
      expect(joined.every((o) => o.owner === 'alice')).toBe(true);
      const filters = collectionReads(stack.backend, 'orders').map(filterOf);
      expect(filters).toContainEqual({ $and: [{ status: 'open' }, { owner: 'alice' }] });
      expect(filters.every((f) => JSON.stringify(f).includes('"owner":"alice"'))).toBe(true);
    });

    it("the caller's identity reaches the backend as the JWT Outrigger mints", async () => {
      await gql(stack.proxy.url, 'shop', '{ order(number: 1) { number } }', { auth: ALICE });
      const [read] = collectionReads(stack.backend, 'orders');
      expect(read!.identity).toEqual({ via: 'jwt', id: 'alice', roles: ['user'] });
      const token = String(read!.headers.authorization).replace(/^Bearer /, '');
      const { payload } = await jwtVerify(token, new TextEncoder().encode(JWT_SECRET), { issuer: 'restheart.org' });
      expect(payload).toMatchObject({ sub: 'alice', roles: ['user'] });
      expect(read!.headers.authorization).not.toBe(ALICE); // the password never reaches the backend
    });

    it('an API key reads with the key roles, exactly as a password sign-in of those roles', async () => {
      const issued = await call(stack.proxy.url, '/keys', { method: 'POST', auth: ALICE, body: { name: 'graphql', roles: ['user'] } });
      expect(issued.status).toBe(201);
      stack.backend.clearRequests();
      const res = await gql(stack.proxy.url, 'shop', '{ orders(limit: 1000) { number } }', { auth: `Bearer ${issued.json.key}` });
      expect(res.status).toBe(200);
      expect(res.json.data.orders.map((o: { number: number }) => o.number)).toEqual(ordersOf('alice'));
      const [read] = collectionReads(stack.backend, 'orders');
      expect(read!.identity).toEqual({ via: 'jwt', id: 'alice', roles: ['user'] });
      expect(String(read!.headers.authorization)).not.toContain(issued.json.key);
    });

    it('admin roles read without a filter', async () => {
      const res = await gql(stack.proxy.url, 'shop', '{ orders(limit: 1000) { number } }', { auth: ROOT });
      expect(res.json.data.orders).toHaveLength(data.shop.orders.length);
      expect(collectionReads(stack.backend, 'orders')[0]!.query.has('filter')).toBe(false);
      expect(collectionReads(stack.backend, 'orders')[0]!.identity).toMatchObject({ via: 'jwt', id: 'root' });
    });

    it('a collection the caller may not GET is a FORBIDDEN field error, and is never read', async () => {
      const res = await gql(stack.proxy.url, 'shop', '{ orders { number } }', { auth: CAROL });
      expect(res.status).toBe(200);
      expect(res.json.data).toEqual({ orders: null });
      expect(res.json.errors[0].extensions.code).toBe('FORBIDDEN');
      expect(res.json.errors[0].message).toMatch(/\/shop\/orders/);
      expect(collectionReads(stack.backend)).toHaveLength(0);
    });

    it("a permission on the caller's headers and the read's query string decides each read as it would the REST GET", async () => {
      const ask = (team: string) =>
        call(stack.proxy.url, '/graphql/shop', { method: 'POST', auth: CAROL, headers: { accept: 'application/json', 'x-team': team }, body: { query: '{ users(limit: 2) { id } }' } });
      const red = await ask('red');
      expect(red.json.errors).toBeUndefined();
      expect(red.json.data.users).toHaveLength(2);
      const blue = await ask('blue');
      expect(blue.json.data).toEqual({ users: null });
      expect(blue.json.errors[0].extensions.code).toBe('FORBIDDEN');
    });

    it('anonymous callers read as anonymous (no identity invented)', async () => {
      const res = await gql(stack.proxy.url, 'audit', '{ products { name } }');
      expect(res.status).toBe(200);
      expect(res.json.data.products).toHaveLength(5);
      expect(collectionReads(stack.backend, 'products')[0]!.identity).toEqual({ via: 'anonymous' });
    });
  });

  describe('auth: service', () => {
    let service: Running;
    beforeAll(async () => {
      service = await startTestOutrigger({ ...stack.raw, graphql: { backend: { auth: 'service', serviceAuthorization: basic('svc', 'svc-password') } } });
    });
    afterAll(async () => service?.stop());

    it('reads with the service credentials and applies no per-caller filter (documented, as RESTHeart)', async () => {
      const res = await gql(service.url, 'shop', '{ orders(limit: 1000) { number secret } }', { auth: ALICE });
      expect(res.status).toBe(200);
      expect(res.json.data.orders).toHaveLength(data.shop.orders.length);
      expect(res.json.data.orders[0].secret).toBe('secret-1');
      const [read] = collectionReads(stack.backend, 'orders');
      expect(read!.identity).toEqual({ via: 'basic', id: 'svc', roles: ['service'] });
      expect(read!.query.has('filter')).toBe(false);
    });

    it('the ACL on /graphql/<uri> still applies', async () => {
      expect((await gql(service.url, 'shop', '{ orders { number } }')).status).toBe(401);
    });
  });

  describe('users.source: upstream', () => {
    let upstreamUsers: Running;
    beforeAll(async () => {
      upstreamUsers = await startTestOutrigger({ ...stack.raw, users: { source: 'upstream', static: [] } });
    });
    afterAll(async () => upstreamUsers?.stop());

    it("the caller's own Basic header reaches the backend, which verifies it; the readFilter still applies", async () => {
      const DAVE = basic('dave', 'dave-password');
      const res = await gql(upstreamUsers.url, 'shop', '{ orders { number } users(limit: 1) { id } }', { auth: DAVE });
      expect(res.status).toBe(200);
      expect(res.json.data).toEqual({ orders: [], users: [{ id: 'u1' }] });
      const reads = collectionReads(stack.backend);
      expect(reads.map((r) => r.identity)).toEqual([
        { via: 'basic', id: 'dave', roles: ['user'] },
        { via: 'basic', id: 'dave', roles: ['user'] },
      ]);
      expect(reads.every((r) => r.headers.authorization === DAVE)).toBe(true);
      expect(filterOf(reads.find((r) => r.path === '/shop/orders')!)).toEqual({ owner: 'dave' });
    });
  });

  describe('the graphql-http server audit', () => {
    it('passes all 61 items (every MUST, SHOULD and MAY) against an app served by the running Outrigger', async () => {
      const results = await auditServer({ url: `${stack.proxy.url}/graphql/audit`, fetchFn: fetch });
      const failures = results.filter((r) => r.status !== 'ok');
      const mustFailures = failures.filter((r) => r.name.startsWith('MUST'));
      expect(mustFailures.map((r) => `${r.id} ${r.name}: ${'reason' in r ? r.reason : ''}`)).toEqual([]);
      const musts = results.filter((r) => r.name.startsWith('MUST'));
      expect(musts.length).toBeGreaterThan(10);
      // Every SHOULD too, with the default httpProfile (see test/unit/graphql/serving/audit.test.ts).
      expect(failures.filter((r) => r.name.startsWith('SHOULD')).map((r) => r.id)).toEqual([]);
      expect(results.filter((r) => r.status === 'ok')).toHaveLength(61);
      console.log(`graphql-http audit through Outrigger: ${results.length - failures.length}/${results.length} ok, ${musts.length} MUST items all ok`);
    });
  });
});
