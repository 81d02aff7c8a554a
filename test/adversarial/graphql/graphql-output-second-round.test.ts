/**
 * Issue 34 items 2 and 3: what the first round's output budget did not see. A mutation's
 * selection was never estimated, so a write answering an object with list joins brought back the
 * unbounded answer (after the write); and a list stored inside a document counted as one value,
 * so 100 aliases of a 100,000-element stored array held the event loop for seconds. Every row
 * failed on the code before the fix.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { call } from '../../support/clients/http-client.js';
import { basic } from '../../support/outrigger.js';
import { useStack } from '../../support/fixtures.js';

const ALICE = basic('alice', 'alice-password');

const data = {
  adv: {
    groups: Array.from({ length: 10 }, (_, i) => ({ _id: `g${i + 1}`, n: i + 1, kind: 'k' })),
    items: Array.from({ length: 100 }, (_, i) => ({ _id: `i${i + 1}`, n: i + 1, kind: 'k' })),
    bags: [
      { _id: 'big', values: Array.from({ length: 100_000 }, (_, i) => i), things: Array.from({ length: 2000 }, (_, i) => ({ x: i })) },
      { _id: 'small', values: [1, 2, 3], things: [{ x: 1 }] },
    ],
  },
};

const SCHEMA = `
  type Item { n: Int, kind: String }
  type Group { _id: String, n: Int, kind: String, items(limit: Int = 10): [Item] }
  type Thing { x: Int }
  type Bag { _id: String, values: [Int], things: [Thing] }
  type Query { groups(limit: Int = 10): [Group], bag(id: String): Bag, bags(limit: Int = 10): [Bag] }
  type Mutation { createGroup(n: Int!): Group }
`;
const MAPPINGS = {
  Query: {
    groups: { db: 'adv', collection: 'groups', sort: { n: 1 }, limit: { $arg: 'limit' } },
    bag: { db: 'adv', collection: 'bags', find: { _id: { $arg: 'id' } } },
    bags: { db: 'adv', collection: 'bags', sort: { _id: 1 }, limit: { $arg: 'limit' } },
  },
  Group: { items: { db: 'adv', collection: 'items', find: { kind: { $fk: 'kind' } }, sort: { n: 1 }, limit: { $arg: 'limit' } } },
  Mutation: { createGroup: { db: 'adv', collection: 'groups', insert: { n: { $arg: 'n' }, kind: 'k' } } },
};

const aliases = (n: number, field: string) => Array.from({ length: n }, (_, i) => `a${i}: ${field}`).join(' ');

describe('GraphQL output budget, second round (issue 34)', () => {
  const stack = useStack(
    {
      service: 'gql-output-2',
      backend: { data },
      users: { root: ['root'], alice: ['user'] },
      config: { upstream: { identity: { mode: 'headers' } }, acl: { mode: 'enforce' } },
      permissions: {
        'users-graphql': { predicate: 'path-prefix(/graphql)', roles: ['user'], priority: 1 },
        'users-adv': { predicate: 'path-prefix(/adv)', roles: ['user'], priority: 1 },
      },
      apps: { out2: { _id: 'out2', descriptor: { uri: 'out2' }, schema: SCHEMA, mappings: MAPPINGS } },
    },
    60_000,
  );
  beforeEach(() => stack.backend.clearRequests());
  const backendCalls = (method: string) => stack.backend.requests.filter((r) => r.method === method && r.path.startsWith('/adv/')).length;
  const gql = (query: string) => call(stack.proxy.url, '/graphql/out2', { method: 'POST', auth: ALICE, headers: { accept: 'application/graphql-response+json' }, body: { query } });
  const codeOf = (res: { json: any }) => res.json?.errors?.[0]?.extensions?.code as string | undefined;

  it('item 2: a mutation whose answer is over the output budget is refused before its write', async () => {
    const res = await gql(`mutation { createGroup(n: 99) { items(limit: 1000) { ${aliases(60, 'n')} } } }`);
    expect(res.status, res.text.slice(0, 300)).toBe(400);
    expect(codeOf(res)).toBe('QUERY_TOO_COSTLY');
    expect(res.json.errors[0].message).toMatch(/this mutation may need/);
    expect(backendCalls('POST')).toBe(0);
    expect(backendCalls('GET')).toBe(0);
    // Within the budget it writes and answers as before.
    const ok = await gql('mutation { createGroup(n: 100) { n items(limit: 2) { n } } }');
    expect(ok.status, ok.text.slice(0, 300)).toBe(200);
    expect(ok.json.data.createGroup).toEqual({ n: 100, items: [{ n: 1 }, { n: 2 }] });
    expect(backendCalls('POST')).toBe(1);
  });

  it('item 3: a stored list of objects is estimated at graphql.storedListItems per parent: refused before any read', async () => {
    // 1,000 bags × 100 things assumed × 1 field: over 50,000. Before, each stored list counted once (3,000).
    const res = await gql('{ bags(limit: 1000) { _id things { x } } }');
    expect(res.status, res.text.slice(0, 300)).toBe(400);
    expect(codeOf(res)).toBe('QUERY_TOO_COSTLY');
    expect(backendCalls('GET')).toBe(0);
  });

  it('item 3: a stored array longer than the estimate assumed stops the answer once the output budget is spent', async () => {
    // 100 aliases of a 100,000-element array: 10,000,000 values, which the estimate (100 per list) could not know.
    const res = await gql(`{ bag(id: "big") { ${aliases(100, 'values')} } }`);
    expect(res.status, res.text.slice(0, 300)).toBe(400);
    expect(codeOf(res)).toBe('OUTPUT_TOO_LARGE');
    expect(res.json.errors[0].message).toMatch(/graphql\.maxCost\.output/);
    // The same shape over a short stored list answers in full.
    const small = await gql(`{ bag(id: "small") { ${aliases(100, 'values')} things { x } } }`);
    expect(small.status, small.text.slice(0, 300)).toBe(200);
    expect(small.json.data.bag.a99).toEqual([1, 2, 3]);
  });
});
