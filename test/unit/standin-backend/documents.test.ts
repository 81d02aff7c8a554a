import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { startStandinBackend, type StandinBackend } from '../../../examples/standin-backend/index.js';
import { expectRestheartError, getJson, sendJsonBody } from './support.js';

const HEX_ID = '65b000000000000000000001';

let backend: StandinBackend;
let things: string;

beforeEach(async () => {
  await backend?.close();
  backend = await startStandinBackend({
    data: {
      restheart: {
        things: [
          { _id: 'a', name: 'first', size: { h: 1, w: 2 }, tags: ['x'] },
          { _id: { $oid: HEX_ID }, name: 'oid doc' },
          { _id: HEX_ID, name: 'string id that looks like an ObjectId' },
        ],
      },
    },
  });
  things = `${backend.url}/restheart/things`;
});
afterAll(async () => {
  await backend.close();
});

describe('POST /{db}/{coll}', () => {
  it('creates with a generated ObjectId: 201, Location, ETag, no body', async () => {
    const res = await fetch(things, sendJsonBody('POST', { name: 'new', when: { $date: 1700000000000 } }));
    expect(res.status).toBe(201);
    expect(await res.text()).toBe('');
    const location = res.headers.get('location') ?? '';
    expect(location).toMatch(new RegExp(`^${backend.url}/restheart/things/[0-9a-f]{24}$`));
    expect(res.headers.get('etag')).toMatch(/^[0-9a-f]{24}$/);

    const hex = location.split('/').pop() as string;
    const { status, body } = await getJson(location);
    expect(status).toBe(200);
    expect(body).toEqual({ _id: { $oid: hex }, name: 'new', when: { $date: 1700000000000 }, _etag: { $oid: res.headers.get('etag') } });
    expect(backend.collection('restheart', 'things')).toHaveLength(4);
  });

  it('keeps a given _id, and a second insert of it is 409 unless wm=upsert', async () => {
    const first = await fetch(things, sendJsonBody('POST', { _id: 'mine', v: 1 }));
    expect(first.status).toBe(201);
    expect(first.headers.get('location')).toBe(`${backend.url}/restheart/things/mine`);
    const again = await getJson(things, sendJsonBody('POST', { _id: 'mine', v: 2 }));
    expect(again.status).toBe(409);
    expectRestheartError(again.body, 409);
    const upsert = await fetch(`${things}?wm=upsert`, sendJsonBody('POST', { _id: 'mine', v: 3 }));
    expect(upsert.status).toBe(200);
    expect((await getJson(`${things}/mine`)).body).toMatchObject({ _id: 'mine', v: 3 });
  });

  it('answers 404 on a collection that does not exist; PUT /{db}/{coll} creates it', async () => {
    const missing = await getJson(`${backend.url}/restheart/newcoll`, sendJsonBody('POST', { a: 1 }));
    expect(missing.status).toBe(404);
    expectRestheartError(missing.body, 404);
    expect((await fetch(`${backend.url}/restheart/newcoll`, { method: 'PUT' })).status).toBe(201);
    expect((await fetch(`${backend.url}/restheart/newcoll`, { method: 'PUT' })).status).toBe(200);
    expect((await fetch(`${backend.url}/restheart/newcoll`, sendJsonBody('POST', { a: 1 }))).status).toBe(201);
    expect((await getJson(`${backend.url}/restheart/newcoll`)).body).toHaveLength(1);
  });

  it('refuses bodies that are not JSON objects', async () => {
    const invalid = await getJson(things, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"a":' });
    expect(invalid.status).toBe(400);
    expectRestheartError(invalid.body, 400);
    expect(invalid.body.message).toMatch(/Invalid JSON/);
    const text = await getJson(things, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'hello' });
    expect(text.status).toBe(415);
    expectRestheartError(text.body, 415);
    expect((await getJson(things, sendJsonBody('POST', [42]))).status).toBe(400);
    expect((await getJson(things, sendJsonBody('POST', 42))).status).toBe(406);
    expect(backend.collection('restheart', 'things')).toHaveLength(3);
  });

  it('accepts +json media types and relaxed JSON bodies', async () => {
    const res = await fetch(things, { method: 'POST', headers: { 'content-type': 'application/merge-patch+json; charset=utf-8' }, body: "{_id: 'relaxed', n: NumberLong(5)}" });
    expect(res.status).toBe(201);
    expect((await getJson(`${things}/relaxed`)).body).toMatchObject({ _id: 'relaxed', n: 5 });
  });
});

