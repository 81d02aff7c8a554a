/**
 * Issue 34 item 4: ids that are not one plain path segment. A mutation's id becomes
 * `/{db}/{collection}/{id}`; `..`, `.` or `..;x` (as an argument or inside an input object) made
 * the backend act on `/shop` or on the collection's metadata while the write was authorized on the
 * unresolved path under `/shop/orders`. And an explicit null for an `$arg` of a write's `find`
 * widened the filter (`{status: null}` matches every document without a status). Every row asserts
 * the number of backend writes it let through: zero. Each failed on the code before the fix.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { call } from '../../support/clients/http-client.js';
import { basic } from '../../support/outrigger.js';
import { useStack } from '../../support/fixtures.js';

const ALICE = basic('alice', 'alice-password');
const HEX = '0000000000000000000000aa';

describe('GraphQL mutation ids as path segments (issue 34)', () => {
  const writes: Array<{ method: string; url: string }> = [];
  const stack = useStack(
    {
      service: 'gql-write-ids',
      // RESTHeart's answers to writes; every write is recorded as sent (the raw request target).
      upstream: (req, res) => {
        req.resume();
        req.on('end', () => {
          if (req.method !== 'GET' && req.method !== 'HEAD') writes.push({ method: req.method!, url: req.url! });
          if (req.url?.split('?')[0]?.endsWith('/*')) return void res.writeHead(200, { 'content-type': 'application/json' }).end('{"deleted":1,"modified":1,"matched":1}');
          if (req.method === 'POST') return void res.writeHead(201, { location: `http://upstream/shop/orders/${HEX}` }).end();
          if (req.method === 'PATCH' || req.method === 'DELETE') return void res.writeHead(200).end();
          res.writeHead(200, { 'content-type': 'application/json' }).end('[]');
        });
      },
      users: { root: ['root'], alice: ['user'] },
      config: { acl: { mode: 'enforce' } },
      permissions: {
        'users-graphql': { predicate: 'path-prefix(/graphql)', roles: ['user'], priority: 1 },
        // Alice may write the orders collection's documents, nothing else of /shop.
        'users-orders': { predicate: 'path-prefix(/shop/orders)', roles: ['user'], priority: 1 },
      },
      apps: {
        ids: {
          _id: 'ids',
          descriptor: { uri: 'ids' },
          schema:
            'type Order { number: Int, status: String } input OrderRef { id: ID, status: String } type Query { orders: [Order] } ' +
            'type Mutation { setStatus(id: ID!, status: String): Boolean setByRef(ref: OrderRef!): Boolean add(id: ID, number: Int): ID purge(status: String): Int remove(id: ID!, status: String): Boolean }',
          mappings: {
            Query: { orders: { db: 'shop', collection: 'orders' } },
            Mutation: {
              setStatus: { db: 'shop', collection: 'orders', find: { _id: { $arg: 'id' } }, update: { $set: { status: { $arg: 'status' } } } },
              setByRef: { db: 'shop', collection: 'orders', find: { _id: { $arg: 'ref.id' } }, update: { $set: { status: { $arg: 'ref.status' } } } },
              add: { db: 'shop', collection: 'orders', insert: { _id: { $arg: 'id' }, number: { $arg: 'number' } } },
              purge: { db: 'shop', collection: 'orders', find: { status: { $arg: 'status' } }, many: true, delete: true },
              remove: { db: 'shop', collection: 'orders', find: { _id: { $arg: 'id' }, status: { $arg: 'status' } }, delete: true },
            },
          },
        },
      },
    },
    60_000,
  );
  beforeEach(() => void writes.splice(0));
  const gql = (query: string, variables?: Record<string, unknown>) =>
    call(stack.proxy.url, '/graphql/ids', { method: 'POST', auth: ALICE, headers: { accept: 'application/graphql-response+json' }, body: { query, ...(variables ? { variables } : {}) } });
  const codes = (res: { json: any }) => (res.json?.errors ?? []).map((e: any) => e.extensions?.code);

  const DOT_IDS = ['..', '.', '..;x', '.;x', '..;', 'a;b', 'a/..', '../x', '..\\x', '', '_size', '_meta', '*', '*x'];

  it('dot-segment and other non-segment ids, as arguments, are refused with no backend write', async () => {
    for (const id of DOT_IDS) {
      for (const query of ['mutation($id: ID!) { setStatus(id: $id, status: "x") }', 'mutation($id: ID!) { remove(id: $id, status: "new") }']) {
        const res = await gql(query, { id });
        expect(codes(res), `${query} with id ${JSON.stringify(id)}: ${res.text.slice(0, 300)}`).toContain('BAD_USER_INPUT');
      }
    }
    expect(writes).toEqual([]);
  });

  it('the same ids inside an input object are refused with no backend write', async () => {
    for (const id of DOT_IDS) {
      const res = await gql('mutation($ref: OrderRef!) { setByRef(ref: $ref) }', { ref: { id, status: 'x' } });
      expect(codes(res), `ref.id ${JSON.stringify(id)}: ${res.text.slice(0, 300)}`).toContain('BAD_USER_INPUT');
    }
    expect(writes).toEqual([]);
  });

  it('an inserted _id follows the same rules (the docs\' "ids starting with _ or * are refused")', async () => {
    for (const id of ['..', '.', '..;x', '_null', '*', 'a/b']) {
      const res = await gql('mutation($id: ID) { add(id: $id, number: 1) }', { id });
      expect(codes(res), `insert _id ${JSON.stringify(id)}: ${res.text.slice(0, 300)}`).toContain('BAD_USER_INPUT');
    }
    expect(writes).toEqual([]);
  });

  it("an explicit null for an $arg of a write's find is refused as an omitted one is", async () => {
    for (const [query, variables] of [
      ['mutation { purge(status: null) }', undefined],
      ['mutation($s: String) { purge(status: $s) }', { s: null }],
      ['mutation { remove(id: "0000000000000000000000aa", status: null) }', undefined],
      ['mutation($ref: OrderRef!) { setByRef(ref: $ref) }', { ref: { id: null, status: 'x' } }],
    ] as const) {
      const res = await gql(query, variables as Record<string, unknown> | undefined);
      expect(codes(res), `${query}: ${res.text.slice(0, 300)}`).toContain('MISSING_ARGUMENT');
    }
    expect(writes).toEqual([]);
  });

  it('a bad id or null in a later field refuses the whole mutation before its first write', async () => {
    for (const second of ['b: setStatus(id: "..;x", status: "x")', 'b: setByRef(ref: {id: ".", status: "x"})', 'b: purge(status: null)']) {
      const res = await gql(`mutation { a: setStatus(id: "order-1", status: "x") ${second} }`);
      expect(res.status, `${second}: ${res.text.slice(0, 300)}`).toBe(400);
      expect(
        codes(res).some((c: string) => c === 'BAD_USER_INPUT' || c === 'MISSING_ARGUMENT'),
        res.text.slice(0, 300),
      ).toBe(true);
    }
    expect(writes).toEqual([]);
  });

  it('plain ids still write, on the path they name', async () => {
    expect((await gql('mutation { setStatus(id: "order-1", status: "x") }')).json.data.setStatus).toBe(true);
    expect((await gql(`mutation { remove(id: "${HEX}", status: "new") }`)).json.data.remove).toBe(true);
    expect((await gql('mutation { purge(status: "old") }')).json.data.purge).toBe(1);
    expect(writes.map((w) => `${w.method} ${w.url.split('?')[0]}`)).toEqual(['PATCH /shop/orders/order-1', `DELETE /shop/orders/${HEX}`, 'DELETE /shop/orders/*']);
  });
});
