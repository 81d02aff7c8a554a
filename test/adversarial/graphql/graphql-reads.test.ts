/**
 * GraphQL reads authorized as REST reads (issue 25, items 4-6), through the real proxy and the
 * RESTHeart stand-in. Each attack row fails on the code before the fix:
 * - a permission that looks at the query string (qparams-blacklist) is decided on the query string
 *   the backend read carries, as for the equivalent REST GET;
 * - filter, sort and join keys on paths the caller's projectResponse hides are refused (FORBIDDEN,
 *   no backend read), so a query cannot probe what the projection hides;
 * - aggregation stages that reach other collections ($lookup, $graphLookup, $unionWith, also nested)
 *   are refused at write;
 * - extended-JSON literals are checked strictly: no regex, code, db pointer or operator smuggled
 *   inside a literal, in argument values or in app documents;
 * - direct execution (issue 39) builds answers from compiled object literals: aliases named like
 *   prototype members stay plain keys, and its projection (`keys`) only narrows what the
 *   caller's permission already lets through.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { basic } from '../../support/outrigger.js';
import { call, collectionReads, gql } from '../../integration/graphql/graphql-helpers.js';
import { ROOT, useStack } from '../../support/fixtures.js';

const ALICE = basic('alice', 'alice-password'); // projectResponse hides orders.secret
const LENA = basic('lena', 'lena-password'); // may read orders only without filter (qparams-blacklist)
const CAROL = basic('carol', 'carol-password'); // reads orders unfiltered, unprojected

const data = {
  shop: {
    orders: Array.from({ length: 6 }, (_, i) => ({ _id: `o${i + 1}`, number: i + 1, owner: i % 2 ? 'bob' : 'alice', status: i % 3 ? 'closed' : 'open', secret: `secret-${i + 1}` })),
    users: [
      { _id: 'u1', name: 'Ann', code: 'secret-1' },
      { _id: 'u2', name: 'Ben', code: 'nope' },
    ],
  },
};

const SCHEMA = /* GraphQL */ `
  type Order {
    number: Int
    owner: String
    status: String
  }
  type User {
    name: String
    matching: [Order]
  }
  type Query {
    orders(status: String): [Order]
    bySecret(secret: String): [Order]
    bySecretOrder: [Order]
    users: [User]
    byOwner(owner: BsonDocument): [Order]
  }
`;

const readsApp = () => ({
  descriptor: { uri: 'reads' },
  schema: SCHEMA,
  mappings: {
    User: { matching: { db: 'shop', collection: 'orders', find: { secret: { $fk: 'code' } } } },
    Query: {
      orders: { db: 'shop', collection: 'orders', find: { status: { $arg: 'status' } }, sort: { number: 1 } },
      bySecret: { db: 'shop', collection: 'orders', find: { secret: { $arg: 'secret' } } },
      bySecretOrder: { db: 'shop', collection: 'orders', sort: { secret: -1 } },
      users: { db: 'shop', collection: 'users', sort: { _id: 1 } },
      byOwner: { db: 'shop', collection: 'orders', find: { owner: { $arg: 'owner' } }, sort: { number: 1 } },
    },
  },
});

