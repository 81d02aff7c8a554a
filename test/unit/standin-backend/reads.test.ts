import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStandinBackend, type StandinBackend } from '../../../examples/standin-backend/index.js';
import { expectRestheartError, getJson, withQuery } from './support.js';

const OID = (n: number) => `65a00000000000000000000${n}`;
const JAN = Date.parse('2024-01-01T00:00:00Z');

const orders = [
  { _id: { $oid: OID(1) }, item: 'apple', qty: 5, status: 'A', tags: ['fruit', 'red'], customer: { name: 'alice', address: { city: 'Rome' } }, createdAt: { $date: JAN } },
  { _id: { $oid: OID(2) }, item: 'banana', qty: 20, status: 'B', tags: ['fruit', 'yellow'], customer: { name: 'bob', address: { city: 'Milan' } }, createdAt: { $date: '2024-02-01T00:00:00Z' } },
  {
    _id: { $oid: OID(3) },
    item: 'carrot',
    qty: 50,
    status: 'A',
    tags: ['vegetable'],
    customer: { name: 'carol', address: { city: 'Rome' } },
    createdAt: { $date: { $numberLong: String(Date.parse('2024-03-01T00:00:00Z')) } },
  },
  { _id: 'string-id', item: 'durian', qty: 1, status: 'D', customer: { name: 'dave' } },
];

let backend: StandinBackend;
let ordersUrl: string;

beforeAll(async () => {
  const many = Array.from({ length: 1050 }, (_, i) => ({ _id: `n${String(i).padStart(4, '0')}`, n: i }));
  backend = await startStandinBackend({ data: { shop: { orders, many, empty: [] } } });
  ordersUrl = `${backend.url}/shop/orders`;
});
afterAll(async () => {
  await backend.close();
});

const items = (body: Array<{ item: string }>) => body.map((d) => d.item);
const read = (params: Array<[string, string]>) => getJson(withQuery(ordersUrl, params));

