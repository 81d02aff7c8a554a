import { describe, expect, it } from 'vitest';
import { call } from '../../support/clients/http-client.js';
import { basic } from '../../support/outrigger.js';
import { waitFor } from '../../support/wait.js';
import { useStack } from '../../support/fixtures.js';

/** Structured logs carry the request id, and no secret header value ever reaches them. */
describe('request logging', () => {
  const stack = useStack({
    service: 'logging',
    upstream: (_req, res) => {
      res.setHeader('set-cookie', 'session=upstream-session-secret');
      res.end('ok');
    },
    users: { alice: ['user'] },
    config: { acl: { mode: 'own-routes' }, log: { level: 'debug', secretHeaders: ['X-Api-Secret'] } },
    captureLogs: 'debug',
  });

  it('logs each request with its id and redacts Authorization, Cookie and configured secret headers', async () => {
    const res = await call(stack.proxy.url, '/some/path?token=query-value', {
      auth: basic('alice', 'alice-password'),
      headers: { cookie: 'sid=cookie-secret-value', 'x-api-secret': 'configured-secret-value', 'x-request-id': 'trace-123' },
    });
    expect(res.status).toBe(200);
    expect(res.headers['x-request-id']).toBe('trace-123');
    const line = await waitFor(
      () => stack.logLines.find((l) => l.msg === 'request' && l.requestId === 'trace-123'),
      (l) => l !== undefined,
      10_000,
      'the request log line of trace-123',
    );
    expect(line!.req.path).toBe('/some/path');
    expect(line!.res.statusCode).toBe(200);
    expect(line!.user).toBe('alice');
    expect(line!.req.headers.authorization).toBe('[redacted]');
    expect(line!.req.headers.cookie).toBe('[redacted]');
    expect(line!.req.headers['x-api-secret']).toBe('[redacted]');
    for (const secret of ['alice-password', Buffer.from('alice:alice-password').toString('base64'), 'cookie-secret-value', 'configured-secret-value', 'query-value'])
      expect(stack.logText).not.toContain(secret);
  });

  it('gives requests without an id one of their own', async () => {
    const res = await call(stack.proxy.url, '/other');
    expect(String(res.headers['x-request-id'])).toMatch(/^[0-9a-f]{12}-[0-9a-z]+$/);
  });
});
