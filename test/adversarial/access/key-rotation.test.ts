/**
 * Bad input at `POST /keys/<id>/rotate` (SPEC §15, issue 48 "a rotation grace beyond the
 * bound"): every bad `graceHours` is a 400 naming the field and its bound, someone else's key is
 * a 404 that says nothing of whose it is, and no refusal changes a key: the old one keeps its
 * expiry and no new key appears.
 */
import { describe, expect, it } from 'vitest';
import { call } from '../../support/clients/http-client.js';
import { as, useStack } from '../../support/fixtures.js';

describe('key rotation refuses bad input with a 4xx naming the problem', () => {
  const stack = useStack({
    service: 'adv-rotation',
    users: { root: ['root'], mallory: ['user'], victim: ['user'] },
    config: { acl: { mode: 'enforce' }, features: { webhooks: 'disabled' } },
    upstream: (_req, res) => res.end('{}'),
    permissions: { keys: { predicate: 'path-prefix(/keys)', roles: ['user'], apiKeys: { roles: ['reader'] } }, read: { predicate: 'path-prefix(/anything)', roles: ['reader'] } },
  });

  const issue = async (owner: string) => {
    const res = await call(stack.proxy.url, '/keys', { method: 'POST', auth: as(owner), body: { name: 'k', roles: ['reader'] } });
    expect(res.status, res.text).toBe(201);
    return res.json as { _id: string; key: string };
  };
  const keysOf = async (owner: string) => (await call(stack.proxy.url, '/keys', { auth: as(owner) })).json as Array<{ _id: string; expiresAt: { $date: number }; replacedBy?: string }>;

  const BAD: Array<[string, string, RegExp]> = [
    ['-1', '{"graceHours": -1}', /graceHours must be at least 0 \(got -1\)/],
    ['1e9', '{"graceHours": 1e9}', /graceHours must be at most 168 \(7 days; got 1000000000\)/],
    ['169', '{"graceHours": 169}', /graceHours must be at most 168/],
    ['168.5', '{"graceHours": 168.5}', /graceHours must be at most 168/],
    ['"x"', '{"graceHours": "x"}', /graceHours must be a number of hours from 0 to 168 \(got "x"\)/],
    ['"24" (a string)', '{"graceHours": "24"}', /graceHours must be a number of hours from 0 to 168/],
    ['null', '{"graceHours": null}', /graceHours must be a number of hours from 0 to 168 \(got null\)/],
    ['true', '{"graceHours": true}', /graceHours must be a number/],
    ['missing', '{}', /graceHours is required: .*from 0 to 168/],
    ['another field only', '{"grace": 24}', /graceHours is required/],
    ['an array body', '[24]', /the body must be a JSON object: send \{"graceHours": n\}/],
    ['a number body', '24', /the body must be a JSON object/],
    ['an empty body', '', /the request body is empty; send \{"graceHours": n\}/],
    ['not JSON', '{graceHours: 1}', /not valid JSON/],
  ];

  it.each(BAD)('graceHours %s → 400 naming it; the key is untouched', async (_name, body, message) => {
    const key = await issue('mallory');
    const before = (await keysOf('mallory')).find((k) => k._id === key._id)!;
    const res = await call(stack.proxy.url, `/keys/${key._id}/rotate`, { method: 'POST', auth: as('mallory'), headers: { 'content-type': 'application/json' }, rawBody: body });
    expect(res.status, res.text).toBe(400);
    expect(res.json.message).toMatch(message);
    const after = await keysOf('mallory');
    expect(after.find((k) => k._id === key._id)).toEqual(before);
    expect(after.filter((k) => k.replacedBy !== undefined)).toEqual([]);
    await call(stack.proxy.url, `/keys/${key._id}`, { method: 'DELETE', auth: as('mallory') });
  });

  it("someone else's key: 404 as for a key that does not exist, and their key keeps working as it was", async () => {
    const theirs = await issue('victim');
    const before = await keysOf('victim');
    const res = await call(stack.proxy.url, `/keys/${theirs._id}/rotate`, { method: 'POST', auth: as('mallory'), body: { graceHours: 0 } });
    expect(res.status).toBe(404);
    const unknown = await call(stack.proxy.url, `/keys/0123456789abcdef01234567/rotate`, { method: 'POST', auth: as('mallory'), body: { graceHours: 0 } });
    expect(unknown.status).toBe(404);
    // The same answer either way: a stranger learns nothing about which ids exist.
    expect(res.json.message.replace(theirs._id, 'ID')).toBe(unknown.json.message.replace('0123456789abcdef01234567', 'ID'));
    expect(await keysOf('victim')).toEqual(before);
    expect((await call(stack.proxy.url, '/anything', { auth: `Bearer ${theirs.key}` })).status).toBe(200);
  });

  it('a rotation without credentials is 401 with a Basic challenge; with a wrong method 405', async () => {
    const key = await issue('mallory');
    const anonymous = await call(stack.proxy.url, `/keys/${key._id}/rotate`, { method: 'POST', body: { graceHours: 1 } });
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers['www-authenticate']).toMatch(/^Basic /);
    for (const method of ['GET', 'PUT', 'DELETE']) expect((await call(stack.proxy.url, `/keys/${key._id}/rotate`, { method, auth: as('mallory') })).status).toBe(405);
  });
});
