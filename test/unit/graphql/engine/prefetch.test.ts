/**
 * Joins answered synchronously (prefetch.ts) change nothing but the cost: every query below runs
 * on an engine that prefetches (the default) and on one that completes every join lazily
 * (`prefetchJoins: false`), against identical backends, and must give the same data, the same
 * errors and exactly the same backend reads (same URLs: filters, `$in` value order, pages).
 */
import type { GraphQLFieldResolver, GraphQLObjectType } from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ReadDecision } from '../../../../src/graphql/types.js';
import { startEngine, type Data, type Engine } from '../helpers.js';

const u = (i: number) => `u${i % 10}`;
const users = Array.from({ length: 10 }, (_, i) => ({
  _id: u(i),
  name: `user${i}`,
  address: { city: `city${i % 4}`, countryCode: ['no', 'pe', 'in'][i % 3] },
  friendIds: [u(i + 1), u(i + 2)],
}));
const orders = Array.from({ length: 30 }, (_, i) => ({
  _id: `o${String(i).padStart(2, '0')}`,
  ...(i === 7 ? {} : { userId: u(i) }),
  buyerId: u(i + 5),
  total: i,
  status: i % 3 === 0 ? 'closed' : 'open',
  productIds: [`p${i % 5}`, `p${(i + 2) % 5}`],
  note: `note${i % 3}`,
  ...(i < 2 ? { pattern: `^note${i}` } : {}),
  ...(i === 5 || i === 6 ? {} : { strict: i }),
  secretId: 's1',
}));
const data: Data = {
  restheart: {
    users,
    orders,
    products: Array.from({ length: 5 }, (_, i) => ({ _id: `p${i}`, name: `product${i}`, internal: 'hidden' })),
    countries: [
      { code: 'no', name: 'Norway' },
      { code: 'pe', name: 'Peru' },
      { code: 'in', name: 'India' },
    ],
    strict: [{ _id: 's1', userId: 'u1' }, { userId: 'u2' }, { _id: 's3', userId: 'u3' }],
    secrets: [{ _id: 's1' }],
    badorders: [
      { _id: 'bad', userId: { $ne: null } },
      { _id: 'good', userId: 'u4' },
    ],
  },
};

const app = {
  descriptor: { uri: 'prefetch' },
  schema: `
    enum Status { OPEN CLOSED }
    type Country { code: String, name: String }
    type Address { city: String, country: Country }
    type Product { id: String, name: String, internal: String }
    type Secret { id: String }
    type User {
      id: String, name: String, city: String, address: Address
      orders(limit: Int = 100, skip: Int = 0): [Order], top: Order, friends: [User], nationality: Country
    }
    type Order {
      id: String, total: Int, status: Status, strict: Int!, user: User, buyer: User, products: [Product]
      bigger: [Order], similar: [Order], ghost: User, secret: Secret
    }
    type Strict { id: String!, user: User }
    type Query {
      orders(limit: Int = 100, skip: Int = 0): [Order], users(limit: Int = 100): [User], one(id: String): Order
      strict: [Strict], strictItems: [Order!], badOrders: [Order]
    }
  `,
  mappings: {
    Status: { OPEN: 'open', CLOSED: 'closed' },
    Query: {
      orders: { collection: 'orders', sort: { total: 1 }, skip: { $arg: 'skip' }, limit: { $arg: 'limit' } },
      users: { collection: 'users', limit: { $arg: 'limit' } },
      one: { collection: 'orders', find: { _id: { $arg: 'id' } } },
      strict: { collection: 'strict' },
      strictItems: { collection: 'orders', sort: { total: 1 }, limit: 10 },
      badOrders: { collection: 'badorders' },
    },
    User: {
      id: '_id',
      city: 'address.city',
      orders: { collection: 'orders', find: { userId: { $fk: '_id' } }, sort: { total: -1 }, skip: { $arg: 'skip' }, limit: { $arg: 'limit' } },
      top: { collection: 'orders', find: { userId: { $fk: '_id' } }, sort: { total: -1 } },
      friends: { collection: 'users', find: { _id: { $in: { $fk: 'friendIds' } } } },
      // The same group as Address.country: lazily, both are one batch.
      nationality: { collection: 'countries', find: { code: { $fk: 'address.countryCode' } } },
    },
    Address: { country: { collection: 'countries', find: { code: { $fk: 'countryCode' } } } },
    Product: { id: '_id' },
    Secret: { id: '_id' },
    Order: {
      id: '_id',
      user: { collection: 'users', find: { _id: { $fk: 'userId' } } },
      // The same batch group as Order.user: the order of their loads shows in the $in.
      buyer: { collection: 'users', find: { _id: { $fk: 'buyerId' } } },
      products: { collection: 'products', find: { _id: { $in: { $fk: 'productIds' } } } },
      bigger: { collection: 'orders', find: { userId: { $fk: 'userId' }, total: { $gt: { $fk: 'total' } } }, sort: { total: 1 } },
      similar: { collection: 'orders', find: { note: { $regex: { $fk: 'pattern' } } }, sort: { total: 1 }, limit: 2 },
      ghost: { collection: 'users', find: { _id: { $fk: 'noSuchField' } } },
      secret: { collection: 'secrets', find: { _id: { $fk: 'secretId' } } },
    },
    Strict: { id: '_id', user: { collection: 'users', find: { _id: { $fk: 'userId' } } } },
  },
};

