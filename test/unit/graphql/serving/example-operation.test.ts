/**
 * The operation an app's GraphiQL page opens on (SPEC §15): the app's own where it has one, in
 * the order compile/example-operation.ts gives, else one written from the schema.
 */
import { describe, expect, it } from 'vitest';
import { compileApp } from '../../../../src/graphql/compile/compile-app.js';
import { validateAppDocument } from '../../../../src/graphql/document/validate-app.js';

const base = {
  descriptor: { uri: 'ex' },
  schema: 'type Item { id: Int, name: String, tags: [String], parent: Item } type Query { one(id: Int!): Item, items(limit: Int): [Item], count: Int }',
  mappings: { Query: { one: { collection: 'items', find: { _id: { $arg: 'id' } } }, items: { collection: 'items', limit: { $arg: ['limit', 10] } } }, Item: { id: '_id' } },
};

function exampleOf(doc: Record<string, unknown>) {
  const v = validateAppDocument(doc, { defaultDb: 'db', maxLimit: 1000 });
  if (!v.ok) throw new Error(v.problems.join('; '));
  return compileApp(v.app, { reader: { read: async () => [] } as never }).example;
}

describe('the GraphiQL example operation', () => {
  it('from the schema: the first root field needing no argument, a page of five, its leaf fields', () => {
    expect(exampleOf(base).query).toBe('query Example {\n  items(limit: 5) {\n    id\n    name\n    tags\n  }\n}\n');
  });
  it("RESTHeart's mcp.examples first, with variables and operation name, then the first query among mcp.tools", () => {
    const body = { query: 'query One($id: Int!) { one(id: $id) { name } }', variables: { id: 3 }, operationName: 'One' };
    const tools = [{ name: 'count_items', description: 'how many', query: '{ count }' }];
    expect(exampleOf({ ...base, mcp: { enabled: true, description: 'items', examples: [{ args: { body } }], tools } })).toEqual(body);
    expect(exampleOf({ ...base, mcp: { tools } })).toEqual({ query: '{ count }' });
  });
  it('with trusted documents, the first listed query text (nothing else would run)', () => {
    const trusted = ['sha256:' + 'a'.repeat(64), '{ count }'];
    expect(exampleOf({ ...base, descriptor: { uri: 'ex', trustedDocuments: trusted } })).toEqual({ query: '{ count }' });
  });
});
