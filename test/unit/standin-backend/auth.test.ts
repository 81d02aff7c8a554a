import { jwtVerify } from 'jose';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startStandinBackend, type StandinBackend } from '../../../examples/standin-backend/index.js';
import { basic, expectRestheartError, getJson, signJwt } from './support.js';

const SECRET = 'a-test-secret-that-is-long-enough-for-hs512-0123456789';
const users = [
  { id: 'alice', password: 'alice-password', roles: ['user'] },
  { id: 'bob', password: 'bob-password', roles: ['user', 'auditor'] },
];

let backend: StandinBackend;
let plain: StandinBackend; // no jwt option: Bearer tokens are not its business

beforeAll(async () => {
  backend = await startStandinBackend({
    users,
    jwt: { secret: SECRET, issuer: 'restheart.org', audience: 'outrigger-tests' },
    data: { restheart: { users: [{ _id: 'u1' }] } },
  });
  plain = await startStandinBackend({ users, data: { restheart: { users: [] } } });
});
afterAll(async () => {
  await backend.close();
  await plain.close();
});
beforeEach(() => {
  backend.clearRequests();
  plain.clearRequests();
});

const goodClaims = { roles: ['user', 'extra'], iss: 'restheart.org', aud: 'outrigger-tests' };
const lastIdentity = (b: StandinBackend) => b.requests.at(-1)?.identity;

describe('GET /roles/{id}', () => {
  it('answers the roles of the Basic caller asking for their own id', async () => {
    const { status, body, headers } = await getJson(`${backend.url}/roles/alice`, { headers: { authorization: basic('alice', 'alice-password') } });
    expect(status).toBe(200);
    expect(headers.get('content-type')).toBe('application/json');
    expect(body).toEqual({ authenticated: true, roles: ['user'] });
  });

  it('answers 401 for wrong credentials or none, with a Basic challenge', async () => {
    const attempts: Array<Record<string, string>> = [{ authorization: basic('alice', 'wrong') }, { authorization: basic('nobody', 'x') }, {}];
    for (const headers of attempts) {
      const res = await getJson(`${backend.url}/roles/alice`, { headers });
      expect(res.status).toBe(401);
      expectRestheartError(res.body, 401);
      expect(res.headers.get('www-authenticate')).toMatch(/^Basic realm=/);
    }
  });

  it("answers 403 when an authenticated caller asks for someone else's roles", async () => {
    const res = await getJson(`${backend.url}/roles/bob`, { headers: { authorization: basic('alice', 'alice-password') } });
    expect(res.status).toBe(403);
    expectRestheartError(res.body, 403);
  });

  it('works for a JWT caller too', async () => {
    const token = await signJwt(SECRET, goodClaims, { sub: 'carol', expiresIn: '1m' });
    const res = await getJson(`${backend.url}/roles/carol`, { headers: { authorization: `Bearer ${token}` } });
    expect(res.body).toEqual({ authenticated: true, roles: ['user', 'extra'] });
  });

  it('answers 405 to other methods', async () => {
    const res = await getJson(`${backend.url}/roles/alice`, { method: 'DELETE', headers: { authorization: basic('alice', 'alice-password') } });
    expect(res.status).toBe(405);
  });
});

