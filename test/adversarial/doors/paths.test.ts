import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawRequest, startHttpServer, type TestServer } from '../../support/peers/http-servers.js';
import { startTestOutrigger } from '../../support/outrigger.js';
import { startTestRedis, type TestRedis } from '../../support/redis/redis.js';

/**
 * Dot segments in every disguise: a servlet backend drops `;parameters` and decodes once (or
 * twice) before normalising, so `/public/..;/private` reaches `/private` there while an ACL on
 * `/public/**` allowed it here. Each must be refused with 400 and never reach the upstream.
 */
const REFUSED = [
  '/public/../private',
  '/public/./private',
  '/public/..;/private',
  '/public/..;x=1/private',
  '/public/.;x/private',
  '/public/.;/private',
  '/public/..;',
  '/..;/private',
  '/public/%2e%2e;/private',
  '/public/..%3b/private',
  '/public/..%3B/private',
  '/public/%2e%2e%3bjsessionid=1/private',
  '/public/.%2e;a/private',
  '/public/%252e%252e/private',
  '/public/%252e%252e%253b/private',
  '/public/..%5c..%5cprivate',
  '/public/..;%2fprivate',
  '/public/%2e%2e%2fprivate',
];

/** Look alike but are no dot segments: they must pass. */
const ALLOWED = ['/public/b.;c', '/public/file;v=1', '/public/...;x', '/public/..x/y', '/public/.well-known/x', '/public/a..;'];

/**
 * No dot segments either, but `;` parameters before the last segment: Undertow reads the path
 * up to the `;`, servlet containers drop each segment's parameters, so they are refused too
 * (issue 25, canonical-paths.test.ts).
 */
const PARAMETERS_BEFORE_LAST_SEGMENT = ['/public/b.;c/d', '/public;v=1/file', '/public/...;/x', '/public/a..;/b'];

describe('dot segments with path parameters and encodings', () => {
  let redis: TestRedis;
  let upstream: TestServer;
  let proxy: Awaited<ReturnType<typeof startTestOutrigger>>;
  const reached: string[] = [];

  beforeAll(async () => {
    redis = await startTestRedis();
    upstream = await startHttpServer((req, res) => {
      reached.push(req.url!);
      res.end('upstream');
    });
    proxy = await startTestOutrigger({ service: { id: 'paths' }, upstream: { url: upstream.url }, redis: { url: redis.url }, acl: { mode: 'own-routes' } });
  });
  afterAll(async () => {
    await proxy?.stop();
    await upstream?.close();
    await redis?.close();
  });

  it.each(REFUSED)('refuses %s with 400 in the error format, upstream untouched', async (path) => {
    const before = reached.length;
    const res = await rawRequest(proxy.url, path);
    expect(res.status).toBe(400);
    expect(JSON.parse(res.body)).toMatchObject({ 'http status code': 400, message: expect.stringMatching(/"\." or "\.\." segments/) });
    expect(reached.length).toBe(before);
  });

  it.each(PARAMETERS_BEFORE_LAST_SEGMENT)('refuses %s with 400 naming the parameters, upstream untouched', async (path) => {
    const before = reached.length;
    const res = await rawRequest(proxy.url, path);
    expect(res.status).toBe(400);
    expect(JSON.parse(res.body)).toMatchObject({ message: expect.stringMatching(/";" parameters before its last segment/) });
    expect(reached.length).toBe(before);
  });

  it.each(ALLOWED)('forwards %s untouched', async (path) => {
    const res = await rawRequest(proxy.url, path);
    expect(res.status).toBe(200);
    expect(reached).toContain(path);
  });
});
