/**
 * Issue 17 through a running Outrigger, against the RESTHeart stand-in over HTTP and a real
 * Redis: aggregation mappings through declared aggregations (`_aggrs`, kept in sync when the app
 * is saved) and refused when turned off; trusted documents; the query cost limit (refused with no
 * backend read); verbose extensions.
 */
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { sha256Hex } from '../../../src/graphql/document/trusted/documents.js';
import { basic } from '../../support/outrigger.js';
import { call, gql, shopData } from './graphql-helpers.js';
import { ROOT, type Running, useStack } from '../../support/fixtures.js';

const ALICE = basic('alice', 'alice-password');

const statsApp = {
  _id: 'stats',
  descriptor: { uri: 'stats' },
  schema:
    'type Total { _id: String, orders: Int, sum: Int } type User { _id: String, name: String, totals(status: String): [Total] } ' +
    'type Mine { _id: String, n: Int } type Query { totals(status: String, min: Int): [Total], users(limit: Int): [User], mine: [Mine] }',
  mappings: {
    Query: {
      totals: {
        db: 'shop',
        collection: 'orders',
        stages: [
          { $match: { total: { $gte: { $arg: ['min', 0] } } } },
          { $ifarg: ['status', { $match: { status: { $arg: 'status' } } }] },
          { $group: { _id: '$status', orders: { $sum: 1 }, sum: { $sum: '$total' } } },
          { $sort: { _id: 1 } },
        ],
        allowDiskUse: true,
      },
      users: { db: 'shop', collection: 'users', sort: { _id: 1 }, limit: { $arg: 'limit' } },
      mine: { db: 'shop', collection: 'orders', stages: [{ $match: { owner: { $arg: '@user._id' } } }, { $group: { _id: '$owner', n: { $sum: 1 } } }] },
    },
    User: {
      totals: {
        db: 'shop',
        collection: 'orders',
        stages: [{ $match: { userId: { $fk: '_id' } } }, { $group: { _id: '$userId', orders: { $sum: 1 }, sum: { $sum: '$total' } } }],
        dataLoader: { batching: true, caching: true },
      },
    },
  },
};

const listed = '{ users(limit: 2) { name } }';
const hashed = 'query Named { users(limit: 1) { _id } }';
const trustedApp = {
  _id: 'trusted',
  descriptor: { uri: 'trusted', trustedDocuments: [listed, `sha256:${sha256Hex(hashed)}`], maxCost: { documents: 500 } },
  schema: 'type Order { number: Int } type User { _id: String, name: String, orders(limit: Int): [Order] } type Query { users(limit: Int): [User] }',
  mappings: {
    Query: { users: { db: 'shop', collection: 'users', sort: { _id: 1 }, limit: { $arg: 'limit' } } },
    User: { orders: { db: 'shop', collection: 'orders', find: { userId: { $fk: '_id' } }, limit: { $arg: 'limit' } } },
  },
};
const costlyApp = { ...trustedApp, _id: 'costly', descriptor: { uri: 'costly', maxCost: { documents: 500 }, verbose: true } };