describe('GET /{db}/{coll}: filter', () => {
  it('returns every document as a plain JSON array, newest _id first by default', async () => {
    const { status, body, headers } = await getJson(ordersUrl);
    expect(status).toBe(200);
    expect(headers.get('content-type')).toBe('application/json');
    // Default sort {_id: -1}; in BSON order strings sort below ObjectIds.
    expect(items(body)).toEqual(['carrot', 'banana', 'apple', 'durian']);
  });

  it('matches with mingo: equality, $in, $or, nested dot paths, arrays', async () => {
    expect(
      items(
        (
          await read([
            ['filter', '{"status":"A"}'],
            ['sort', 'qty'],
          ])
        ).body,
      ),
    ).toEqual(['apple', 'carrot']);
    expect(
      items(
        (
          await read([
            ['filter', '{"item":{"$in":["apple","durian"]}}'],
            ['sort', 'qty'],
          ])
        ).body,
      ),
    ).toEqual(['durian', 'apple']);
    expect(
      items(
        (
          await read([
            ['filter', '{"$or":[{"qty":{"$lt":2}},{"status":"B"}]}'],
            ['sort', 'qty'],
          ])
        ).body,
      ),
    ).toEqual(['durian', 'banana']);
    expect(
      items(
        (
          await read([
            ['filter', '{"customer.address.city":"Rome"}'],
            ['sort', 'qty'],
          ])
        ).body,
      ),
    ).toEqual(['apple', 'carrot']);
    expect(
      items(
        (
          await read([
            ['filter', '{"tags":"fruit"}'],
            ['sort', 'qty'],
          ])
        ).body,
      ),
    ).toEqual(['apple', 'banana']);
  });

  it('ANDs repeated filter parameters, as RESTHeart does', async () => {
    const { body } = await read([
      ['filter', '{"status":"A"}'],
      ['filter', '{"qty":{"$gt":10}}'],
    ]);
    expect(items(body)).toEqual(['carrot']);
  });

  it('matches {"$oid"} filters against stored ObjectIds, and a bare string does not', async () => {
    expect(items((await read([['filter', `{"_id":{"$oid":"${OID(2)}"}}`]])).body)).toEqual(['banana']);
    expect(items((await read([['filter', `{"_id":{"$in":[{"$oid":"${OID(1)}"},{"$oid":"${OID(3)}"}]}}`]])).body)).toEqual(['carrot', 'apple']);
    expect((await read([['filter', `{"_id":"${OID(2)}"}`]])).body).toEqual([]);
    expect(items((await read([['filter', '{"_id":"string-id"}']])).body)).toEqual(['durian']);
  });

  it('reads by _id ($in, $eq, inside $and) as without the _id shortcut: ObjectIds, strings, and the rest of the filter still applied (issue 38)', async () => {
    const ids = (params: Array<[string, string]>) => read(params).then((r) => items(r.body).sort());
    expect(await ids([['filter', `{"_id":{"$in":[{"$oid":"${OID(1)}"},"string-id",{"$oid":"${OID(9)}"}]}}`]])).toEqual(['apple', 'durian']);
    expect(await ids([['filter', `{"_id":{"$eq":{"$oid":"${OID(2)}"}}}`]])).toEqual(['banana']);
    expect(await ids([['filter', `{"$and":[{"_id":{"$in":[{"$oid":"${OID(1)}"},{"$oid":"${OID(3)}"}]}},{"status":"A","qty":{"$gt":10}}]}`]])).toEqual(['carrot']);
    // A bare string is not an ObjectId (as without the shortcut), and an $in of other values is not narrowed.
    expect(await ids([['filter', `{"_id":{"$in":["${OID(1)}"]}}`]])).toEqual([]);
    expect(await ids([['filter', '{"_id":{"$in":["n0001",5]}}']])).toEqual([]);
    const many = await getJson(withQuery(`${backend.url}/shop/many`, [['filter', '{"_id":{"$in":["n0001","n1049","nope"]}}']]));
    expect(many.body.map((d: { n: number }) => d.n).sort((a: number, b: number) => a - b)).toEqual([1, 1049]);
  });

  it('compares {"$date"} values whatever their stored form (ms, ISO string, $numberLong)', async () => {
    const after = await read([
      ['filter', '{"createdAt":{"$gt":{"$date":"2024-01-15T00:00:00Z"}}}'],
      ['sort', 'createdAt'],
    ]);
    expect(items(after.body)).toEqual(['banana', 'carrot']);
    const before = await read([
      ['filter', `{"createdAt":{"$lt":{"$date":${Date.parse('2024-02-15T00:00:00Z')}}}}`],
      ['sort', 'createdAt'],
    ]);
    expect(items(before.body)).toEqual(['apple', 'banana']);
    expect(items((await read([['filter', `{"createdAt":{"$date":${JAN}}}`]])).body)).toEqual(['apple']);
    expect(items((await read([['filter', '{"createdAt":{"$date":"2024-02-01T00:00:00.000Z"}}']])).body)).toEqual(['banana']);
  });

  it('accepts the relaxed JSON RESTHeart accepts: single quotes, unquoted keys, ObjectId(), ISODate()', async () => {
    expect(items((await read([['filter', "{'status':'B'}"]])).body)).toEqual(['banana']);
    expect(items((await read([['filter', '{qty:{$gte:50}}']])).body)).toEqual(['carrot']);
    expect(items((await read([['filter', `{_id: ObjectId('${OID(1)}')}`]])).body)).toEqual(['apple']);
    expect(items((await read([['filter', "{createdAt: {$gte: ISODate('2024-03-01T00:00:00Z')}}"]])).body)).toEqual(['carrot']);
  });

  it('passes extended JSON through untouched', async () => {
    const { body } = await read([['sort', 'qty']]);
    expect(body.find((d: any) => d.item === 'apple')).toEqual(orders[0]);
    expect(body.find((d: any) => d.item === 'banana').createdAt).toEqual({ $date: '2024-02-01T00:00:00Z' });
    expect(body.find((d: any) => d.item === 'carrot')._id).toEqual({ $oid: OID(3) });
  });

  it.each([
    ['not JSON', '{"status":'],
    ['an empty object', '{}'],
    ['empty', ''],
    ['an array', '[{"a":1}]'],
    ['a blocked operator', '{"$where":"this.qty > 1"}'],
    ['an unknown operator', '{"qty":{"$almost":3}}'],
  ])('answers 400 in RESTHeart error format for a filter that is %s', async (_what, filter) => {
    const { status, body } = await read([['filter', filter]]);
    expect(status).toBe(400);
    expectRestheartError(body, 400);
    expect(body['http status description']).toBe('Bad Request');
    expect(body.message).toMatch(/filter/);
  });
});

