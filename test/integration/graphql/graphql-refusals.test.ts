/**
 * SPEC §15, GraphQL-shaped refusals, through a real Outrigger, the RESTHeart stand-in and a real
 * Redis: every refusal on /graphql/<uri> before execution (401 without or with bad credentials,
 * 403 of the ACL, 429 of a rate limit, 413 of the body bound, 503 with Redis stopped, 404 of an
 * unknown app) is `{"errors": [{"message", "extensions": {"code"}}]}` with the status and headers
 * it had, in `application/graphql-response+json` whenever Accept allows it; other routes keep
 * Outrigger's error body; `graphql.httpProfile: restheart` keeps it on /graphql too. A real
 * GraphQL-over-HTTP client (graphql-http's) reads the refusal from the response it rejects with.
 */
import { createClient, NetworkError } from 'graphql-http';
import { describe, expect, it } from 'vitest';
import { as, useStack } from '../../support/fixtures.js';
import { basic } from '../../support/outrigger.js';
import { call, shopApp, shopData, type CallResult } from './graphql-helpers.js';
import { rateLimitHeaders } from '../limits/rate-limit-helpers.js';

const GQL = 'application/graphql-response+json';
const JSON_TYPE = 'application/json';
/** Accept as sent → the refusal's Content-Type. */
const ACCEPTS: Array<[string, string]> = [
  [GQL, GQL],
  [JSON_TYPE, JSON_TYPE],
  ['*/*', GQL],
];
const QUERY = '{ orders(limit: 1) { number } }';

/** A GraphQL refusal: the status, the codes, the Content-Type for its Accept, no RESTHeart field. */
function expectRefusal(res: CallResult, status: number, extensions: Record<string, string>, type: string, message: RegExp): void {
  expect(res.status, res.text).toBe(status);
  expect(res.headers['content-type']).toBe(`${type}; charset=utf-8`);
  expect(res.headers['cache-control']).toBe('no-store');
  expect(res.headers['x-request-id']).toMatch(/.+/);
  expect(res.json).toEqual({ errors: [{ message: expect.stringMatching(message), extensions }] });
}

