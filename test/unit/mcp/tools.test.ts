/**
 * SPEC §11 at write and at derivation: an app's `mcp` block is checked with every mistake named by
 * its path; tool names are unique across enabled apps; input schemas come from the operation's
 * variables (types, required, defaults, enums, input objects, lists, the schema's descriptions);
 * arguments are checked against them.
 */
import { Kind, parse, type OperationDefinitionNode } from 'graphql';
import { describe, expect, it } from 'vitest';
import { toolNameClashes } from '../../../src/graphql/document/mcp-tools.js';
import { validateAppDocument, validateAppWithSchema } from '../../../src/graphql/document/validate-app.js';
import type { GraphqlApp } from '../../../src/graphql/app-document.js';
import { checkArguments } from '../../../src/mcp/check-arguments.js';
import { inputSchemaOf } from '../../../src/mcp/input-schema.js';
import { ToolCatalogue } from '../../../src/mcp/catalogue.js';

const opts = { defaultDb: 'shop', maxLimit: 1000 };
const schema = `
  """How far along an order is"""
  enum Status { OPEN CLOSED }
  """Bounds of a total"""
  input Range { "lowest total" min: Int = 0, max: Int!, tags: [String!] }
  type Order { number: Int, total: Int }
  type Query {
    orders("orders in this state" status: Status, limit: Int, range: Range, ids: [ObjectId!], at: DateTime): [Order]
  }
  type Mutation { drop(number: Int!): Boolean, add(total: Int!): ID }
`;
const mappings = {
  Query: { orders: { collection: 'orders', find: { status: { $arg: 'status' } } } },
  Mutation: { drop: { collection: 'orders', find: { _id: { $arg: 'number' } }, delete: true }, add: { collection: 'orders', insert: { total: { $arg: 'total' } } } },
};
const app = (mcp: unknown, id = 'shop', enabled = true) => ({ _id: id, descriptor: { uri: id, enabled }, schema, mappings, mcp });
const tool = (name: string, query: string) => ({ name, description: `the ${name} tool`, query });

function problemsOf(doc: unknown): string[] {
  const r = validateAppDocument(doc, opts);
  if (r.ok) throw new Error('expected the document to be refused');
  return r.problems;
}

describe('the mcp block at write', () => {
  it('accepts tools; a mutation without mcp.mutations is accepted with a warning', () => {
    const r = validateAppDocument(app({ tools: [tool('orders', '{ orders { number } }'), tool('drop', 'mutation Drop($n: Int!) { drop(number: $n) }')] }), opts);
    expect(r.ok).toBe(true);
    if (r.ok) {
      expect(r.app.mcp?.tools).toHaveLength(2);
      expect(r.warnings).toEqual(['mcp.tools[1] (drop) is a mutation: it stays hidden from agents until mcp.mutations is true']);
    }
  });

  it('names every mistake by its path', () => {
    const problems = problemsOf(
      app({
        tool: [],
        mutations: 'yes',
        tools: [
          { name: 'bad name!', description: '', query: '{ orders { number } }' },
          { name: 'twice', description: 'x', query: '{ orders { numbr } }' },
          { name: 'twice', description: 'x', query: '{ orders { number } } { orders { total } }' },
          { name: 'sub', description: 'x', query: 'subscription { orders { number } }', extra: 1 },
          { name: 'broken', description: 'x', query: '{ orders { ' },
          'not an object',
        ],
      }),
    );
    expect(problems).toEqual([
      'mcp.tool is not a field of the mcp block (allowed: tools, mutations, enabled, description, examples) (did you mean "tools"?)',
      'mcp.mutations must be true or false (whether mutation operations become tools)',
      'mcp.tools[0].name must be 1 to 64 letters, digits, _ or - (got "bad name!")',
      'mcp.tools[0].description must be a non-empty string: it is what an agent reads to choose the tool',
      'mcp.tools[1].query does not validate against the app\'s schema: Cannot query field "numbr" on type "Order". Did you mean "number"? (line 1, column 12)',
      'mcp.tools[2].name "twice" is already the name of mcp.tools[1]; tool names are unique',
      'mcp.tools[2].query must hold exactly one operation (it holds 2); a tool runs one',
      'mcp.tools[3].extra is not a field of a tool (allowed: name, description, query)',
      'mcp.tools[3].query is a subscription; a tool answers once, so only queries and mutations can be tools',
      'mcp.tools[4].query does not parse: Syntax Error: Expected Name, found <EOF>. (line 1, column 12)',
      'mcp.tools[5] must be an object {"name", "description", "query"}',
    ]);
    expect(problemsOf(app({ tools: {} }))).toEqual(['mcp.tools must be an array of tools {"name", "description", "query"}']);
    expect(problemsOf(app({ tools: [tool('v', 'query Q($x: Order) { orders { number } }')] }))[0]).toMatch(
      /^mcp\.tools\[0\]\.query does not validate against the app's schema: Variable "\$x" cannot be non-input type "Order"/,
    );
  });

  it('a tool name another enabled app offers is refused, naming that app; a disabled app clashes with nobody', () => {
    const other = validateAppDocument(app({ tools: [tool('orders', '{ orders { number } }')] }, 'other'), opts);
    const mine = validateAppDocument(app({ tools: [tool('mine', '{ orders { total } }'), tool('orders', '{ orders { total } }')] }), opts);
    if (!other.ok || !mine.ok) throw new Error('both valid');
    expect(toolNameClashes([other.app], mine.app)).toEqual(['mcp.tools[1].name "orders" is already a tool of the GraphQL app "other"; tool names are unique across the service\'s enabled apps']);
    expect(toolNameClashes([{ ...other.app, descriptor: { ...other.app.descriptor, enabled: false } }], mine.app)).toEqual([]);
    expect(toolNameClashes([mine.app], mine.app)).toEqual([]); // the app itself, rewritten
  });
});