describe('GET /{db}/{coll}: sort', () => {
  it('takes a JSON object', async () => {
    expect(items((await read([['sort', '{"qty":-1}']])).body)).toEqual(['carrot', 'banana', 'apple', 'durian']);
    expect(items((await read([['sort', '{"status":1,"qty":-1}']])).body)).toEqual(['carrot', 'apple', 'banana', 'durian']);
  });

  it('takes field, -field and +field, repeated in order', async () => {
    expect(items((await read([['sort', 'qty']])).body)).toEqual(['durian', 'apple', 'banana', 'carrot']);
    expect(items((await read([['sort', '-qty']])).body)).toEqual(['carrot', 'banana', 'apple', 'durian']);
    expect(items((await read([['sort', '+qty']])).body)).toEqual(['durian', 'apple', 'banana', 'carrot']);
    // '+' unencoded in a URL is a space: RESTHeart trims it, so ?sort=+qty still means ascending.
    expect(items((await getJson(`${ordersUrl}?sort=+qty`)).body)).toEqual(['durian', 'apple', 'banana', 'carrot']);
    expect(
      items(
        (
          await read([
            ['sort', 'status'],
            ['sort', '-qty'],
          ])
        ).body,
      ),
    ).toEqual(['carrot', 'apple', 'banana', 'durian']);
  });

  it('sorts dates as dates and missing fields first, and prefers sort_by over sort', async () => {
    expect(items((await read([['sort', 'createdAt']])).body)).toEqual(['durian', 'apple', 'banana', 'carrot']);
    expect(
      items(
        (
          await read([
            ['sort_by', '-qty'],
            ['sort', 'qty'],
          ])
        ).body,
      ),
    ).toEqual(['carrot', 'banana', 'apple', 'durian']);
  });

  it('answers 400 for a malformed sort', async () => {
    for (const sort of ['{"qty":', '{"qty":2}', ' ']) {
      const { status, body } = await read([['sort', sort]]);
      expect(status).toBe(400);
      expectRestheartError(body, 400);
    }
  });
});

describe('GET /{db}/{coll}: keys', () => {
  it('projects with inclusion (keeping _id) and exclusion, merging repeated keys', async () => {
    const { body } = await read([
      ['keys', '{"item":1}'],
      ['sort', 'qty'],
    ]);
    expect(body[1]).toEqual({ _id: { $oid: OID(1) }, item: 'apple' });
    const merged = await read([
      ['keys', '{"item":1}'],
      ['keys', '{"_id":0}'],
      ['sort', 'qty'],
    ]);
    expect(merged.body).toEqual([{ item: 'durian' }, { item: 'apple' }, { item: 'banana' }, { item: 'carrot' }]);
    const excluded = await read([
      ['keys', '{"customer":0,"tags":0,"createdAt":0}'],
      ['filter', '{"item":"apple"}'],
    ]);
    expect(excluded.body).toEqual([{ _id: { $oid: OID(1) }, item: 'apple', qty: 5, status: 'A' }]);
    const nested = await read([
      ['keys', "{'customer.address.city':1,'_id':0}"],
      ['filter', '{"item":"apple"}'],
    ]);
    expect(nested.body).toEqual([{ customer: { address: { city: 'Rome' } } }]);
  });

  it('answers 400 for a projection mixing inclusion and exclusion', async () => {
    const { status, body } = await read([['keys', '{"item":1,"qty":0}']]);
    expect(status).toBe(400);
    expectRestheartError(body, 400);
  });
});

