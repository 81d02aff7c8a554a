/** The stand-in's collection metadata and declared aggregations, as RESTHeart answers them. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStandinBackend, type StandinBackend } from '../../../examples/standin-backend/index.js';
import { basic, expectRestheartError, getJson, sendJsonBody } from './support.js';

let backend: StandinBackend;
beforeAll(async () => {
  backend = await startStandinBackend({
    data: {
      db: {
        orders: [
          { _id: 1, owner: 'alice', total: 5 },
          { _id: 2, owner: 'bob', total: 7 },
          { _id: 3, owner: 'alice', total: 1 },
        ],
      },
    },
    users: [{ id: 'alice', password: 'alice-password', roles: ['user'] }],
  });
});
afterAll(() => backend.close());

const aggrs = [
  { type: 'pipeline', uri: 'by-owner', stages: [{ $match: { total: { $gte: { $var: ['min', 0] } } } }, { $ifvar: ['owner', { $match: { owner: { $var: 'owner' } } }] }, { $sort: { _id: 1 } }] },
  { type: 'pipeline', uri: 'mine', stages: [{ $match: { owner: { $var: '@user._id' } } }, { $group: { _id: '$owner', n: { $sum: 1 } } }] },
  { type: 'pipeline', uri: 'needs', stages: [{ $match: { owner: { $var: 'who' } } }] },
];

describe('declared aggregations', () => {
  it('PATCH writes aggrs into the metadata, _meta reads them back, bad ones are refused', async () => {
    expect((await fetch(`${backend.url}/db/orders`, sendJsonBody('PATCH', { aggrs }))).status).toBe(200);
    expect((await getJson(`${backend.url}/db/orders/_meta`)).body).toEqual({ _id: '_meta', aggrs });
    const bad = await getJson(`${backend.url}/db/orders`, sendJsonBody('PATCH', { aggrs: [{ type: 'pipeline', uri: 'x' }] }));
    expect(bad.status).toBe(400);
    expectRestheartError(bad.body, 400);
  });

  it('runs a pipeline with avars, $var defaults and $ifvar, paged', async () => {
    const all = await getJson(`${backend.url}/db/orders/_aggrs/by-owner`);
    expect(all.body.map((d: any) => d._id)).toEqual([1, 2, 3]);
    const some = await getJson(`${backend.url}/db/orders/_aggrs/by-owner?avars=${encodeURIComponent('{"owner":"alice","min":2}')}`);
    expect(some.body).toEqual([{ _id: 1, owner: 'alice', total: 5 }]);
    expect((await getJson(`${backend.url}/db/orders/_aggrs/by-owner?pagesize=1&page=2`)).body.map((d: any) => d._id)).toEqual([2]);
  });

  it('fills @user from the authenticated caller, and refuses it in avars', async () => {
    const mine = await getJson(`${backend.url}/db/orders/_aggrs/mine`, { headers: { authorization: basic('alice', 'alice-password') } });
    expect(mine.body).toEqual([{ _id: 'alice', n: 2 }]);
    const forged = await getJson(`${backend.url}/db/orders/_aggrs/mine?avars=${encodeURIComponent('{"@user._id":"bob"}')}`);
    expect(forged.status).toBe(400);
  });

  it('400 for an unbound variable, 404 for an unknown aggregation', async () => {
    const unbound = await getJson(`${backend.url}/db/orders/_aggrs/needs`);
    expect(unbound.status).toBe(400);
    expect(unbound.body.message).toMatch(/unbound variables who/);
    expect((await getJson(`${backend.url}/db/orders/_aggrs/nope`)).status).toBe(404);
  });
});
