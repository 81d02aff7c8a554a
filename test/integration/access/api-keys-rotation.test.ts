/**
 * SPEC §15 "Keys for their owners", the API half: every key's `start` in both lists, and
 * `POST /keys/<id>/rotate {"graceHours": n}` — a new key, the old one working until its grace
 * ends (on every replica, whose verification caches hear of the shorter expiry), grace keys not
 * counted toward the key limit, per-key limit overrides carried over. Two replicas on one Redis.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { call } from '../../support/clients/http-client.js';
import { as, ROOT, type Running, useStack } from '../../support/fixtures.js';
import { rateLimitHeaders } from '../limits/rate-limit-helpers.js';

const HOUR = 3_600_000;
const bearer = (key: string) => `Bearer ${key}`;
const RECORDS = 'outrigger:{rotation}:apikeys';

describe('API keys: start and rotation (SPEC §15)', () => {
  const stack = useStack({
    service: 'rotation',
    backend: { data: { shop: { items: [{ _id: 'i1', n: 1 }] } } },
    users: { root: ['root'], ...Object.fromEntries(['u-start', 'u-rotate', 'u-grace', 'u-limit', 'u-chain', 'u-limits', 'u-other', 'u-roles'].map((id) => [id, ['user']])) },
    config: {
      acl: { mode: 'enforce' },
      features: { webhooks: 'disabled' },
      limits: { policies: [{ name: 'per-key', by: 'key', limit: 50, window: '1d', condition: "path-prefix('/shop')" }] },
    },
    permissions: {
      keys: { predicate: 'path-prefix(/keys)', roles: ['user'], priority: 10, apiKeys: { roles: ['reader', 'writer'], 'max-expires-in-days': 30, 'max-keys-per-user': 2 } },
      read: { predicate: 'method(GET) and path-prefix(/shop)', roles: ['reader'] },
    },
  });
  let replica2: Running;
  beforeAll(async () => {
    replica2 = await stack.start();
  });

  const issue = async (owner: string, body: Record<string, unknown> = { name: 'k', roles: ['reader'] }) => {
    const res = await call(stack.proxy.url, '/keys', { method: 'POST', auth: as(owner), body });
    expect(res.status, res.text).toBe(201);
    return res.json as { _id: string; key: string; expiresAt: { $date: number } };
  };
  const rotate = (owner: string, id: string, body: unknown, base = stack.proxy.url) => call(base, `/keys/${id}/rotate`, { method: 'POST', auth: as(owner), body });
  const own = async (owner: string) => (await call(stack.proxy.url, '/keys', { auth: as(owner) })).json as Array<Record<string, any>>;
  const status = async (key: string, base: string) => (await call(base, '/shop/items', { auth: bearer(key) })).status;

  it('every key shows its start (prefix, _ and 8 characters) in GET /keys and GET /_admin/keys, never more', async () => {
    const issued = await issue('u-start');
    const start = issued.key.slice(0, 'rig_'.length + 8);
    expect(start).toMatch(/^rig_[0-9A-Za-z]{8}$/);
    const mine = (await own('u-start')).find((k) => k._id === issued._id)!;
    expect(mine.start).toBe(start);
    const all = (await call(stack.proxy.url, '/_admin/keys?owner=u-start', { auth: ROOT })).json as Array<Record<string, any>>;
    expect(all.find((k) => k._id === issued._id)!.start).toBe(start);
    // Nothing beyond the start of the secret is in either answer.
    expect(JSON.stringify(mine)).not.toContain(issued.key.slice(0, start.length + 1));

    // A key issued before `start` was kept: its record has none, and the lists omit the field.
    const legacy = await issue('u-start', { name: 'legacy', roles: ['reader'] });
    const record = JSON.parse((await stack.redis.client.hget(RECORDS, legacy._id))!);
    delete record.start;
    await stack.redis.client.hset(RECORDS, legacy._id, JSON.stringify(record));
    const listed = (await own('u-start')).find((k) => k._id === legacy._id)!;
    expect(listed).not.toHaveProperty('start');
    expect(listed.name).toBe('legacy');
  });

  it('rotate answers 201 as POST /keys with a new key; the old one works through its grace on every replica', async () => {
    const old = await issue('u-rotate', { name: 'ci', roles: ['reader'], expiresIn: 10 });
    // Both replicas hold the old key in their verification caches.
    expect(await status(old.key, stack.proxy.url)).toBe(200);
    expect(await status(old.key, replica2.url)).toBe(200);

    const before = Date.now();
    const res = await rotate('u-rotate', old._id, { graceHours: 2 });
    expect(res.status, res.text).toBe(201);
    expect(Object.keys(res.json).sort()).toEqual(['_id', 'expiresAt', 'key', 'name', 'roles']);
    expect(res.json).toMatchObject({ name: 'ci', roles: ['reader'] });
    expect(res.json._id).not.toBe(old._id);
    expect(res.json.key).toMatch(/^rig_[0-9A-Za-z]{49}$/);
    expect(res.headers.location).toBe(`/keys/${res.json._id}`);
    // The new key gets the old one's lifetime (10 days), counted from now.
    expect(res.json.expiresAt.$date).toBeGreaterThanOrEqual(before + 10 * 24 * HOUR - 1000);

    const listed = await own('u-rotate');
    const oldView = listed.find((k) => k._id === old._id)!;
    expect(oldView.replacedBy).toBe(res.json._id);
    expect(oldView.expiresAt.$date).toBeGreaterThanOrEqual(before + 2 * HOUR);
    expect(oldView.expiresAt.$date).toBeLessThanOrEqual(Date.now() + 2 * HOUR);
    expect(listed.find((k) => k._id === res.json._id)!.start).toBe(res.json.key.slice(0, 12));

    for (const base of [stack.proxy.url, replica2.url]) {
      expect(await status(old.key, base)).toBe(200);
      expect(await status(res.json.key, base)).toBe(200);
    }
    // A key already rotated is not rotated again: its successor is.
    const again = await rotate('u-rotate', old._id, { graceHours: 1 });
    expect(again.status).toBe(409);
    expect(again.json.message).toContain(`key "${res.json._id}" replaced it; rotate that one`);
  });

  it('the old key stops working when its grace ends, on both replicas (a grace of seconds; graceHours 0 ends it at once)', async () => {
    const first = await issue('u-grace');
    expect(await status(first.key, replica2.url)).toBe(200);
    // 0.001 h = 3.6 s: long enough to see the key work in its grace, short enough to wait out.
    const rotated = await rotate('u-grace', first._id, { graceHours: 0.001 });
    expect(rotated.status, rotated.text).toBe(201);
    const graceEnd = (await own('u-grace')).find((k) => k._id === first._id)!.expiresAt.$date as number;
    expect(graceEnd - Date.now()).toBeLessThanOrEqual(3600);
    if (Date.now() < graceEnd - 500) expect(await status(first.key, replica2.url)).toBe(200);
    await new Promise((r) => setTimeout(r, Math.max(0, graceEnd - Date.now() + 50)));
    for (const base of [stack.proxy.url, replica2.url]) {
      const refused = await call(base, '/shop/items', { auth: bearer(first.key) });
      expect(refused.status).toBe(401);
      expect(refused.headers['www-authenticate']).toBe('Bearer error="invalid_token"');
    }

    // graceHours 0: the replaced key is refused at once, though replica 2 had it cached as valid.
    const second = rotated.json as { _id: string; key: string };
    expect(await status(second.key, replica2.url)).toBe(200);
    const third = await rotate('u-grace', second._id, { graceHours: 0 });
    expect(third.status, third.text).toBe(201);
    await expect.poll(() => status(second.key, replica2.url), { timeout: 3000, interval: 50 }).toBe(401);
    expect(await status(second.key, stack.proxy.url)).toBe(401);
    expect(await status(third.json.key, replica2.url)).toBe(200);
  });

  it('a key in its grace period does not count toward max-keys-per-user', async () => {
    const a = await issue('u-limit');
    const b = await issue('u-limit');
    const full = await call(stack.proxy.url, '/keys', { method: 'POST', auth: as('u-limit'), body: { name: 'third' } });
    expect(full.status).toBe(409);
    expect(full.json.message).toContain('you hold 2 unexpired keys; the limit is 2');
    // At the limit, a rotation still works: the new key takes the old one's place.
    const a2 = await rotate('u-limit', a._id, { graceHours: 24 });
    expect(a2.status, a2.text).toBe(201);
    // b and a2 count; a (in its grace, still working) does not.
    const still = await call(stack.proxy.url, '/keys', { method: 'POST', auth: as('u-limit'), body: { name: 'third' } });
    expect(still.status).toBe(409);
    expect(still.json.message).toContain('you hold 2 unexpired keys');
    expect(await status(a.key, stack.proxy.url)).toBe(200);
    // With b revoked, a2 alone counts: one more key fits though a still works.
    expect((await call(stack.proxy.url, `/keys/${b._id}`, { method: 'DELETE', auth: as('u-limit') })).status).toBe(204);
    const fits = await call(stack.proxy.url, '/keys', { method: 'POST', auth: as('u-limit'), body: { name: 'third', roles: ['reader'] } });
    expect(fits.status, fits.text).toBe(201);
    expect(await status(a.key, stack.proxy.url)).toBe(200);
  });

  it('rotating again and again cannot pile up working keys: at most max-keys-per-user in their grace period', async () => {
    let current = await issue('u-chain');
    for (let i = 0; i < 2; i++) {
      const next = await rotate('u-chain', current._id, { graceHours: 1 });
      expect(next.status, next.text).toBe(201);
      current = next.json;
    }
    const refused = await rotate('u-chain', current._id, { graceHours: 1 });
    expect(refused.status).toBe(409);
    expect(refused.json.message).toMatch(/you already hold 2 keys in their grace period after a rotation, the most your keys allow \(2\)/);
    // Nothing changed: the current key is still the only one not in grace, and it works.
    expect((await own('u-chain')).filter((k) => !k.replacedBy).map((k) => k._id)).toEqual([current._id]);
    expect(await status(current.key, stack.proxy.url)).toBe(200);
  });

  it("the new key inherits the old one's per-key limit overrides, and the limiter applies them", async () => {
    const old = await issue('u-limits');
    const patched = await call(stack.proxy.url, `/_admin/keys/${old._id}`, { method: 'PATCH', auth: ROOT, body: { limits: { 'per-key': { limit: 7, window: '1d' } } } });
    expect(patched.status, patched.text).toBe(200);
    const rotated = await rotate('u-limits', old._id, { graceHours: 1 });
    expect(rotated.status, rotated.text).toBe(201);
    const view = (await own('u-limits')).find((k) => k._id === rotated.json._id)!;
    expect(view.limits).toEqual({ 'per-key': { limit: 7, window: '1d' } });
    const answer = await call(replica2.url, '/shop/items', { auth: bearer(rotated.json.key) });
    expect(answer.status).toBe(200);
    expect(rateLimitHeaders(answer).policies[0]?.q).toBe(7);
  });

  it('refuses a rotation of a key the caller does not own (404), by an admin or with a key (403), of an expired key (409)', async () => {
    const theirs = await issue('u-other');
    const stranger = await rotate('u-rotate', theirs._id, { graceHours: 1 });
    expect(stranger.status).toBe(404);
    expect(stranger.json.message).toBe(`you have no key "${theirs._id}"; list yours with GET /keys`);
    expect((await rotate('u-rotate', 'no-such-key', { graceHours: 1 })).status).toBe(404);
    const admin = await call(stack.proxy.url, `/keys/${theirs._id}/rotate`, { method: 'POST', auth: ROOT, body: { graceHours: 1 } });
    expect(admin.status).toBe(403);
    expect(admin.json.message).toMatch(/admin roles never get API keys/);
    const withKey = await call(stack.proxy.url, `/keys/${theirs._id}/rotate`, { method: 'POST', auth: bearer(theirs.key), body: { graceHours: 1 } });
    expect(withKey.status).toBe(403);
    expect(withKey.json.message).toMatch(/an API key cannot rotate API keys/);
    expect((await call(stack.proxy.url, `/keys/${theirs._id}/rotate`, { auth: as('u-other') })).status).toBe(405);

    const record = JSON.parse((await stack.redis.client.hget(RECORDS, theirs._id))!);
    await stack.redis.client.hset(RECORDS, theirs._id, JSON.stringify({ ...record, expiresAt: Date.now() - 1000 }));
    const expired = await rotate('u-other', theirs._id, { graceHours: 1 });
    expect(expired.status).toBe(409);
    expect(expired.json.message).toMatch(/expired at .*; only a working key is rotated: issue a new one with POST \/keys/);
    // Nothing was stored by the refusals: the owner still holds the one key.
    expect((await own('u-other')).map((k) => k._id)).toEqual([theirs._id]);
  });

  it('refuses when the roles of the old key are no longer offered by the permission (403 naming them)', async () => {
    const old = await issue('u-roles', { name: 'w', roles: ['writer'] });
    const replace = (roles: string[]) =>
      call(stack.proxy.url, '/_admin/acl/keys', {
        method: 'PUT',
        auth: ROOT,
        body: { predicate: 'path-prefix(/keys)', roles: ['user'], priority: 10, apiKeys: { roles, 'max-expires-in-days': 30, 'max-keys-per-user': 2 } },
      });
    expect((await replace(['reader'])).status).toBe(200);
    try {
      const res = await rotate('u-roles', old._id, { graceHours: 1 });
      expect(res.status).toBe(403);
      expect(res.json.message).toContain('this role is not available for your API keys: "writer"');
      expect((await own('u-roles')).map((k) => k._id)).toEqual([old._id]);
    } finally {
      expect((await replace(['reader', 'writer'])).status).toBe(200);
    }
  });
});
