import { beforeAll, describe, expect, it } from 'vitest';
import { jwtVerify } from 'jose';
import { basic, BUS_ONLY_POLL_MS, startTestOutrigger } from '../../support/outrigger.js';
import { call } from '../../support/clients/http-client.js';
import { as, JWT_SECRET, ROOT, type Running, useStack } from '../../support/fixtures.js';

describe('access: permissions, Basic sign-in, identity propagation', () => {
  const stack = useStack({
    service: 'access',
    jwtIdentity: true,
    backend: {
      data: {
        shop: {
          orders: [
            { _id: 'o1', owner: 'alice', total: 10, secret: 's1', nested: { a: 1, b: 2 } },
            { _id: 'o2', owner: 'bob', total: 20, secret: 's2', nested: { a: 3, b: 4 } },
            { _id: 'o3', owner: 'alice', total: 30, secret: 's3', nested: { a: 5, b: 6 } },
          ],
          products: [{ _id: 'p1', name: 'boat', cost: 5 }],
        },
      },
    },
    users: { root: ['root'], alice: ['user'], bob: ['user', 'auditor'], stranger: ['nobody-role'] },
    config: { acl: { mode: 'enforce' } },
  });
  /**
   * A second process on the same config, whose version poll is too far away to matter: it learns
   * of a permission change through the change bus or not within any test's bound (issue 54).
   */
  let second: Running;
  beforeAll(async () => {
    second = await stack.start({}, { documentPollMs: BUS_ONLY_POLL_MS });
  });
  const ALICE = as('alice');
  const STRANGER = as('stranger');
  const BOB = as('bob');

  const put = (id: string, doc: Record<string, unknown>) => call(stack.proxy.url, `/_admin/acl/${id}`, { method: 'PUT', auth: ROOT, body: doc });

  describe('permission validation', () => {
    const cases: Array<[string, Record<string, unknown>, RegExp]> = [
      ['bad predicate', { predicate: 'path-prefix(/x) and', roles: ['user'] }, /predicate is not a valid condition: .*position \d+/],
      ['unknown predicate', { predicate: 'no-such-thing(1)', roles: ['user'] }, /predicate is not a valid condition/],
      ['missing roles', { predicate: 'true' }, /roles must be a non-empty array/],
      ['empty roles', { predicate: 'true', roles: [] }, /roles must be a non-empty array/],
      ['non-integer priority', { predicate: 'true', roles: ['u'], priority: 1.5 }, /priority must be an integer/],
      ['unknown field', { predicate: 'true', roles: ['u'], role: 'u' }, /role is not a permission field/],
      ['apiKeys role instead of roles', { predicate: 'true', roles: ['u'], apiKeys: { role: ['x'] } }, /apiKeys\.role is not an apiKeys field/],
      ['apiKeys roles missing', { predicate: 'true', roles: ['u'], apiKeys: {} }, /apiKeys\.roles must be a non-empty array of distinct strings/],
      ['apiKeys roles duplicated', { predicate: 'true', roles: ['u'], apiKeys: { roles: ['a', 'a'] } }, /apiKeys\.roles must be a non-empty array of distinct strings/],
      ['apiKeys roles empty string', { predicate: 'true', roles: ['u'], apiKeys: { roles: [''] } }, /apiKeys\.roles must be a non-empty array of distinct strings/],
      ['apiKeys admin role', { predicate: 'true', roles: ['u'], apiKeys: { roles: ['reader', 'srv-admin'] } }, /apiKeys\.roles must not contain the admin role srv-admin/],
      ['apiKeys expiry out of range', { predicate: 'true', roles: ['u'], apiKeys: { roles: ['r'], 'max-expires-in-days': 4000 } }, /max-expires-in-days must be an integer from 1 to 3650/],
      ['apiKeys limit out of range', { predicate: 'true', roles: ['u'], apiKeys: { roles: ['r'], 'max-keys-per-user': 0 } }, /max-keys-per-user must be an integer from 1 to 1000/],
      ['mongo unknown', { predicate: 'true', roles: ['u'], mongo: { writeFilter: {} } }, /mongo\.writeFilter is not supported/],
      ['mixed projection', { predicate: 'true', roles: ['u'], mongo: { projectResponse: { a: 1, b: 0 } } }, /all 1 .* or all 0/],
    ];
    for (const [name, doc, message] of cases) {
      it(`refuses ${name} with 400 naming the field`, async () => {
        const res = await put(`invalid-${name.replace(/\W+/g, '-')}`, doc);
        expect(res.status).toBe(400);
        expect(res.json['http status code']).toBe(400);
        expect(res.json.message).toMatch(message);
      });
    }

    it('reports several problems of one document at once', async () => {
      const res = await put('many', { predicate: '(', roles: 'user', apiKeys: { roles: ['root'] }, extra: 1 });
      expect(res.status).toBe(400);
      for (const part of [/extra is not a permission field/, /predicate is not a valid condition/, /roles must be/, /apiKeys\.roles must not contain the admin role root/])
        expect(res.json.message).toMatch(part);
    });

    it('lets only admins write permissions', async () => {
      const res = await call(stack.proxy.url, '/_admin/acl/x', { method: 'PUT', auth: ALICE, body: { predicate: 'true', roles: ['user'] } });
      expect(res.status).toBe(403);
      const anonymous = await call(stack.proxy.url, '/_admin/acl');
      expect(anonymous.status).toBe(401);
      expect(anonymous.headers['www-authenticate']).toBe('Basic realm="access"');
    });
  });

  describe('authorization', () => {
    beforeAll(async () => {
      expect((await put('users-read-products', { predicate: 'method(GET) and path-prefix(/shop/products)', roles: ['user'], priority: 1 })).status).toBe(201);
      expect(
        (
          await put('users-read-own-orders', {
            predicate: 'method(GET) and path-prefix(/shop/orders)',
            roles: ['user'],
            priority: 10,
            mongo: { readFilter: { owner: '@user.id' }, projectResponse: { secret: 0, 'nested.b': 0 } },
          })
        ).status,
      ).toBe(201);
      expect(
        (
          await put('auditors-read-orders', {
            predicate: 'method(GET) and path-prefix(/shop/orders)',
            roles: ['auditor'],
            priority: 20,
            mongo: { projectResponse: { _id: 1, total: 1, 'nested.a': 1 } },
          })
        ).status,
      ).toBe(201);
      expect((await put('anyone-health-of-backend', { predicate: 'path(/ping)', roles: ['$unauthenticated', 'user'], priority: 0 })).status).toBe(201);
      expect((await put('by-forwarded-ip', { predicate: "path(/by-ip) and equals(%a, '9.9.9.9')", roles: ['$unauthenticated'], priority: 0 })).status).toBe(201);
    });

    it('denies without a matching permission: 401 anonymous, 403 signed in', async () => {
      expect((await call(stack.proxy.url, '/shop/products')).status).toBe(401);
      const res = await call(stack.proxy.url, '/shop/products', { method: 'DELETE', auth: ALICE });
      expect(res.status).toBe(403);
      expect(res.json.message).toMatch(/no permission allows/);
      // Which roles were considered, and whether any permission names them at all.
      expect(res.json.message).toMatch(/roles considered: user\b.*permissions? names? them, but none matches this request/);
      const stranger = await call(stack.proxy.url, '/shop/products', { auth: STRANGER });
      expect(stranger.status).toBe(403);
      expect(stranger.json.message).toMatch(/roles considered: nobody-role\. No permission names any of them/);
    });

    it('answers wrong credentials 401, never anonymous, even where anonymous is allowed', async () => {
      const res = await call(stack.proxy.url, '/ping', { auth: basic('alice', 'wrong') });
      expect(res.status).toBe(401);
      expect(res.headers['www-authenticate']).toMatch(/^Basic realm=/);
      expect((await call(stack.proxy.url, '/ping')).status).not.toBe(401);
    });

    it('applies the highest-priority matching permission', async () => {
      // bob holds user (readFilter owner=bob, priority 10) and auditor (projection only, priority 20): auditor wins.
      const res = await call(stack.proxy.url, '/shop/orders', { auth: BOB });
      expect(res.status).toBe(200);
      expect(res.json.map((d: any) => d._id).sort()).toEqual(['o1', 'o2', 'o3']);
      expect(res.json[0]).toEqual({ _id: expect.any(String), total: expect.any(Number), nested: { a: expect.any(Number) } });
    });

    it('narrows collection reads with readFilter and applies projectResponse to arrays', async () => {
      stack.backend.clearRequests();
      const res = await call(stack.proxy.url, '/shop/orders?filter=' + encodeURIComponent('{"total":{"$gt":5}}'), { auth: ALICE });
      expect(res.status).toBe(200);
      expect(res.json.map((d: any) => d._id).sort()).toEqual(['o1', 'o3']);
      for (const doc of res.json) {
        expect(doc.secret).toBeUndefined();
        expect(doc.nested).toEqual({ a: expect.any(Number) });
      }
      const sent = stack.backend.requests.at(-1)!;
      expect(sent.query.getAll('filter')).toEqual(['{"total":{"$gt":5}}', '{"owner":"alice"}']);
    });

    it('narrows document reads with readFilter and projects the document', async () => {
      const own = await call(stack.proxy.url, '/shop/orders/o1', { auth: ALICE });
      expect(own.status).toBe(200);
      expect(own.json).toEqual({ _id: 'o1', owner: 'alice', total: 10, nested: { a: 1 } });
      const other = await call(stack.proxy.url, '/shop/orders/o2', { auth: ALICE });
      expect(other.status).toBe(404);
    });

    it('refuses other shapes under a filtered collection', async () => {
      expect((await call(stack.proxy.url, '/shop/orders/_size', { auth: ALICE })).status).toBe(403);
      expect((await call(stack.proxy.url, '/shop/orders/_aggrs/by-owner', { auth: ALICE })).status).toBe(403);
    });

    it('propagates identity as a JWT the backend verifies, with spoofed identity headers removed', async () => {
      stack.backend.clearRequests();
      const res = await call(stack.proxy.url, '/shop/products', { auth: ALICE, headers: { 'x-forwarded-user': 'root', 'x-forwarded-roles': 'root' } });
      expect(res.status).toBe(200);
      const sent = stack.backend.requests.at(-1)!;
      expect(sent.identity).toMatchObject({ via: 'jwt', id: 'alice', roles: ['user'] });
      expect(sent.headers['x-forwarded-user']).toBeUndefined();
      expect(sent.headers['x-forwarded-roles']).toBeUndefined();
      const token = String(sent.headers.authorization).replace(/^Bearer /, '');
      const { payload } = await jwtVerify(token, new TextEncoder().encode(JWT_SECRET), { issuer: 'restheart.org' });
      expect(payload.sub).toBe('alice');
      expect(payload.exp! - payload.iat!).toBe(65);
    });

    it('takes the client IP from X-Forwarded-For only behind a trusted proxy', async () => {
      const spoofed = await call(stack.proxy.url, '/by-ip', { headers: { 'x-forwarded-for': '9.9.9.9' } });
      expect(spoofed.status).toBe(401);
      const behind = await startTestOutrigger({ ...stack.raw, service: { id: 'access' }, listen: { trustedProxies: ['127.0.0.0/8'] } });
      try {
        const trusted = await call(behind.url, '/by-ip', { headers: { 'x-forwarded-for': '9.9.9.9, 127.0.0.5' } });
        expect(trusted.status).not.toBe(401);
        expect(trusted.status).not.toBe(403);
      } finally {
        await behind.stop();
      }
    });

    it('sees a permission change on a second process within 1 s (goal), carried by the change bus alone', async () => {
      // SPEC §3.5: every replica within 1 s (goal), never later than 20 s (guarantee). The second
      // process polls the version every 10 min, so only the change bus can meet this bound: the
      // 1 s goal plus 3 s a loaded machine may eat (issue 40). Without the bus it fails (issue 54);
      // the poll's own bound is test/integration/redis/change-propagation.test.ts.
      const BOUND_MS = 1000 + 3000;
      expect((await call(second.url, '/shop/new-thing', { auth: ALICE })).status).toBe(403);
      const written = Date.now();
      expect((await put('users-new-thing', { predicate: 'path(/shop/new-thing)', roles: ['user'], priority: 1 })).status).toBe(201);
      let status = 0;
      while (Date.now() - written < BOUND_MS) {
        status = (await call(second.url, '/shop/new-thing', { auth: ALICE })).status;
        if (status !== 403) break;
        await new Promise((r) => setTimeout(r, 20));
      }
      expect(status).not.toBe(403);
      const seenMs = Date.now() - written;
      console.log(`[acl] a permission change seen by the second process after ${seenMs} ms`);
      expect(seenMs).toBeLessThan(BOUND_MS);
    });
  });

  describe('own-routes mode', () => {
    it('proxies without the ACL but still answers wrong credentials 401', async () => {
      const open = await startTestOutrigger({ ...stack.raw, service: { id: 'access-own' }, acl: { mode: 'own-routes' } });
      try {
        expect((await call(open.url, '/shop/products')).status).toBe(200);
        expect((await call(open.url, '/shop/products', { auth: basic('alice', 'nope') })).status).toBe(401);
        expect((await call(open.url, '/_admin/acl', { auth: ALICE })).status).toBe(403);
        expect((await call(open.url, '/_admin/acl', { auth: ROOT })).status).toBe(200);
      } finally {
        await open.stop();
      }
    });
  });

  describe('brute-force guard', () => {
    it('answers 429 with Retry-After after 10 failures, across two processes sharing Redis', async () => {
      const wrong = basic('carol', 'guess');
      for (let i = 0; i < 5; i++) expect((await call(stack.proxy.url, '/ping', { auth: wrong })).status).toBe(401);
      for (let i = 0; i < 5; i++) expect((await call(second.url, '/ping', { auth: wrong })).status).toBe(401);
      const locked = await call(stack.proxy.url, '/ping', { auth: wrong });
      expect(locked.status).toBe(429);
      expect(Number(locked.headers['retry-after'])).toBeGreaterThan(0);
      const lockedOther = await call(second.url, '/ping', { auth: wrong });
      expect(lockedOther.status).toBe(429);
    }, 120_000); // ten failed sign-ins, each a full scrypt check: 8 s on a busy machine, 30 s+ beside busy loops (issue 40)
  });
});