describe('GET/PUT/PATCH/DELETE /{db}/{coll}/{id}', () => {
  it('reads a document by string id, with keys; 404 when missing', async () => {
    expect((await getJson(`${things}/a`)).body).toEqual({ _id: 'a', name: 'first', size: { h: 1, w: 2 }, tags: ['x'] });
    expect((await getJson(`${things}/a?keys={"name":1}`)).body).toEqual({ _id: 'a', name: 'first' });
    const missing = await getJson(`${things}/nope`);
    expect(missing.status).toBe(404);
    expectRestheartError(missing.body, 404);
  });

  it('takes a 24-hex id as an ObjectId (id_type STRING_OID) unless ?id_type=STRING', async () => {
    expect((await getJson(`${things}/${HEX_ID}`)).body.name).toBe('oid doc');
    expect((await getJson(`${things}/${HEX_ID}?id_type=STRING`)).body.name).toBe('string id that looks like an ObjectId');
    expect((await getJson(`${things}/${HEX_ID.toUpperCase()}`)).body.name).toBe('oid doc');
    expect((await getJson(`${things}/a?id_type=OID`)).status).toBe(400);
  });

  it('PUT replaces an existing document (200) and is 404 for a missing one unless wm=upsert (201)', async () => {
    const replaced = await fetch(`${things}/a`, sendJsonBody('PUT', { name: 'replaced' }));
    expect(replaced.status).toBe(200);
    const { body } = await getJson(`${things}/a`);
    expect(body).toEqual({ _id: 'a', name: 'replaced', _etag: { $oid: replaced.headers.get('etag') } });

    const missing = await getJson(`${things}/b`, sendJsonBody('PUT', { name: 'b' }));
    expect(missing.status).toBe(404);
    const created = await fetch(`${things}/b?wm=upsert`, sendJsonBody('PUT', { name: 'b' }));
    expect(created.status).toBe(201);
    expect(created.headers.get('location')).toBe(`${things}/b`);
    expect((await fetch(`${things}/b?wm=upsert`, sendJsonBody('PUT', { name: 'b2' }))).status).toBe(200);
  });

  it('PUT refuses an _id in the body that differs from the URL (406)', async () => {
    const res = await getJson(`${things}/a`, sendJsonBody('PUT', { _id: 'z', name: 'x' }));
    expect(res.status).toBe(406);
    expectRestheartError(res.body, 406);
    expect((await fetch(`${things}/a`, sendJsonBody('PUT', { _id: 'a', name: 'same id is fine' }))).status).toBe(200);
  });

  it('PATCH sets fields ($set semantics, dot paths) and applies update operators', async () => {
    const res = await fetch(`${things}/a`, sendJsonBody('PATCH', { name: 'patched', 'size.h': 10, extra: null }));
    expect(res.status).toBe(200);
    expect((await getJson(`${things}/a`)).body).toMatchObject({ _id: 'a', name: 'patched', size: { h: 10, w: 2 }, tags: ['x'], extra: null });

    const ops = await fetch(`${things}/a`, sendJsonBody('PATCH', { $inc: { 'size.w': 3 }, $push: { tags: 'y' }, $unset: { extra: '' }, $currentDate: { touched: true } }));
    expect(ops.status).toBe(200);
    const { body } = await getJson(`${things}/a`);
    expect(body.size).toEqual({ h: 10, w: 5 });
    expect(body.tags).toEqual(['x', 'y']);
    expect(body).not.toHaveProperty('extra');
    expect(body.touched).toEqual({ $date: expect.any(Number) }); // a Date written back as extended JSON

    // A nested object replaces the field whole, as $set does.
    await fetch(`${things}/a`, sendJsonBody('PATCH', { size: { d: 1 } }));
    expect((await getJson(`${things}/a`)).body.size).toEqual({ d: 1 });
  });

  it('PATCH is 404 for a missing document unless wm=upsert, and 400 for a bad operator', async () => {
    expect((await getJson(`${things}/c`, sendJsonBody('PATCH', { n: 1 }))).status).toBe(404);
    expect((await fetch(`${things}/c?wm=upsert`, sendJsonBody('PATCH', { n: 1 }))).status).toBe(201);
    expect((await getJson(`${things}/c`)).body).toMatchObject({ _id: 'c', n: 1 });
    const bad = await getJson(`${things}/c`, sendJsonBody('PATCH', { $frobnicate: { n: 1 } }));
    expect(bad.status).toBe(400);
    expectRestheartError(bad.body, 400);
  });

  it('DELETE answers 204, then 404', async () => {
    expect((await fetch(`${things}/a`, { method: 'DELETE' })).status).toBe(204);
    expect((await fetch(`${things}/a`, { method: 'DELETE' })).status).toBe(404);
    expect((await getJson(`${things}/a`)).status).toBe(404);
  });

  it('honours If-Match when given (412 on a stale ETag)', async () => {
    const put = await fetch(`${things}/a`, sendJsonBody('PUT', { v: 1 }));
    const etag = put.headers.get('etag') as string;
    expect((await getJson(`${things}/a`)).headers.get('etag')).toBe(etag);
    const stale = await getJson(`${things}/a`, sendJsonBody('PATCH', { v: 2 }, { 'if-match': '65b0000000000000000000ff' }));
    expect(stale.status).toBe(412);
    expectRestheartError(stale.body, 412);
    expect((await fetch(`${things}/a`, sendJsonBody('PATCH', { v: 2 }, { 'if-match': `"${etag}"` }))).status).toBe(200);
  });

  it('answers 405 for a method a resource does not support', async () => {
    const res = await getJson(`${things}/a`, sendJsonBody('POST', {}));
    expect(res.status).toBe(405);
    expectRestheartError(res.body, 405);
  });
});

describe('collection()', () => {
  it('is a copy of the current documents', async () => {
    const snapshot = backend.collection('restheart', 'things');
    snapshot[0]!.name = 'changed by the test';
    expect((await getJson(`${things}/a`)).body.name).toBe('first');
    expect(backend.collection('restheart', 'nothing')).toEqual([]);
  });
});
