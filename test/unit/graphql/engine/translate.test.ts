/** Substitution of $arg/$fk and resolution of a mapping call into one backend query (pure functions). */
import { GraphQLError } from 'graphql';
import { describe, expect, it } from 'vitest';
import { findUriConflict } from '../../../../src/graphql/document/setup-kind.js';
import { GraphqlAppRegistry } from '../../../../src/graphql/compile/registry.js';
import { interpolateQuery, interpolateValue } from '../../../../src/graphql/values/interpolate.js';
import { buildAppSchema } from '../../../../src/graphql/schema/sdl.js';
import { compileQueryMapping, resolveQuery } from '../../../../src/graphql/reads/translate.js';
import { DEFAULT_LIMITS, type BackendReader } from '../../../../src/graphql/types.js';

const notes = () => ({ nullForeignKey: false });

describe('interpolateQuery: omitted optional arguments drop their entry', () => {
  it('drops top-level entries and entries inside $and/$nor; a vacuous $or goes away', () => {
    const find = {
      status: { $arg: 'status' },
      city: { $arg: 'city' },
      $and: [{ a: { $arg: 'a' } }, { b: 1 }],
      $or: [{ c: { $arg: 'c' } }, { d: 2 }],
      $nor: [{ e: { $arg: 'e' } }],
    };
    expect(interpolateQuery(find, { args: { city: 'Rome' } }, notes())).toEqual({ city: 'Rome', $and: [{ b: 1 }] });
    expect(interpolateQuery(find, { args: { city: 'Rome', a: 1, c: 3, e: 4, status: null } }, notes())).toEqual({
      status: null,
      city: 'Rome',
      $and: [{ a: 1 }, { b: 1 }],
      $or: [{ c: 3 }, { d: 2 }],
      $nor: [{ e: 4 }],
    });
  });

  it('an omitted argument under an operator or in a subdocument is a field error naming it', () => {
    expect(() => interpolateQuery({ n: { $gt: { $arg: 'min' } } }, { args: {} }, notes())).toThrow(/argument "min" is required/);
    expect(() => interpolateQuery({ address: { city: { $arg: 'city' } } }, { args: {} }, notes())).toThrow(GraphQLError);
  });

  it('uses defaults, dot paths into input objects and rootDoc', () => {
    const scope = { args: { where: { status: 'x', tags: ['a', 'b'] } }, rootDoc: { _id: 7 } };
    expect(interpolateValue({ s: { $arg: 'where.status' }, t: { $arg: 'where.tags.1' }, m: { $arg: ['where.missing', 5] }, r: { $arg: 'rootDoc._id' } }, scope, notes())).toEqual({
      s: 'x',
      t: 'b',
      m: 5,
      r: 7,
    });
  });

  it('substitutes $fk from the parent and notes a missing one', () => {
    const n = notes();
    expect(interpolateValue({ a: { $fk: 'x.y' } }, { args: {}, parent: { x: { y: 3 } } }, n)).toEqual({ a: 3 });
    expect(n.nullForeignKey).toBe(false);
    interpolateValue({ a: { $fk: 'nope' } }, { args: {}, parent: {} }, n);
    expect(n.nullForeignKey).toBe(true);
  });

  it('keeps a __proto__ key of a mapping as a plain key (no prototype pollution)', () => {
    const find = JSON.parse('{"__proto__": {"$arg": "x"}, "a": {"__proto__": 1}}') as Record<string, unknown>;
    const out = interpolateQuery(find, { args: { x: 2 } }, notes());
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(JSON.stringify(out)).toBe('{"__proto__":2,"a":{"__proto__":1}}');
  });

  it('substitutes values as literals: a string that looks like JSON stays a string', () => {
    expect(interpolateQuery({ name: { $arg: 'q' } }, { args: { q: '{"$ne": null}' } }, notes())).toEqual({ name: '{"$ne": null}' });
  });
});

