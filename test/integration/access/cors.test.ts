/**
 * CORS (SPEC §15) with real servers: Outrigger in front of a backend that answers CORS headers of
 * its own (`*`, credentials), a real Redis for the rate limit, a webhook worker and its target.
 * Preflights are answered by Outrigger (never forwarded, counted or observed); answers and
 * refusals of proxied paths and /graphql/<uri> carry Outrigger's headers in place of the
 * backend's; own routes carry none.
 */
import { describe, expect, it } from 'vitest';
import { as, ROOT, useStack } from '../../support/fixtures.js';
import { call } from '../../support/clients/http-client.js';
import { untilKnown } from '../webhooks/webhooks-helpers.js';
import { sleep, waitFor } from '../../support/wait.js';

const PAGE = 'http://app.localhost:5173';
const preflight = (origin: string, method = 'PUT') => ({ method: 'OPTIONS', headers: { origin, 'access-control-request-method': method, 'access-control-request-headers': 'authorization' } });
const corsOf = (headers: Record<string, string | string[] | undefined>) => Object.fromEntries(Object.entries(headers).filter(([name]) => name.startsWith('access-control-')));

describe('CORS through Outrigger', () => {
  const reached: string[] = [];
  const stack = useStack(
    {
      service: 'cors',
      upstream: (req, res) => {
        reached.push(`${req.method} ${req.url}`);
        req.resume();
        req.on('end', () => {
          res.writeHead(200, {
            'content-type': 'application/json',
            etag: '"e1"',
            vary: 'Accept-Encoding',
            'access-control-allow-origin': '*',
            'access-control-allow-credentials': 'true',
            'access-control-expose-headers': 'X-Backend',
          });
          res.end('[]');
        });
      },
      target: true,
      users: { root: ['root'], alice: ['user'], eve: ['guest'] },
      outrigger: { worker: true },
      config: {
        acl: { mode: 'enforce' },
        webhooks: { allowPrivateTargets: ['127.0.0.0/8'], retrySchedule: ['1h'] },
        limits: { policies: [{ name: 'per-client', by: 'client', limit: 2, window: '1d', condition: "path-prefix('/limited')" }] },
      },
      permissions: {
        open: { predicate: "path-prefix('/api') or path-prefix('/limited') or path-prefix('/graphql')", roles: ['$unauthenticated', 'user', 'guest'], priority: 1 },
        secret: { predicate: "path-prefix('/secret')", roles: ['user'], priority: 1 },
      },
    },
    60_000,
  );

  it('answers a preflight itself: 204, the lists, nothing forwarded', async () => {
    reached.length = 0;
    const res = await call(stack.proxy.url, '/api/orders', preflight(PAGE));
    expect(res.status).toBe(204);
    expect(corsOf(res.headers)).toEqual({
      'access-control-allow-origin': PAGE,
      'access-control-allow-methods': 'GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS',
      'access-control-allow-headers': expect.stringContaining('Authorization, Content-Type, Idempotency-Key, Last-Event-ID'),
      'access-control-max-age': '7200',
    });
    expect(reached).toEqual([]);
  });

  it("replaces the backend's Access-Control-* with Outrigger's, keeping Origin in its Vary", async () => {
    const res = await call(stack.proxy.url, '/api/orders', { headers: { origin: PAGE } });
    expect(res.status).toBe(200);
    expect(corsOf(res.headers)).toEqual({
      'access-control-allow-origin': PAGE,
      'access-control-expose-headers': 'Location, ETag, RateLimit, RateLimit-Policy, Retry-After, Cache-Status, Idempotent-Replayed, X-Request-Id',
    });
    expect(res.headers.vary).toBe('Accept-Encoding, Origin');
    expect(res.headers.etag).toBe('"e1"');
    // Without an Origin nothing is read or changed: the backend's headers pass as they came.
    const plain = await call(stack.proxy.url, '/api/orders');
    expect(plain.headers['access-control-allow-origin']).toBe('*');
  });

  it('refusals of proxied paths (401, 403, 429) carry the headers, and preflights are not counted', async () => {
    const anonymous = await call(stack.proxy.url, '/secret/x', { headers: { origin: PAGE } });
    expect([anonymous.status, anonymous.headers['access-control-allow-origin']]).toEqual([401, PAGE]);
    const eve = await call(stack.proxy.url, '/secret/x', { auth: as('eve'), headers: { origin: PAGE } });
    expect([eve.status, eve.headers['access-control-allow-origin']]).toEqual([403, PAGE]);
    for (let i = 0; i < 5; i++) expect((await call(stack.proxy.url, '/limited/x', preflight(PAGE, 'DELETE'))).status).toBe(204);
    expect((await call(stack.proxy.url, '/limited/x', { headers: { origin: PAGE } })).status).toBe(200);
    expect((await call(stack.proxy.url, '/limited/x', { headers: { origin: PAGE } })).status).toBe(200);
    const limited = await call(stack.proxy.url, '/limited/x', { headers: { origin: PAGE } });
    expect(limited.status).toBe(429);
    expect(limited.headers['access-control-allow-origin']).toBe(PAGE);
    expect(limited.headers['access-control-expose-headers']).toContain('Retry-After');
    expect(limited.headers['retry-after']).toBeDefined();
  });

  it('answers /graphql/<uri> (its preflight and its refusals), and no other own route', async () => {
    const gqlPreflight = await call(stack.proxy.url, '/graphql/shop', preflight(PAGE, 'POST'));
    expect([gqlPreflight.status, gqlPreflight.headers['access-control-allow-origin']]).toEqual([204, PAGE]);
    const missing = await call(stack.proxy.url, '/graphql/nope', { headers: { origin: PAGE } });
    expect([missing.status, missing.headers['access-control-allow-origin']]).toEqual([404, PAGE]);
    for (const path of ['/keys', '/_admin/acl', '/_admin/', '/mcp', '/_health/ready', '/gql-apps']) {
      const spoofed = await call(stack.proxy.url, path, { auth: ROOT, headers: { origin: PAGE } });
      expect(corsOf(spoofed.headers), path).toEqual({});
      const own = await call(stack.proxy.url, path, preflight(PAGE));
      expect(own.status, path).not.toBe(204);
      expect(corsOf(own.headers), path).toEqual({});
    }
  });

  it('preflights are not evaluated against webhooks', async () => {
    const hook = await call(stack.proxy.url, '/_admin/webhooks', {
      method: 'POST',
      auth: ROOT,
      body: { name: 'every api call', type: 'http', condition: "path-prefix('/api/hooked')", url: `${stack.target.url}/hook`, transform: { enabled: true, template: '{"m": "{{request.method}}"}' } },
    });
    expect(hook.status, hook.text).toBe(201);
    await untilKnown([stack.proxy], hook.json._id);
    expect((await call(stack.proxy.url, '/api/hooked', preflight(PAGE, 'POST'))).status).toBe(204);
    expect((await call(stack.proxy.url, '/api/hooked', { method: 'POST', headers: { origin: PAGE }, body: {} })).status).toBe(200);
    await waitFor(
      () => stack.target.received.length,
      (n) => n >= 1,
    );
    await sleep(500);
    expect(stack.target.received.map((r) => r.body)).toEqual(['{"m": "POST"}']);
  });

  it('a list of origins: credentials for those, nothing for others; none: no CORS at all', async () => {
    const listed = await stack.start({ cors: { allowOrigins: [PAGE] } });
    const mine = await call(listed.url, '/api/orders', { headers: { origin: PAGE } });
    expect(corsOf(mine.headers)).toMatchObject({ 'access-control-allow-origin': PAGE, 'access-control-allow-credentials': 'true' });
    const other = await call(listed.url, '/api/orders', { headers: { origin: 'https://evil.example' } });
    expect([other.status, corsOf(other.headers), other.headers.vary]).toEqual([200, {}, 'Accept-Encoding, Origin']);
    const off = await stack.start({ cors: { allowOrigins: 'none' } });
    const offPreflight = await call(off.url, '/api/orders', preflight(PAGE));
    expect(corsOf(offPreflight.headers)).toEqual({});
    expect(corsOf((await call(off.url, '/api/orders', { headers: { origin: PAGE } })).headers)).toEqual({});
  });
});