describe('input schemas from the variables', () => {
  const derive = (query: string) => {
    const built = validateAppWithSchema(app(undefined), opts);
    if (!built.ok) throw new Error(built.problems.join('\n'));
    const document = parse(query);
    return inputSchemaOf(
      built.schema,
      document,
      document.definitions.find((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION)!,
    );
  };

  it('types, required, defaults, enums, input objects, lists and descriptions', () => {
    const s = derive(
      'query Q($status: Status = OPEN, $range: Range!, $ids: [ObjectId!], $at: DateTime, $limit: Int!) { orders(status: $status, range: $range, ids: $ids, at: $at, limit: $limit) { number } }',
    );
    expect(s.required).toEqual(['range', 'limit']);
    expect(s.additionalProperties).toBe(false);
    expect(s.properties!.status).toEqual({ type: ['string', 'null'], enum: ['OPEN', 'CLOSED', null], default: 'OPEN', description: 'orders in this state' });
    expect(s.properties!.range).toEqual({
      type: 'object',
      description: 'Bounds of a total',
      properties: {
        min: { type: ['integer', 'null'], minimum: -2147483648, maximum: 2147483647, default: 0, description: 'lowest total' },
        max: { type: 'integer', minimum: -2147483648, maximum: 2147483647 },
        tags: { type: ['array', 'null'], items: { type: 'string' }, maxItems: 1000 },
      },
      required: ['max'],
      additionalProperties: false,
    });
    expect(s.properties!.ids).toEqual({ type: ['array', 'null'], maxItems: 1000, items: { type: 'string', pattern: '^[0-9a-fA-F]{24}$', description: 'an ObjectId: 24 hexadecimal digits' } });
    expect(s.properties!.at!.type).toEqual(['string', 'integer', 'null']);
  });

  it('arguments are checked against it, naming the path', () => {
    const s = derive('query Q($range: Range!, $ids: [ObjectId!], $limit: Int) { orders(range: $range, ids: $ids, limit: $limit) { number } }');
    expect(checkArguments(s, { range: { max: 3 } })).toEqual([]);
    expect(checkArguments(s, {})).toEqual(['range is required']);
    expect(checkArguments(s, { range: { max: '3' } })).toEqual(['range.max must be an integer (got "3")']);
    expect(checkArguments(s, { range: { max: 1, $gt: 0 } })).toEqual(['range.$gt is not a field of range (allowed: min, max, tags)']);
    expect(checkArguments(s, { range: { max: 1, tags: ['a', 2] } })).toEqual(['range.tags[1] must be a string (got 2)']);
    expect(checkArguments(s, { range: { max: 1 }, ids: ['zz'] })).toEqual(['ids[0] must match ^[0-9a-fA-F]{24}$ (got "zz")']);
    expect(checkArguments(s, { range: { max: 1 }, ids: Array.from({ length: 1001 }, () => 'a'.repeat(24)) })).toEqual(['ids holds 1001 items; at most 1000']);
    expect(checkArguments(s, { range: { max: 1 }, limit: 1.5 })).toEqual(['limit must be an integer or null (got 1.5)']);
    expect(checkArguments(s, { range: { max: 1 }, limit: null })).toEqual([]);
    expect(checkArguments(s, { range: null })).toEqual(['range must be an object (got null)']);
    expect(checkArguments(s, { range: { max: 1 }, nope: 1, __proto__x: 1 })).toEqual([
      'nope is not an argument of this tool (allowed: range, ids, limit)',
      '__proto__x is not an argument of this tool (allowed: range, ids, limit)',
    ]);
  });
});

describe('the catalogue', () => {
  it('offers enabled apps only, hides mutations without mcp.mutations, annotates the rest; a clashing name goes to the first app by _id', () => {
    const problems: string[] = [];
    const catalogue = new ToolCatalogue(opts, (id, p) => problems.push(`${id}: ${p}`));
    const tools = [tool('orders', '{ orders { number } }'), tool('drop', 'mutation Drop($n: Int!) { drop(number: $n) }'), tool('add', 'mutation Add($t: Int!) { add(total: $t) }')];
    catalogue.rebuild([app({ tools }) as GraphqlApp & { _id: string }, app({ tools: [tool('other', '{ orders { total } }')] }, 'off', false) as GraphqlApp & { _id: string }]);
    expect([...catalogue.list()].map((t) => t.name)).toEqual(['orders']);
    catalogue.rebuild([app({ tools, mutations: true }) as GraphqlApp & { _id: string }, app({ tools: [tool('orders', '{ orders { total } }')] }, 'a-first') as GraphqlApp & { _id: string }]);
    expect(catalogue.get('orders')!.app.id).toBe('a-first');
    expect(problems).toEqual(['shop: the tool name "orders" is also a tool of the app "a-first", which keeps it']);
    expect(catalogue.get('drop')!.annotations).toEqual({ title: 'Drop', readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false });
    expect(catalogue.get('add')!.annotations).toEqual({ title: 'Add', readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false });
    // A delete hidden in a fragment at the root still makes the tool destructive.
    const viaFragment = tool('sneaky', 'mutation Sneaky($t: Int!, $n: Int!) { add(total: $t) ...Drop } fragment Drop on Mutation { drop(number: $n) }');
    catalogue.rebuild([app({ tools: [viaFragment], mutations: true }) as GraphqlApp & { _id: string }]);
    expect(catalogue.get('sneaky')!.annotations).toEqual({ title: 'Sneaky', readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false });
  });
});

describe('the apps setup kind (outrigger apply / check)', () => {
  it('refuses two enabled apps of one set offering the same tool name, naming the app and the path', async () => {
    const { graphqlAppSetupKind } = await import('../../../src/graphql/document/setup-kind.js');
    const { validateConfig } = await import('../../../src/config/validate.js');
    const kind = graphqlAppSetupKind(validateConfig({}).config);
    const one = await kind.validate(app({ tools: [tool('orders', '{ orders { number } }')] }, 'one'), undefined);
    const two = await kind.validate(app({ tools: [tool('orders', '{ orders { total } }')] }, 'two'), undefined);
    if (!one.ok || !two.ok) throw new Error('both valid');
    expect(kind.checkSet!([one.doc, two.doc])).toEqual(['app "two": mcp.tools[0].name "orders" is already a tool of the GraphQL app "one"; tool names are unique across the service\'s enabled apps']);
  });
});
