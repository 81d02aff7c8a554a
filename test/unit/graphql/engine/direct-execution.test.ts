/**
 * Direct execution (serve/direct-plan.ts, direct-run.ts; issue 39): documents of reads, built-in
 * scalars and `__typename` are answered without GraphQL execution. Every query below runs on an
 * engine that answers directly and on one that completes every join lazily through graphql-js
 * (`prefetchJoins: false`, which plans nothing), against identical backends, and must give the
 * same data, the same errors and exactly the same backend reads. Data that graphql-js would
 * convert or refuse makes the direct run give up and graphql-js answer over the same reads.
 */
import { parse, type DocumentNode, type OperationDefinitionNode } from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileApp } from '../../../../src/graphql/compile/compile-app.js';
import { validateAppDocument } from '../../../../src/graphql/document/validate-app.js';
import type { DirectEngine } from '../../../../src/graphql/compile/engines/direct.js';
import { executeGraphql } from '../../../../src/graphql/serve/execute.js';
import type { ReadDecision } from '../../../../src/graphql/types.js';
import { startEngine, type Data, type Engine } from '../helpers.js';

const users = Array.from({ length: 6 }, (_, i) => ({ _id: `u${i}`, name: `user${i}`, age: 20 + i, vip: i % 2 === 0, address: { city: `city${i}` } }));
const orders = Array.from({ length: 12 }, (_, i) => ({
  _id: `o${String(i).padStart(2, '0')}`,
  number: i,
  total: i * 1.5,
  userId: `u${i % 6}`,
  ...(i === 4 ? {} : { note: `note${i}` }),
}));
const data: Data = {
  restheart: {
    users,
    orders,
    secrets: [{ _id: 's1', userId: 'u1' }],
    // Values graphql-js converts (a number for a String, "7" for an Int) or refuses (2^31, 1.5 for an Int).
    odd: [
      { _id: 'a', name: 7, count: 1 },
      { _id: 'b', name: 'fine', count: '7' },
      { _id: 'c', name: 'fine', count: 2 ** 31 },
      { _id: 'd', name: 'fine', count: 1.5 },
      { _id: 'e', name: true, count: 3, flag: 'yes' },
    ],
  },
};

const app = {
  descriptor: { uri: 'direct' },
  schema: `
    type User { id: ID, name: String, age: Int, vip: Boolean, city: String, orders(limit: Int = 3): [Order], secret: Secret }
    type Order { id: String, number: Int, total: Float, note: String, user: User }
    type Secret { id: String }
    type Odd { id: String, name: String, count: Int, flag: Boolean }
    type Shape { id: String, name: String }
    type Query {
      orders(limit: Int = 100): [Order], order(number: Int): Order, users: [User]
      odd(id: String): [Odd], shapes: [Shape], strict: [Order!]
    }
  `,
  mappings: {
    Query: {
      orders: { collection: 'orders', sort: { number: 1 }, limit: { $arg: 'limit' } },
      order: { collection: 'orders', find: { number: { $arg: 'number' } } },
      users: { collection: 'users', sort: { _id: 1 } },
      odd: { collection: 'odd', find: { _id: { $arg: 'id' } }, sort: { _id: 1 } },
      shapes: { collection: 'shapes' },
      strict: { collection: 'orders', sort: { number: 1 }, limit: 3 },
    },
    User: {
      id: '_id',
      city: 'address.city',
      orders: { collection: 'orders', find: { userId: { $fk: '_id' } }, sort: { number: -1 }, limit: { $arg: 'limit' } },
      secret: { collection: 'secrets', find: { userId: { $fk: '_id' } } },
    },
    Order: { id: '_id', user: { collection: 'users', find: { _id: { $fk: 'userId' } } } },
    Secret: { id: '_id' },
    Odd: { id: '_id' },
    Shape: { id: '_id' },
  },
};

const readPolicy = ({ collection }: { collection: string }): ReadDecision => (collection === 'secrets' ? { allow: false, message: 'you may not read secrets' } : { allow: true });

