/** The cost estimate: windows multiplied along the path, through aliases, fragments and unions. */
import { Kind, parse, type OperationDefinitionNode } from 'graphql';
import { describe, expect, it } from 'vitest';
import { compileApp } from '../../../../src/graphql/compile/compile-app.js';
import { validateAppDocument } from '../../../../src/graphql/document/validate-app.js';

const doc = {
  _id: 'c',
  schema:
    'type Order { n: Int, lines(limit: Int): [Line] } type Line { sku: String } type User { name: String, orders(limit: Int): [Order], best: Order } ' +
    'union Thing = User | Order type Query { users(limit: Int): [User], user: User, things: [Thing] }',
  mappings: {
    Thing: { $typeResolver: { User: 'field-exists(name)', Order: 'not field-exists(name)' } },
    Query: { users: { collection: 'users', limit: { $arg: ['limit', 10] } }, user: { collection: 'users' }, things: { collection: 'things', limit: 100 } },
    User: { orders: { collection: 'orders', find: { u: { $fk: '_id' } }, limit: { $arg: 'limit' } }, best: { collection: 'orders', find: { u: { $fk: '_id' } } } },
    Order: { lines: { collection: 'lines', find: { o: { $fk: '_id' } }, limit: { $arg: 'limit' } } },
  },
};
const checked = validateAppDocument(doc, { defaultDb: 'restheart', maxLimit: 1000 });
if (!checked.ok) throw new Error(checked.problems.join('; '));
const app = compileApp(checked.app, { reader: { find: async () => [] } });

function cost(query: string, variables: Record<string, unknown> = {}) {
  const document = parse(query);
  const op = document.definitions.find((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION)!;
  return app.estimate(document, op, variables);
}

describe('estimateCost', () => {
  it('multiplies windows along the path; batched joins cost a read per 1000 documents', () => {
    expect(cost('{ users { name } }')).toEqual({ reads: 1, documents: 10, output: 11 });
    expect(cost('{ users(limit: 50) { orders(limit: 20) { n } } }')).toEqual({ reads: 2, documents: 1050, output: 1051 });
    expect(cost('query($l: Int) { users(limit: $l) { orders { lines(limit: 5) { sku } } } }', { l: 1000 })).toEqual({
      reads: 1 + 100 + 500,
      documents: 1000 + 100_000 + 500_000,
      output: 1 + 1000 + 100_000 + 500_000,
    });
  });
  it('non-list fields read one document; aliases and fragments count each time', () => {
    expect(cost('{ user { best { n } } }')).toEqual({ reads: 2, documents: 2, output: 3 });
    expect(cost('fragment F on User { orders(limit: 3) { n } } { a: users(limit: 2) { ...F } b: users(limit: 2) { ...F } }')).toEqual({ reads: 4, documents: 16, output: 18 });
  });
  it("over a union, each member's fragment counts as if every item were of that type (an upper bound)", () => {
    expect(cost('{ things { ... on User { orders(limit: 10) { n } } ... on Order { lines(limit: 2) { sku } } } }')).toEqual({ reads: 3, documents: 1300, output: 1401 });
  });
  it('output counts every selected field once per object, aliases and __typename included', () => {
    const fields = Array.from({ length: 30 }, (_, i) => `a${i}: name`).join(' ');
    expect(cost(`{ users(limit: 100) { __typename ${fields} } }`).output).toBe(1 + 100 * 31);
    expect(cost(`{ users(limit: 100) { orders(limit: 100) { n x: n } } }`)).toEqual({ reads: 11, documents: 10_100, output: 1 + 100 + 20_000 });
  });
});
