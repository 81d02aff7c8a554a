/**
 * SPEC §11.1, RESTHeart's `mcp` block at write and at derivation: `{enabled, description, examples}`
 * accepted unchanged (alone or beside `tools`), every mistake named by its path, example queries
 * validated against the schema, and an enabled app offered as one read-only `<uri>_query` tool
 * whose description carries the block's description, the schema and the examples.
 */
import { describe, expect, it } from 'vitest';
import { toolNameClashes } from '../../../src/graphql/document/mcp-tools.js';
import { validateAppDocument } from '../../../src/graphql/document/validate-app.js';
import type { GraphqlApp } from '../../../src/graphql/app-document.js';
import { checkArguments } from '../../../src/mcp/check-arguments.js';
import { ToolCatalogue } from '../../../src/mcp/catalogue.js';
import { readOnlyProblem, requestOf } from '../../../src/mcp/query-tool.js';

const opts = { defaultDb: 'shop', maxLimit: 1000 };
const schema = 'type Order { number: Int, total: Int }\ntype Query { orders(limit: Int): [Order] }\ntype Mutation { drop(number: Int!): Boolean }';
const mappings = {
  Query: { orders: { collection: 'orders' } },
  Mutation: { drop: { collection: 'orders', find: { _id: { $arg: 'number' } }, delete: true } },
};
const app = (mcp: unknown, id = 'shop', uri = id) => ({ _id: id, descriptor: { uri, enabled: true }, schema, mappings, mcp });
const restheart = {
  enabled: true,
  description: 'The shop: orders and their totals',
  examples: [{ description: 'The first two orders', args: { body: { query: 'query First($n: Int) { orders(limit: $n) { number total } }', variables: { n: 2 } } } }],
};

function problemsOf(doc: unknown): string[] {
  const r = validateAppDocument(doc, opts);
  if (r.ok) throw new Error('expected the document to be refused');
  return r.problems;
}

