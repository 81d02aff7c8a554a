import { beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/observability/logger.js';
import { ChangeBus } from '../../../src/store/change-bus.js';
import { redisKeys } from '../../../src/store/keys.js';
import { ApiKeyIssuer } from '../../../src/keys/issuer.js';
import { ApiKeyStore } from '../../../src/keys/key-store.js';
import { checksumOf } from '../../../src/keys/key-format.js';
import { startTestOutrigger } from '../../support/outrigger.js';
import { waitFor } from '../../support/wait.js';
import { changeGoalBound } from '../../support/timing.js';
import { commandsDuring, isKeyRefresh, isPollerRead, isUsageWrite, keyRefreshesBeyondPeriod, monitor, usageWritesBeyondFlushes } from '../../support/redis/redis-monitor.js';
import { call } from '../../support/clients/http-client.js';
import { as, type Running, useStack } from '../../support/fixtures.js';

const DAY = 86_400_000;

const bearer = (key: string) => `Bearer ${key}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// SPEC §6.5's subscriptions are not among them: a replica without subscribers runs no feed reader
// (XREAD BLOCK) and no claim renewal or sweep, so none of their commands may appear (issue 38).
const isSubscriptionCommand = (args: string[]) => args.slice(1).some((a) => /:sub-(feed|collections)$/.test(a));
const touchesKeys = (args: string[]) => /^eval/i.test(args[0] ?? '') || args.some((a) => /apikey/.test(a));

describe('API keys: issue, list, revoke, verify', () => {
  const users: Array<[string, string[]]> = [
    ['root', ['root']],
    ['sam', ['srv-admin', 'user']],
    ['paula', ['plain']],
    ['nora', ['nobody']],
    ['bob', ['user', 'auditor']],
    ['rita', ['reader']],
    ...['u-order', 'u-body', 'u-roles', 'u-expiry', 'u-limit', 'u-race', 'u-list', 'u-other', 'u-use', 'u-scope', 'u-revoke', 'u-expire', 'u-steady', 'u-used', 'u-life', 'u-secret'].map(
      (id) => [id, ['user']] as [string, string[]],
    ),
  ];
  const stack = useStack({
    service: 'keys-a',
    jwtIdentity: true,
    backend: {
      data: {
        shop: {
          orders: [
            { _id: 'o1', owner: 'u-use', total: 10, secret: 's1' },
            { _id: 'o2', owner: 'rita', total: 20, secret: 's2' },
            { _id: 'o3', owner: 'u-use', total: 30, secret: 's3' },
          ],
        },
      },
    },
    users: Object.fromEntries(users),
    config: { acl: { mode: 'enforce' }, apiKeys: { maxExpiresInDays: 60, maxKeysPerUser: 4 }, features: { webhooks: 'disabled' } },
    // stack.proxy is replica 1 of service keys-a; its log is captured.
    captureLogs: 'trace',
    permissions: {
      'users-keys': { predicate: 'path-prefix(/keys)', roles: ['user'], priority: 10, apiKeys: { roles: ['reader', 'writer'], 'max-expires-in-days': 30, 'max-keys-per-user': 2 } },
      'auditors-keys': { predicate: 'path(/keys) and method(POST)', roles: ['auditor'], priority: 20, apiKeys: { roles: ['auditor-ro'] } },
      'plain-keys': { predicate: 'path-prefix(/keys)', roles: ['plain'], priority: 10 },
      'admins-everything': { predicate: 'true', roles: ['root', 'srv-admin'], priority: 1000, apiKeys: { roles: ['reader'] } },
      'readers-own-orders': { predicate: 'method(GET) and path-prefix(/shop/orders)', roles: ['reader'], priority: 5, mongo: { readFilter: { owner: '@user.id' }, projectResponse: { secret: 0 } } },
    },
  });
  let a2: Running; // service keys-a, replica 2
  let b: Running; // service keys-b on the same Redis
  beforeAll(async () => {
    a2 = await stack.start();
    b = await startTestOutrigger({ ...stack.raw, service: { id: 'keys-b' }, apiKeys: {} });
    stack.onStop(() => b.stop());
    await stack.put('/_admin/acl/b-users-keys', { predicate: 'path-prefix(/keys)', roles: ['user'], priority: 10, apiKeys: { roles: ['reader'] } }, b.url);
    await stack.put('/_admin/acl/b-readers', { predicate: 'method(GET) and path-prefix(/shop/orders)', roles: ['reader'], priority: 5 }, b.url);
    // The second replica learns of the permissions through the change bus.
    await waitFor(
      () => a2.context.permissions.all().size,
      (n) => n === 5,
      15_000,
      'replica 2 to learn the five permissions',
    );
  });
  const issueAs = (id: string, body: unknown, base = () => stack.proxy.url) => call(base(), '/keys', { method: 'POST', auth: as(id), body });

  describe('issuing: the checks of SPEC §5.3, in order', () => {
    it('answers 201 {_id, name, roles, expiresAt, key} with a well-formed key', async () => {
      const before = Date.now();
      const res = await issueAs('u-order', { name: 'laptop', roles: ['reader'], expiresIn: 7 });
      expect(res.status).toBe(201);
      expect(Object.keys(res.json).sort()).toEqual(['_id', 'expiresAt', 'key', 'name', 'roles']);
      expect(res.json).toMatchObject({ name: 'laptop', roles: ['reader'], expiresAt: { $date: expect.any(Number) } });
      expect(res.json.expiresAt.$date).toBeGreaterThanOrEqual(before + 7 * DAY);
      expect(res.json.expiresAt.$date).toBeLessThanOrEqual(Date.now() + 7 * DAY);
      expect(res.json.key).toMatch(/^rig_[0-9A-Za-z]{49}$/);
      expect(res.headers['cache-control']).toBe('no-store');
    });

    it('refuses anonymous callers 401 with a Basic challenge, and key-authenticated callers 403', async () => {
      const anonymous = await call(stack.proxy.url, '/keys', { method: 'POST', body: { name: 'x' } });
      expect(anonymous.status).toBe(401);
      expect(anonymous.headers['www-authenticate']).toBe('Basic realm="keys-a"');
      expect(anonymous.json.message).toMatch(/sign in with your Basic credentials/);
      const { json } = await issueAs('u-order', { name: 'k', roles: ['reader'] });
      const withKey = await call(stack.proxy.url, '/keys', { method: 'POST', auth: bearer(json.key), body: { name: 'from a key' } });
      expect(withKey.status).toBe(403);
      expect(withKey.json.message).toMatch(/an API key cannot issue API keys; sign in with your Basic credentials/);
      expect((await call(stack.proxy.url, '/keys', { auth: bearer(json.key) })).status).toBe(403);
      await call(stack.proxy.url, `/keys/${json._id}`, { method: 'DELETE', auth: as('u-order') });
    });

    it('2. refuses root and srv-admin even though a permission with an apiKeys block applies to them', async () => {
      const stored = await stack.redis.client.hlen('outrigger:{keys-a}:apikeys');
      for (const admin of ['root', 'sam']) {
        const res = await issueAs(admin, { name: 'admin key', roles: ['reader'] });
        expect(res.status).toBe(403);
        expect(res.json.message).toMatch(/admin roles never get API keys \(you hold (root|srv-admin)\)/);
      }
      // Refused before anything is written: no key record came of either request.
      expect(await stack.redis.client.hlen('outrigger:{keys-a}:apikeys')).toBe(stored);
      const all = await call(stack.proxy.url, '/_admin/keys', { auth: as('root') });
      expect(all.json.filter((k: any) => k.owner === 'root' || k.owner === 'sam')).toEqual([]);
    });

    it('3. refuses when no permission applies, or when the one that applies has no apiKeys block, saying which', async () => {
      const none = await issueAs('nora', { name: 'k' });
      expect(none.status).toBe(403);
      expect(none.json.message).toMatch(/no permission applies to POST \/keys for your roles \(nobody\)/);
      const noBlock = await issueAs('paula', { name: 'k' });
      expect(noBlock.status).toBe(403);
      expect(noBlock.json.message).toMatch(/the permission "plain-keys" that applies to POST \/keys for your roles has no apiKeys block/);
    });

    it('4. answers 400 naming the field for an invalid body', async () => {
      const cases: Array<[unknown, RegExp]> = [
        [{}, /name is required/],
        [{ name: '' }, /name must be a non-empty string/],
        [{ name: 'x'.repeat(101) }, /name must be at most 100 characters/],
        [{ name: 'k', roles: 'reader' }, /roles must be an array of strings/],
        [{ name: 'k', roles: [7] }, /roles must be an array of strings/],
        [{ name: 'k', expiresIn: 0 }, /expiresIn must be a positive integer/],
        [{ name: 'k', expiresIn: 2.5 }, /expiresIn must be a positive integer/],
      ];
      for (const [body, message] of cases) {
        const res = await issueAs('u-body', body);
        expect(res.status, JSON.stringify(body)).toBe(400);
        expect(res.json.message).toMatch(message);
      }
      const notJson = await call(stack.proxy.url, '/keys', { method: 'POST', auth: as('u-body'), rawBody: '{"name":', headers: { 'content-type': 'application/json' } });
      expect(notJson.status).toBe(400);
      expect(notJson.json.message).toMatch(/not valid JSON/);
      expect((await call(stack.proxy.url, '/keys', { method: 'POST', auth: as('u-body') })).status).toBe(400);
      expect((await call(stack.proxy.url, '/keys', { method: 'GET', auth: as('u-body') })).json).toEqual([]);
    });

    it('runs the checks in the order of SPEC §5.3', async () => {
      // 1 before 2 and 3: see the lifecycle tests. 3 before 4: an invalid body from a user without an apiKeys block.
      expect((await issueAs('paula', { name: '' })).status).toBe(403);
      // 4 before 5: an invalid body asking for a role not offered.
      expect((await issueAs('u-body', { name: '', roles: ['ops'] })).status).toBe(400);
      // 5 before 6: a role not offered and a lifetime too long.
      const res = await issueAs('u-body', { name: 'k', roles: ['ops'], expiresIn: 999 });
      expect(res.status).toBe(403);
      expect(res.json.message).toMatch(/"ops"/);
      // 6 before 7: a caller at the limit asking for too long a lifetime gets 400, not 409.
      for (let i = 0; i < 2; i++) expect((await issueAs('u-body', { name: `k${i}` })).status).toBe(201);
      expect((await issueAs('u-body', { name: 'k3', expiresIn: 999 })).status).toBe(400);
      expect((await issueAs('u-body', { name: 'k3' })).status).toBe(409);
    });

    it('5. offers only the roles of the highest-priority permission, and refuses others 403 naming them', async () => {
      // bob holds user (priority 10: reader, writer) and auditor (priority 20: auditor-ro): the auditor block applies.
      const refused = await issueAs('bob', { name: 'k', roles: ['reader'] });
      expect(refused.status).toBe(403);
      expect(refused.json.message).toMatch(/not available for your API keys: "reader" \(available: auditor-ro\)/);
      const issued = await issueAs('bob', { name: 'k', roles: ['auditor-ro'] });
      expect(issued.status).toBe(201);
      expect(issued.json.roles).toEqual(['auditor-ro']);

      const several = await issueAs('u-roles', { name: 'k', roles: ['reader', 'ops', 'root'] });
      expect(several.status).toBe(403);
      expect(several.json.message).toMatch(/these roles are not available for your API keys: "ops", "root" \(available: reader, writer\)/);
      // Key roles need not be roles the user holds: u-roles holds only "user".
      const notHeld = await issueAs('u-roles', { name: 'k', roles: ['writer'] });
      expect(notHeld.status).toBe(201);
      // An empty list is valid: the key authenticates and carries no role.
      const empty = await issueAs('u-roles', { name: 'no roles', roles: [] });
      expect(empty.status).toBe(201);
      expect(empty.json.roles).toEqual([]);
    });

    it('6. defaults expiresIn to min(90, the maximum) and refuses more with 400 naming the maximum', async () => {
      const check = async (res: Awaited<ReturnType<typeof call>>, days: number) => {
        expect(res.status).toBe(201);
        const remaining = res.json.expiresAt.$date - Date.now();
        expect(remaining).toBeGreaterThan(days * DAY - 60_000);
        expect(remaining).toBeLessThanOrEqual(days * DAY);
      };
      await check(await issueAs('u-expiry', { name: 'permission max 30' }), 30); // the permission's max-expires-in-days
      await check(await issueAs('bob', { name: 'service max 60', roles: ['auditor-ro'] }), 60); // the service's maxExpiresInDays
      await check(await issueAs('u-expiry', { name: 'b default', roles: ['reader'] }, () => b.url), 90); // service max 3650: 90

      const tooLong = await issueAs('u-expiry', { name: 'k', expiresIn: 31 });
      expect(tooLong.status).toBe(400);
      expect(tooLong.json.message).toMatch(/expiresIn must be at most 30 days/);
      const tooLongForService = await issueAs('bob', { name: 'k', roles: ['auditor-ro'], expiresIn: 61 });
      expect(tooLongForService.status).toBe(400);
      expect(tooLongForService.json.message).toMatch(/expiresIn must be at most 60 days/);
      await check(await issueAs('bob', { name: 'k', roles: ['auditor-ro'], expiresIn: 60 }), 60);
    });

    it('7. answers 409 at the limit, issues again after a revoke, and does not count expired keys', async () => {
      const first = await issueAs('u-limit', { name: 'one' });
      expect((await issueAs('u-limit', { name: 'two' })).status).toBe(201);
      const third = await issueAs('u-limit', { name: 'three' });
      expect(third.status).toBe(409);
      expect(third.json.message).toMatch(/^key limit reached: revoke a key first/);

      expect((await call(stack.proxy.url, `/keys/${first.json._id}`, { method: 'DELETE', auth: as('u-limit') })).status).toBe(204);
      const again = await issueAs('u-limit', { name: 'three' });
      expect(again.status).toBe(201);
      expect((await issueAs('u-limit', { name: 'four' })).status).toBe(409);

      // An expired key stays listed but no longer counts.
      const text = await stack.redis.client.hget('outrigger:{keys-a}:apikeys', again.json._id);
      await stack.redis.client.hset('outrigger:{keys-a}:apikeys', again.json._id, JSON.stringify({ ...JSON.parse(text!), expiresAt: Date.now() - 1000 }));
      expect((await issueAs('u-limit', { name: 'four' })).status).toBe(201);
      const listed = await call(stack.proxy.url, '/keys', { auth: as('u-limit') });
      expect(listed.json.map((k: any) => k.name).sort()).toEqual(['four', 'three', 'two']);
    });

    it('never lets concurrent requests at the limit exceed it, across replicas', async () => {
      const results = await Promise.all(Array.from({ length: 12 }, (_, i) => issueAs('u-race', { name: `race ${i}` }, () => (i % 2 ? stack.proxy.url : a2.url))));
      const statuses = results.map((r) => r.status).sort();
      expect(statuses.filter((s) => s === 201)).toHaveLength(2);
      expect(statuses.filter((s) => s === 409)).toHaveLength(10);
      expect(await stack.redis.client.scard('outrigger:{keys-a}:apikeys-of:u-race')).toBe(2);
    });
  });

  describe('the key is shown once and stored nowhere in clear', () => {
    it('is in no answer after issuance, in no Redis key or value, and in no log line', async () => {
      const issued = await issueAs('u-secret', { name: 'secret', roles: ['reader'] });
      const { key, _id } = issued.json;
      expect((await call(stack.proxy.url, '/shop/orders', { auth: bearer(key) })).status).toBe(200);
      expect((await call(a2.url, '/shop/orders', { auth: bearer(key) })).status).toBe(200);
      await call(stack.proxy.url, `/keys/${_id}`, { auth: as('u-secret') });
      const answers = [
        await call(stack.proxy.url, '/keys', { auth: as('u-secret') }),
        await call(stack.proxy.url, `/keys/${_id}`, { auth: as('u-secret') }),
        await call(stack.proxy.url, '/_admin/keys', { auth: as('root') }),
        await call(stack.proxy.url, `/_admin/keys/${_id}`, { auth: as('root') }),
      ];
      const randomPart = key.slice(4, 47);
      for (const answer of answers) {
        expect(answer.status).toBe(200);
        expect(answer.text).not.toContain(randomPart);
        expect(answer.text).not.toContain('keyHash');
      }

      // Every key name and every value of every type in Redis.
      let everything = '';
      let cursor = '0';
      do {
        const [next, names] = await stack.redis.client.scan(cursor, 'COUNT', 1000);
        cursor = next;
        for (const name of names) {
          everything += `${name}\n`;
          const type = await stack.redis.client.type(name);
          if (type === 'string') everything += await stack.redis.client.get(name);
          else if (type === 'hash') everything += JSON.stringify(await stack.redis.client.hgetall(name));
          else if (type === 'set') everything += (await stack.redis.client.smembers(name)).join('\n');
          else if (type === 'list') everything += (await stack.redis.client.lrange(name, 0, -1)).join('\n');
          else if (type === 'zset') everything += (await stack.redis.client.zrange(name, 0, -1)).join('\n');
          else if (type === 'stream') everything += JSON.stringify(await stack.redis.client.xrange(name, '-', '+'));
        }
      } while (cursor !== '0');
      expect(everything).toContain(_id);
      expect(everything).not.toContain(randomPart);
      expect(everything).not.toContain(key);

      expect(stack.logText).toContain('issued an API key');
      expect(stack.logText).not.toContain(randomPart);
    });
  });

  describe('listing and revoking', () => {
    it('GET /keys lists the caller’s keys only, newest first, paged, without key or hash', async () => {
      const first = await issueAs('u-list', { name: 'first', roles: ['reader'] });
      await sleep(5);
      await issueAs('u-list', { name: 'second', roles: ['writer'], expiresIn: 3 });
      await issueAs('u-other', { name: 'someone else' });
      const res = await call(stack.proxy.url, '/keys', { auth: as('u-list') });
      expect(res.status).toBe(200);
      expect(res.headers['x-total-count']).toBe('2');
      expect(res.json.map((k: any) => k.name)).toEqual(['second', 'first']);
      const [, firstKey] = res.json;
      expect(Object.keys(firstKey).sort()).toEqual(['_id', 'createdAt', 'expiresAt', 'limits', 'name', 'roles', 'start', 'via']);
      expect(firstKey).toEqual({
        _id: first.json._id,
        name: 'first',
        start: first.json.key.slice(0, 12),
        roles: ['reader'],
        createdAt: { $date: expect.any(Number) },
        expiresAt: first.json.expiresAt,
        via: 'api',
        limits: {},
      });
      const page = await call(stack.proxy.url, '/keys?page=2&pagesize=1', { auth: as('u-list') });
      expect(page.json.map((k: any) => k.name)).toEqual(['first']);
      expect(page.headers['x-total-count']).toBe('2');
      expect((await call(stack.proxy.url, `/keys/${first.json._id}`, { auth: as('u-list') })).json.name).toBe('first');
    });

    it('DELETE /keys/<id> answers 404 for a key of someone else, 204 for one’s own, and the key stops working', async () => {
      const mine = await issueAs('u-revoke', { name: 'mine', roles: ['reader'] });
      const theirs = await issueAs('u-other', { name: 'theirs', roles: ['reader'] });
      const notMine = await call(stack.proxy.url, `/keys/${theirs.json._id}`, { method: 'DELETE', auth: as('u-revoke') });
      expect(notMine.status).toBe(404);
      expect(notMine.json.message).toMatch(/you have no key/);
      expect((await call(stack.proxy.url, '/shop/orders', { auth: bearer(theirs.json.key) })).status).toBe(200);
      expect((await call(stack.proxy.url, '/shop/orders', { auth: bearer(mine.json.key) })).status).toBe(200);
      expect((await call(stack.proxy.url, `/keys/${mine.json._id}`, { method: 'DELETE', auth: as('u-revoke') })).status).toBe(204);
      expect((await call(stack.proxy.url, `/keys/${mine.json._id}`, { method: 'DELETE', auth: as('u-revoke') })).status).toBe(404);
      const refused = await call(stack.proxy.url, '/shop/orders', { auth: bearer(mine.json.key) });
      expect(refused.status).toBe(401);
      expect(refused.headers['www-authenticate']).toBe('Bearer error="invalid_token"');
      expect(refused.json.message).toMatch(/revoked/);
    });

    it('/_admin/keys lists every key with owner, filters by owner and client, pages; DELETE revokes', async () => {
      // An agent sign-in key (via oauth, with a client) issued through the same issuer the agent sign-in uses.
      const keys = redisKeys('outrigger', 'keys-a');
      const issuer = new ApiKeyIssuer(
        new ApiKeyStore(stack.redis.client, keys),
        new ChangeBus(stack.redis.client, stack.redis.client, keys.changes),
        { prefix: 'rig', serviceId: 'keys-a' },
        createLogger({ level: 'silent' }),
      );
      const agent = await issuer.issue({ owner: 'u-other', name: 'claude sign-in', roles: ['reader'], lifetimeDays: 1, maxKeys: 10, via: 'oauth', client: 'claude-desktop' });

      const all = await call(stack.proxy.url, '/_admin/keys', { auth: as('root') });
      expect(all.status).toBe(200);
      expect(Number(all.headers['x-total-count'])).toBe(all.json.length);
      expect(all.json.length).toBeGreaterThan(5);
      const byOwner = await call(stack.proxy.url, '/_admin/keys?owner=u-other', { auth: as('root') });
      expect(byOwner.json.map((k: any) => k.owner)).toEqual(expect.arrayContaining(['u-other']));
      expect(new Set(byOwner.json.map((k: any) => k.owner))).toEqual(new Set(['u-other']));
      const byClient = await call(stack.proxy.url, '/_admin/keys?client=claude-desktop', { auth: as('root') });
      expect(byClient.json).toEqual([
        {
          _id: agent.record._id,
          owner: 'u-other',
          name: 'claude sign-in',
          start: agent.key.slice(0, 12),
          roles: ['reader'],
          createdAt: { $date: agent.record.createdAt },
          expiresAt: { $date: agent.record.expiresAt },
          via: 'oauth',
          client: 'claude-desktop',
          limits: {},
        },
      ]);
      const paged = await call(stack.proxy.url, '/_admin/keys?pagesize=2&page=1', { auth: as('root') });
      expect(paged.json).toHaveLength(2);
      expect(paged.headers['x-total-count']).toBe(all.headers['x-total-count']);

      expect((await call(stack.proxy.url, '/_admin/keys', { auth: as('u-other') })).status).toBe(403);
      expect((await call(stack.proxy.url, `/_admin/keys/${agent.record._id}`, { method: 'DELETE', auth: as('u-other') })).status).toBe(403);
      expect((await call(stack.proxy.url, '/shop/orders', { auth: bearer(agent.key) })).status).toBe(200);
      expect((await call(stack.proxy.url, `/_admin/keys/${agent.record._id}`, { method: 'DELETE', auth: as('root') })).status).toBe(204);
      expect((await call(stack.proxy.url, `/_admin/keys/${agent.record._id}`, { method: 'DELETE', auth: as('root') })).status).toBe(404);
      expect((await call(stack.proxy.url, '/shop/orders', { auth: bearer(agent.key) })).status).toBe(401);
    });
  });

  describe('using a key', () => {
    it('runs as the owner with the key’s roles only, under the same readFilter and projectResponse as a password sign-in', async () => {
      const issued = await issueAs('u-use', { name: 'reader key', roles: ['reader'] });
      // u-use's own roles (user) grant no read of orders: the key's roles (reader) do.
      expect((await call(stack.proxy.url, '/shop/orders', { auth: as('u-use') })).status).toBe(403);
      stack.backend.clearRequests();
      const withKey = await call(stack.proxy.url, '/shop/orders', { auth: bearer(issued.json.key) });
      expect(withKey.status).toBe(200);
      expect(withKey.json.map((d: any) => d._id).sort()).toEqual(['o1', 'o3']);
      for (const doc of withKey.json) expect(doc.secret).toBeUndefined();
      const sent = stack.backend.requests.at(-1)!;
      expect(sent.identity).toEqual({ via: 'jwt', id: 'u-use', roles: ['reader'] });
      expect(sent.query.getAll('filter')).toEqual(['{"owner":"u-use"}']);
      expect(String(sent.headers.authorization)).not.toContain(issued.json.key);

      // rita signs in with a password and holds the same role: the same rules, for her own documents.
      stack.backend.clearRequests();
      const withPassword = await call(stack.proxy.url, '/shop/orders', { auth: as('rita') });
      expect(withPassword.json).toEqual([{ _id: 'o2', owner: 'rita', total: 20 }]);
      expect(stack.backend.requests.at(-1)!.query.getAll('filter')).toEqual(['{"owner":"rita"}']);

      // A key without roles authenticates but is allowed nothing.
      const noRoles = await issueAs('u-use', { name: 'no roles', roles: [] });
      const denied = await call(stack.proxy.url, '/shop/orders', { auth: bearer(noRoles.json.key) });
      expect(denied.status).toBe(403);
    });

    it('refuses malformed keys and bad checksums 401 without touching Redis', async () => {
      const { json } = await issueAs('u-use', { name: 'typo', roles: ['reader'] }).then(async (r) => (r.status === 409 ? issueAs('u-scope', { name: 'typo', roles: ['reader'] }) : r));
      const key: string = json.key;
      const flipped = key.slice(0, 10) + (key[10] === 'A' ? 'B' : 'A') + key.slice(11);
      const longer = `rig_${'Q'.repeat(50)}${checksumOf('Q'.repeat(49))}`;
      const { commands } = await commandsDuring(stack.redis, async () => {
        for (const bad of [flipped, key.slice(0, -1), `${key}x`, 'rig_short', longer]) {
          const res = await call(stack.proxy.url, '/shop/orders', { auth: bearer(bad) });
          expect(res.status, bad).toBe(401);
          expect(res.headers['www-authenticate']).toBe('Bearer error="invalid_token"');
        }
      });
      expect(commands.filter((c) => touchesKeys(c.args))).toEqual([]);
      const wellFormedUnknown = `rig_${'Q'.repeat(43)}${checksumOf('Q'.repeat(43))}`;
      const unknown = await call(stack.proxy.url, '/shop/orders', { auth: bearer(wellFormedUnknown) });
      expect(unknown.status).toBe(401);
      expect(unknown.headers['www-authenticate']).toBe('Bearer error="invalid_token"');
    });

    it('works only on the service that issued it (another service on the same Redis refuses it)', async () => {
      const onA = await issueAs('u-scope', { name: 'a', roles: ['reader'] });
      const onB = await issueAs('u-scope', { name: 'b', roles: ['reader'] }, () => b.url);
      expect(onB.status).toBe(201);
      expect((await call(stack.proxy.url, '/shop/orders', { auth: bearer(onA.json.key) })).status).toBe(200);
      const refused = await call(b.url, '/shop/orders', { auth: bearer(onA.json.key) });
      expect(refused.status).toBe(401);
      expect(refused.headers['www-authenticate']).toBe('Bearer error="invalid_token"');
      expect((await call(stack.proxy.url, '/shop/orders', { auth: bearer(onB.json.key) })).status).toBe(401);
      expect((await call(b.url, '/shop/orders', { auth: bearer(onB.json.key) })).status).toBe(200);
      // Neither lists the other's keys.
      expect((await call(b.url, '/keys', { auth: as('u-scope') })).json.map((k: any) => k.name)).toEqual(['b']);
      expect((await call(b.url, '/_admin/keys', { auth: as('root') })).json.map((k: any) => k._id)).not.toContain(onA.json._id);
    });
  });

  describe('revocation and expiry on every replica', () => {
    it('a revocation on one replica is seen by another, whose cache held the key, within 1 s', async () => {
      const issued = await issueAs('u-revoke', { name: 'cached elsewhere', roles: ['reader'] });
      expect((await call(a2.url, '/shop/orders', { auth: bearer(issued.json.key) })).status).toBe(200);
      // A request the replica answers from its cache, timed: how slow this machine is right now.
      const baselineStarted = Date.now();
      expect((await call(a2.url, '/shop/orders', { auth: bearer(issued.json.key) })).status).toBe(200);
      const baselineMs = Date.now() - baselineStarted;
      const revokedAt = Date.now();
      expect((await call(stack.proxy.url, `/keys/${issued.json._id}`, { method: 'DELETE', auth: as('u-revoke') })).status).toBe(204);
      let status = 200;
      while (status === 200 && Date.now() - revokedAt < 10_000) {
        status = (await call(a2.url, '/shop/orders', { auth: bearer(issued.json.key) })).status;
        if (status === 200) await sleep(10);
      }
      const seenAfter = Date.now() - revokedAt;
      expect(status).toBe(401);
      // SPEC §5.4: 1 s (goal), carried by the change bus, plus 2 s of margin, or more when this
      // machine is slower right now: the revoking request and a few more round trips, each as
      // slow as the baseline (issues 40, 54). Left to the cache's background re-read (5 s after
      // the key was confirmed), the replica would mostly exceed it; the 20 s guarantee is the
      // cache's hard bound.
      const bound = changeGoalBound(baselineMs);
      console.info(`[api-keys] revocation seen by the other replica after ${seenAfter} ms (a cached request took ${baselineMs} ms; bound ${bound} ms)`);
      expect(seenAfter).toBeLessThan(bound);
    });

    it('a cached key is refused the moment it expires, from the cached expiry', async () => {
      const issued = await issueAs('u-expire', { name: 'short', roles: ['reader'] });
      const { _id, key } = issued.json;
      // Shorten its life in Redis (a test-only edit) and announce the change so replicas reload it.
      const recordsKey = 'outrigger:{keys-a}:apikeys';
      const expiresAt = Date.now() + 1500;
      await stack.redis.client.hset(recordsKey, _id, JSON.stringify({ ...JSON.parse((await stack.redis.client.hget(recordsKey, _id))!), expiresAt }));
      await stack.redis.client.publish('outrigger:{keys-a}:changes', JSON.stringify({ kind: 'apikeys', id: _id }));
      await sleep(100);
      expect((await call(a2.url, '/shop/orders', { auth: bearer(key) })).status).toBe(200);
      const watch = await monitor(stack.redis.port);
      try {
        expect((await call(a2.url, '/shop/orders', { auth: bearer(key) })).status).toBe(200);
        await sleep(expiresAt - Date.now());
        const refused = await call(a2.url, '/shop/orders', { auth: bearer(key) });
        expect(refused.status).toBe(401);
        expect(refused.headers['www-authenticate']).toBe('Bearer error="invalid_token"');
        expect(refused.json.message).toMatch(/the API key expired at/);
      } finally {
        await watch.stop();
      }
      // Refused from memory: the replica did not ask Redis about the key.
      expect(watch.seen.filter((c) => touchesKeys(c.args) && !c.args.some((a) => a.endsWith('apikeys-last-used')))).toEqual([]);
      const listed = await call(stack.proxy.url, '/keys', { auth: as('u-expire') });
      expect(listed.json[0].expiresAt).toEqual({ $date: expiresAt });
    });
  });

  describe('cost of verification', () => {
    it('verifies a known key with zero Redis commands in the steady state', async () => {
      const issued = await issueAs('u-steady', { name: 'steady', roles: ['reader'] });
      const key = issued.json.key;
      for (let i = 0; i < 3; i++) expect((await call(stack.proxy.url, '/shop/orders', { auth: bearer(key) })).status).toBe(200); // warm-up: first read, first lastUsedAt
      // The first use's lastUsedAt write is not awaited by its request: it must land before the window.
      await waitFor(
        () => stack.redis.client.hexists('outrigger:{keys-a}:apikeys-last-used', issued.json._id),
        (n) => n === 1,
        10_000,
        'the first use written',
      );
      const N = 300;
      // The three replicas' timers run through the window whatever the traffic: their poller
      // reads and PINGs are left out, and usage writes count only up to what the periodic flush
      // may send (issue 54: usage written per request must fail this).
      const { commands, windowMs } = await commandsDuring(stack.redis, async () => {
        for (let i = 0; i < N; i += 10) await Promise.all(Array.from({ length: 10 }, () => call(stack.proxy.url, '/shop/orders', { auth: bearer(key) }).then((r) => expect(r.status).toBe(200))));
      });
      // Nothing of subscriptions while nobody subscribes (issue 38).
      expect(commands.filter((c) => isSubscriptionCommand(c.args))).toEqual([]);
      const pollerReads = commands.filter((c) => isPollerRead(c.args)).length;
      const usageWrites = commands.filter((c) => isUsageWrite(c.args));
      expect(usageWritesBeyondFlushes(commands, windowMs, 3)).toBeNull();
      // A window longer than the cache's 5 s on a loaded machine holds its periodic re-reads of the key (one replica serves the requests).
      const refreshes = commands.filter((c) => isKeyRefresh(c) && c.source !== 'lua').length;
      expect(keyRefreshesBeyondPeriod(commands, windowMs, 1)).toBeNull();
      expect(commands.filter((c) => !isPollerRead(c.args) && !isUsageWrite(c.args) && !isKeyRefresh(c))).toEqual([]);
      console.info(
        `[api-keys] ${N} key-authenticated proxied requests in ${windowMs.toFixed(0)} ms: ${commands.length} Redis commands at Redis, ${pollerReads} periodic poller reads and PINGs, ${usageWrites.length} usage writes of the periodic flush, ${refreshes} periodic key re-reads, 0 caused by verification`,
      );
    });

    it('writes lastUsedAt on first use and then at most once a minute per key per replica', async () => {
      const issued = await issueAs('u-used', { name: 'used', roles: ['reader'] });
      expect((await call(stack.proxy.url, '/keys', { auth: as('u-used') })).json[0].lastUsedAt).toBeUndefined();
      const firstUse = Date.now();
      const { commands } = await commandsDuring(stack.redis, async () => {
        for (let i = 0; i < 40; i++) expect((await call(i % 2 ? stack.proxy.url : a2.url, '/shop/orders', { auth: bearer(issued.json.key) })).status).toBe(200);
      });
      const writes = commands.filter((c) => /^evalsha|^eval$/i.test(c.args[0] ?? '') && c.args.some((a) => a.endsWith('apikeys-last-used')) && c.args.includes(issued.json._id));
      expect(writes).toHaveLength(2); // one per replica
      const listed = (await call(stack.proxy.url, '/keys', { auth: as('u-used') })).json[0];
      expect(listed.lastUsedAt.$date).toBeGreaterThanOrEqual(firstUse);
      expect(listed.lastUsedAt.$date).toBeLessThanOrEqual(Date.now());
    });
  });

  describe('feature lifecycle (SPEC §5.5)', () => {
    const dump = async () => {
      const out: Record<string, unknown> = {};
      // Every key record and index (lastUsedAt, usage data written by requests, aside).
      for (const name of (await stack.redis.client.keys('outrigger:{keys-a}:apikey*')).filter((n) => !n.endsWith('apikeys-last-used')).sort()) {
        const type = await stack.redis.client.type(name);
        out[name] = type === 'hash' ? await stack.redis.client.hgetall(name) : type === 'set' ? (await stack.redis.client.smembers(name)).sort() : await stack.redis.client.get(name);
      }
      return out;
    };
    const feature = (action: string) => call(stack.proxy.url, `/_admin/features/api-keys/${action}`, { method: 'POST', auth: as('root') });

    it('disable and uninstall refuse issuing and every key; enable and install find every key as it was', async () => {
      const issued = await issueAs('u-life', { name: 'survivor', roles: ['reader'] });
      expect((await call(stack.proxy.url, '/shop/orders', { auth: bearer(issued.json.key) })).status).toBe(200);
      const before = await dump();
      const listed = async () => (await call(stack.proxy.url, '/_admin/keys', { auth: as('root') })).json.map(({ lastUsedAt: _, ...k }: any) => k);
      const listedBefore = await listed();

      for (const [off, on] of [
        ['disable', 'enable'],
        ['uninstall', 'install'],
      ] as const) {
        expect((await feature(off)).status).toBe(200);
        for (const caller of ['u-life', 'root', 'nora']) {
          const res = await issueAs(caller, { name: 'while off' });
          expect(res.status).toBe(403);
          expect(res.json.message).toBe('API keys are disabled on this service');
        }
        const refused = await call(stack.proxy.url, '/shop/orders', { auth: bearer(issued.json.key) });
        expect(refused.status).toBe(401);
        await expect.poll(async () => (await call(a2.url, '/shop/orders', { auth: bearer(issued.json.key) })).status, { timeout: 5000 }).toBe(401);
        // Owners can still see (and revoke) their keys while the feature is off.
        expect((await call(stack.proxy.url, '/keys', { auth: as('u-life') })).json.map((k: any) => k.name)).toEqual(['survivor']);
        expect(await dump()).toEqual(before);

        expect((await feature(on)).status).toBe(200);
        expect((await call(stack.proxy.url, '/shop/orders', { auth: bearer(issued.json.key) })).status).toBe(200);
        await expect.poll(async () => (await call(a2.url, '/shop/orders', { auth: bearer(issued.json.key) })).status, { timeout: 5000 }).toBe(200);
      }
      expect(await listed()).toEqual(listedBefore);
      expect(await dump()).toEqual(before);
    });
  });
});
