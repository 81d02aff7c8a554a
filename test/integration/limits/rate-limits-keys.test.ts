/**
 * SPEC §10 per key: an admin's override (`PATCH /_admin/keys/<id>`), daily usage
 * (`GET /keys/<id>/usage`, `/_admin/keys/<id>/usage`), and GraphQL requests counted by their
 * estimated cost under `units: cost`, refused before any backend read.
 */
import { describe, expect, it } from 'vitest';
import { call } from '../../support/clients/http-client.js';
import { as, ROOT, useStack } from '../../support/fixtures.js';
import { rateLimitHeaders } from './rate-limit-helpers.js';

const ALICE = as('alice');
const today = () => new Date().toISOString().slice(0, 10);

const SCHEMA = `
  type Item { n: Int }
  type Query { items(limit: Int = 10): [Item] }
`;
const MAPPINGS = { Query: { items: { db: 'shop', collection: 'items', sort: { n: 1 }, limit: { $arg: 'limit' } } } };

describe('rate limits per key: overrides, usage, GraphQL cost', () => {
  const stack = useStack({
    service: 'limits-keys',
    backend: { data: { shop: { items: Array.from({ length: 200 }, (_, i) => ({ _id: `i${i}`, n: i })) } } },
    users: { root: ['root'], alice: ['user'], bob: ['user'] },
    config: {
      upstream: { identity: { mode: 'headers' } },
      acl: { mode: 'enforce' },
      features: { webhooks: 'disabled' },
      limits: {
        policies: [
          { name: 'per-key', by: 'key', limit: 5, window: '1d', condition: "path-prefix('/shop')" },
          { name: 'cost', by: 'key', limit: 150, window: '1d', units: 'cost', condition: "path-prefix('/graphql')" },
          { name: 'per-user', by: 'user', limit: 1000, window: '1d' },
        ],
      },
    },
    permissions: {
      keys: { predicate: 'path-prefix(/keys)', roles: ['user'], apiKeys: { roles: ['reader'] } },
      read: { predicate: 'method(GET) and path-prefix(/shop)', roles: ['reader'] },
      gql: { predicate: 'path-prefix(/graphql)', roles: ['reader'] },
    },
    apps: { inv: { _id: 'inv', descriptor: { uri: 'inv' }, schema: SCHEMA, mappings: MAPPINGS } },
  });

  async function issue(name: string, auth = ALICE): Promise<{ id: string; bearer: string }> {
    const issued = await call(stack.proxy.url, '/keys', { method: 'POST', auth, body: { name, roles: ['reader'] } });
    expect(issued.status, issued.text).toBe(201);
    return { id: issued.json._id, bearer: `Bearer ${issued.json.key}` };
  }

  it('an admin gives one key its own limit; GET /keys shows it; null removes it', async () => {
    const key = await issue('override');
    const patched = await call(stack.proxy.url, `/_admin/keys/${key.id}`, { method: 'PATCH', auth: ROOT, body: { limits: { 'per-key': { limit: 2, window: '1d' } } } });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.json.limits).toEqual({ 'per-key': { limit: 2, window: '1d' } });
    const own = await call(stack.proxy.url, '/keys', { auth: ALICE });
    expect(own.json.find((k: { _id: string }) => k._id === key.id).limits).toEqual({ 'per-key': { limit: 2, window: '1d' } });

    // Every replica applies it within the change bus's delay (this one: at once).
    await expect.poll(async () => rateLimitHeaders(await call(stack.proxy.url, '/shop/items', { auth: key.bearer })).policies[0]?.q).toBe(2);
    // The poll's last request spent the first of the 2.
    expect((await call(stack.proxy.url, '/shop/items', { auth: key.bearer })).status).toBe(200);
    const refused = await call(stack.proxy.url, '/shop/items', { auth: key.bearer });
    expect(refused.status).toBe(429);
    expect(refused.json.message).toMatch(/^rate limit 'per-key': 2 requests per 86400 s/);

    // A quota instead, then back to the policy's own limit.
    const quota = await call(stack.proxy.url, `/_admin/keys/${key.id}`, { method: 'PATCH', auth: ROOT, body: { limits: { 'per-key': { quota: { limit: 7, period: 'month' } } } } });
    expect(quota.json.limits).toEqual({ 'per-key': { quota: { limit: 7, period: 'month' } } });
    const removed = await call(stack.proxy.url, `/_admin/keys/${key.id}`, { method: 'PATCH', auth: ROOT, body: { limits: { 'per-key': null } } });
    expect(removed.json.limits).toEqual({});
  });

  it('GET /_admin/limits lists the policies for the console (admins only)', async () => {
    const res = await call(stack.proxy.url, '/_admin/limits', { auth: ROOT });
    expect(res.status).toBe(200);
    expect(res.json.policies[0]).toEqual({ name: 'per-key', by: 'key', units: 'requests', limit: 5, window: '1d', condition: "path-prefix('/shop')" });
    expect(res.json).toMatchObject({ headers: true, onRedisUnavailable: 'local' });
    expect((await call(stack.proxy.url, '/_admin/limits', { auth: ALICE })).status).toBe(403);
  });

  it('a bad override is a 400 naming each mistake; only admins may set one; an unknown key is 404', async () => {
    const key = await issue('bad-override');
    const bad = await call(stack.proxy.url, `/_admin/keys/${key.id}`, {
      method: 'PATCH',
      auth: ROOT,
      body: { name: 'x', limits: { 'per-key': { limit: 0, window: '0s' }, 'per-user': { limit: 1, window: '1s' }, nope: null } },
    });
    expect(bad.status).toBe(400);
    expect(bad.json.message).toContain('name: cannot be changed here');
    expect(bad.json.message).toContain('limits.per-key.limit: must be an integer from 1');
    expect(bad.json.message).toContain('limits.per-key.window: must be a duration from 1s to 1d');
    expect(bad.json.message).toContain('limits.per-user: no by: key policy has this name (the by: key policies are per-key, cost)');
    expect(bad.json.message).toContain('limits.nope: no by: key policy');
    const huge = await call(stack.proxy.url, `/_admin/keys/${key.id}`, { method: 'PATCH', auth: ROOT, body: { limits: { 'per-key': { limit: 5, window: '30d' } } } });
    expect(huge.status).toBe(400);
    expect(huge.json.message).toMatch(/calendar quota/);
    expect((await call(stack.proxy.url, `/_admin/keys/${key.id}`, { method: 'PATCH', auth: ALICE, body: { limits: {} } })).status).toBe(403);
    expect((await call(stack.proxy.url, `/_admin/keys/nope`, { method: 'PATCH', auth: ROOT, body: { limits: {} } })).status).toBe(404);
  });

  it('usage per UTC day: requests admitted, units, refused; for the owner and for admins', async () => {
    const key = await issue('usage');
    for (let i = 0; i < 7; i++) await call(stack.proxy.url, '/shop/items', { auth: key.bearer });
    const own = await call(stack.proxy.url, `/keys/${key.id}/usage`, { auth: ALICE });
    expect(own.status, own.text).toBe(200);
    expect(own.json).toHaveLength(30);
    expect(own.json.at(-1)).toEqual({ day: today(), requests: 5, units: 5, refused: 2 });
    expect(own.json[0].requests).toBe(0);
    // Written to Redis within a few seconds; the admin's view (after the write) agrees.
    await expect
      .poll(async () => (await call(stack.proxy.url, `/_admin/keys/${key.id}/usage?from=${today()}&to=${today()}`, { auth: ROOT })).json, { timeout: 15_000, interval: 500 })
      .toEqual([{ day: today(), requests: 5, units: 5, refused: 2 }]);
    expect((await call(stack.proxy.url, `/keys/${key.id}/usage`, { auth: as('bob') })).status).toBe(404);
    expect((await call(stack.proxy.url, `/keys/${key.id}/usage`, { auth: key.bearer })).status).toBe(403);
    const badRange = await call(stack.proxy.url, `/keys/${key.id}/usage?from=2026-02-30`, { auth: ALICE });
    expect(badRange.status).toBe(400);
    expect(badRange.json.message).toMatch(/^from must be a UTC date written YYYY-MM-DD/);
    expect((await call(stack.proxy.url, `/keys/${key.id}/usage?from=2025-01-01&to=2026-01-01`, { auth: ALICE })).json.message).toMatch(/at most 100/);
  });

  it('units: cost counts a GraphQL request as its estimate and refuses it before any backend read', async () => {
    const key = await issue('graphql');
    const query = (limit: number) =>
      call(stack.proxy.url, '/graphql/inv', { method: 'POST', auth: key.bearer, headers: { accept: 'application/graphql-response+json' }, body: { query: `{ items(limit: ${limit}) { n } }` } });
    const first = await query(100);
    expect(first.status, first.text).toBe(200);
    expect(rateLimitHeaders(first).policies.find((p) => p.name === 'cost')).toEqual({ name: 'cost', q: 150, w: 86_400 });
    expect(rateLimitHeaders(first).limit).toMatchObject({ name: 'cost', r: 50 });
    stack.backend.clearRequests();
    const refused = await query(60);
    expect(refused.status).toBe(429);
    // SPEC §15: GraphQL-shaped on /graphql/<uri> (it was RESTHeart's `http status code` body).
    expect(refused.json.errors[0].extensions.code).toBe('TOO_MANY_REQUESTS');
    expect(refused.json.errors[0].message).toMatch(/^rate limit 'cost': 150 units per 86400 s \(this request costs 60 units\); retry in \d+ s$/);
    expect(refused.headers['retry-after']).toBeDefined();
    expect(stack.backend.requests).toHaveLength(0);
    // What is left is still there for a cheaper query: the refused one took nothing.
    const fits = await query(50);
    expect(fits.status).toBe(200);
    expect(rateLimitHeaders(fits).limit).toMatchObject({ name: 'cost', r: 0 });
    const usage = await call(stack.proxy.url, `/keys/${key.id}/usage?from=${today()}&to=${today()}`, { auth: ALICE });
    expect(usage.json).toEqual([{ day: today(), requests: 2, units: 150, refused: 1 }]);
  });
});
