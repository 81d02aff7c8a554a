import { describe, expect, it } from 'vitest';
import { appUriOf, normalizeUri } from '../../../../src/graphql/app-document.js';
import { validateAppDocument } from '../../../../src/graphql/document/validate-app.js';

const opts = { defaultDb: 'restheart', maxLimit: 1000 };

const schema = `
  input OrderFilter { status: String, customer: CustomerFilter, tags: [String] }
  input CustomerFilter { id: String }
  enum Level { ENTRY MEDIUM }
  type User { id: String, name: String, level: Level, orders(limit: Int, skip: Int, status: String, where: OrderFilter): [Order] }
  type Order { id: String, total: Float, user: User, count: Int }
  type Query {
    users(limit: Int, skip: Int, city: String, sort: Int, where: OrderFilter, name: String): [User]
    user(id: String!): User
    total: Int
  }
`;

function base(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    _id: 'shop-app',
    descriptor: { name: 'Shop', uri: '/shop' },
    schema,
    mappings: {
      Query: { users: { collection: 'users', find: { city: { $arg: 'city' } } } },
      User: { id: '_id', orders: { collection: 'orders', find: { userId: { $fk: '_id' } } } },
    },
    ...overrides,
  };
}

function problemsOf(doc: unknown): string[] {
  const r = validateAppDocument(doc, opts);
  if (r.ok) throw new Error('expected the document to be refused');
  return r.problems;
}

function withMappings(mappings: Record<string, unknown>): Record<string, unknown> {
  return base({ mappings: { Query: { users: { collection: 'users' } }, ...mappings } });
}

describe('validateAppDocument: valid documents', () => {
  it('accepts a full app and normalises it', () => {
    const r = validateAppDocument(base(), opts);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.app.descriptor).toEqual({ name: 'Shop', uri: 'shop', enabled: true });
    expect(r.app._id).toBe('shop-app');
  });

  it('takes the uri from _id when the descriptor has none (RESTHeart v9), and drops _etag', () => {
    const r = validateAppDocument(base({ descriptor: undefined, _etag: { $oid: '65a000000000000000000001' } }), opts);
    expect(r.ok && r.app.descriptor.uri).toBe('shop-app');
    expect(r.ok && 'etag' in r.app).toBe(false);
  });

  it('accepts every mapping form: dot paths, query mappings with $arg forms, enum values, dataLoader', () => {
    const r = validateAppDocument(
      withMappings({
        Query: {
          users: {
            db: 'other',
            collection: 'users',
            find: { city: { $arg: 'city' }, 'orders.status': { $arg: 'where.status' }, tag: { $arg: 'where.tags.0' }, $or: [{ a: 1 }, { b: { $arg: ['name', 'x'] } }] },
            sort: { _id: { $arg: ['sort', 1] }, name: -1 },
            skip: { $arg: 'skip' },
            limit: { $arg: ['limit', 10] },
            dataLoader: { batching: true },
          },
          user: { collection: 'users', find: { _id: { $arg: 'id' } }, limit: 1000 },
        },
        User: {
          name: 'profile.name',
          level: 'levels.0',
          orders: { collection: 'orders', find: { userId: { $fk: '_id' }, ref: { $arg: 'rootDoc._id' } }, skip: 0, limit: { $arg: 'limit' } },
        },
        Level: { ENTRY: 0, MEDIUM: { $oid: '65a000000000000000000001' } },
      }),
      opts,
    );
    expect(r.ok ? [] : r.problems).toEqual([]);
  });

  it('declares the BSON scalars the schema uses without declaring them', () => {
    const r = validateAppDocument(
      base({ schema: 'type Order { id: ObjectId, at: DateTime, n: Long } type Query { orders: [Order] }', mappings: { Query: { orders: { collection: 'orders' } } } }),
      opts,
    );
    expect(r.ok).toBe(true);
  });
});