let direct: Engine;
let lazy: Engine;
beforeAll(async () => {
  direct = await startEngine(data, app, { readPolicy });
  lazy = await startEngine(data, app, { readPolicy, prefetchJoins: false });
});
afterAll(async () => {
  await direct.close();
  await lazy.close();
});

const byPath = (errors: any[] | undefined) => (errors ?? []).map((e) => JSON.stringify([e.path, e.message, e.extensions?.code, e.locations])).sort();
/** Each read's URL without its projection (`keys`, which only direct execution sends), and the projections apart. */
const readsOf = (e: Engine) => e.reads().map((r) => decodeURIComponent(r.url.replace(/&keys=[^&]*/, '')));
const keysOf = (e: Engine) => e.reads().map((r) => r.query.get('keys'));

/** The plan the app's direct engine holds for an operation of a cached document. */
const directPlanFor = (document: DocumentNode, operation: OperationDefinitionNode) => (direct.app.engines.find((e) => e.name === 'direct') as DirectEngine).plan(document, operation);

/** The plan the direct engine holds for `query` (undefined: not answered directly). */
function planOf(query: string) {
  const document = direct.app.prepare(query).document!;
  return directPlanFor(document, document.definitions[0] as OperationDefinitionNode);
}

let lastKeys: Array<string | null> = [];
async function same(query: string): Promise<any> {
  const a = await direct.run(query);
  const aReads = readsOf(direct);
  lastKeys = keysOf(direct);
  const b = await lazy.run(query);
  const bReads = readsOf(lazy);
  expect(a.status).toBe(b.status);
  expect(JSON.stringify(a.body.data)).toBe(JSON.stringify(b.body.data)); // key order too
  expect(byPath(a.body.errors)).toEqual(byPath(b.body.errors));
  expect(aReads.sort()).toEqual(bReads.sort());
  expect(a.backendReads).toBe(b.backendReads);
  expect(keysOf(lazy).every((k) => k === null)).toBe(true);
  return a;
}

