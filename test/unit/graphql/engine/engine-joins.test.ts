/**
 * `$fk` joins: batched per request into one backend read, split back per parent, each parent's
 * sort/skip/limit applied. Reads are counted at the stand-in backend (real HTTP, mingo).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { oid, startEngine, type Data, type Engine } from '../helpers.js';

const pad = (n: number) => String(n).padStart(3, '0');
const users = Array.from({ length: 100 }, (_, i) => ({ _id: oid(i + 1), name: `user${i}` }));
const orders = [
  // o000..o099: one order per user, total = i.
  ...Array.from({ length: 100 }, (_, i) => ({
    _id: `o${pad(i)}`,
    userId: oid(i + 1),
    total: i,
    productIds: [`p${i % 5}`, `p${(i + 1) % 5}`],
    pattern: i < 2 ? `^note${i}` : undefined,
    note: `note${i % 3}`,
  })),
  // o100..o199: users 0..9 get ten more orders each, total 100+j.
  ...Array.from({ length: 100 }, (_, j) => ({ _id: `o${pad(100 + j)}`, userId: oid((j % 10) + 1), total: 100 + j, productIds: [], note: 'x' })),
];
const products = Array.from({ length: 5 }, (_, i) => ({ _id: `p${i}`, name: `product${i}` }));
const groups = [{ _id: 'g1' }, { _id: 'g2' }, { _id: 'g3' }];
const members = groups.flatMap((g, gi) => Array.from({ length: 400 }, (_, k) => ({ _id: gi * 1000 + k, groupId: g._id })));

export const joinsData: Data = {
  restheart: {
    users,
    orders,
    products,
    groups,
    members,
    badorders: [{ _id: 'bad', userId: { $ne: null }, total: 1 }],
  },
};

export const joinsApp = {
  descriptor: { uri: 'joins' },
  schema: `
    type User { id: ObjectId, name: String, orders(limit: Int = 100, skip: Int = 0): [Order], topOrder: Order }
    type Order { id: String, total: Int, user: User, products: [Product], bigger: [Order], similar: [Order], ghost: User, note: String }
    type Product { id: String, name: String, buyer: User }
    type Group { id: String, members(limit: Int = 1000): [Member] }
    type Member { id: Int }
    type Query { orders(limit: Int = 100, skip: Int = 0): [Order], users(limit: Int = 100): [User], groups: [Group], badOrders: [Order] }
  `,
  mappings: {
    Query: {
      orders: { collection: 'orders', skip: { $arg: 'skip' }, limit: { $arg: 'limit' } },
      users: { collection: 'users', limit: { $arg: 'limit' } },
      groups: { collection: 'groups' },
      badOrders: { collection: 'badorders' },
    },
    User: {
      id: '_id',
      orders: { collection: 'orders', find: { userId: { $fk: '_id' } }, sort: { total: -1 }, skip: { $arg: 'skip' }, limit: { $arg: 'limit' } },
      topOrder: { collection: 'orders', find: { userId: { $fk: '_id' } }, sort: { total: -1 } },
    },
    Order: {
      id: '_id',
      user: { collection: 'users', find: { _id: { $fk: 'userId' } } },
      products: { collection: 'products', find: { _id: { $in: { $fk: 'productIds' } } } },
      bigger: { collection: 'orders', find: { userId: { $fk: 'userId' }, total: { $gt: { $fk: 'total' } } }, sort: { total: 1 } },
      similar: { collection: 'orders', find: { note: { $regex: { $fk: 'pattern' } } }, sort: { total: 1 }, limit: 2 },
      ghost: { collection: 'users', find: { _id: { $fk: 'noSuchField' } } },
    },
    Product: { id: '_id', buyer: { collection: 'users', find: { _id: { $arg: 'rootDoc.userId' } } } },
    Group: { id: '_id', members: { collection: 'members', find: { groupId: { $fk: '_id' } }, limit: { $arg: 'limit' } } },
    Member: { id: '_id' },
  },
};

let e: Engine;
beforeAll(async () => {
  e = await startEngine(joinsData, joinsApp);
});
afterAll(() => e.close());

describe('batched $fk joins', () => {
  it('100 orders with their users cost exactly 2 backend reads ($in of the foreign values)', async () => {
    const r = await e.run('{ orders(limit: 100) { id total user { id name } } }');
    expect(r.status).toBe(200);
    expect(r.body.data.orders).toHaveLength(100);
    for (const [i, o] of r.body.data.orders.entries()) expect(o.user).toEqual({ id: oid(i + 1), name: `user${i}` });
    const reads = e.reads();
    expect(reads).toHaveLength(2);
    expect(r.backendReads).toBe(2);
    expect(reads[1]!.path).toBe('/restheart/users');
    const filter = e.filters()[1] as any;
    expect(Object.keys(filter)).toEqual(['_id']);
    expect(filter._id.$in).toHaveLength(100);
    expect(reads[1]!.url.length).toBeLessThan(8192);
  });

  it('joins a list of foreign values ({$in: {$fk}}) in one read and splits it per parent', async () => {
    const r = await e.run('{ orders(limit: 3) { id products { id } } }');
    expect(r.body.data.orders.map((o: any) => o.products.map((p: any) => p.id))).toEqual([
      ['p0', 'p1'],
      ['p1', 'p2'],
      ['p2', 'p3'],
    ]);
    expect(e.reads()).toHaveLength(2);
    expect(e.filters()[1]).toEqual({ _id: { $in: ['p0', 'p1', 'p2', 'p3'] } });
  });

  it("applies each parent's sort, skip and limit to its own documents (one read)", async () => {
    const r = await e.run('{ users(limit: 12) { name orders(limit: 2, skip: 1) { total } topOrder { total } } }');
    const got = r.body.data.users.map((u: any) => [u.orders.map((o: any) => o.total), u.topOrder.total]);
    for (let i = 0; i < 10; i++) expect(got[i]).toEqual([[180 + i, 170 + i], 190 + i]);
    expect(got[10]).toEqual([[], 10]);
    expect(got[11]).toEqual([[], 11]);
    // users, orders(limit 2 skip 1) for 12 users, topOrder for 12 users: the two joins differ in window only
    // but share db/collection/sort, so they share one batch.
    expect(e.reads()).toHaveLength(2);
    expect(JSON.parse(e.reads()[1]!.query.get('sort')!)).toEqual({ total: -1 });
  });

  it('batches finds that are not an equality as one $or read, split by evaluating each find', async () => {
    const r = await e.run('{ orders(limit: 3) { total bigger { total } } }');
    expect(r.body.data.orders[0].bigger.map((o: any) => o.total)).toEqual([100, 110, 120, 130, 140, 150, 160, 170, 180, 190]);
    expect(r.body.data.orders[1].bigger.map((o: any) => o.total)).toEqual([101, 111, 121, 131, 141, 151, 161, 171, 181, 191]);
    expect(e.reads()).toHaveLength(2);
    const filter = e.filters()[1] as any;
    expect(filter.$or).toHaveLength(3);
    expect(filter.$or[0]).toEqual({ userId: oid(1), total: { $gt: 0 } });
  });

  it('reads finds the proxy cannot evaluate locally ($regex) one by one, still batched per distinct find', async () => {
    const r = await e.run('{ orders(limit: 3) { id similar { id } } }');
    expect(r.body.data.orders.map((o: any) => o.similar.map((s: any) => s.id))).toEqual([['o000', 'o003'], ['o001', 'o004'], []]);
    // root + one read per distinct find (order 2 has no pattern: no read).
    expect(e.reads()).toHaveLength(3);
  });

  it('a missing foreign value joins nothing, without a read', async () => {
    const r = await e.run('{ orders(limit: 2) { ghost { id } } }');
    expect(r.body.data.orders).toEqual([{ ghost: null }, { ghost: null }]);
    expect(e.reads()).toHaveLength(1);
  });

  it('refuses a foreign value that is an operator object (injection from stored data)', async () => {
    const r = await e.run('{ badOrders { total user { id } } }');
    expect(r.status).toBe(200);
    expect(r.body.data.badOrders).toEqual([{ total: 1, user: null }]);
    expect(r.body.errors[0]).toMatchObject({ path: ['badOrders', 0, 'user'], extensions: { code: 'INVALID_FOREIGN_VALUE' } });
    expect(e.reads()).toHaveLength(1);
  });

  it('takes further pages of 1000 when a batch exceeds one page, and stops once every parent is served', async () => {
    const all = await e.run('{ groups { id members { id } } }');
    expect(all.body.data.groups.map((g: any) => g.members.length)).toEqual([400, 400, 400]);
    expect(all.body.data.groups[2].members[0]).toEqual({ id: 2000 });
    expect(e.reads().map((x) => [x.path, x.query.get('page'), x.query.get('pagesize')])).toEqual([
      ['/restheart/groups', '1', '100'],
      ['/restheart/members', '1', '1000'],
      ['/restheart/members', '2', '1000'],
    ]);
    const few = await e.run('{ groups { members(limit: 5) { id } } }');
    expect(few.body.data.groups.map((g: any) => g.members.length)).toEqual([5, 5, 5]);
    expect(e.reads()).toHaveLength(2);
  });

  it('rootDoc: the document the root field returned, per parent even when joined documents are shared', async () => {
    const r = await e.run('{ orders(limit: 2) { id products { id buyer { name } } } }');
    expect(r.body.data.orders).toEqual([
      {
        id: 'o000',
        products: [
          { id: 'p0', buyer: { name: 'user0' } },
          { id: 'p1', buyer: { name: 'user0' } },
        ],
      },
      {
        id: 'o001',
        products: [
          { id: 'p1', buyer: { name: 'user1' } },
          { id: 'p2', buyer: { name: 'user1' } },
        ],
      },
    ]);
    // orders, products (one batch), buyers (one $in batch).
    expect(e.reads()).toHaveLength(3);
  });

  it('nested joins cost one read per level', async () => {
    const r = await e.run('{ orders(limit: 20) { user { orders(limit: 1) { user { name } } } } }');
    expect(r.body.data.orders[5].user.orders[0].user.name).toBe('user5');
    expect(e.reads()).toHaveLength(4);
  });
});

describe('batches too large for one URL', () => {
  let small: Engine;
  beforeAll(async () => {
    small = await startEngine(joinsData, joinsApp, { maxFilterBytes: 600 });
  });
  afterAll(() => small.close());

  it('are split into several reads whose results are merged and sorted', async () => {
    const r = await small.run('{ orders(limit: 100) { user { name } } users(limit: 30) { orders(limit: 3) { total } } }');
    for (const [i, o] of r.body.data.orders.entries()) expect(o.user.name).toBe(`user${i}`);
    for (let i = 0; i < 10; i++) expect(r.body.data.users[i].orders.map((o: any) => o.total)).toEqual([190 + i, 180 + i, 170 + i]);
    const userReads = small.reads().filter((x) => x.path === '/restheart/users');
    expect(userReads.length).toBeGreaterThan(2);
    for (const read of small.reads()) expect(encodeURIComponent(read.query.get('filter') ?? '').length).toBeLessThan(1200);
  });
});

describe("the caller's read policy (readFilter / projectResponse)", () => {
  let guarded: Engine;
  const asked: string[] = [];
  beforeAll(async () => {
    guarded = await startEngine(joinsData, joinsApp, {
      readPolicy: ({ db, collection }, ctx) => {
        asked.push(`${db}/${collection}/${String(ctx.principal?.id)}`);
        if (collection === 'products') return { allow: false, message: 'you may not read products' };
        if (collection === 'users') return { allow: true, filter: { name: { $in: ['user0', 'user1'] } } };
        if (collection === 'orders') {
          return { allow: true, project: (d: any) => Object.fromEntries(Object.entries(d).filter(([k]) => k !== 'userId' && k !== 'total')) };
        }
        return { allow: true };
      },
    });
  });
  afterAll(() => guarded.close());

  it('ANDs the readFilter into every read, denies what the policy denies, asks once per collection', async () => {
    asked.length = 0;
    const r = await guarded.run('{ users(limit: 3) { name } orders(limit: 2) { id products { id } } }', undefined, {
      principal: { id: 'alice', roles: ['user'] },
    });
    expect(r.status).toBe(200);
    expect(r.body.data.users).toEqual([{ name: 'user0' }, { name: 'user1' }]);
    expect(r.body.data.orders).toEqual([
      { id: 'o000', products: null },
      { id: 'o001', products: null },
    ]);
    expect(r.body.errors[0]).toMatchObject({ message: 'you may not read products', extensions: { code: 'FORBIDDEN' } });
    expect(guarded.filters()).toContainEqual({ name: { $in: ['user0', 'user1'] } });
    expect(guarded.reads().some((x) => x.path.endsWith('/products'))).toBe(false);
    expect(asked.sort()).toEqual(['restheart/orders/alice', 'restheart/products/alice', 'restheart/users/alice']);
    const joined = await guarded.run('{ users(limit: 1) { orders(limit: 1) { id } } }');
    expect(joined.body.data.users).toEqual([{ orders: [{ id: 'o190' }] }]);
  });

  it('projects what the client sees; joins see it too, as a REST client would', async () => {
    // The parent's userId is projected away: like a REST client, the join cannot read it.
    const parentSide = await guarded.run('{ orders(limit: 2) { id total user { name } } }');
    expect(parentSide.body.data.orders).toEqual([
      { id: 'o000', total: null, user: null },
      { id: 'o001', total: null, user: null },
    ]);
    // Filters match on fields the projection hides (as the backend's filter does for REST clients):
    // each user's orders are found by the hidden userId, and shown without it.
    const childSide = await guarded.run('{ users(limit: 2) { name orders(limit: 2) { id total } } }');
    expect(childSide.body.data.users).toEqual([
      {
        name: 'user0',
        orders: [
          { id: 'o190', total: null },
          { id: 'o180', total: null },
        ],
      },
      {
        name: 'user1',
        orders: [
          { id: 'o191', total: null },
          { id: 'o181', total: null },
        ],
      },
    ]);
  });
});
