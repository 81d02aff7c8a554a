/**
 * Root fields: one backend read per query mapping, counted and inspected at the stand-in backend.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { oid, startEngine, type Engine } from '../helpers.js';

const items = Array.from({ length: 1100 }, (_, n) => ({ _id: oid(n + 1), n, even: n % 2 === 0, level: n % 3 }));

const schema = `
  enum Level { LOW MID HIGH }
  input Range { min: Int, max: Int }
  type Item { id: ObjectId, n: Int, even: Boolean, level: Level }
  type Profile { name: String, phone: String, firstEmail: String, cities: [String], zip: String }
  type Person { id: String, profile: Profile, nick: String }
  type Query {
    items(skip: Int, limit: Int, even: Boolean, level: Level, range: Range): [Item]
    itemsDefault(limit: Int = 3): [Item]
    itemsArgDefault(limit: Int): [Item]
    item(n: Int): Item
    itemById(id: ObjectId!): Item
    itemsAbove(min: Int): [Item]
    itemsWhere(where: BsonDocument): [Item]
    people: [Person]
    nothing: [Item]
    sorted(dir: Int): [Item]
  }
`;

let e: Engine;
beforeAll(async () => {
  e = await startEngine(
    {
      restheart: {
        items,
        people: [
          {
            _id: 'p1',
            name: 'Ann',
            contacts: { phone: '555', emails: ['ann@x', 'ann@y'] },
            addresses: [{ city: 'Rome', zip: '00100' }, { city: 'Milan' }],
            nickname: 'annie',
          },
        ],
      },
    },
    {
      descriptor: { uri: 'items' },
      schema,
      mappings: {
        Query: {
          items: {
            collection: 'items',
            find: { even: { $arg: 'even' }, level: { $arg: 'level' }, n: { $gte: { $arg: ['range.min', 0] }, $lte: { $arg: ['range.max', 100000] } } },
            sort: { n: 1 },
            skip: { $arg: ['skip', 0] },
            limit: { $arg: ['limit', 10] },
          },
          itemsDefault: { collection: 'items', sort: { n: 1 }, limit: { $arg: 'limit' } },
          itemsArgDefault: { collection: 'items', sort: { n: -1 }, limit: { $arg: ['limit', 2] } },
          item: { collection: 'items', find: { n: { $arg: 'n' } } },
          itemById: { collection: 'items', find: { _id: { $arg: 'id' } } },
          itemsAbove: { collection: 'items', find: { n: { $gt: { $arg: 'min' } } }, limit: 2 },
          itemsWhere: { collection: 'items', find: { $and: [{ level: 1 }, { $arg: 'where' }] }, sort: { n: 1 }, limit: 2 },
          people: { collection: 'people' },
          nothing: { db: 'nodb', collection: 'none' },
          sorted: { collection: 'items', sort: { n: { $arg: 'dir' } }, limit: 2 },
        },
        Person: { id: '_id', profile: 'contacts', nick: 'nickname' },
        Item: { id: '_id' },
        Profile: { firstEmail: 'emails.0', phone: 'phone' },
        Level: { LOW: 0, MID: 1, HIGH: 2 },
      },
    },
  );
});
afterAll(() => e.close());

describe('a root field with a query mapping is one backend read', () => {
  it('translates find, sort, skip and limit into filter, sort, page and pagesize', async () => {
    const r = await e.run('{ items(even: true, limit: 5, skip: 10) { n } }');
    expect(r.status).toBe(200);
    expect(r.body.data.items.map((i: any) => i.n)).toEqual([20, 22, 24, 26, 28]);
    const reads = e.reads();
    expect(reads).toHaveLength(1);
    const q = reads[0]!.query;
    expect(reads[0]!.path).toBe('/restheart/items');
    expect(JSON.parse(q.get('filter')!)).toEqual({ even: true, n: { $gte: 0, $lte: 100000 } });
    expect(JSON.parse(q.get('sort')!)).toEqual({ n: 1 });
    expect(q.get('page')).toBe('3');
    expect(q.get('pagesize')).toBe('5');
  });

  it('uses the default limit (defaultLimit) and an explicit _id sort when the mapping has none', async () => {
    const r = await e.run('{ people { id } }');
    expect(r.body.data.people).toHaveLength(1);
    const q = e.reads()[0]!.query;
    expect(q.get('pagesize')).toBe('100');
    expect(JSON.parse(q.get('sort')!)).toEqual({ _id: 1 });
    expect(q.has('filter')).toBe(false); // never filter={}
  });

  it('drops a find entry whose $arg was omitted, and omits the filter when nothing is left', async () => {
    await e.run('{ item { n } }');
    expect(e.reads()[0]!.query.has('filter')).toBe(false);
    await e.run('{ items(limit: 1) { n } }');
    expect(e.filters()[0]).toEqual({ n: { $gte: 0, $lte: 100000 } });
  });

  it('an omitted $arg elsewhere is a field error naming the argument (no read)', async () => {
    const r = await e.run('{ itemsAbove { n } people { id } }');
    expect(r.status).toBe(200);
    expect(r.body.data).toEqual({ itemsAbove: null, people: [{ id: 'p1' }] });
    expect(r.body.errors[0]).toMatchObject({ path: ['itemsAbove'], extensions: { code: 'MISSING_ARGUMENT' } });
    expect(r.body.errors[0].message).toContain('"min"');
    expect(e.reads()).toHaveLength(1);
  });

  it('applies schema defaults and [name, default] defaults', async () => {
    const a = await e.run('{ itemsDefault { n } }');
    expect(a.body.data.itemsDefault).toHaveLength(3);
    const b = await e.run('{ itemsArgDefault { n } }');
    expect(b.body.data.itemsArgDefault.map((i: any) => i.n)).toEqual([1099, 1098]);
    const c = await e.run('{ items(range: {min: 7}, limit: 2) { n } }');
    expect(c.body.data.items.map((i: any) => i.n)).toEqual([7, 8]);
  });

  it('returns the first document (or null) for a non-list field, reading a page of one', async () => {
    const r = await e.run('{ item(n: 42) { n } none: item(n: -1) { n } }');
    expect(r.body.data).toEqual({ item: { n: 42 }, none: null });
    expect(e.reads().every((x) => x.query.get('pagesize') === '1')).toBe(true);
  });

  it('passes extended JSON through and accepts an ObjectId argument as {"$oid"}', async () => {
    const r = await e.run('query($id: ObjectId!) { itemById(id: $id) { id n } }', { id: oid(8).$oid });
    expect(r.body.data.itemById).toEqual({ id: oid(8), n: 7 });
    expect(e.filters()[0]).toEqual({ _id: oid(8) });
  });

  it('substitutes a sort direction from an argument and checks it', async () => {
    const r = await e.run('{ sorted(dir: -1) { n } }');
    expect(r.body.data.sorted.map((i: any) => i.n)).toEqual([1099, 1098]);
    const bad = await e.run('{ sorted(dir: 3) { n } }');
    expect(bad.body.errors[0]).toMatchObject({ extensions: { code: 'INVALID_ARGUMENT' } });
    expect(bad.body.errors[0].message).toContain('sort.n must be 1 or -1');
  });

  it('reads an empty list from a collection that does not exist (backend 404)', async () => {
    const r = await e.run('{ nothing { n } }');
    expect(r).toEqual({ status: 200, body: { data: { nothing: [] } }, backendReads: 1 });
  });
});

describe('skip/limit page arithmetic', () => {
  const ns = (r: any) => r.body.data.items.map((i: any) => i.n);

  it('skip a multiple of limit: the exact page', async () => {
    const r = await e.run('{ items(skip: 30, limit: 10) { n } }');
    expect(ns(r)).toEqual([30, 31, 32, 33, 34, 35, 36, 37, 38, 39]);
    expect(e.reads()[0]!.query.get('page')).toBe('4');
  });

  it('skip not a multiple: one covering page, sliced', async () => {
    const r = await e.run('{ items(skip: 5, limit: 10) { n } }');
    expect(ns(r)).toEqual([5, 6, 7, 8, 9, 10, 11, 12, 13, 14]);
    expect(e.reads()).toHaveLength(1);
    expect(e.reads()[0]!.query.get('pagesize')).toBe('15');
  });

  it('no single page covers the window: two pages, sliced', async () => {
    const r = await e.run('{ items(skip: 5, limit: 996) { n } }');
    expect(ns(r)).toEqual(Array.from({ length: 996 }, (_, i) => i + 5));
    expect(e.reads().map((x) => [x.query.get('page'), x.query.get('pagesize')])).toEqual([
      ['1', '996'],
      ['2', '996'],
    ]);
  });

  it('the second page is skipped when the first comes back short', async () => {
    const r = await e.run('{ items(skip: 1097, limit: 996) { n } }');
    expect(ns(r)).toEqual([1097, 1098, 1099]);
    expect(e.reads()).toHaveLength(1);
  });

  it('a limit above maxLimit is a field error; limit 0 means the most allowed', async () => {
    const big = await e.run('{ items(limit: 1001) { n } }');
    expect(big.body.errors[0]).toMatchObject({ extensions: { code: 'LIMIT_TOO_LARGE' } });
    const zero = await e.run('{ items(limit: 0) { n } }');
    expect(ns(zero)).toHaveLength(1000);
  });

  it('a negative skip is a field error', async () => {
    const r = await e.run('{ items(skip: -1) { n } }');
    expect(r.body.errors[0].message).toContain('skip must be an integer of at least 0');
    expect(e.reads()).toHaveLength(0);
  });
});

describe('argument values are literal values: no operator injection', () => {
  it('refuses a $-key in a free-form scalar argument, in variables and in literals, at any depth', async () => {
    const v = await e.run('query($w: BsonDocument) { itemsWhere(where: $w) { n } }', { w: { n: { $ne: null } } });
    expect(v.status).toBe(400);
    expect(v.body.errors[0].message).toMatch(/"n\.\$ne" looks like a query operator/);
    expect(v.body.data).toBeUndefined();
    const deep = await e.run('query($w: BsonDocument) { itemsWhere(where: $w) { n } }', { w: { a: [{ b: { $gt: 1 } }] } });
    expect(deep.status).toBe(400);
    const lit = await e.run('{ itemsWhere(where: {n: 3}) { n } }');
    expect(lit.status).toBe(200);
    expect(e.reads()).toHaveLength(1);
  });

  it('an operator-looking string is just a string', async () => {
    const r = await e.run('query($w: BsonDocument) { itemsWhere(where: $w) { n } }', { w: { n: '{"$gt": 0}' } });
    expect(r.status).toBe(200);
    expect(r.body.data.itemsWhere).toEqual([]);
    expect(e.filters()[0]).toEqual({ $and: [{ level: 1 }, { n: '{"$gt": 0}' }] });
  });

  it('accepts extended-JSON literals produced by typed scalars', async () => {
    const r = await e.run('query($id: ObjectId!) { itemById(id: $id) { n } }', { id: { $oid: oid(3).$oid } });
    expect(r.body.data.itemById).toEqual({ n: 2 });
    const bad = await e.run('{ itemById(id: "not-hex") { n } }');
    expect(bad.status).toBe(400);
  });
});

describe('field mappings that are dot paths', () => {
  it('renames, reaches into nested documents, indexes arrays and maps over them', async () => {
    const r = await e.run('{ people { id nick profile { phone firstEmail } } }');
    expect(r.body.data.people).toEqual([{ id: 'p1', nick: 'annie', profile: { phone: '555', firstEmail: 'ann@x' } }]);
  });
});

describe('enum mappings', () => {
  it('turns stored values into enum names and enum arguments into stored values', async () => {
    const r = await e.run('{ items(level: HIGH, limit: 2) { n level } }');
    expect(r.body.data.items).toEqual([
      { n: 2, level: 'HIGH' },
      { n: 5, level: 'HIGH' },
    ]);
    expect(e.filters()[0]).toMatchObject({ level: 2 });
  });
});