const readPolicy = ({ collection }: { collection: string }): ReadDecision => {
  if (collection === 'secrets') return { allow: false, message: 'you may not read secrets' };
  if (collection === 'products') {
    return { allow: true, project: (d) => Object.fromEntries(Object.entries(d as object).filter(([k]) => k !== 'internal')) };
  }
  return { allow: true };
};

let eager: Engine;
let lazy: Engine;
beforeAll(async () => {
  // The prefetcher itself: documents direct execution would answer are left to it here (direct-execution.test.ts).
  eager = await startEngine(data, app, { readPolicy, directExecution: false });
  lazy = await startEngine(data, app, { readPolicy, prefetchJoins: false });
});
afterAll(async () => {
  await eager.close();
  await lazy.close();
});

const byPath = (errors: any[] | undefined) => (errors ?? []).map((e) => JSON.stringify([e.path, e.message, e.extensions?.code])).sort();
const readsOf = (e: Engine) =>
  e
    .reads()
    .map((r) => decodeURIComponent(r.url))
    .sort();

/** The expected answers, worked out from the data above (not from either engine). */
const userOf = (id: string) => users.find((x) => x._id === id)!;
const ordersOfUser = (id: string) => orders.filter((o) => o.userId === id).sort((x, y) => y.total - x.total);
const countryName = (code: string | undefined) => data.restheart!.countries!.find((c) => c.code === code)!.name;

async function same(query: string, variables?: Record<string, unknown>): Promise<any> {
  const a = await eager.run(query, variables);
  const aReads = readsOf(eager);
  const b = await lazy.run(query, variables);
  const bReads = readsOf(lazy);
  expect(a.status).toBe(b.status);
  expect(a.body.data).toEqual(b.body.data);
  expect(byPath(a.body.errors)).toEqual(byPath(b.body.errors));
  expect(aReads).toEqual(bReads);
  expect(a.backendReads).toBe(b.backendReads);
  return a;
}