describe('GraphQL reads authorized as REST reads (issue 25)', () => {
  const stack = useStack({
    service: 'gql-reads',
    jwtIdentity: true,
    backend: { data },
    users: { root: ['root'], alice: ['user'], lena: ['limited'], carol: ['auditor'] },
    config: { acl: { mode: 'enforce' }, graphql: { aggregations: true } },
    permissions: {
      graphql: { predicate: 'path-prefix(/graphql/reads)', roles: ['user', 'limited', 'auditor'], priority: 1 },
      users: { predicate: 'method(GET) and path-prefix(/shop/users)', roles: ['user', 'limited', 'auditor'], priority: 1 },
      'orders-projected': {
        predicate: 'method(GET) and path-prefix(/shop/orders)',
        roles: ['user'],
        priority: 10,
        mongo: { projectResponse: { secret: 0 } },
      },
      'orders-no-filter': { predicate: 'method(GET) and path-prefix(/shop/orders) and qparams-blacklist(filter)', roles: ['limited'], priority: 10 },
      'orders-auditor': { predicate: 'method(GET) and path-prefix(/shop/orders)', roles: ['auditor'], priority: 10 },
    },
    apps: { reads: readsApp() },
  });

  beforeEach(() => stack.backend.clearRequests());

  const codes = (res: { json: { errors?: Array<{ extensions?: { code?: string } }> } }) => (res.json.errors ?? []).map((e) => e.extensions?.code);

  describe('direct execution (issue 39): the answer is built from compiled object literals', () => {
    it('aliases named like prototype members, __proto__ included, are plain keys of the answer and pollute nothing', async () => {
      const res = await gql(stack.proxy.url, 'reads', '{ orders { constructor: number toString: owner hasOwnProperty: status } more: orders { __proto__: number } }', { auth: CAROL });
      expect(res.json.errors).toBeUndefined();
      expect(res.json.data.orders[0]).toEqual({ constructor: 1, toString: 'alice', hasOwnProperty: 'open' });
      expect(res.text).toContain('"__proto__":1');
      expect(({} as Record<string, unknown>).number).toBeUndefined();
    });

    it("a projection never reaches past the caller's permission: a field projectResponse hides stays hidden", async () => {
      const res = await gql(stack.proxy.url, 'reads', '{ orders { number owner } }', { auth: ALICE });
      expect(res.json.errors).toBeUndefined();
      const [read] = collectionReads(stack.backend, 'orders');
      expect(JSON.parse(read!.query.get('keys')!)).toEqual({ _id: 0, number: 1, owner: 1 });
      expect(JSON.stringify(res.json)).not.toContain('secret-');
    });
  });

  describe('item 4: a read is decided on the query string REST would carry', () => {
    it('a permission that forbids `filter` refuses the GraphQL read that filters, as it refuses the REST GET', async () => {
      const rest = await call(stack.proxy.url, `/shop/orders?filter=${encodeURIComponent('{"status":"open"}')}`, { auth: LENA });
      expect(rest.status).toBe(403);
      const res = await gql(stack.proxy.url, 'reads', '{ orders(status: "open") { number } }', { auth: LENA });
      expect(res.json.data?.orders ?? null).toBeNull();
      expect(codes(res)).toContain('FORBIDDEN');
      expect(collectionReads(stack.backend, 'orders')).toHaveLength(0);
    });

    it('the same caller still reads without a filter, as REST allows', async () => {
      expect((await call(stack.proxy.url, '/shop/orders', { auth: LENA })).status).toBe(200);
      const res = await gql(stack.proxy.url, 'reads', '{ orders { number } }', { auth: LENA });
      expect(res.json.errors).toBeUndefined();
      expect(res.json.data.orders).toHaveLength(6);
    });

    it('a filter on a field projectResponse hides is refused, with no backend read', async () => {
      const res = await gql(stack.proxy.url, 'reads', '{ bySecret(secret: "secret-3") { number } }', { auth: ALICE });
      expect(res.json.data?.bySecret ?? null).toBeNull();
      expect(codes(res)).toContain('FORBIDDEN');
      expect(res.json.errors[0].message).toMatch(/secret/);
      expect(collectionReads(stack.backend, 'orders')).toHaveLength(0);
    });

    it('a sort on a field projectResponse hides is refused', async () => {
      const res = await gql(stack.proxy.url, 'reads', '{ bySecretOrder { number } }', { auth: ALICE });
      expect(res.json.data?.bySecretOrder ?? null).toBeNull();
      expect(codes(res)).toContain('FORBIDDEN');
      expect(collectionReads(stack.backend, 'orders')).toHaveLength(0);
    });

    it('a join keyed on a field projectResponse hides is refused', async () => {
      const res = await gql(stack.proxy.url, 'reads', '{ users { name matching { number } } }', { auth: ALICE });
      const users = (res.json.data?.users ?? []) as Array<{ name: string; matching: unknown }>;
      expect(users.every((u) => u.matching === null)).toBe(true);
      expect(codes(res)).toContain('FORBIDDEN');
      expect(collectionReads(stack.backend, 'orders')).toHaveLength(0);
    });

    it('a caller whose projection shows the field may filter and join on it', async () => {
      const res = await gql(stack.proxy.url, 'reads', '{ bySecret(secret: "secret-3") { number } users { name matching { number } } }', { auth: CAROL });
      expect(res.json.errors).toBeUndefined();
      expect(res.json.data.bySecret).toEqual([{ number: 3 }]);
      expect(res.json.data.users[0]).toEqual({ name: 'Ann', matching: [{ number: 1 }] });
    });
  });

  describe('item 5: aggregations reaching other collections are refused at write', () => {
    const stagesApp = (stages: unknown[]) => ({
      descriptor: { uri: 'aggr' },
      schema: 'type Row { n: Int } type Query { rows: [Row] }',
      mappings: { Query: { rows: { db: 'shop', collection: 'orders', stages } } },
    });
    it.each([
      ['$lookup', [{ $lookup: { from: 'users', localField: 'owner', foreignField: '_id', as: 'u' } }], 'stages.0.$lookup'],
      ['$graphLookup', [{ $graphLookup: { from: 'users', startWith: '$owner', connectFromField: '_id', connectToField: '_id', as: 'u' } }], 'stages.0.$graphLookup'],
      ['$unionWith', [{ $match: {} }, { $unionWith: { coll: 'users' } }], 'stages.1.$unionWith'],
      ['$lookup inside $facet', [{ $facet: { a: [{ $lookup: { from: 'users', pipeline: [], as: 'u' } }] } }], 'stages.0.$facet.a.0.$lookup'],
      ['$unionWith inside $facet', [{ $facet: { a: [{ $unionWith: 'users' }] } }], 'stages.0.$facet.a.0.$unionWith'],
    ])('%s', async (_name, stages, where) => {
      const res = await call(stack.proxy.url, '/gql-apps/aggr', { method: 'PUT', auth: ROOT, body: stagesApp(stages) });
      expect(res.status).toBe(400);
      expect(JSON.stringify(res.json)).toContain(`mappings.Query.rows.${where}`);
    });
  });

  describe('item 6: extended-JSON literals are checked strictly', () => {
    it.each([
      ['$regularExpression turning an equality into a regex', { $regularExpression: { pattern: '.*', options: '' } }],
      ['(guard, refused before too) $regex as an operator', { $regex: '.*' }],
      ['$code', { $code: 'function () { return true; }' }],
      ['$code with $scope', { $code: 'function () { return x; }', $scope: { x: 1 } }],
      ['$dbPointer', { $dbPointer: { $ref: 'users', $id: { $oid: '0123456789abcdef01234567' } } }],
      ['$symbol', { $symbol: 'alice' }],
      ['an operator inside a $date', { $date: { $gt: 0 } }],
      ['an operator inside a $oid', { $oid: { $ne: null } }],
      ['a $oid that is not 24 hex digits', { $oid: '.*' }],
    ])('argument value: %s is refused before any backend read', async (_name, owner) => {
      const res = await gql(stack.proxy.url, 'reads', 'query($o: BsonDocument) { byOwner(owner: $o) { number } }', { auth: CAROL, variables: { o: owner } });
      expect(res.json.data?.byOwner ?? null).toBeNull();
      expect(res.json.errors?.length).toBeGreaterThan(0);
      expect(collectionReads(stack.backend, 'orders')).toHaveLength(0);
    });

    it('a well-formed literal still works as an equality', async () => {
      const res = await gql(stack.proxy.url, 'reads', 'query($o: BsonDocument) { byOwner(owner: $o) { number } }', { auth: CAROL, variables: { o: { $numberLong: '7' } } });
      expect(res.json.errors).toBeUndefined();
      expect(res.json.data.byOwner).toEqual([]);
    });

    const withFind = (find: Record<string, unknown>) => {
      const app = readsApp();
      app.descriptor.uri = 'lit';
      (app.mappings.Query as Record<string, unknown>).bySecret = { db: 'shop', collection: 'orders', find };
      return app;
    };
    it.each([
      ['$code in a find', { owner: { $code: 'function () { return true; }' } }, 'find.owner.$code'],
      ['$dbPointer in a find', { owner: { $dbPointer: { $ref: 'users', $id: { $oid: '0123456789abcdef01234567' } } } }, 'find.owner.$dbPointer'],
      ['an operator inside a $oid in a find', { _id: { $oid: { $ne: null } } }, 'find._id.$oid'],
      ['a malformed $regularExpression', { owner: { $regularExpression: { pattern: 'a', options: 'q' } } }, 'find.owner.$regularExpression'],
    ])('app document: %s is refused at write', async (_name, find, where) => {
      const res = await call(stack.proxy.url, '/gql-apps/lit', { method: 'PUT', auth: ROOT, body: withFind(find) });
      expect(res.status).toBe(400);
      expect(JSON.stringify(res.json)).toContain(`mappings.Query.bySecret.${where}`);
    });

    it('app document: an enum value that is a regex literal is refused at write', async () => {
      const app = {
        descriptor: { uri: 'lit' },
        schema: 'enum Who { ANY } type Order { number: Int } type Query { orders(who: Who): [Order] }',
        mappings: { Who: { ANY: { $regularExpression: { pattern: '.*', options: '' } } }, Query: { orders: { db: 'shop', collection: 'orders', find: { owner: { $arg: 'who' } } } } },
      };
      const res = await call(stack.proxy.url, '/gql-apps/lit', { method: 'PUT', auth: ROOT, body: app });
      expect(res.status).toBe(400);
      expect(JSON.stringify(res.json)).toContain('mappings.Who.ANY');
    });
  });
});
