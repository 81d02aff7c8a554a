/**
 * GraphQL mutations through the real proxy against the RESTHeart stand-in (SPEC §6.4, issue 27):
 * one test per mapping kind and per result type, the backend request each makes (as the REST
 * request a client would send, with the caller's identity), the ACL deciding each write as that
 * REST request (FORBIDDEN with zero backend writes), read-backs through readFilter and
 * projectResponse, execution order, errors (CONFLICT, BACKEND_ERROR), the bounds, and validation
 * at write.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startStandinBackend, type ReceivedRequest, type StandinBackend } from '../../../examples/standin-backend/index.js';
import { startTestRedis, type TestRedis } from '../../support/redis/redis.js';
import { basic, startTestOutrigger, staticUsers } from '../../support/outrigger.js';
import { call, gql } from './graphql-helpers.js';
import { hex, mutationApp, mutationData, putMutationPermissions } from './graphql-mutations-helpers.js';

const JWT_SECRET = 'a-test-secret-that-is-at-least-32-characters-long';
const ROOT = basic('root', 'root-password');
const ALICE = basic('alice', 'alice-password');
const BOB = basic('bob', 'bob-password');
const CAROL = basic('carol', 'carol-password');

describe('GraphQL mutations (SPEC §6.4)', () => {
  let redis: TestRedis;
  let backend: StandinBackend;
  let proxy: Awaited<ReturnType<typeof startTestOutrigger>>;
  const writes = (): ReceivedRequest[] => backend.requests.filter((r) => r.method !== 'GET');
  const orders = () => backend.collection('shop', 'orders');
  const byNumber = (n: number) => orders().find((o) => o.number === n);

  beforeAll(async () => {
    redis = await startTestRedis();
    backend = await startStandinBackend({ data: mutationData(), jwt: { secret: JWT_SECRET } });
    proxy = await startTestOutrigger({
      service: { id: 'gql-mutations' },
      upstream: { url: backend.url, identity: { mode: 'jwt', jwt: { secret: JWT_SECRET } } },
      redis: { url: redis.url },
      users: await staticUsers({ root: ['root'], alice: ['writer'], bob: ['reader'], carol: ['filtered'] }),
      acl: { mode: 'enforce' },
      graphql: { maxBulkWrite: 5, maxBackendWrites: 4 },
    });
    await putMutationPermissions(proxy.url, ROOT);
    expect((await call(proxy.url, '/gql-apps/writes', { method: 'PUT', auth: ROOT, body: mutationApp() })).status).toBe(201);
  });

  afterAll(async () => {
    await proxy?.stop();
    await backend?.close();
    await redis?.close();
  });

  beforeEach(() => backend.clearRequests());

  describe('insert', () => {
    it('object type: POST to the collection with the caller as @user.id, the document read back by the Location id through projectResponse', async () => {
      const res = await gql(proxy.url, 'writes', 'mutation { createOrder(number: 100, total: 7) { _id number owner status secret } }', { auth: ALICE });
      expect(res.status).toBe(200);
      const created = res.json.data.createOrder;
      expect(created).toMatchObject({ number: 100, owner: 'alice', status: 'open', secret: null });
      expect(created._id.$oid).toMatch(/^[0-9a-f]{24}$/);
      const [post] = writes();
      expect(post).toMatchObject({ method: 'POST', path: '/shop/orders', identity: { via: 'jwt', id: 'alice' } });
      expect(JSON.parse(post!.body!)).toEqual({ number: 100, total: 7, owner: 'alice', status: 'open', secret: 'hidden' });
      expect(byNumber(100)).toMatchObject({ owner: 'alice', secret: 'hidden' });
      // The read-back is a read: the caller's readFilter rides along.
      const readBack = backend.requests.filter((r) => r.method === 'GET');
      expect(readBack).toHaveLength(1);
      expect(readBack[0]!.query.getAll('filter').map((f) => JSON.parse(f))).toContainEqual({ $and: [{ _id: created._id }, { owner: 'alice' }] });
    });

    it('ID: the new _id from the Location header, as its hex string, with no read-back', async () => {
      const res = await gql(proxy.url, 'writes', 'mutation { createOrderId(number: 101, total: 1) }', { auth: ALICE });
      expect(res.json.data.createOrderId).toMatch(/^[0-9a-f]{24}$/);
      expect((byNumber(101)!._id as { $oid: string }).$oid).toBe(res.json.data.createOrderId);
      expect(backend.requests.map((r) => r.method)).toEqual(['POST']);
    });

    it('a whole input object as the document (schema defaults applied)', async () => {
      const res = await gql(proxy.url, 'writes', 'mutation { insertWhole(input: {number: 102, total: 3, owner: "alice"}) { number status owner } }', { auth: ALICE });
      expect(res.json.data.insertWhole).toEqual({ number: 102, status: 'open', owner: 'alice' });
      expect(JSON.parse(writes()[0]!.body!)).toEqual({ number: 102, total: 3, status: 'open', owner: 'alice' });
    });

    it('a read-back the caller may not see is null, and the write stands', async () => {
      const res = await gql(proxy.url, 'writes', 'mutation { createOrderFor(owner: "bob", number: 103) { number } }', { auth: ALICE });
      expect(res.status).toBe(200);
      expect(res.json).toEqual({ data: { createOrderFor: null } });
      expect(byNumber(103)).toMatchObject({ owner: 'bob' });
    });

    it('a duplicate _id is CONFLICT; the next root field still runs, in document order', async () => {
      const res = await gql(proxy.url, 'writes', 'mutation { a: createWithId(id: "dup-1", number: 104) b: createWithId(id: "dup-1", number: 105) c: createWithId(id: "dup-2", number: 106) }', {
        auth: ALICE,
      });
      expect(res.status).toBe(200);
      expect(res.json.data).toEqual({ a: 'dup-1', b: null, c: 'dup-2' });
      expect(res.json.errors).toHaveLength(1);
      expect(res.json.errors[0]).toMatchObject({ path: ['b'], extensions: { code: 'CONFLICT', status: 409 } });
      expect(writes().map((r) => JSON.parse(r.body!).number)).toEqual([104, 105, 106]);
    });

    it('other backend errors are BACKEND_ERROR with the status and message (a missing collection: 404)', async () => {
      const res = await gql(proxy.url, 'writes', 'mutation { createIntoMissing(number: 1) }', { auth: ALICE });
      expect(res.status).toBe(502);
      expect(res.json.errors[0].extensions).toMatchObject({ code: 'BACKEND_ERROR', status: 404 });
      expect(res.json.errors[0].message).toContain("Collection 'shop.nowhere' does not exist");
    });
  });

  describe('bulk insert', () => {
    it('[ID]: one POST with the array, the ids from the links', async () => {
      const res = await gql(proxy.url, 'writes', 'mutation ($o: [NewOrder!]!) { importOrders(orders: $o) }', {
        auth: ALICE,
        variables: {
          o: [
            { number: 200, total: 1 },
            { number: 201, total: 2 },
          ],
        },
      });
      expect(res.status).toBe(200);
      const ids = res.json.data.importOrders;
      expect(ids).toHaveLength(2);
      expect(writes()).toHaveLength(1);
      expect(JSON.parse(writes()[0]!.body!)).toEqual([
        { number: 200, total: 1, status: 'open' },
        { number: 201, total: 2, status: 'open' },
      ]);
      expect((byNumber(200)!._id as { $oid: string }).$oid).toBe(ids[0]);
    });

    it('Int: how many; an empty list is 0 without a backend call', async () => {
      const res = await gql(proxy.url, 'writes', 'mutation { importOrderCount(orders: [{number: 202, total: 1}, {number: 203, total: 1}, {number: 204, total: 1}]) }', { auth: ALICE });
      expect(res.json.data.importOrderCount).toBe(3);
      backend.clearRequests();
      const empty = await gql(proxy.url, 'writes', 'mutation { importOrderCount(orders: []) importOrders(orders: []) }', { auth: ALICE });
      expect(empty.json.data).toEqual({ importOrderCount: 0, importOrders: [] });
      expect(backend.requests).toHaveLength(0);
    });

    it('more documents than graphql.maxBulkWrite is a 400 before any write', async () => {
      const six = Array.from({ length: 6 }, (_, i) => ({ number: 300 + i, total: 1 }));
      const res = await gql(proxy.url, 'writes', 'mutation ($o: [NewOrder!]!) { importOrderCount(orders: $o) }', { auth: ALICE, variables: { o: six } });
      expect(res.status).toBe(400);
      expect(res.json.errors[0].extensions.code).toBe('BULK_WRITE_TOO_LARGE');
      expect(backend.requests).toHaveLength(0);
    });
  });

  describe('update', () => {
    it('by _id, object type: PATCH <collection>/<id> with the operators, the document after the update read back', async () => {
      const res = await gql(proxy.url, 'writes', `mutation { setStatus(id: "${hex(1)}", status: "shipped") { number status secret } }`, { auth: ALICE });
      expect(res.json).toEqual({ data: { setStatus: { number: 1, status: 'shipped', secret: null } } });
      const [patch] = writes();
      expect(patch).toMatchObject({ method: 'PATCH', path: `/shop/orders/${hex(1)}`, identity: { id: 'alice' } });
      expect(JSON.parse(patch!.body!)).toEqual({ $set: { status: 'shipped' } });
      expect(byNumber(1)!.status).toBe('shipped');
    });

    it('by _id, Boolean: whether a document matched; extra find keys go as the filter (only the caller own document)', async () => {
      const own = await gql(proxy.url, 'writes', `mutation { touchOwn(id: "${hex(2)}") }`, { auth: ALICE });
      expect(own.json.data.touchOwn).toBe(true);
      expect(JSON.parse(writes()[0]!.query.get('filter')!)).toEqual({ owner: 'alice' });
      const other = await gql(proxy.url, 'writes', `mutation { touchOwn(id: "${hex(7)}") }`, { auth: ALICE });
      expect(other.json).toEqual({ data: { touchOwn: false } });
      expect(byNumber(7)!.touched).toBeUndefined();
      expect(byNumber(2)!.touched).toBe(1);
    });

    it('many: true, Int: PATCH <collection>/*?filter= and the documents modified', async () => {
      const res = await gql(proxy.url, 'writes', 'mutation { closeAll(owner: "bob") }', { auth: ALICE });
      expect(res.json.data.closeAll).toBe(3);
      const [patch] = writes();
      expect(patch).toMatchObject({ method: 'PATCH', path: '/shop/orders/*' });
      expect(JSON.parse(patch!.query.get('filter')!)).toEqual({ owner: 'bob', status: 'open' });
      expect(orders().filter((o) => o.owner === 'bob' && o.status === 'open')).toHaveLength(0);
    });

    it('an update of a document that does not exist is false / null without an error', async () => {
      const res = await gql(proxy.url, 'writes', `mutation { tag(id: "${hex(999)}", tag: "x") setStatus(id: "${hex(999)}", status: "x") { number } }`, { auth: ALICE });
      expect(res.json).toEqual({ data: { tag: false, setStatus: null } });
    });
  });

  describe('delete', () => {
    it('by _id, object type: the document as it was (read before the delete), then DELETE <collection>/<id>', async () => {
      const res = await gql(proxy.url, 'writes', `mutation { deleteOrder(id: "${hex(3)}") { number owner secret } }`, { auth: ALICE });
      expect(res.json).toEqual({ data: { deleteOrder: { number: 3, owner: 'alice', secret: null } } });
      expect(backend.requests.map((r) => `${r.method} ${r.path}`)).toEqual(['GET /shop/orders', `DELETE /shop/orders/${hex(3)}`]);
      expect(byNumber(3)).toBeUndefined();
    });

    it('by _id, Boolean: whether one was deleted', async () => {
      const first = await gql(proxy.url, 'writes', `mutation { removeOrder(id: "${hex(4)}") }`, { auth: ALICE });
      expect(first.json.data.removeOrder).toBe(true);
      const again = await gql(proxy.url, 'writes', `mutation { removeOrder(id: "${hex(4)}") }`, { auth: ALICE });
      expect(again.json).toEqual({ data: { removeOrder: false } });
    });

    it('many: true, Int: DELETE <collection>/*?filter= and the documents deleted', async () => {
      const res = await gql(proxy.url, 'writes', 'mutation { purge(status: "closed") }', { auth: ALICE });
      const closed = res.json.data.purge;
      expect(closed).toBeGreaterThan(0);
      expect(writes()[0]).toMatchObject({ method: 'DELETE', path: '/shop/orders/*' });
      expect(JSON.parse(writes()[0]!.query.get('filter')!)).toEqual({ status: 'closed' });
      expect(orders().filter((o) => o.status === 'closed')).toHaveLength(0);
    });
  });

  describe('the same door as REST', () => {
    it('a write the ACL refuses for the REST request is FORBIDDEN with no backend write; the other fields still run', async () => {
      const res = await gql(proxy.url, 'writes', `mutation { createOrderId(number: 400, total: 1) removeOrder(id: "${hex(5)}") }`, { auth: BOB });
      expect(res.status).toBe(200);
      expect(res.json.data).toEqual({ createOrderId: null, removeOrder: null });
      expect(res.json.errors.map((e: { extensions: { code: string } }) => e.extensions.code)).toEqual(['FORBIDDEN', 'FORBIDDEN']);
      expect(res.json.errors[0].message).toContain('POST /shop/orders');
      expect(backend.requests).toHaveLength(0);
      expect(byNumber(5)).toBeDefined();
    });

    it('a write under a permission with a readFilter is refused, as the proxy refuses it (SPEC §3.6)', async () => {
      const rest = await call(proxy.url, '/shop/orders', { method: 'POST', auth: CAROL, body: { number: 401 } });
      expect(rest.status).toBe(403);
      backend.clearRequests();
      const res = await gql(proxy.url, 'writes', 'mutation { createOrderId(number: 401, total: 1) }', { auth: CAROL });
      expect(res.json.errors[0].extensions.code).toBe('FORBIDDEN');
      expect(res.json.errors[0].message).toContain('readFilter');
      expect(backend.requests).toHaveLength(0);
    });

    it('a Bearer key writes with the key roles', async () => {
      const issued = await call(proxy.url, '/keys', { method: 'POST', auth: ALICE, body: { name: 'reader-key', roles: ['reader'] } });
      expect(issued.status).toBe(201);
      const refused = await gql(proxy.url, 'writes', 'mutation { createOrderId(number: 402, total: 1) }', { auth: `Bearer ${issued.json.key}` });
      expect(refused.json.errors[0].extensions.code).toBe('FORBIDDEN');
      const writerKey = await call(proxy.url, '/keys', { method: 'POST', auth: ALICE, body: { name: 'writer-key', roles: ['writer'] } });
      backend.clearRequests();
      const ok = await gql(proxy.url, 'writes', 'mutation { createOrderId(number: 403, total: 1) }', { auth: `Bearer ${writerKey.json.key}` });
      expect(ok.json.data.createOrderId).toMatch(/^[0-9a-f]{24}$/);
      expect(writes()[0]!.identity).toMatchObject({ via: 'jwt', id: 'alice', roles: ['writer'] });
    });
  });

  describe('execution and HTTP', () => {
    it('a mutation over GET is 405 with Allow: POST, and nothing is written', async () => {
      const res = await call(proxy.url, `/graphql/writes?query=${encodeURIComponent('mutation { createOrderId(number: 500, total: 1) }')}`, {
        auth: ALICE,
        headers: { accept: 'application/graphql-response+json' },
      });
      expect(res.status).toBe(405);
      expect(res.headers.allow).toBe('POST');
      expect(backend.requests).toHaveLength(0);
    });

    it('more root fields than graphql.maxBackendWrites is a 400 before the first write', async () => {
      const fields = Array.from({ length: 5 }, (_, i) => `m${i}: createOrderId(number: ${600 + i}, total: 1)`).join(' ');
      const res = await gql(proxy.url, 'writes', `mutation { ${fields} }`, { auth: ALICE });
      expect(res.status).toBe(400);
      expect(res.json.errors[0].extensions.code).toBe('TOO_MANY_BACKEND_WRITES');
      expect(backend.requests).toHaveLength(0);
    });

    it('an omitted argument in a write is a field error, never a dropped condition', async () => {
      const res = await gql(proxy.url, 'writes', 'mutation { closeFor }', { auth: ALICE });
      expect(res.json.data).toEqual({ closeFor: null });
      expect(res.json.errors[0]).toMatchObject({ path: ['closeFor'], extensions: { code: 'MISSING_ARGUMENT' } });
      expect(backend.requests).toHaveLength(0);
    });

    it('the document inserted from a whole input object is read back through the readFilter: not the caller own, so null', async () => {
      const res = await gql(proxy.url, 'writes', 'mutation { insertWhole(input: {number: 701, total: 1}) { owner } }', { auth: ALICE });
      expect(res.json).toEqual({ data: { insertWhole: null } });
      expect(byNumber(701)).toMatchObject({ status: 'open' });
    });
  });

  describe('validation at write', () => {
    it('names every mistake with its path', async () => {
      const app = mutationApp('bad', 'bad');
      const m = (app.mappings as any).Mutation as Record<string, any>;
      m.createOrder = { collection: 'orders', insert: { number: 1 }, update: { $set: { a: 1 } } };
      m.setStatus = { collection: 'orders', find: { number: { $arg: 'id' } }, update: { $set: { status: 'x' } } };
      m.tag = { collection: 'orders', find: { _id: { $arg: 'id' } }, update: { status: 'x' } };
      m.closeAll = { collection: 'orders', find: { owner: 'x' }, many: true, update: { $where: 'sleep(1)' } };
      m.purge = { collection: 'orders', find: { status: { $arg: 'state' } }, many: true, delete: true };
      m.removeOrder = { collection: 'orders', find: { _id: { $fk: 'x' } }, delete: true };
      m.touchOwn = { collection: 'orders', find: { _id: { $arg: 'id' } }, update: [{ $set: { a: 1 } }] };
      m.importOrderCount = { collection: 'orders', insert: { number: 1 } };
      m.setAnything = { collection: 'orders', find: { _id: { $in: ['a', 'b'] } }, update: { $set: { a: 1 } } };
      delete m.deleteOrder;
      const res = await call(proxy.url, '/gql-apps/bad', { method: 'PUT', auth: ROOT, body: app });
      expect(res.status).toBe(400);
      const message: string = res.json.message;
      for (const expected of [
        'mappings.Mutation.createOrder must have exactly one of insert, update or delete',
        'mappings.Mutation.setStatus.find must bind _id',
        'mappings.Mutation.tag.update.status: a plain key at the top of update',
        'mappings.Mutation.closeAll.update.$where: the operator $where is not allowed',
        'mappings.Mutation.purge.find.status.$arg: the field purge has no argument "state"',
        'mappings.Mutation.removeOrder.find._id: $fk has no meaning in a mutation',
        'mappings.Mutation.touchOwn.update: an aggregation pipeline',
        'mappings.Mutation.importOrderCount: the field returns Int, but a single-document insert returns',
        'mappings.Mutation.deleteOrder: the mutation field deleteOrder has no mapping',
        'mappings.Mutation.setAnything.find._id must be one id',
      ])
        expect(message).toContain(expected);
      const many = mutationApp('bad2', 'bad2');
      ((many.mappings as any).Mutation as Record<string, any>).setStatus = { collection: 'orders', find: { status: 'x' }, many: true, update: { $set: { status: 'y' } } };
      const res2 = await call(proxy.url, '/gql-apps/bad2', { method: 'PUT', auth: ROOT, body: many });
      expect(res2.json.message).toContain('mappings.Mutation.setStatus: the field returns Order, but update with many: true returns Int');
    });
  });
});
