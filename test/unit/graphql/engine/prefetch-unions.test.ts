/**
 * Joins below a union or interface are prefetched too (issue 39): each document's type is found by
 * the app's `$typeResolver` as graphql-js finds it, and the joins planned for that type start when
 * the documents arrive. As in prefetch.test.ts, every query runs on an engine that prefetches and
 * on one that completes every join lazily, against identical backends: same data, same errors,
 * exactly the same backend reads.
 */
import type { GraphQLFieldResolver, GraphQLObjectType } from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEngine, type Data, type Engine } from '../helpers.js';

const users = Array.from({ length: 8 }, (_, i) => ({ _id: `u${i}`, name: `user${i}`, city: `city${i % 3}` }));
const companies = [
  { _id: 'c0', vat: 'NO1', ownerId: 'u1' },
  { _id: 'c1', vat: 'NO2', ownerId: 'u2' },
];
// u9 matches no predicate of Party (no city, no vat): TYPE_UNRESOLVED at its path.
const orphans = [{ _id: 'u9' }];
const orders = Array.from({ length: 20 }, (_, i) => ({
  _id: `o${String(i).padStart(2, '0')}`,
  number: i,
  buyerId: i % 7 === 3 ? 'c0' : i % 7 === 5 ? 'c1' : i === 13 ? 'u9' : `u${i % 8}`,
  userId: `u${i % 8}`,
}));
const data: Data = { restheart: { parties: [...users, ...companies, ...orphans], users, orders } };

const app = {
  descriptor: { uri: 'prefetch-unions' },
  schema: `
    interface Named { id: String }
    type User implements Named { id: String, name: String, city: String, recent(limit: Int = 2): [Order], named: Named }
    type Company implements Named { id: String, vat: String, owner: User }
    union Party = User | Company
    type Order { id: String, number: Int, buyer: Party, user: Named }
    type Query { orders(limit: Int = 20): [Order] }
  `,
  mappings: {
    Party: { $typeResolver: { User: 'field-exists(city)', Company: 'field-exists(vat)' } },
    Named: { $typeResolver: { User: 'field-exists(city)', Company: 'field-exists(vat)' } },
    User: {
      id: '_id',
      recent: { collection: 'orders', find: { userId: { $fk: '_id' } }, sort: { number: -1 }, limit: { $arg: 'limit' } },
      named: { collection: 'parties', find: { _id: { $fk: '_id' } } },
    },
    Company: { id: '_id', owner: { collection: 'users', find: { _id: { $fk: 'ownerId' } } } },
    Order: {
      id: '_id',
      buyer: { collection: 'parties', find: { _id: { $fk: 'buyerId' } } },
      user: { collection: 'parties', find: { _id: { $fk: 'userId' } } },
    },
    Query: { orders: { collection: 'orders', sort: { number: 1 }, limit: { $arg: 'limit' } } },
  },
};

let eager: Engine;
let lazy: Engine;
beforeAll(async () => {
  eager = await startEngine(data, app);
  lazy = await startEngine(data, app, { prefetchJoins: false });
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

/** Records, for each call graphql-js makes, whether the resolver answered with a promise. */
function watch(e: Engine, typeName: string, fieldName: string): { kinds: string[]; restore(): void } {
  const field = (e.app.schema.getType(typeName) as GraphQLObjectType).getFields()[fieldName]!;
  const inner = field.resolve as GraphQLFieldResolver<unknown, unknown>;
  const kinds: string[] = [];
  field.resolve = (source, args, context, info) => {
    const result = inner(source, args, context, info);
    kinds.push(result instanceof Promise ? 'promise' : 'value');
    return result;
  };
  return { kinds, restore: () => (field.resolve = inner) };
}

describe('prefetched joins below unions and interfaces answer exactly as lazily completed ones', () => {
  it("the nested benchmark shape: orders → buyer (a union member) → the buyer's recent orders", async () => {
    const r = await same('{ orders { number buyer { __typename ... on User { id name recent(limit: 2) { number } } ... on Company { id vat owner { name } } } } }');
    expect(r.body.data.orders[1].buyer).toEqual({ __typename: 'User', id: 'u1', name: 'user1', recent: [{ number: 17 }, { number: 9 }] });
    expect(r.body.data.orders[3].buyer).toEqual({ __typename: 'Company', id: 'c0', vat: 'NO1', owner: { name: 'user1' } });
    // The document no predicate matches: its error at its path, the rest answered.
    expect(r.body.data.orders[13].buyer).toBeNull();
    expect(byPath(r.body.errors)).toEqual([JSON.stringify([['orders', 13, 'buyer'], 'no $typeResolver predicate of Party matches this document, so its type is unknown', 'TYPE_UNRESOLVED'])]);
    expect(r.backendReads).toBe(4);
  });

  it('interfaces, fragments on the interface and on members, @include/@skip, aliases', async () => {
    await same(
      'query($a: Boolean!) { orders(limit: 12) { user { id ... on User { r1: recent(limit: 1) { number } r2: recent(limit: 3) @include(if: $a) { id } named { id } } ...C } } } fragment C on Company { owner @skip(if: $a) { id } }',
      { a: true },
    );
    await same('{ orders(limit: 12) { user { ... on Named { id } ... on Company { owner { city } } } } }');
  });

  it('the joins below the union are answered synchronously', async () => {
    const recent = watch(eager, 'User', 'recent');
    const owner = watch(eager, 'Company', 'owner');
    try {
      await eager.run('{ orders(limit: 10) { buyer { ... on User { recent { number } } ... on Company { owner { id } } } } }');
      expect(recent.kinds).toEqual(Array(8).fill('value'));
      expect(owner.kinds).toEqual(Array(2).fill('value'));
    } finally {
      recent.restore();
      owner.restore();
    }
  });
});