describe('GraphQL-shaped refusals on /graphql/<uri> (SPEC §15)', () => {
  const stack = useStack({
    service: 'gql-refusals',
    backend: { data: shopData() },
    users: { root: ['root'], alice: ['user'], eve: ['guest'], lim: ['user', 'limited'], dora: ['user', 'metered'] },
    config: {
      acl: { mode: 'enforce' },
      features: { webhooks: 'disabled' },
      limits: {
        onRedisUnavailable: 'deny',
        policies: [
          { name: 'per-user', by: 'user', limit: 2, window: '1d', roles: ['limited'], condition: "path-prefix('/graphql')" },
          { name: 'metered', by: 'user', limit: 20, window: '1d', roles: ['metered'], condition: "path-prefix('/graphql')" },
        ],
      },
    },
    permissions: {
      'users-graphql': { predicate: 'path-prefix(/graphql)', roles: ['user'], priority: 1 },
      'users-read-shop': { predicate: 'method(GET) and path-prefix(/shop)', roles: ['user'], priority: 1 },
    },
    apps: { shop: shopApp() },
  });

  const post = (accept: string, auth?: string, body: unknown = { query: QUERY }, base = stack.proxy.url) =>
    call(base, '/graphql/shop', { method: 'POST', ...(auth ? { auth } : {}), headers: { accept }, body });

  it('the app answers a permitted caller (the refusals below are refusals, not a broken app)', async () => {
    const ok = await post(GQL, as('alice'));
    expect(ok.status, ok.text).toBe(200);
    expect(ok.json.data.orders).toHaveLength(1);
  });

  it('401 without credentials: UNAUTHENTICATED with the Basic challenge, for each Accept', async () => {
    for (const [accept, type] of ACCEPTS) {
      const res = await post(accept);
      expectRefusal(res, 401, { code: 'UNAUTHENTICATED' }, type, /authentication required/);
      expect(res.headers['www-authenticate']).toBe('Basic realm="gql-refusals"');
    }
  });

  it('401 with a wrong password, and with an unknown API key: UNAUTHENTICATED, the challenge kept', async () => {
    for (const [accept, type] of ACCEPTS) {
      const wrong = await post(accept, basic('alice', 'wrong'));
      expectRefusal(wrong, 401, { code: 'UNAUTHENTICATED' }, type, /./);
      expect(wrong.headers['www-authenticate']).toBe('Basic realm="gql-refusals"');
      // The key authenticator's own code stays beside the standard one.
      const key = await post(accept, 'Bearer rig_not-a-real-key');
      expectRefusal(key, 401, { code: 'UNAUTHENTICATED', reason: 'INVALID_API_KEY' }, type, /./);
      expect(key.headers['www-authenticate']).toMatch(/^Bearer /);
    }
  });

  it('403 of the ACL: FORBIDDEN, for each Accept', async () => {
    for (const [accept, type] of ACCEPTS) expectRefusal(await post(accept, as('eve')), 403, { code: 'FORBIDDEN' }, type, /no permission allows/);
    expect(stack.backend.requests.filter((r) => r.headers['x-forwarded-user'] === 'eve')).toEqual([]);
  });

  it('429 of a rate limit: TOO_MANY_REQUESTS with Retry-After, RateLimit and RateLimit-Policy kept', async () => {
    const LIM = as('lim');
    for (let i = 0; i < 2; i++) expect((await post(GQL, LIM)).status).toBe(200);
    for (const [accept, type] of ACCEPTS) {
      const res = await post(accept, LIM);
      expectRefusal(res, 429, { code: 'TOO_MANY_REQUESTS' }, type, /^rate limit 'per-user'/);
      expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
      const { policies, limit } = rateLimitHeaders(res);
      expect(policies).toContainEqual({ name: 'per-user', q: 2, w: 86_400 });
      expect(limit).toMatchObject({ name: 'per-user', r: 0 });
    }
  });

  it('413 of the body bound (1 MiB), answered before the rest is read: PAYLOAD_TOO_LARGE', async () => {
    const big = JSON.stringify({ query: QUERY, variables: { pad: 'x'.repeat(1024 * 1024 + 10) } });
    for (const [accept, type] of ACCEPTS) {
      const res = await call(stack.proxy.url, '/graphql/shop', { method: 'POST', auth: as('alice'), headers: { accept, 'content-type': 'application/json' }, rawBody: big });
      expectRefusal(res, 413, { code: 'PAYLOAD_TOO_LARGE' }, type, /larger than 1048576 bytes/);
    }
  });

  it('404 of an unknown app (before the ACL): its own code, GraphQL-shaped too', async () => {
    for (const [accept, type] of ACCEPTS) {
      expectRefusal(
        await call(stack.proxy.url, '/graphql/nope', { method: 'POST', headers: { accept }, body: { query: QUERY } }),
        404,
        { code: 'APP_NOT_FOUND' },
        type,
        /no GraphQL app is served at \/graphql\/nope/,
      );
    }
  });

  it('a real GraphQL-over-HTTP client (graphql-http) rejects with the response, whose body is the GraphQL errors', async () => {
    const client = createClient({ url: `${stack.proxy.url}/graphql/shop`, headers: { authorization: as('eve') } });
    const error = await new Promise<unknown>((resolve) => {
      client.subscribe({ query: QUERY }, { next: () => resolve(new Error('answered')), error: resolve, complete: () => {} });
    });
    expect(error).toBeInstanceOf(NetworkError);
    const response = (error as NetworkError<Response>).response!;
    expect(response.status).toBe(403);
    // What Apollo Client 4 checks before reading a non-2xx answer as GraphQL errors.
    expect(response.headers.get('content-type')).toMatch(/^application\/graphql-response\+json/);
    expect(await response.json()).toEqual({ errors: [{ message: expect.stringMatching(/no permission allows/), extensions: { code: 'FORBIDDEN' } }] });
    client.dispose();
  });

  it('other routes keep Outrigger error body: a proxied path and the apps route', async () => {
    for (const path of ['/shop/orders', '/gql-apps']) {
      const res = await call(stack.proxy.url, path, { headers: { accept: GQL } });
      expect(res.status).toBe(401);
      expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(res.json).toMatchObject({ 'http status code': 401, 'http status description': 'Unauthorized' });
    }
  });

  it('graphql.httpProfile: restheart keeps RESTHeart error body on /graphql/<uri>', async () => {
    const restheart = await stack.start({ graphql: { httpProfile: 'restheart' } });
    for (const [accept] of ACCEPTS) {
      const anonymous = await post(accept, undefined, { query: QUERY }, restheart.url);
      expect(anonymous.status).toBe(401);
      expect(anonymous.headers['www-authenticate']).toBe('Basic realm="gql-refusals"');
      expect(anonymous.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(anonymous.json).toEqual({ 'http status code': 401, 'http status description': 'Unauthorized', message: expect.stringMatching(/authentication required/) });
      const eve = await post(accept, as('eve'), { query: QUERY }, restheart.url);
      expect(eve.json).toMatchObject({ 'http status code': 403, message: expect.stringMatching(/no permission allows/) });
    }
    // Its executed answers are the GraphQL handler's, as before.
    expect((await post(GQL, as('alice'), { query: QUERY }, restheart.url)).json.data.orders).toHaveLength(1);
  });

  // Last: it stops Redis.
  it('503 with Redis stopped (limits.onRedisUnavailable: deny): SERVICE_UNAVAILABLE with Retry-After', async () => {
    const DORA = as('dora');
    expect((await post(GQL, DORA)).status).toBe(200);
    await stack.redis.stop();
    try {
      // Units leased ahead before Redis went are spent first (at most the limit, 20); then 503.
      let first = await post(GQL, DORA);
      for (let i = 0; i < 20 && first.status === 200; i++) first = await post(GQL, DORA);
      for (const [accept, type] of ACCEPTS) {
        const res = accept === GQL ? first : await post(accept, DORA);
        expectRefusal(res, 503, { code: 'SERVICE_UNAVAILABLE', reason: 'RATE_LIMITS_UNAVAILABLE' }, type, /onRedisUnavailable: deny/);
        expect(res.headers['retry-after']).toBe('2');
      }
    } finally {
      await stack.redis.restart();
    }
  });
});