describe('RESTHeart app features through Outrigger', () => {
  /** `on` (the stack's proxy) serves aggregation mappings; `off` is the same with graphql.aggregations: false. */
  const stack = useStack({
    service: 'gql-aggr-on',
    jwtIdentity: true,
    backend: { data: shopData() },
    users: { root: ['root'], alice: ['user'] },
    config: { acl: { mode: 'enforce' }, graphql: { aggregations: true } },
    permissions: {
      'users-graphql': { predicate: 'path-prefix(/graphql)', roles: ['user'], priority: 1 },
      'users-read-shop': { predicate: 'method(GET) and path-prefix(/shop)', roles: ['user'], priority: 1 },
    },
    apps: Object.fromEntries([statsApp, trustedApp, costlyApp].map((app) => [app._id, app])),
  });
  let off: Running;
  beforeAll(async () => {
    off = await stack.start({ service: { id: 'gql-aggr-off' }, graphql: { aggregations: false } });
  });
  beforeEach(() => stack.backend.clearRequests());
  const aggrReads = () => stack.backend.requests.filter((r) => r.method === 'GET' && r.path.includes('/_aggrs/'));

  describe('aggregation mappings', () => {
    it('saving the app declared its aggregations in the collection metadata, as RESTHeart stores them', async () => {
      const meta = await call(stack.backend.url, '/shop/orders/_meta', {});
      const aggrs = meta.json.aggrs as Array<{ uri: string; type: string; stages: unknown[]; allowDiskUse: boolean }>;
      expect(aggrs.map((a) => a.type)).toEqual(['pipeline', 'pipeline', 'pipeline']);
      const totals = aggrs.find((a) => a.uri.startsWith('gql-stats-Query-totals-'))!;
      expect(totals.allowDiskUse).toBe(true);
      expect(totals.stages[0]).toEqual({ $match: { total: { $gte: { $var: ['arg.min', 0] } } } });
      expect(totals.stages[1]).toEqual({ $ifvar: ['arg.status', { $match: { status: { $var: 'arg.status' } } }] });
      expect(aggrs.find((a) => a.uri.startsWith('gql-stats-Query-mine-'))!.stages[0]).toEqual({ $match: { owner: { $var: '@user._id' } } });
    });

    it('a root aggregation runs through /{db}/{coll}/_aggrs/{name} with $arg as avars', async () => {
      const res = await gql(stack.proxy.url, 'stats', '{ all: totals { _id orders sum } open: totals(status: "open", min: 500) { _id orders } }', { auth: ALICE });
      expect(res.status, JSON.stringify(res.json)).toBe(200);
      const orders = shopData().shop.orders;
      const count = (f: (o: (typeof orders)[number]) => boolean) => orders.filter(f).length;
      expect(res.json.data.all).toEqual([
        { _id: 'closed', orders: count((o) => o.status === 'closed'), sum: orders.filter((o) => o.status === 'closed').reduce((s, o) => s + o.total, 0) },
        { _id: 'open', orders: count((o) => o.status === 'open'), sum: orders.filter((o) => o.status === 'open').reduce((s, o) => s + o.total, 0) },
      ]);
      expect(res.json.data.open).toEqual([{ _id: 'open', orders: count((o) => o.status === 'open' && o.total >= 500) }]);
      const reads = aggrReads();
      expect(reads).toHaveLength(2);
      expect(reads.map((r) => JSON.parse(r.query.get('avars')!))).toEqual(expect.arrayContaining([{}, { 'arg.status': 'open', 'arg.min': 500 }]));
    });

    it('@user in stages is the caller the backend authenticated; $fk per parent', async () => {
      const mine = await gql(stack.proxy.url, 'stats', '{ mine { _id n } }', { auth: ALICE });
      expect(mine.json.data.mine).toEqual([{ _id: 'alice', n: shopData().shop.orders.filter((o) => o.owner === 'alice').length }]);
      expect(aggrReads()[0]!.identity.id).toBe('alice');
      const users = await gql(stack.proxy.url, 'stats', '{ users(limit: 2) { _id totals { orders sum } } }', { auth: ALICE });
      expect(users.json.data.users).toEqual([
        { _id: 'u1', totals: [{ orders: 4, sum: 16 }] },
        { _id: 'u10', totals: [{ orders: 1, sum: 100 }] },
      ]);
    });

    it('refused at write when graphql.aggregations is off, saying why', async () => {
      const res = await call(off.url, '/gql-apps/stats', { method: 'PUT', auth: ROOT, body: statsApp });
      expect(res.status).toBe(400);
      expect(res.json.message).toMatch(/mappings\.Query\.totals\.stages: aggregation mappings are turned off: the HTTP backend cannot run ad-hoc pipelines.*graphql\.aggregations: true/);
    });
  });

  describe('trusted documents', () => {
    it('runs listed texts, texts of listed hashes, and listed texts by hash only', async () => {
      expect((await gql(stack.proxy.url, 'trusted', listed, { auth: ALICE })).json.data.users).toHaveLength(2);
      expect((await gql(stack.proxy.url, 'trusted', hashed, { auth: ALICE })).json.data.users).toHaveLength(1);
      const byId = await call(stack.proxy.url, '/graphql/trusted', { method: 'POST', auth: ALICE, body: { documentId: `sha256:${sha256Hex(listed)}` } });
      expect(byId.json.data.users).toHaveLength(2);
    });
    it('refuses any other query before reading', async () => {
      const res = await gql(stack.proxy.url, 'trusted', '{ users(limit: 3) { name } }', { auth: ALICE });
      expect(res.status).toBe(400);
      expect(res.json.errors[0].extensions.code).toBe('UNTRUSTED_DOCUMENT');
      const unknown = await call(stack.proxy.url, '/graphql/trusted', { method: 'POST', auth: ALICE, body: { documentId: `sha256:${sha256Hex(hashed)}` } });
      expect(unknown.json.errors[0].extensions.code).toBe('PERSISTED_QUERY_NOT_FOUND');
      expect(stack.backend.requests.filter((r) => r.path.startsWith('/shop'))).toHaveLength(0);
    });
  });

  describe('query cost', () => {
    it('a costly query is refused before any backend read, naming its estimate', async () => {
      const res = await gql(stack.proxy.url, 'costly', '{ users(limit: 50) { name orders(limit: 20) { number } } }', { auth: ALICE });
      expect(res.status).toBe(400);
      expect(res.json.errors[0].extensions).toEqual({ code: 'QUERY_TOO_COSTLY', cost: { reads: 2, documents: 1050, output: 1101 }, maxCost: { reads: 50, documents: 500, output: 50_000 } });
      expect(stack.backend.requests).toHaveLength(0);
    });
    it('within the limit it runs, and verbose reports the reads and the batching', async () => {
      const res = await gql(stack.proxy.url, 'costly', '{ users(limit: 5) { name orders(limit: 2) { number } } }', { auth: ALICE });
      expect(res.status).toBe(200);
      expect(res.json.data.users).toHaveLength(5);
      expect(res.json.extensions.backendReads.count).toBe(2);
      expect(res.json.extensions.backendReads.reads.map((r: { collection: string }) => r.collection)).toEqual(['users', 'orders']);
      expect(res.json.extensions.dataloader['overall-statistics']).toMatchObject({ batchLoadCount: 5, batchInvokeCount: 1 });
      expect(stack.backend.requests.filter((r) => r.path.startsWith('/shop'))).toHaveLength(2);
    });
  });
});
