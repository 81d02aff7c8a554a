/**
 * Parents that ask a join for the same documents, in the same window, while one batch is queued
 * share one entry of the batch (as DataLoader's per-request cache does): the reads and what each
 * parent receives are the same as if each had queued its own. Reads are counted at the stand-in
 * backend (real HTTP, mingo); entries are counted with a spy on `JoinBatcher.load`.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { JoinBatcher } from '../../../../src/graphql/reads/batch-joins.js';
import { RequestState } from '../../../../src/graphql/reads/request-state.js';
import { compileQueryMapping, compileStaticInJoin, resolveQuery, staticInJoinQuery, type ResolvedQuery } from '../../../../src/graphql/reads/translate.js';
import { DEFAULT_LIMITS, type BackendRead } from '../../../../src/graphql/types.js';
import { startEngine, type Data, type Engine } from '../helpers.js';

const users = [1, 2, 3].map((n) => ({ _id: `u${n}`, name: `user${n}` }));
// 12 orders, 4 per user (order i belongs to user (i % 3) + 1); total = i.
const orders = Array.from({ length: 12 }, (_, i) => ({
  _id: `o${String(i).padStart(2, '0')}`,
  userId: `u${(i % 3) + 1}`,
  total: i,
  productIds: i === 0 ? ['a\u0001sb'] : i === 1 ? ['a', 'b'] : i === 2 ? ['b', 'a'] : [],
}));
const products = [{ _id: 'a' }, { _id: 'b' }, { _id: 'a\u0001sb' }];
const data: Data = { restheart: { users, orders, products } };

const app = {
  descriptor: { uri: 'sharing' },
  schema: `
    type User { id: String, name: String }
    type Product { id: String }
    type Order {
      id: String, total: Int, user: User, userIn(name: String): User, products: [Product]
      siblings(limit: Int = 100, skip: Int = 0): [Order], siblingsAsc: [Order], firstSibling: Order, topSibling: [Order]
    }
    type Query { orders(limit: Int = 100): [Order] }
  `,
  mappings: {
    Query: { orders: { collection: 'orders', sort: { total: 1 }, limit: { $arg: 'limit' } } },
    User: { id: '_id' },
    Product: { id: '_id' },
    Order: {
      id: '_id',
      // Static: everything but the foreign value is known when the app is compiled.
      user: { collection: 'users', find: { _id: { $fk: 'userId' } } },
      // Not static: an argument in the find.
      userIn: { collection: 'users', find: { _id: { $fk: 'userId' }, name: { $arg: 'name' } } },
      products: { collection: 'products', find: { _id: { $in: { $fk: 'productIds' } } } },
      // The window comes from arguments.
      siblings: { collection: 'orders', find: { userId: { $fk: 'userId' } }, sort: { total: -1 }, skip: { $arg: 'skip' }, limit: { $arg: 'limit' } },
      siblingsAsc: { collection: 'orders', find: { userId: { $fk: 'userId' } }, sort: { total: 1 } },
      firstSibling: { collection: 'orders', find: { userId: { $fk: 'userId' } }, sort: { total: -1 } },
      topSibling: { collection: 'orders', find: { userId: { $fk: 'userId' } }, sort: { total: -1 }, limit: 1 },
    },
  },
};

/** The totals of the orders of order i's user, descending. */
const siblingTotals = (i: number) =>
  orders
    .filter((o) => o.userId === orders[i]!.userId)
    .map((o) => o.total)
    .sort((a, b) => b - a);

let e: Engine;
beforeAll(async () => {
  e = await startEngine(data, app);
});
afterAll(() => e.close());
afterEach(() => vi.restoreAllMocks());

/** Entries queued in join batches since the spy was set: the distinct promises `load` gave. */
const entries = (load: { mock: { results: Array<{ value: unknown }> } }) => new Set(load.mock.results.map((r) => r.value)).size;