describe('direct execution answers exactly as graphql-js', () => {
  it('answers the benchmark shape directly: a window of documents, each with its joined document', async () => {
    const query = '{ orders(limit: 12) { id number total note user { id name age vip city } } }';
    const r = await same(query);
    expect(planOf(query)?.gaveUp).toBe(0);
    expect(r.body.data.orders[4]).toEqual({ id: 'o04', number: 4, total: 6, note: null, user: { id: 'u4', name: 'user4', age: 24, vip: true, city: 'city4' } });
    expect(r.backendReads).toBe(2);
    // Each read asks for what the answer needs: the orders' scalars and foreign key, the users' scalars.
    expect(lastKeys.map((k) => JSON.parse(k!))).toEqual([
      { _id: 1, note: 1, number: 1, total: 1, userId: 1 },
      { _id: 1, address: 1, age: 1, name: 1, vip: 1 },
    ]);
    const noId = await same('{ orders(limit: 3) { number user { name } } }');
    expect(noId.body.data.orders[0]).toEqual({ number: 0, user: { name: 'user0' } });
    expect(lastKeys.map((k) => JSON.parse(k!))).toEqual([
      { _id: 0, number: 1, userId: 1 },
      { _id: 1, name: 1 },
    ]);
  });

  it('nested joins, aliases, __typename and keys in the order the document gives them', async () => {
    const query = '{ __typename first: orders(limit: 5) { user { orders(limit: 2) { number __typename user { name } } id } n: number } order(number: 3) { id } }';
    expect(planOf(query)).toBeDefined();
    const r = await same(query);
    expect(Object.keys(r.body.data)).toEqual(['__typename', 'first', 'order']);
    expect(Object.keys(r.body.data.first[0])).toEqual(['user', 'n']);
    expect(r.body.data.first[1].user).toEqual({
      orders: [
        { number: 7, __typename: 'Order', user: { name: 'user1' } },
        { number: 1, __typename: 'Order', user: { name: 'user1' } },
      ],
      id: 'u1',
    });
    expect(planOf(query)?.gaveUp).toBe(0);
  });

  it('one projection per collection, so batches stay as they were; what a join matches by its own find is read whole', async () => {
    const aliased = await same('{ orders(limit: 4) { a: user { name } b: user { age } } }');
    expect(aliased.backendReads).toBe(2);
    expect(lastKeys.map((k) => JSON.parse(k!))).toEqual([
      { _id: 0, userId: 1 },
      { _id: 1, age: 1, name: 1 },
    ]);
    // User.orders takes its limit from an argument: its parents' and its own documents are read whole.
    await same('{ orders(limit: 2) { number user { orders(limit: 1) { number } } } }');
    expect(lastKeys).toEqual([null, null, null]);
  });

  it('gives up on values graphql-js converts or refuses, and graphql-js answers over the same reads', async () => {
    for (const id of ['a', 'b', 'c', 'd', 'e']) {
      const r = await same(`{ odd(id: "${id}") { id name count flag } }`);
      expect(r.body.errors?.length ?? 0).toBe(id === 'a' || id === 'b' ? 0 : 1);
      expect(r.backendReads).toBe(1); // not read twice
    }
  });

  it('gives up on documents that are not objects (a backend that answers them), null items staying null', async () => {
    // The stand-in stores objects only: a reader answering this list stands for such a backend.
    const listed = [{ _id: 'x', name: 'x' }, null, 5, ['y'], { _id: 'z', name: 'z' }];
    const reader = { find: async () => structuredClone(listed) as unknown[] };
    const checked = validateAppDocument(app, { defaultDb: 'restheart', maxLimit: 1000 });
    if (!checked.ok) throw new Error(checked.problems.join('; '));
    const answers = [];
    for (const prefetchJoins of [true, false]) {
      const compiled = compileApp(checked.app, { reader, prefetchJoins });
      answers.push(JSON.stringify((await executeGraphql(compiled, { query: '{ shapes { id name } }' }, {})).body));
    }
    expect(answers[0]).toBe(answers[1]);
    expect(JSON.parse(answers[0]!).data.shapes).toEqual([{ id: 'x', name: 'x' }, null, { id: null, name: null }, { id: null, name: null }, { id: 'z', name: 'z' }]);
  });

  it('gives up on a read that fails, with graphql-js locating the error, and that does not count against the plan', async () => {
    const query = '{ users { id secret { id } } }';
    for (let i = 0; i < 4; i++) {
      const r = await same(query);
      expect(r.body.errors[0].extensions.code).toBe('FORBIDDEN');
    }
    expect(planOf(query)?.gaveUp).toBe(0);
  });

  it('leaves a document to graphql-jit once its data made it give up three times', async () => {
    const query = '{ odd(id: "c") { count } }';
    for (let i = 0; i < 3; i++) await same(query);
    expect(planOf(query)).toBeUndefined();
    await same(query);
  });
});

describe('what direct execution plans', () => {
  const planned = (query: string) => planOf(query) !== undefined;
  it('reads, built-in scalars (own or mapped) and __typename', () => {
    expect(planned('{ orders { id number user { city } } }')).toBe(true);
    expect(planned('query Named { users { name orders { total } } }')).toBe(true);
  });
  it('nothing that graphql-js or graphql-jit must answer', () => {
    for (const query of [
      '{ orders { ...F } } fragment F on Order { id }',
      '{ orders { ... on Order { id } } }',
      '{ orders { id @include(if: true) } }',
      'query($n: Int) { order(number: $n) { id } }',
      '{ strict { id } }',
      '{ orders { id id } }',
      '{ __typename }',
      // As an object literal's key it would set the prototype: not planned.
      '{ orders { __proto__: number } }',
    ]) {
      expect(planned(query), query).toBe(false);
    }
  });
  it('is the same for every operation of a document and a name picks its own', () => {
    const document = parse('query A { users { id } } query B { orders { id ...F } } fragment F on Order { number }');
    const [a, b] = document.definitions as OperationDefinitionNode[];
    expect(directPlanFor(document, a!)).toBeDefined();
    expect(directPlanFor(document, b!)).toBeUndefined();
  });
});
