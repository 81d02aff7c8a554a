/**
 * The stand-in's bulk writes, as RESTHeart answers them (shared/notes/restheart-writes.md §2):
 * a POSTed array is one bulk insert (200 with counts and relative links; 207 with `errors` when a
 * document failed, 409 for a duplicate `_id`); `PATCH|DELETE /{db}/{coll}/*?filter=` update or
 * delete every match (a filter is required); a document PATCH/DELETE ANDs its `filter`.
 */
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { startStandinBackend, type StandinBackend } from '../../../examples/standin-backend/index.js';
import { expectRestheartError, getJson, sendJsonBody } from './support.js';

let backend: StandinBackend;
let orders: string;

beforeEach(async () => {
  await backend?.close();
  backend = await startStandinBackend({
    data: {
      shop: {
        orders: [
          { _id: 'a', owner: 'alice', n: 1 },
          { _id: 'b', owner: 'bob', n: 2 },
          { _id: 'c', owner: 'bob', n: 3 },
        ],
      },
    },
  });
  orders = `${backend.url}/shop/orders`;
});
afterAll(async () => {
  await backend.close();
});

describe('bulk insert: POST of an array', () => {
  it('200 with the counts and a relative link per new document, ids generated where missing', async () => {
    const res = await getJson(orders, sendJsonBody('POST', [{ n: 4 }, { _id: 'e', n: 5 }, { _id: 7, n: 6 }]));
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ inserted: 3, deleted: 0, modified: 0, matched: 0 });
    expect(res.body.links[0]).toMatch(/^\/shop\/orders\/[0-9a-f]{24}$/);
    expect(res.body.links.slice(1)).toEqual(['/shop/orders/e', '/shop/orders/7?id_type=NUMBER']);
    expect(backend.collection('shop', 'orders')).toHaveLength(6);
  });

  it('207 when part of it failed: the others are written, each failure with its index and status', async () => {
    const res = await getJson(
      orders,
      sendJsonBody('POST', [
        { _id: 'a', n: 9 },
        { _id: 'x', n: 10 },
        { _id: 'x', n: 11 },
      ]),
    );
    expect(res.status).toBe(207);
    expect(res.body.inserted).toBe(1);
    expect(res.body.errors).toEqual([expect.objectContaining({ index: 0, httpStatus: 409 }), expect.objectContaining({ index: 2, httpStatus: 409 })]);
    expect(backend.collection('shop', 'orders').find((d) => d._id === 'a')).toMatchObject({ n: 1 });
  });
});

describe('bulk PATCH and DELETE: /{db}/{coll}/*?filter=', () => {
  it('PATCH applies the operators (plain keys as $set) to every match and counts what changed', async () => {
    const res = await getJson(`${orders}/*?filter=${encodeURIComponent('{"owner":"bob"}')}`, sendJsonBody('PATCH', { $inc: { n: 10 }, flagged: true }));
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ matched: 2, modified: 2, inserted: 0, deleted: 0 });
    expect(backend.collection('shop', 'orders').map((d) => d.n)).toEqual([1, 12, 13]);
  });

  it('DELETE removes every match and counts them', async () => {
    const res = await getJson(`${orders}/*?filter=${encodeURIComponent('{"n":{"$gt":1}}')}`, { method: 'DELETE' });
    expect(res.status).toBe(200);
    expect(res.body.deleted).toBe(2);
    expect(backend.collection('shop', 'orders').map((d) => d._id)).toEqual(['a']);
  });

  it('a filter is required (400), as RESTHeart', async () => {
    const res = await getJson(`${orders}/*`, { method: 'DELETE' });
    expect(res.status).toBe(400);
    expectRestheartError(res.body, 400);
    expect(res.body.message).toMatch(/filter parameter is mandatory/);
    expect(backend.collection('shop', 'orders')).toHaveLength(3);
  });
});

describe('document writes AND their filter with the id', () => {
  it('PATCH and DELETE of a document that does not match the filter are 404 and change nothing', async () => {
    const filter = encodeURIComponent('{"owner":"alice"}');
    expect((await fetch(`${orders}/b?filter=${filter}`, sendJsonBody('PATCH', { $set: { n: 0 } }))).status).toBe(404);
    expect((await fetch(`${orders}/b?filter=${filter}`, { method: 'DELETE' })).status).toBe(404);
    expect((await fetch(`${orders}/a?filter=${filter}`, sendJsonBody('PATCH', { $set: { n: 0 } }))).status).toBe(200);
    expect(backend.collection('shop', 'orders').map((d) => d.n)).toEqual([0, 2, 3]);
  });
});