describe('prefetched joins answer exactly as lazily completed ones', () => {
  it('loads start document by document, field by field, as graphql-js starts them', async () => {
    const r = await same('{ orders(limit: 4) { user { name } buyer { name } } }');
    expect(eager.filters()[1]).toEqual({ _id: { $in: ['u0', 'u5', 'u1', 'u6', 'u2', 'u7', 'u3', 'u8'] } });
    expect(r.backendReads).toBe(2);
  });

  it('a list with one join each (the benchmark shape)', async () => {
    const r = await same('{ orders(limit: 30) { id total status user { id name city } } }');
    expect(r.body.data.orders[3]).toEqual({ id: 'o03', total: 3, status: 'CLOSED', user: { id: 'u3', name: 'user3', city: 'city3' } });
    expect(r.body.data.orders[7].user).toBeNull();
    expect(r.backendReads).toBe(2);
  });

  it('nested joins, lists of foreign values, single joins, and a projection', async () => {
    const r = await same('{ orders(limit: 12) { id user { name orders(limit: 2) { id products { id name internal } } top { total } friends { name top { id } } } } }');
    expect(r.body.data.orders[0].user.orders[0].products[0]).toEqual({ id: 'p0', name: 'product0', internal: null });
  });

  it('aliases with different arguments over shared documents, and merged fields', async () => {
    const aliased = await same('{ orders(limit: 10) { a: user { orders(limit: 1) { id } } b: user { orders(limit: 3, skip: 1) { id user { name } } } } }');
    expect(aliased.body.data.orders).toEqual(
      orders.slice(0, 10).map((o) =>
        o.userId === undefined
          ? { a: null, b: null }
          : {
              a: {
                orders: ordersOfUser(o.userId)
                  .slice(0, 1)
                  .map((x) => ({ id: x._id })),
              },
              b: {
                orders: ordersOfUser(o.userId)
                  .slice(1, 4)
                  .map((x) => ({ id: x._id, user: { name: userOf(x.userId!).name } })),
              },
            },
      ),
    );
    const merged = await same('{ orders(limit: 5) { user { name } user { city orders(limit: 1) { id } } } }');
    expect(merged.body.data.orders).toEqual(
      orders.slice(0, 5).map((o) => ({ user: { name: userOf(o.userId!).name, city: userOf(o.userId!).address.city, orders: [{ id: ordersOfUser(o.userId!)[0]!._id }] } })),
    );
  });

  it('fragments, inline fragments and @skip/@include with variables', async () => {
    const query = `query($x: Boolean!, $y: Boolean!) {
      orders(limit: 10) { ...O ... on Order @include(if: $y) { products { id } } }
    }
    fragment O on Order { id user @skip(if: $x) { name ...U } bigger { total } }
    fragment U on User { top { id } }`;
    for (const x of [true, false]) {
      for (const y of [true, false]) {
        const r = await same(query, { x, y });
        expect(r.body.data.orders.map((o: { id: string }) => o.id)).toEqual(orders.slice(0, 10).map((o) => o._id));
        const third = r.body.data.orders[3];
        expect(third.bigger).toEqual([{ total: 13 }, { total: 23 }]);
        if (x) expect(third).not.toHaveProperty('user');
        else expect(third.user).toEqual({ name: 'user3', top: { id: 'o23' } });
        if (y) expect(third.products.map((p: { id: string }) => p.id).sort()).toEqual(['p0', 'p3']);
        else expect(third).not.toHaveProperty('products');
      }
    }
  });

  it('several root fields, and a single root field', async () => {
    const several = await same('{ orders(limit: 5) { user { name } } users(limit: 3) { orders(limit: 2) { user { name } } } one(id: "o03") { user { top { user { name } } } } }');
    expect(several.body.data).toEqual({
      orders: orders.slice(0, 5).map((o) => ({ user: { name: userOf(o.userId!).name } })),
      users: users.slice(0, 3).map((x) => ({
        orders: ordersOfUser(x._id)
          .slice(0, 2)
          .map(() => ({ user: { name: x.name } })),
      })),
      one: { user: { top: { user: { name: 'user3' } } } },
    });
    const single = await same('{ one(id: "o04") { user { name friends { name } } } none: one(id: "zz") { user { name } } }');
    expect(single.body.data).toEqual({ one: { user: { name: 'user4', friends: [{ name: 'user5' }, { name: 'user6' }] } }, none: null });
  });

  it('$or batches, finds read one by one, joins that match nothing, __typename', async () => {
    const r = await same('{ orders(limit: 6) { __typename id bigger { total user { name } } similar { id } ghost { id } user { __typename name } } }');
    expect(r.body.data.orders).toEqual(
      orders.slice(0, 6).map((o, i) => ({
        __typename: 'Order',
        id: o._id,
        bigger: ordersOfUser(o.userId!)
          .filter((b) => b.total > o.total)
          .reverse()
          .map((b) => ({ total: b.total, user: { name: userOf(o.userId!).name } })),
        // Only o00 and o01 carry a pattern (^note0, ^note1): the two lowest totals with that note.
        similar:
          i < 2
            ? orders
                .filter((s) => s.note === `note${i}`)
                .slice(0, 2)
                .map((s) => ({ id: s._id }))
            : [],
        ghost: null,
        user: { __typename: 'User', name: userOf(o.userId!).name },
      })),
    );
  });

  it('errors: a denied collection, an operator object as a foreign value, a non-null field left null', async () => {
    const denied = await same('{ orders(limit: 4) { id secret { id } user { name } } }');
    expect(denied.body.errors).toHaveLength(4);
    expect(denied.body.errors.map((e: any) => e.path)).toEqual([0, 1, 2, 3].map((i) => ['orders', i, 'secret']));
    expect(denied.body.data.orders).toEqual(orders.slice(0, 4).map((o) => ({ id: o._id, secret: null, user: { name: userOf(o.userId!).name } })));
    const bad = await same('{ badOrders { id user { name } } }');
    expect(bad.body.data).toEqual({
      badOrders: [
        { id: 'bad', user: null },
        { id: 'good', user: { name: 'user4' } },
      ],
    });
    expect(bad.body.errors.map((e: any) => [e.path, e.extensions.code])).toEqual([[['badOrders', 0, 'user'], 'INVALID_FOREIGN_VALUE']]);
    // o05 and o06 have no `strict` (Int!): each becomes null in the list, with an error at its field.
    const strictOrders = orders.slice(0, 8).map((o) => (o.strict === undefined ? null : { id: o._id, strict: o.strict, user: o.userId ? { name: userOf(o.userId).name } : null }));
    const strictFirst = await same('{ orders(limit: 8) { id strict user { name } } }');
    expect(strictFirst.body.data.orders).toEqual(strictOrders);
    expect(strictFirst.body.errors.map((e: any) => e.path)).toEqual([
      ['orders', 5, 'strict'],
      ['orders', 6, 'strict'],
    ]);
    const strictLast = await same('{ orders(limit: 8) { id user { name } strict } }');
    expect(strictLast.body.data.orders).toEqual(strictOrders.map((o) => o && { id: o.id, user: o.user, strict: o.strict }));
  });

  it('where the lazy path stays: a non-null field before a join, non-null list items, a join inside an embedded object', async () => {
    const strict = await same('{ strict { id user { name } } }');
    // The document without an _id (id: String!) becomes null; the other two join their users.
    expect(strict.body.data.strict).toHaveLength(3);
    expect(strict.body.data.strict.filter((x: unknown) => x !== null)).toEqual([
      { id: 's1', user: { name: 'user1' } },
      { id: 's3', user: { name: 'user3' } },
    ]);
    await same('{ strictItems { id strict user { name } } }');
    await same('{ strictItems { id user { name } strict } }');
    // Lazily, the items after a failing one are still completed, and their errors reported.
    const later = await same('{ strictItems { id secret { id } strict } }');
    expect(later.body.errors).toHaveLength(11);
    await same('{ strictItems { id user { name } } }');
    const embedded = await same('{ users(limit: 10) { name address { city country { name } } nationality { name } top { id } } }');
    expect(embedded.backendReads).toBe(3);
    expect(embedded.body.data.users).toEqual(
      users.map((x) => ({
        name: x.name,
        address: { city: x.address.city, country: { name: countryName(x.address.countryCode) } },
        nationality: { name: countryName(x.address.countryCode) },
        top: { id: ordersOfUser(x._id)[0]!._id },
      })),
    );
  });
});