describe('Bearer JWT (jwtAuthenticationMechanism)', () => {
  it.each(['HS256', 'HS384', 'HS512'])('accepts a valid %s token: sub is the id, the roles claim the roles', async (alg) => {
    const token = await signJwt(SECRET, goodClaims, { alg, sub: 'alice', expiresIn: '1m' });
    const res = await fetch(`${backend.url}/restheart/users`, { headers: { authorization: `Bearer ${token}` } });
    expect(res.status).toBe(200);
    expect(lastIdentity(backend)).toEqual({ via: 'jwt', id: 'alice', roles: ['user', 'extra'] });
  });

  it('takes a token without a roles claim as having no roles', async () => {
    const token = await signJwt(SECRET, { iss: 'restheart.org', aud: 'outrigger-tests' }, { sub: 'alice' });
    expect((await fetch(`${backend.url}/restheart/users`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
    expect(lastIdentity(backend)).toEqual({ via: 'jwt', id: 'alice', roles: [] });
  });

  const rejected: Array<[string, () => Promise<string>]> = [
    ['expired', () => signJwt(SECRET, goodClaims, { sub: 'alice', expiresIn: Math.floor(Date.now() / 1000) - 10 })],
    ['not yet valid', () => signJwt(SECRET, { ...goodClaims, nbf: Math.floor(Date.now() / 1000) + 3600 }, { sub: 'alice' })],
    ['signed with another secret', () => signJwt('another-secret', goodClaims, { sub: 'alice', expiresIn: '1m' })],
    ['from another issuer', () => signJwt(SECRET, { ...goodClaims, iss: 'someone-else' }, { sub: 'alice', expiresIn: '1m' })],
    ['for another audience', () => signJwt(SECRET, { ...goodClaims, aud: 'other' }, { sub: 'alice', expiresIn: '1m' })],
    ['without sub', () => signJwt(SECRET, goodClaims, { expiresIn: '1m' })],
    ['with roles that are not strings', () => signJwt(SECRET, { ...goodClaims, roles: 'user' }, { sub: 'alice', expiresIn: '1m' })],
    ['not a JWT at all', async () => 'rig_notajwt'],
  ];
  it.each(rejected)('answers 401 for a token %s and logs the caller as invalid', async (_what, makeToken) => {
    const res = await getJson(`${backend.url}/restheart/users`, { headers: { authorization: `Bearer ${await makeToken()}` } });
    expect(res.status).toBe(401);
    expectRestheartError(res.body, 401);
    expect(res.body.message).toMatch(/JWT/);
    expect(lastIdentity(backend)).toEqual({ via: 'invalid' });
  });

  it('says an expired token has expired', async () => {
    const token = await signJwt(SECRET, goodClaims, { sub: 'alice', expiresIn: Math.floor(Date.now() / 1000) - 10 });
    const res = await getJson(`${backend.url}/restheart/users`, { headers: { authorization: `Bearer ${token}` } });
    expect(res.body.message).toMatch(/expired/);
  });

  it('ignores Bearer tokens when no jwt option is set (the caller is anonymous)', async () => {
    const res = await fetch(`${plain.url}/restheart/users`, { headers: { authorization: 'Bearer whatever' } });
    expect(res.status).toBe(200);
    expect(lastIdentity(plain)).toEqual({ via: 'anonymous' });
  });

  it('refuses a non-HMAC algorithm option when built', async () => {
    await expect(startStandinBackend({ jwt: { secret: 's', algorithms: ['RS256'] } })).rejects.toThrow(/RS256/);
  });
});

describe('Basic on data routes', () => {
  it('serves everyone but records who they are', async () => {
    await fetch(`${backend.url}/restheart/users`, { headers: { authorization: basic('bob', 'bob-password') } });
    expect(lastIdentity(backend)).toEqual({ via: 'basic', id: 'bob', roles: ['user', 'auditor'] });
    await fetch(`${backend.url}/restheart/users`);
    expect(lastIdentity(backend)).toEqual({ via: 'anonymous' });
  });

  it('answers 401 for wrong credentials on any path, never anonymous', async () => {
    const res = await getJson(`${backend.url}/restheart/users`, { headers: { authorization: basic('bob', 'nope') } });
    expect(res.status).toBe(401);
    expectRestheartError(res.body, 401);
    expect(lastIdentity(backend)).toEqual({ via: 'invalid' });
  });
});

describe('/token', () => {
  it('issues a JWT in Auth-Token headers, an rh_auth cookie and an OAuth-style body', async () => {
    const res = await getJson(`${backend.url}/token`, { headers: { authorization: basic('alice', 'alice-password') } });
    expect(res.status).toBe(200);
    const token = res.headers.get('auth-token') as string;
    const { payload } = await jwtVerify(token, new TextEncoder().encode(SECRET), { issuer: 'restheart.org', audience: 'outrigger-tests' });
    expect(payload).toMatchObject({ sub: 'alice', roles: ['user'] });
    const validUntil = Date.parse(res.headers.get('auth-token-valid-until') as string);
    expect(validUntil).toBeGreaterThan(Date.now() + 14 * 60_000);
    expect(res.headers.get('auth-token-location')).toBe('/tokens/alice');
    expect(res.headers.get('set-cookie')).toMatch(new RegExp(`^rh_auth=Bearer_${token.replace(/\./g, '\\.')};.*HttpOnly`));
    expect(res.body).toMatchObject({ access_token: token, token_type: 'Bearer', username: 'alice', roles: ['user'] });
    expect(res.body.expires_in).toBeGreaterThan(800);
  });

  it('answers POST too, with no-store caching headers; the issued token and cookie authenticate', async () => {
    const res = await fetch(`${backend.url}/token`, { method: 'POST', headers: { authorization: basic('bob', 'bob-password') } });
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const token = res.headers.get('auth-token') as string;
    await fetch(`${backend.url}/restheart/users`, { headers: { authorization: `Bearer ${token}` } });
    expect(lastIdentity(backend)).toEqual({ via: 'jwt', id: 'bob', roles: ['user', 'auditor'] });
    const cookie = (res.headers.get('set-cookie') as string).split(';')[0] as string;
    await fetch(`${backend.url}/restheart/users`, { headers: { cookie: `other=1; ${cookie}` } });
    expect(lastIdentity(backend)).toEqual({ via: 'jwt', id: 'bob', roles: ['user', 'auditor'] });
  });

  it('sets the cookie on POST /token/cookie (GET is 405)', async () => {
    const res = await getJson(`${backend.url}/token/cookie`, { method: 'POST', headers: { authorization: basic('alice', 'alice-password') } });
    expect(res.status).toBe(200);
    expect(res.headers.get('set-cookie')).toMatch(/^rh_auth=Bearer_/);
    expect(res.body).toEqual({ authenticated: true, username: 'alice', roles: ['user'] });
    expect((await fetch(`${backend.url}/token/cookie`, { headers: { authorization: basic('alice', 'alice-password') } })).status).toBe(405);
  });

  it('answers 401 to anonymous callers', async () => {
    const res = await getJson(`${backend.url}/token`);
    expect(res.status).toBe(401);
    expectRestheartError(res.body, 401);
  });

  it('without a JWT secret issues random tokens usable as the Basic password until DELETE /token', async () => {
    const res = await getJson(`${plain.url}/token`, { headers: { authorization: basic('alice', 'alice-password') } });
    expect(res.body.token_type).toBe('Basic-Password');
    const token = res.headers.get('auth-token') as string;
    expect(res.headers.get('set-cookie')).toMatch(/^rh_auth=Basic_/);
    expect((await getJson(`${plain.url}/roles/alice`, { headers: { authorization: basic('alice', token) } })).body).toEqual({ authenticated: true, roles: ['user'] });
    expect((await fetch(`${plain.url}/roles/bob`, { headers: { authorization: basic('bob', token) } })).status).toBe(401);
    expect((await fetch(`${plain.url}/token`, { method: 'DELETE', headers: { authorization: basic('alice', 'alice-password') } })).status).toBe(204);
    expect((await fetch(`${plain.url}/roles/alice`, { headers: { authorization: basic('alice', token) } })).status).toBe(401);
  });
});
