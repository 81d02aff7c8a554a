/**
 * SPEC §14 in the tool catalogue: a mutation tool's input schema offers `idempotencyKey` (a
 * string of 1–255 visible ASCII characters, spaces inside), a query tool's does not, and an
 * operation with its own `$idempotencyKey` variable keeps it; the argument checker enforces the
 * key's shape like any other argument.
 */
import { describe, expect, it } from 'vitest';
import type { GraphqlApp } from '../../../src/graphql/app-document.js';
import { checkArguments } from '../../../src/mcp/check-arguments.js';
import { ToolCatalogue } from '../../../src/mcp/catalogue.js';
import { IDEMPOTENCY_ARGUMENT, withIdempotencyKey } from '../../../src/mcp/input-schema.js';

const schema = `
  type Order { number: Int }
  type Query { orders(limit: Int): [Order] }
  type Mutation { add(total: Int!, idempotencyKey: String): ID }
`;
const mappings = {
  Query: { orders: { collection: 'orders' } },
  Mutation: { add: { collection: 'orders', insert: { total: { $arg: 'total' }, key: { $arg: 'idempotencyKey' } } } },
};
const tool = (name: string, query: string) => ({ name, description: `the ${name} tool`, query });

function catalogue(): ToolCatalogue {
  const c = new ToolCatalogue({ defaultDb: 'shop', maxLimit: 1000 }, (id, p) => {
    throw new Error(`${id}: ${p}`);
  });
  const tools = [
    tool('orders', 'query Orders($limit: Int) { orders(limit: $limit) { number } }'),
    tool('add', 'mutation Add($total: Int!) { add(total: $total) }'),
    tool('add_own_key', 'mutation AddOwn($total: Int!, $idempotencyKey: String) { add(total: $total, idempotencyKey: $idempotencyKey) }'),
  ];
  c.rebuild([{ _id: 'shop', descriptor: { uri: 'shop' }, schema, mappings, mcp: { tools, mutations: true } } as unknown as GraphqlApp & { _id: string }]);
  return c;
}

describe('idempotencyKey in the tool catalogue', () => {
  it('a mutation tool takes it (optional), a query tool does not, an operation variable of that name keeps its meaning', () => {
    const c = catalogue();
    const add = c.get('add')!;
    expect(add.takesIdempotencyKey).toBe(true);
    expect(add.inputSchema.properties![IDEMPOTENCY_ARGUMENT]).toMatchObject({ type: 'string', pattern: '^[!-~]([ -~]{0,253}[!-~])?$' });
    expect(add.inputSchema.required).toEqual(['total']);
    const orders = c.get('orders')!;
    expect(orders.takesIdempotencyKey).toBe(false);
    expect(orders.inputSchema.properties).not.toHaveProperty(IDEMPOTENCY_ARGUMENT);
    const own = c.get('add_own_key')!;
    expect(own.takesIdempotencyKey).toBe(false);
    expect(own.inputSchema.properties![IDEMPOTENCY_ARGUMENT]).toEqual({ type: ['string', 'null'] });
  });

  it('leaves the schema it is given unchanged', () => {
    const base = { type: 'object' as const, properties: { total: { type: 'integer' as const } }, additionalProperties: false as const };
    const { schema: keyed, added } = withIdempotencyKey(base);
    expect(added).toBe(true);
    expect(Object.keys(base.properties)).toEqual(['total']);
    expect(Object.keys(keyed.properties!)).toEqual(['total', IDEMPOTENCY_ARGUMENT]);
  });

  it('the checker: 1-255 visible ASCII characters, spaces only inside', () => {
    const { inputSchema } = catalogue().get('add')!;
    const ok = ['k', 'k'.repeat(255), 'a key with spaces', '0b5f4c56-7a4e-4f0e-9b1e-3c7d7f2b8a11', '"quoted" \\ and ~'];
    for (const key of ok) expect(checkArguments(inputSchema, { total: 1, idempotencyKey: key }), key).toEqual([]);
    const bad: Array<[unknown, RegExp]> = [
      ['', /must match/],
      ['k'.repeat(256), /must match/],
      [' lead', /must match/],
      ['trail ', /must match/],
      ['tab\tinside', /must match/],
      ['caf\u00e9', /must match/],
      [12, /must be a string \(got 12\)/],
      [null, /must be a string \(got null\)/],
    ];
    for (const [key, problem] of bad) {
      const problems = checkArguments(inputSchema, { total: 1, idempotencyKey: key });
      expect(problems, JSON.stringify(key)).toHaveLength(1);
      expect(problems[0]).toMatch(/^idempotencyKey /);
      expect(problems[0]).toMatch(problem);
    }
  });
});