describe('validateAppDocument: every problem, each naming its path', () => {
  it('refuses a non-object', () => {
    expect(problemsOf('x')[0]).toMatch(/must be a JSON object/);
    expect(problemsOf([])[0]).toMatch(/must be a JSON object/);
  });

  it('refuses unknown top-level fields, with a suggestion', () => {
    expect(problemsOf(base({ mapping: {} }))).toContainEqual(expect.stringMatching(/^mapping is not a field .*did you mean "mappings"/));
  });

  it('checks _id and every descriptor field', () => {
    const p = problemsOf(base({ _id: 5, descriptor: { name: 1, description: [], enabled: 'yes', uri: 'a b', introspection: 'no', title: 'x' } }));
    expect(p).toEqual(
      expect.arrayContaining([
        '_id must be a non-empty string',
        expect.stringMatching(/^descriptor\.title is not a descriptor field/),
        'descriptor.name must be a string',
        'descriptor.description must be a string',
        'descriptor.enabled must be true or false',
        'descriptor.introspection must be true or false',
        expect.stringMatching(/^descriptor\.uri segment "a b" may only contain/),
      ]),
    );
    expect(problemsOf(base({ descriptor: 'x' }))).toContainEqual(expect.stringMatching(/^descriptor must be an object/));
  });

  it('checks the uri: segments, empty, dot segments; and requires one', () => {
    expect(problemsOf(base({ descriptor: { uri: '/' } }))).toContainEqual(expect.stringMatching(/^descriptor\.uri must name at least one/));
    expect(problemsOf(base({ descriptor: { uri: 'a//b' } }))).toContainEqual(expect.stringMatching(/empty segments/));
    expect(problemsOf(base({ descriptor: { uri: 'a/../b' } }))).toContainEqual(expect.stringMatching(/"\." or "\.\."/));
    expect(problemsOf(base({ descriptor: { uri: 'a?b' } }))).toContainEqual(expect.stringMatching(/segment "a\?b"/));
    expect(problemsOf(base({ _id: undefined, descriptor: {} }))).toContainEqual(expect.stringMatching(/^descriptor\.uri is required/));
    expect(problemsOf(base({ _id: 'has space', descriptor: {} }))).toContainEqual(expect.stringMatching(/_id cannot serve as the uri/));
  });

  it('refuses a missing schema, bad SDL (with position), an invalid schema, and no Query type', () => {
    expect(problemsOf(base({ schema: undefined }))).toContainEqual(expect.stringMatching(/^schema must be a non-empty string/));
    expect(problemsOf(base({ schema: 'type Query { a: String' }))).toContainEqual(expect.stringMatching(/^schema is not valid GraphQL SDL: Syntax Error: .*\(line 1, column \d+\)/));
    expect(problemsOf(base({ schema: 'type Query { a: Missing }' }))).toContainEqual(expect.stringMatching(/^schema is not a valid GraphQL schema: Unknown type "Missing"/));
    expect(problemsOf(base({ schema: 'type User { a: String }' }))).toContainEqual(expect.stringMatching(/^schema must define a Query type/));
  });

  it('requires mappings, with at least one Query mapping', () => {
    expect(problemsOf(base({ mappings: undefined }))).toContainEqual(expect.stringMatching(/^mappings must be an object/));
    expect(problemsOf(base({ mappings: { User: { id: '_id' } } }))).toContainEqual(expect.stringMatching(/^mappings\.Query must map at least one field/));
    expect(problemsOf(base({ mappings: { Query: {} } }))).toContainEqual(expect.stringMatching(/^mappings\.Query must map/));
  });

  it('refuses unknown types and fields, suggesting the near name (RESTHeart ignores typos)', () => {
    const p = problemsOf(withMappings({ Usr: { id: '_id' }, User: { nmae: 'name' } }));
    expect(p).toContainEqual('mappings.Usr: the schema has no type named Usr (did you mean "User"?)');
    expect(p).toContainEqual('mappings.User.nmae: type User has no field nmae (did you mean "name"?)');
  });

  it('refuses a type mapping that is not an object and field mappings of the wrong kind', () => {
    const p = problemsOf(withMappings({ User: 'x', Order: { id: 5, total: '', user: 'a..b' } }));
    expect(p).toContainEqual('mappings.User must be an object keyed by field name');
    expect(p).toContainEqual(expect.stringMatching(/^mappings\.Order\.id must be a dot path string or a query mapping object/));
    expect(p).toContainEqual(expect.stringMatching(/^mappings\.Order\.total must be a dot path/));
    expect(p).toContainEqual(expect.stringMatching(/^mappings\.Order\.user must be a dot path/));
  });

  it('refuses a dot path on a root field', () => {
    expect(problemsOf(withMappings({ Query: { users: 'users' } }))).toContainEqual(expect.stringMatching(/^mappings\.Query\.users: a root field has no parent document/));
  });

  it('checks query mapping fields: collection required, names, unknown keys, find/sort objects', () => {
    const p = problemsOf(
      withMappings({
        Query: {
          users: { db: 'a/b', find: [], sort: 'name', colection: 'users' },
          user: { collection: '', find: { a: 1 }, sort: { name: 2 } },
        },
      }),
    );
    expect(p).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^mappings\.Query\.users\.colection is not a query mapping field .*did you mean "collection"/),
        'mappings.Query.users.collection is required: the collection the field reads',
        expect.stringMatching(/^mappings\.Query\.users\.db must be a non-empty name/),
        'mappings.Query.users.find must be an object (a MongoDB query document)',
        expect.stringMatching(/^mappings\.Query\.users\.sort must be an object/),
        expect.stringMatching(/^mappings\.Query\.user\.collection must be a non-empty name/),
        'mappings.Query.user.sort.name must be 1, -1 or {"$arg": ...}',
      ]),
    );
  });

  it('checks skip and limit: integers, at least 0, limit at most maxLimit, or $arg', () => {
    const p = problemsOf(
      withMappings({
        Query: {
          users: { collection: 'users', limit: 1001, skip: -1 },
          user: { collection: 'users', limit: 1.5, skip: '3' },
        },
      }),
    );
    expect(p).toEqual(
      expect.arrayContaining([
        'mappings.Query.users.limit must be at most 1000 (graphql.maxLimit)',
        'mappings.Query.users.skip must be an integer of at least 0 or {"$arg": ...}',
        'mappings.Query.user.limit must be an integer of at least 0 or {"$arg": ...}',
        expect.stringMatching(/^mappings\.Query\.user\.skip must be an integer of at least 0 or \{"\$arg": "name"\}/),
      ]),
    );
  });

  it('checks $arg: shape, declared argument, dot paths into input objects, defaults, Int for skip/limit', () => {
    const p = problemsOf(
      withMappings({
        Query: {
          users: {
            collection: 'users',
            find: {
              a: { $arg: 'citty' },
              b: { $arg: ['city'] },
              c: { $arg: 'where.state' },
              d: { $arg: 'where.customer.id' },
              e: { $arg: 'city.x' },
              f: { $arg: 'where.tags.first' },
              g: { $arg: 'city', other: 1 },
              h: { $arg: 5 },
              i: { $arg: ['city', { $ne: 1 }] },
            },
            limit: { $arg: 'city' },
            skip: { $arg: ['skip', -1] },
          },
          user: { collection: 'users', find: { _id: { $arg: 'rootDoc._id' } } },
        },
      }),
    );
    expect(p).toEqual(
      expect.arrayContaining([
        'mappings.Query.users.find.a.$arg: the field users has no argument "citty" (it declares limit, skip, city, sort, where, name) (did you mean "city"?)',
        'mappings.Query.users.find.b.$arg must be "name" or ["name", default] (an array of exactly two items)',
        'mappings.Query.users.find.c.$arg: input type OrderFilter has no field "state" (did you mean "status"?)',
        'mappings.Query.users.find.e.$arg: "city" is a String; there is nothing inside it to reach with "x"',
        'mappings.Query.users.find.f.$arg: "where.tags" is a list; index it with a number, not "first"',
        'mappings.Query.users.find.g: an object holding "$arg" must have no other keys',
        expect.stringMatching(/^mappings\.Query\.users\.find\.h\.\$arg must name an argument/),
        'mappings.Query.users.find.i.$arg default must be a literal value; "$ne" is an operator',
        'mappings.Query.users.limit.$arg: argument "city" is a String; limit needs an Int',
        'mappings.Query.users.skip.$arg default must be an integer of at least 0',
        expect.stringMatching(/^mappings\.Query\.user\.find\._id\.\$arg: "rootDoc" is only available below the root fields/),
      ]),
    );
    expect(p.some((x) => x.startsWith('mappings.Query.users.find.d'))).toBe(false);
  });

  it('allows $fk only in mappings of non-root types, and checks its path', () => {
    const p = problemsOf(
      withMappings({
        Query: { users: { collection: 'users', find: { _id: { $fk: 'userId' } } } },
        User: { orders: { collection: 'orders', find: { userId: { $fk: '' }, x: { $fk: 'a', y: 1 } } } },
      }),
    );
    expect(p).toContainEqual(expect.stringMatching(/^mappings\.Query\.users\.find\._id: \$fk is only allowed in mappings of non-root types/));
    expect(p).toContainEqual(expect.stringMatching(/^mappings\.User\.orders\.find\.userId\.\$fk must be a dot path/));
    expect(p).toContainEqual('mappings.User.orders.find.x: an object holding "$fk" must have no other keys');
  });

  it('refuses aggregation mappings (stages) with an explanation', () => {
    const p = problemsOf(withMappings({ User: { orders: { db: 'x', collection: 'orders', stages: [{ $match: {} }] } } }));
    expect(p).toContainEqual(expect.stringMatching(/^mappings\.User\.orders\.stages: aggregation mappings are turned off: the HTTP backend cannot run ad-hoc pipelines/));
  });

  it('refuses blocked operators, query mappings on scalar fields, unmapped union members, inputs, mutations', () => {
    const p = problemsOf(
      base({
        schema: `${schema} union U = User | Order  type Mutation { x: Int }`,
        mappings: {
          Query: { users: { collection: 'users', find: { $where: 'true' } }, total: { collection: 'orders' } },
          U: { $typeResolver: {} },
          OrderFilter: { status: 'x' },
          Mutation: { x: { collection: 'x' } },
        },
      }),
    );
    expect(p).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^mappings\.Query\.users\.find\.\$where: the operator \$where runs server-side JavaScript/),
        expect.stringMatching(/^mappings\.Query\.total: the field returns Int, but a query mapping returns documents/),
        expect.stringMatching(/^mappings\.U\.\$typeResolver for union U does not map all union members: User, Order would be unreachable/),
        expect.stringMatching(/^mappings\.OrderFilter: only object types .* can be mapped/),
        expect.stringMatching(/^mappings\.Mutation\.x must have exactly one of insert, update or delete/),
      ]),
    );
  });

  it('checks enum mappings: known values, literal and distinct', () => {
    const p = problemsOf(withMappings({ Level: { ENTRY: 1, MEDIUM: 1, HIGH: 2 } }));
    expect(p).toContainEqual('mappings.Level.HIGH: the enum has no value HIGH');
    expect(p).toContainEqual('mappings.Level.MEDIUM maps to the same stored value as ENTRY; each enum value needs its own');
    expect(problemsOf(withMappings({ Level: { ENTRY: { $gt: 1 } } }))).toContainEqual('mappings.Level.ENTRY must be a literal value; "$gt" is an operator');
  });

  it('reports every problem at once', () => {
    const p = problemsOf({ descriptor: { uri: '' }, schema: 'type Query { a: String', mappings: 5, extra: 1 });
    expect(p.length).toBeGreaterThanOrEqual(4);
  });
});

describe('normalizeUri and appUriOf', () => {
  it('drops one leading and trailing slash and keeps segments', () => {
    expect(normalizeUri('/shop/v2/')).toEqual({ ok: true, uri: 'shop/v2' });
    expect(normalizeUri('a.b_c~d-e')).toEqual({ ok: true, uri: 'a.b_c~d-e' });
    expect(normalizeUri('a%20b').ok).toBe(false);
  });

  it('an app is looked up by the whole rest of the path, one trailing slash allowed (issue 53)', () => {
    expect(appUriOf('/shop/v2')).toBe('shop/v2');
    expect(appUriOf('/shop/')).toBe('shop');
    expect(appUriOf('shop/v3')).toBe('shop/v3');
    expect(appUriOf('//shop')).toBe('/shop');
    expect(appUriOf('/')).toBe('');
  });
});