describe('GET /{db}/{coll}: paging and counting', () => {
  const manyUrl = () => `${backend.url}/shop/many`;

  it('pages from 1 with pagesize, skipping (page-1)*pagesize', async () => {
    expect(
      items(
        (
          await read([
            ['sort', 'qty'],
            ['pagesize', '2'],
          ])
        ).body,
      ),
    ).toEqual(['durian', 'apple']);
    expect(
      items(
        (
          await read([
            ['sort', 'qty'],
            ['pagesize', '2'],
            ['page', '2'],
          ])
        ).body,
      ),
    ).toEqual(['banana', 'carrot']);
    expect(
      (
        await read([
          ['sort', 'qty'],
          ['pagesize', '2'],
          ['page', '3'],
        ])
      ).body,
    ).toEqual([]);
  });

  it('defaults to 100 documents a page and allows up to 1000', async () => {
    expect((await getJson(manyUrl())).body).toHaveLength(100);
    const max = await getJson(
      withQuery(manyUrl(), [
        ['pagesize', '1000'],
        ['sort', 'n'],
      ]),
    );
    expect(max.body).toHaveLength(1000);
    const last = await getJson(
      withQuery(manyUrl(), [
        ['pagesize', '1000'],
        ['page', '2'],
        ['sort', 'n'],
      ]),
    );
    expect(last.body.map((d: any) => d.n)).toEqual(Array.from({ length: 50 }, (_, i) => 1000 + i));
  });

  it('reads nothing with pagesize=0', async () => {
    expect((await read([['pagesize', '0']])).body).toEqual([]);
  });

  it.each([
    ['pagesize', '1001'],
    ['pagesize', '-1'],
    ['pagesize', 'ten'],
    ['page', '0'],
    ['page', '1.5'],
  ])('answers 400 for %s=%s', async (name, value) => {
    const { status, body } = await read([[name, value]]);
    expect(status).toBe(400);
    expectRestheartError(body, 400);
  });

  it('reports the count strategy with count, and the total in rep=hal bodies', async () => {
    const plain = await read([
      ['count', ''],
      ['filter', '{"status":"A"}'],
    ]);
    expect(plain.headers.get('x-count-strategy')).toBe('exact');
    expect(Array.isArray(plain.body)).toBe(true);
    const hal = await read([
      ['count', ''],
      ['rep', 'hal'],
      ['pagesize', '1'],
      ['sort', 'qty'],
      ['filter', '{"status":"A"}'],
    ]);
    expect(hal.body).toEqual({ _embedded: { 'rh:doc': [expect.objectContaining({ item: 'apple' })] }, _returned: 1, _size: 2, _total_pages: 2 });
    const estimated = await getJson(
      withQuery(manyUrl(), [
        ['count', 'estimated'],
        ['pagesize', '0'],
      ]),
    );
    expect(estimated.headers.get('x-count-strategy')).toBe('estimated');
  });

  it('counts with GET /{db}/{coll}/_size, honouring filters', async () => {
    expect((await getJson(`${ordersUrl}/_size`)).body).toEqual({ _size: 4 });
    const filtered = await getJson(withQuery(`${ordersUrl}/_size`, [['filter', '{"status":"A"}']]));
    expect(filtered.body).toEqual({ _size: 2 });
    expect(filtered.headers.get('x-count-strategy')).toBe('exact');
  });
});

describe('GET on what does not exist', () => {
  it('answers 404 for a missing collection or db, and [] for an empty one', async () => {
    const missing = await getJson(`${backend.url}/shop/nothing`);
    expect(missing.status).toBe(404);
    expectRestheartError(missing.body, 404);
    expect(missing.body.message).toMatch(/Collection 'shop.nothing' does not exist/);
    const noDb = await getJson(`${backend.url}/nodb/orders`);
    expect(noDb.status).toBe(404);
    expect(noDb.body.message).toMatch(/Db 'nodb' does not exist/);
    expect((await getJson(`${backend.url}/shop/empty`)).body).toEqual([]);
  });

  it('lists dbs at / and collections at /{db}', async () => {
    expect((await getJson(`${backend.url}/`)).body).toEqual(['shop']);
    expect((await getJson(`${backend.url}/shop`)).body).toEqual(['orders', 'many', 'empty']);
  });
});