describe('parents asking for the same documents share one entry of the batch', () => {
  it('12 orders of 3 users: 3 entries, every order gets its own user, 2 reads', async () => {
    const load = vi.spyOn(JoinBatcher.prototype, 'load');
    const r = await e.run('{ orders { id user { id name } } }');
    expect(r.status).toBe(200);
    expect(r.body.data.orders).toEqual(orders.map((o) => ({ id: o._id, user: { id: o.userId, name: `user${o.userId.slice(1)}` } })));
    // Static mapping: a parent whose entry is queued already does not even call load.
    expect(load).toHaveBeenCalledTimes(3);
    expect(e.reads()).toHaveLength(2);
    expect(e.filters()[1]).toEqual({ _id: { $in: ['u1', 'u2', 'u3'] } });
  });

  it('also when the find holds arguments (resolved per parent, then shared)', async () => {
    const load = vi.spyOn(JoinBatcher.prototype, 'load');
    const r = await e.run('{ orders { userIn { name } named: userIn(name: "user2") { name } } }');
    expect(r.body.data.orders.map((o: any) => o.userIn.name)).toEqual(orders.map((o) => `user${o.userId.slice(1)}`));
    expect(r.body.data.orders.map((o: any) => o.named?.name ?? null)).toEqual(orders.map((o) => (o.userId === 'u2' ? 'user2' : null)));
    // 3 users × (no name, name "user2"); the two finds differ, so they are two groups: 3 reads.
    expect(entries(load)).toBe(6);
    expect(e.reads()).toHaveLength(3);
  });

  it('different windows of the same documents are separate entries, each sliced on its own (one read)', async () => {
    const load = vi.spyOn(JoinBatcher.prototype, 'load');
    const r = await e.run('{ orders { a: siblings(limit: 2) { total } b: siblings(limit: 2, skip: 1) { total } c: siblings { total } d: siblings(limit: 2) { total } } }');
    r.body.data.orders.forEach((o: any, i: number) => {
      const all = siblingTotals(i);
      expect(o.a.map((x: any) => x.total)).toEqual(all.slice(0, 2));
      expect(o.b.map((x: any) => x.total)).toEqual(all.slice(1, 3));
      expect(o.c.map((x: any) => x.total)).toEqual(all);
      expect(o.d).toEqual(o.a);
    });
    // 3 users × 3 windows (a and d ask for the same window).
    expect(entries(load)).toBe(9);
    expect(e.reads()).toHaveLength(2);
  });

  it('sorts are not mixed up, and a non-list field gets a document where a list field of the same window gets a list', async () => {
    const r = await e.run('{ orders { desc: siblings(limit: 1) { total } asc: siblingsAsc { total } first: firstSibling { total } top: topSibling { total } } }');
    r.body.data.orders.forEach((o: any, i: number) => {
      const all = siblingTotals(i);
      expect(o.desc).toEqual([{ total: all[0] }]);
      expect(o.asc.map((x: any) => x.total)).toEqual([...all].reverse());
      expect(o.first).toEqual({ total: all[0] });
      expect(o.top).toEqual([{ total: all[0] }]);
    });
    // orders; one batch per sort.
    expect(e.reads()).toHaveLength(3);
    expect(e.reads().map((x) => x.query.get('sort'))).toEqual(['{"total":1}', '{"total":-1}', '{"total":1}']);
  });

  it('lists of foreign values share by all their values, never by a string that merely looks like two', async () => {
    const r = await e.run('{ orders(limit: 3) { id products { id } } }');
    expect(r.body.data.orders).toEqual([
      { id: 'o00', products: [{ id: 'a\u0001sb' }] },
      { id: 'o01', products: [{ id: 'a' }, { id: 'b' }] },
      { id: 'o02', products: [{ id: 'a' }, { id: 'b' }] },
    ]);
    expect(e.reads()).toHaveLength(2);
  });
});

describe('a shared entry that fails', () => {
  const policy = { readPolicy: ({ collection }: { collection: string }) => (collection === 'users' ? { allow: false as const, message: 'you may not read users' } : { allow: true as const }) };
  let denied: Engine;
  let deniedLazy: Engine;
  beforeAll(async () => {
    denied = await startEngine(data, app, policy);
    deniedLazy = await startEngine(data, app, { ...policy, prefetchJoins: false });
  });
  afterAll(async () => {
    await denied.close();
    await deniedLazy.close();
  });

  it('is an error at every parent that shares it', async () => {
    for (const [engine, order] of [
      // Answered synchronously: in document order.
      [denied, [0, 1, 2, 3, 4, 5]],
      // Completed lazily: grouped by shared entry (as with DataLoader).
      [deniedLazy, [0, 3, 1, 4, 2, 5]],
    ] as const) {
      const r = await engine.run('{ orders(limit: 6) { id user { name } } }');
      expect(r.status).toBe(200);
      expect(r.body.data.orders.map((o: any) => o.user)).toEqual([null, null, null, null, null, null]);
      expect(r.body.errors.map((x: any) => x.path[1])).toEqual(order);
      for (const error of r.body.errors) {
        expect(error).toMatchObject({ message: 'you may not read users', path: ['orders', error.path[1], 'user'], extensions: { code: 'FORBIDDEN' } });
      }
    }
  });
});