describe('which joins are answered synchronously', () => {
  /** Records, for each call graphql-js makes, whether the resolver answered with a promise. */
  function watch(e: Engine, typeName: string, fieldName: string): { kinds: string[]; restore(): void } {
    const field = (e.app.schema.getType(typeName) as GraphQLObjectType).getFields()[fieldName]!;
    const inner = field.resolve as GraphQLFieldResolver<unknown, unknown>;
    const kinds: string[] = [];
    field.resolve = (source, args, context, info) => {
      let result: unknown;
      try {
        result = inner(source, args, context, info);
      } catch (error) {
        kinds.push('error');
        throw error;
      }
      kinds.push(result instanceof Promise ? 'promise' : 'value');
      return result;
    };
    return { kinds, restore: () => (field.resolve = inner) };
  }

  it('every level of a plain join tree, through fragments and directives', async () => {
    const user = watch(eager, 'Order', 'user');
    const top = watch(eager, 'User', 'top');
    try {
      await eager.run('query($s: Boolean!) { orders(limit: 10) { ...O } } fragment O on Order { id user @include(if: $s) { name top { id } } }', { s: true });
      expect(user.kinds).toEqual(Array(10).fill('value'));
      expect(top.kinds).toEqual(Array(9).fill('value'));
      await eager.run('{ orders(limit: 3) { secret { id } } badOrders { user { id } } }');
    } finally {
      user.restore();
      top.restore();
    }
    const lazyUser = watch(lazy, 'Order', 'user');
    try {
      await lazy.run('{ orders(limit: 10) { user { name } } }');
      expect(lazyUser.kinds).toEqual([...Array(7).fill('promise'), 'value', 'promise', 'promise']);
    } finally {
      lazyUser.restore();
    }
  });

  it('not where completion could stop early or a level would run late', async () => {
    const strictUser = watch(eager, 'Strict', 'user');
    const country = watch(eager, 'Address', 'country');
    try {
      await eager.run('{ strict { id user { name } } users(limit: 2) { address { country { name } } } }');
      expect(strictUser.kinds).toEqual(['promise', 'promise']);
      expect(country.kinds).toEqual(['promise', 'promise']);
    } finally {
      strictUser.restore();
      country.restore();
    }
  });
});
