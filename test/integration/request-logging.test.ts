import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOutrigger, type RunningOutrigger } from '../../src/app.js';
import { createLogger } from '../../src/observability/logger.js';
import { call } from '../support/http-client.js';
import { startHttpServer, type TestServer } from '../support/http-servers.js';
import { startTestRedis, type TestRedis } from '../support/redis.js';
import { basic, staticUsers, testConfig } from '../support/outrigger.js';
import { waitFor } from '../support/wait.js';

/** Structured logs carry the request id, and no secret header value ever reaches them. */
describe('request logging', () => {
  let redis: TestRedis;
  let upstream: TestServer;
  let proxy: RunningOutrigger & { url: string };
  const lines: Array<Record<string, any>> = [];
  let raw = '';

  beforeAll(async () => {
    redis = await startTestRedis();
    upstream = await startHttpServer((_req, res) => {
      res.setHeader('set-cookie', 'session=upstream-session-secret');
      res.end('ok');
    });
    const destination = new Writable({
      write(chunk, _encoding, done) {
        raw += chunk.toString();
        for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line));
        done();
      },
    });
    const config = testConfig({
      service: { id: 'logging' },
      upstream: { url: upstream.url },
      redis: { url: redis.url },
      acl: { mode: 'own-routes' },
      users: await staticUsers({ alice: ['user'] }),
      log: { level: 'debug', secretHeaders: ['X-Api-Secret'] },
    });
    proxy = (await startOutrigger(config, { worker: false, logger: createLogger({ level: 'debug', secretHeaders: config.log.secretHeaders, destination }) })) as typeof proxy;
  });

  afterAll(async () => {
    await proxy?.stop();
    await upstream?.close();
    await redis?.close();
  });

  it('logs each request with its id and redacts Authorization, Cookie and configured secret headers', async () => {
    const res = await call(proxy.url, '/some/path?token=query-value', {
      auth: basic('alice', 'alice-password'),
      headers: { cookie: 'sid=cookie-secret-value', 'x-api-secret': 'configured-secret-value', 'x-request-id': 'trace-123' },
    });
    expect(res.status).toBe(200);
    expect(res.headers['x-request-id']).toBe('trace-123');
    const line = await waitFor(() => lines.find((l) => l.msg === 'request' && l.requestId === 'trace-123'), (l) => l !== undefined, 10_000, 'the request log line of trace-123');
    expect(line!.req.path).toBe('/some/path');
    expect(line!.res.statusCode).toBe(200);
    expect(line!.user).toBe('alice');
    expect(line!.req.headers.authorization).toBe('[redacted]');
    expect(line!.req.headers.cookie).toBe('[redacted]');
    expect(line!.req.headers['x-api-secret']).toBe('[redacted]');
    for (const secret of ['alice-password', Buffer.from('alice:alice-password').toString('base64'), 'cookie-secret-value', 'configured-secret-value', 'query-value'])
      expect(raw).not.toContain(secret);
  });

  it('gives requests without an id one of their own', async () => {
    const res = await call(proxy.url, '/other');
    expect(String(res.headers['x-request-id'])).toMatch(/^[0-9a-f]{12}-[0-9a-z]+$/);
  });
});