describe('resolveQuery', () => {
  const mapping = compileQueryMapping('User.orders', { collection: 'orders', find: { userId: { $fk: '_id' }, state: { $arg: 'state' } }, sort: { at: -1 } }, 'shop');

  it('recognises the $in-batchable shape and resolves one call', () => {
    expect(mapping.inShape).toMatchObject({ path: 'userId', fkPath: '_id', list: false, rest: { state: { $arg: 'state' } } });
    const r = resolveQuery(mapping, { args: { state: 'open' }, parent: { _id: 'u1' } }, DEFAULT_LIMITS, false);
    expect(r).toMatchObject({
      empty: false,
      query: {
        db: 'shop',
        collection: 'orders',
        filter: { state: 'open', userId: 'u1' },
        sort: { at: -1 },
        skip: 0,
        limit: 100,
        inJoin: { path: 'userId', values: ['u1'], valueKeys: ['su1'], rest: { state: 'open' } },
      },
    });
  });

  it('a non-list field needs one document; a missing foreign key needs no read', () => {
    const r = resolveQuery(mapping, { args: {}, parent: { _id: 'u1' } }, DEFAULT_LIMITS, true);
    expect(!r.empty && r.query.limit).toBe(1);
    expect(resolveQuery(mapping, { args: {}, parent: {} }, DEFAULT_LIMITS, false)).toEqual({ empty: true });
  });

  it('other finds are not $in-batchable', () => {
    expect(compileQueryMapping('x', { collection: 'c', find: { a: { $fk: 'a' }, b: { $fk: 'b' } } }, 'd').inShape).toBeUndefined();
    expect(compileQueryMapping('x', { collection: 'c', find: { a: { $gt: { $fk: 'a' } } } }, 'd').inShape).toBeUndefined();
    expect(compileQueryMapping('x', { collection: 'c', find: { a: { $in: { $fk: 'a' } } } }, 'd').inShape?.list).toBe(true);
  });
});

describe('schema building and the compiled-app cache', () => {
  it('BSON scalars coerce input to extended JSON and pass output through', () => {
    const built = buildAppSchema('type Query { a(id: ObjectId, at: DateTime, n: Long, d: Decimal128, j: JSON): String } scalar JSON');
    expect(built.ok).toBe(true);
    if (!built.ok) return;
    const t = (name: string) => built.schema.getType(name) as any;
    expect(t('ObjectId').parseValue('65A000000000000000000001')).toEqual({ $oid: '65a000000000000000000001' });
    expect(t('DateTime').parseValue('1970-01-01T00:00:01Z')).toEqual({ $date: 1000 });
    expect(t('DateTime').parseValue(5)).toEqual({ $date: 5 });
    expect(() => t('DateTime').parseValue('yesterday')).toThrow(GraphQLError);
    expect(t('Long').parseValue('9007199254740993')).toEqual({ $numberLong: '9007199254740993' });
    expect(t('Long').serialize({ $numberLong: '12' })).toBe(12);
    expect(t('Decimal128').parseValue('1.50')).toEqual({ $numberDecimal: '1.50' });
    expect(t('ObjectId').serialize({ $oid: 'x' })).toEqual({ $oid: 'x' });
    expect(t('JSON').parseValue({ a: [{ b: 1 }] })).toEqual({ a: [{ b: 1 }] });
    expect(() => t('JSON').parseValue({ a: { $where: '1' } })).toThrow(/looks like a query operator/);
  });

  it('the registry compiles an app once per version and serves an app on its own path only', () => {
    const reader: BackendReader = { find: async () => [] };
    const invalid: string[] = [];
    const registry = new GraphqlAppRegistry({ reader, onInvalidApp: (app) => invalid.push(String(app._id)) });
    const app = (id: string, uri: string, enabled = true) => ({
      _id: id,
      descriptor: { uri, enabled },
      schema: 'type T { x: Int } type Query { t: [T] }',
      mappings: { Query: { t: { collection: 't' } } },
    });
    const first = registry.upsert(app('a', 'shop'));
    expect(registry.upsert(structuredClone(app('a', 'shop')))).toBe(first);
    registry.replaceAll([app('a', 'shop'), app('b', 'shop/v2', false), { ...app('c', 'broken'), schema: 'type X { y: Int }' }]);
    expect(invalid).toEqual(['c']);
    expect(registry.size).toBe(2);
    const hit = registry.lookup('/shop');
    expect(hit.found && hit.app).toBe(first);
    expect(registry.lookup('/shop/').found).toBe(true);
    // Issue 53: a longer path is no path of `shop` (a path('/graphql/shop') condition must see every request it serves).
    expect(registry.lookup('/shop/v3')).toEqual({ found: false, reason: 'unknown' });
    expect(registry.lookup('/shop/v2')).toEqual({ found: false, reason: 'disabled' });
    expect(registry.lookup('/nope')).toEqual({ found: false, reason: 'unknown' });
    registry.remove('a');
    expect(registry.lookup('/shop')).toEqual({ found: false, reason: 'unknown' });
    expect(() => registry.upsert({ ...app('d', 'x'), schema: 'nope' })).toThrow(/schema is not valid/);
  });

  it('finds uri collisions between different apps', () => {
    const a = { _id: 'a', descriptor: { uri: 'shop', enabled: true }, schema: '', mappings: {} };
    expect(findUriConflict([a], { ...a })).toBeUndefined();
    expect(findUriConflict([a], { ...a, _id: 'b' })).toBe(a);
    expect(findUriConflict([a], { ...a, _id: 'b', descriptor: { uri: 'shop/v2', enabled: true } })).toBeUndefined();
  });
});
