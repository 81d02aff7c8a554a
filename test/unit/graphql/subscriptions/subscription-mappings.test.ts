/**
 * Subscription mappings at write (SPEC §6.5): every mistake named with its path, all at once.
 */
import { describe, expect, it } from 'vitest';
import { validateAppDocument } from '../../../../src/graphql/document/validate-app.js';
import { collectionPathMatcher, changesOf } from '../../../../src/graphql/subscribe/change.js';

const opts = { defaultDb: 'restheart', maxLimit: 1000 };
const SCHEMA = `
  type Order { _id: ObjectId, status: String, owner: String }
  type OrderChange { op: String, id: ID, document: Order }
  type Query { orders: [Order] }
  type Subscription { orderChanged(status: String, min: Int): OrderChange, many: [OrderChange], plain: String }
`;

function problems(subscription: Record<string, unknown>): string[] {
  const r = validateAppDocument({ descriptor: { uri: 'shop' }, schema: SCHEMA, mappings: { Query: { orders: { collection: 'orders' } }, Subscription: subscription } }, opts);
  return r.ok ? [] : r.problems;
}

const good = { collection: 'orders', on: ['insert', 'update', 'delete'], find: { status: { $arg: 'status' }, owner: '@user.id', total: { $gte: { $arg: 'min' } } } };

describe('Subscription mappings at write', () => {
  it('accepts collection, on, and a find of literals, $arg, @user.* and comparison/logical operators', () => {
    const r = validateAppDocument(
      {
        descriptor: { uri: 'shop' },
        schema: SCHEMA.replace(', many: [OrderChange], plain: String', ''),
        mappings: { Query: { orders: { collection: 'orders' } }, Subscription: { orderChanged: good } },
      },
      opts,
    );
    expect(r.ok ? [] : r.problems).toEqual([]);
  });

  it('names every mistake with its path', () => {
    const found = problems({
      orderChanged: {
        collection: 'orders',
        on: [],
        find: { status: { $where: 'x' }, a: { $regex: 'x' }, b: { $fk: 'x' }, c: { $arg: 'nope' }, d: '@user.name' },
        sort: { a: 1 },
        limit: 3,
        stages: [],
      },
      many: { db: 'a/b', on: ['insert', 'upsert', 'insert'] },
      plain: { collection: 'orders', on: ['insert'], find: { $arg: 'status' } },
      ghost: { collection: 'x', on: ['insert'] },
    });
    const expected = [
      'mappings.Subscription.orderChanged.sort has no meaning',
      'mappings.Subscription.orderChanged.limit has no meaning',
      'mappings.Subscription.orderChanged.stages has no meaning',
      'mappings.Subscription.orderChanged.on must be a non-empty list',
      'mappings.Subscription.orderChanged.find.status.$where: the operator $where is not allowed',
      'mappings.Subscription.orderChanged.find.a.$regex: the operator $regex is not allowed',
      'mappings.Subscription.orderChanged.find.b: $fk has no meaning in a subscription',
      'mappings.Subscription.orderChanged.find.c.$arg: the field orderChanged has no argument "nope"',
      'mappings.Subscription.orderChanged.find.d: "@user.name" is not a caller value',
      'mappings.Subscription.many.collection is required',
      'mappings.Subscription.many.db must be a non-empty name',
      'mappings.Subscription.many.on.1: "upsert" is not an operation',
      'mappings.Subscription.many.on.2: "insert" is listed twice',
      'mappings.Subscription.many: the field returns [OrderChange]; a subscription field returns an object type',
      'mappings.Subscription.plain.find must be a query document',
      'mappings.Subscription.plain: the field returns String',
      'mappings.Subscription.ghost: type Subscription has no field ghost',
    ];
    for (const e of expected)
      expect(
        found.some((p) => p.startsWith(e)),
        `${e}\n in ${found.join('\n')}`,
      ).toBe(true);
  });

  it('a Subscription field without a mapping is named', () => {
    expect(problems({ orderChanged: good, many: { collection: 'orders', on: ['insert'] } })).toContainEqual(
      expect.stringContaining('mappings.Subscription.plain: the subscription field plain has no mapping'),
    );
  });
});

describe('changes from writes', () => {
  const match = collectionPathMatcher('/{db}/{collection}');
  const w = { query: '', bulk: false };
  it('classifies REST writes: inserts by Location, PUT/PATCH/DELETE by the path id, bulk inserts by links, bulk by filter never', () => {
    const oid = 'a'.repeat(24);
    expect(changesOf(match('/shop/orders')!, { ...w, method: 'POST', path: '/shop/orders', status: 201, location: `http://x/shop/orders/${oid}` })).toEqual([
      { db: 'shop', collection: 'orders', op: 'insert', _id: { $oid: oid } },
    ]);
    expect(changesOf(match('/shop/orders/7')!, { ...w, method: 'PATCH', path: '/shop/orders/7', query: 'id_type=NUMBER', status: 200 })).toEqual([
      { db: 'shop', collection: 'orders', op: 'update', _id: 7 },
    ]);
    expect(changesOf(match('/shop/orders/k')!, { ...w, method: 'PUT', path: '/shop/orders/k', status: 201 })[0]!.op).toBe('insert');
    expect(changesOf(match('/shop/orders/k')!, { ...w, method: 'DELETE', path: '/shop/orders/k', status: 204 })[0]!.op).toBe('delete');
    expect(
      changesOf(match('/shop/orders')!, {
        ...w,
        bulk: true,
        method: 'POST',
        path: '/shop/orders',
        status: 200,
        responseText: () => '{"links":["/shop/orders/a","/shop/orders/2?id_type=NUMBER"]}',
      }).map((c) => c._id),
    ).toEqual(['a', 2]);
    expect(changesOf(match('/shop/orders/*')!, { ...w, method: 'PATCH', path: '/shop/orders/*', status: 200 })).toEqual([]);
    expect(changesOf(match('/shop/orders/k')!, { ...w, method: 'DELETE', path: '/shop/orders/k', status: 404 })).toEqual([]);
    expect(match('/shop/orders/k/deeper')).toBeUndefined();
    expect(match('/shop/_meta')).toBeUndefined();
  });
});