describe("RESTHeart's mcp block at write", () => {
  it('is accepted unchanged, alone or beside mcp.tools', () => {
    const alone = validateAppDocument(app(restheart), opts);
    expect(alone.ok).toBe(true);
    if (alone.ok) expect(alone.app.mcp).toEqual(restheart);
    const both = { ...restheart, tools: [{ name: 'orders', description: 'Orders', query: '{ orders { number } }' }] };
    const r = validateAppDocument(app(both), opts);
    expect(r.ok).toBe(true);
    if (r.ok) expect(r.app.mcp).toEqual(both);
  });

  it('unknown keys at every level are refused by path', () => {
    expect(problemsOf(app({ ...restheart, enabeld: true }))).toEqual([expect.stringMatching(/^mcp\.enabeld is not a field of the mcp block .*did you mean "enabled"/)]);
    const example = (e: unknown) => problemsOf(app({ enabled: true, examples: [e] }));
    expect(example({ description: 'x', args: { body: { query: '{ orders { number } }' } }, extra: 1 })).toEqual([expect.stringMatching(/^mcp\.examples\[0\]\.extra is not a field of an example/)]);
    expect(example({ args: { body: { query: '{ orders { number } }' }, headers: {} } })).toEqual([expect.stringMatching(/^mcp\.examples\[0\]\.args\.headers is not a field/)]);
    expect(example({ args: { body: { query: '{ orders { number } }', varaibles: {} } } })).toEqual([
      expect.stringMatching(/^mcp\.examples\[0\]\.args\.body\.varaibles is not a field.*did you mean "variables"/),
    ]);
    expect(example({ args: {} })).toEqual([expect.stringMatching(/^mcp\.examples\[0\]\.args\.body must be an object/)]);
    expect(problemsOf(app({ enabled: 'yes' }))).toEqual([expect.stringMatching(/^mcp\.enabled must be true or false/)]);
    expect(problemsOf(app({ enabled: true, examples: {} }))).toEqual([expect.stringMatching(/^mcp\.examples must be an array/)]);
    expect(problemsOf(app({ mutations: true }))).toEqual([expect.stringMatching(/^mcp\.tools must be an array/)]);
  });

  it('an example query that does not parse or validate is refused by path', () => {
    const withQuery = (query: string) => problemsOf(app({ enabled: true, examples: [{ description: 'x', args: { body: { query } } }] }));
    expect(withQuery('{ orders { number ')).toEqual([expect.stringMatching(/^mcp\.examples\[0\]\.args\.body\.query does not parse: /)]);
    expect(withQuery('{ orders { numbr } }')).toEqual([expect.stringMatching(/^mcp\.examples\[0\]\.args\.body\.query does not validate against the app's schema: Cannot query field "numbr"/)]);
    expect(withQuery('query A { orders { number } } query B { orders { total } }')).toEqual([expect.stringMatching(/holds 2 operations; name one with operationName/)]);
  });

  it('a mutation example is accepted with a warning and left out of the description', () => {
    const r = validateAppDocument(app({ enabled: true, examples: [{ description: 'Drop one', args: { body: { query: 'mutation { drop(number: 1) }' } } }] }), opts);
    expect(r.ok).toBe(true);
    if (r.ok) expect(r.warnings).toEqual([expect.stringMatching(/^mcp\.examples\[0\] is a mutation: the <uri>_query tool is read-only/)]);
  });

  it('the <uri>_query name: derived from the uri, within 64 characters, unique across enabled apps', () => {
    expect(problemsOf(app({ enabled: true }, 'long', 'a'.repeat(60)))).toEqual([expect.stringMatching(/^mcp\.enabled: the app's tool would be named "a{60}_query", longer than 64/)]);
    expect(problemsOf(app({ enabled: true, tools: [{ name: 'shop_query', description: 'd', query: '{ orders { number } }' }] }))).toEqual([
      expect.stringMatching(/^mcp\.tools\[0\]\.name "shop_query" is the name of the tool mcp\.enabled offers/),
    ]);
    const other = { ...app({ tools: [{ name: 'shop_query', description: 'd', query: '{ orders { number } }' }] }, 'other') } as GraphqlApp;
    expect(toolNameClashes([other], app({ enabled: true }) as GraphqlApp)).toEqual([expect.stringMatching(/^mcp\.enabled: the tool "shop_query" is already a tool of the GraphQL app "other"/)]);
  });
});

describe('the <uri>_query tool', () => {
  const catalogue = new ToolCatalogue(opts);
  catalogue.rebuild([
    app(restheart, 'shop', 'v1/shop.eu') as GraphqlApp & { _id: string },
    { ...app({ enabled: false, description: 'off' }, 'off'), descriptor: { uri: 'off', enabled: true } } as GraphqlApp & { _id: string },
  ]);

  it('is offered for an enabled block only, read-only, described by the description, the schema and the examples', () => {
    expect([...catalogue.list()].map((t) => t.name)).toEqual(['v1_shop_eu_query']);
    const tool = catalogue.get('v1_shop_eu_query')!;
    expect(tool.app).toEqual({ id: 'shop', uri: 'v1/shop.eu' });
    expect(tool.anyQuery).toBe(true);
    expect(tool.annotations).toMatchObject({ readOnlyHint: true, openWorldHint: false });
    expect(tool.description).toBe(
      "The shop: orders and their totals\n\nThe app's schema (GraphQL SDL):\n" +
        schema +
        '\n\nExamples:\n- The first two orders:\n  query First($n: Int) { orders(limit: $n) { number total } }\n  variables: {"n":2}',
    );
    expect(checkArguments(tool.inputSchema, { query: '{ orders { number } }', variables: { n: 1 } })).toEqual([]);
    expect(checkArguments(tool.inputSchema, {})).toEqual(['query is required']);
    expect(checkArguments(tool.inputSchema, { query: 1, filter: {} })).toEqual(['query must be a string (got 1)', 'filter is not an argument of this tool (allowed: query, variables, operationName)']);
    expect(requestOf({ query: '{ a }' })).toEqual({ query: '{ a }', variables: null, operationName: null });
  });

  it('refuses documents holding a mutation or subscription, whichever operation would run', () => {
    expect(readOnlyProblem('{ orders { number } }')).toBeNull();
    expect(readOnlyProblem('mutation { drop(number: 1) }')).toMatch(/read-only: the document holds a mutation/);
    expect(readOnlyProblem('query A { orders { number } } mutation B { drop(number: 1) }')).toMatch(/holds a mutation \(B\)/);
    expect(readOnlyProblem('subscription { orders { number } }')).toMatch(/holds a subscription/);
    expect(readOnlyProblem('{ orders {')).toBeNull(); // the GraphQL door answers the syntax error
  });
});