describe('JoinBatcher', () => {
  const query = (userId: string, skip = 0, limit = 100): ResolvedQuery => {
    const r = resolveQuery(
      compileQueryMapping('Order.siblings', { collection: 'orders', find: { userId: { $fk: 'userId' } }, sort: { total: -1 }, skip, limit }, 'restheart'),
      { args: {}, parent: { userId } },
      DEFAULT_LIMITS,
      false,
    );
    if (r.empty) throw new Error('unexpected empty join');
    return r.query;
  };

  it('shares equal loads within a batch only: the next batch reads again, as before', async () => {
    const reads: BackendRead[] = [];
    const reader = {
      find: async (read: BackendRead) => {
        reads.push(read);
        const want = (read.filter as { userId: string | { $in: string[] } }).userId;
        const ids = typeof want === 'string' ? [want] : want.$in;
        return orders.filter((o) => ids.includes(o.userId)).sort((a, b) => b.total - a.total);
      },
    };
    const state = new RequestState({ limits: DEFAULT_LIMITS, reader, maxFilterBytes: 6144 }, {}, new AbortController().signal);
    const first = state.joins.load(query('u1'), false);
    expect(state.joins.load(query('u1'), false)).toBe(first);
    const windowed = state.joins.load(query('u1', 1, 2), false);
    expect(windowed).not.toBe(first);
    const single = state.joins.load({ ...query('u1'), limit: 1 }, true);
    const other = state.joins.load(query('u2'), false);
    expect([await first, await windowed, await single, await other]).toEqual([[9, 6, 3, 0].map((t) => orders[t]), [6, 3].map((t) => orders[t]), orders[9], [10, 7, 4, 1].map((t) => orders[t])]);
    expect(reads).toHaveLength(1);
    const again = state.joins.load(query('u1'), false);
    expect(again).not.toBe(first);
    expect(await again).toEqual(await first);
    expect(reads).toHaveLength(2);
  });
});

describe('compileStaticInJoin', () => {
  const limits = DEFAULT_LIMITS;
  const mappings = {
    equality: { collection: 'users', find: { _id: { $fk: 'userId' } } },
    withRest: { collection: 'orders', find: { userId: { $fk: 'u.id' }, status: 'open', $or: [{ a: 1 }, { b: { $gt: 2 } }] }, sort: { at: -1 }, skip: 3, limit: 7 },
    list: { collection: 'products', find: { _id: { $in: { $fk: 'productIds' } } }, limit: 0 },
  };

  it('precomputes everything but the foreign value: each parent gets the query resolveQuery gives it', () => {
    const parents = [
      { userId: 'x', u: { id: 5 }, productIds: ['p', null, 'q'] },
      { userId: { $oid: 'AB00000000000000000000CD' }, u: { id: 'y' }, productIds: 'p' },
    ];
    for (const [name, mapping] of Object.entries(mappings)) {
      const compiled = compileQueryMapping(name, mapping, 'db');
      for (const single of [false, true]) {
        const fixed = compileStaticInJoin(compiled, limits, single);
        expect(fixed, name).toBeDefined();
        for (const parent of parents) {
          const r = resolveQuery(compiled, { args: {}, parent }, limits, single);
          if (r.empty || !r.query.inJoin) throw new Error('expected an $in join');
          const { values, valueKeys } = r.query.inJoin;
          expect(staticInJoinQuery(fixed!, [...values], [...valueKeys])).toEqual(r.query);
        }
      }
    }
  });

  it('leaves mappings with arguments, and ones that would fail, to resolveQuery', () => {
    const m = (mapping: Record<string, unknown>) => compileStaticInJoin(compileQueryMapping('x', { collection: 'c', ...mapping } as never, 'db'), limits, false);
    expect(m({ find: { a: { $fk: 'a' }, b: { $arg: 'b' } } })).toBeUndefined();
    expect(m({ find: { a: { $fk: 'a' } }, limit: { $arg: 'n' } })).toBeUndefined();
    expect(m({ find: { a: { $fk: 'a' } }, skip: { $arg: 'n' } })).toBeUndefined();
    expect(m({ find: { a: { $fk: 'a' } }, sort: { b: 2 } })).toBeUndefined();
    expect(m({ find: { a: { $fk: 'a' } }, limit: 5000 })).toBeUndefined();
    expect(m({ find: { a: { $gt: { $fk: 'a' } } } })).toBeUndefined();
    expect(m({ find: { a: { $fk: 'a' } } })).toMatchObject({ skip: 0, limit: 100, windowKey: '0:100' });
    expect(compileStaticInJoin(compileQueryMapping('x', { collection: 'c', find: { a: { $fk: 'a' } } }, 'db'), limits, true)).toMatchObject({
      limit: 1,
      windowKey: '0:1:1',
    });
  });
});
