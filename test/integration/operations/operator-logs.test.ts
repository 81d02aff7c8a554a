import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { startOutrigger } from '../../../src/app.js';
import { createLogger } from '../../../src/observability/logger.js';
import { call } from '../../support/clients/http-client.js';
import { startHttpServer } from '../../support/peers/http-servers.js';
import { testConfig } from '../../support/outrigger.js';
import { startTestRedis } from '../../support/redis/redis.js';
import { ROOT, useStack } from '../../support/fixtures.js';

/** What an operator sees at the default level (info): SPEC's operations section, issue 13 item 5. */
describe('operator logs at info', () => {
  const stack = useStack({
    service: 'operator-logs',
    upstream: (req, res) => {
      if (req.url === '/stall') return; // never answers: a 504 after upstream.timeoutMs
      res.end('ok');
    },
    target: () => ({ status: 500, body: 'the receiver is broken' }),
    users: { root: ['root'] },
    config: {
      upstream: { timeoutMs: 300 },
      acl: { mode: 'own-routes' },
      webhooks: { allowPrivateTargets: ['127.0.0.0/8'], retrySchedule: ['50ms'] },
      log: { level: 'info' },
    },
    outrigger: { worker: true },
    captureLogs: 'info',
  });

  async function waitForLine(match: (line: Record<string, any>) => boolean, what: string, ms = 15_000): Promise<Record<string, any>> {
    const until = Date.now() + ms;
    for (;;) {
      const found = stack.logLines.find(match);
      if (found) return found;
      if (Date.now() > until) throw new Error(`no log line ${what} within ${ms} ms; got:\n${stack.logLines.map((l) => l.msg).join('\n')}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  it('starts with one summary line: address, upstream, Redis, features, what was loaded, the worker', () => {
    const summary = stack.logLines.find((l) => typeof l.msg === 'string' && l.msg.startsWith('Outrigger listening on'));
    expect(summary).toBeDefined();
    expect(summary).toMatchObject({
      level: 30,
      url: stack.proxy.url,
      upstream: stack.upstreamUrl,
      redis: stack.redis.url,
      redisReady: true,
      aclMode: 'own-routes',
      features: { 'api-keys': 'enabled', webhooks: 'enabled' },
      loaded: { permissions: 0, apps: 0, webhooks: 0 },
      worker: 'on',
    });
    expect(summary!.msg).toMatch(/Redis .* ready; .*features: .*loaded: 0 permissions, 0 apps, 0 webhooks; webhook worker on/);
    expect(stack.logLines.some((l) => l.msg === 'webhook worker started')).toBe(true);
  });

  it('logs each upstream failure, 502 and 504, with the request id', async () => {
    const stalled = await call(stack.proxy.url, '/stall');
    expect(stalled.status).toBe(504);
    const line = await waitForLine((l) => l.msg === 'upstream failure' && l.status === 504, 'for the 504');
    expect(line).toMatchObject({ level: 30, path: '/stall', code: 'UPSTREAM_TIMEOUT', requestId: stalled.headers['x-request-id'] });

    const closed = await startHttpServer((_req, res) => res.end());
    await closed.close(); // a port nobody listens on any more
    const unreachable = testConfig({ service: { id: 'operator-logs-502' }, upstream: { url: closed.url }, redis: { url: stack.redis.url }, acl: { mode: 'own-routes' } });
    const local: Array<Record<string, any>> = [];
    const other = await startOutrigger(unreachable, {
      worker: false,
      logger: createLogger({
        level: 'info',
        destination: new Writable({
          write: (c, _e, done) => (
            c
              .toString()
              .split('\n')
              .filter(Boolean)
              .forEach((l: string) => local.push(JSON.parse(l))),
            done()
          ),
        }),
      }),
    });
    try {
      expect((await call(other.url!, '/x')).status).toBe(502);
      expect(local.find((l) => l.msg === 'upstream failure')).toMatchObject({ level: 30, status: 502, code: 'UPSTREAM_UNREACHABLE' });
    } finally {
      await other.stop();
    }
  });

  it('logs every admin change with who made it and which document, and no read', async () => {
    const put = await call(stack.proxy.url, '/_admin/acl/readers', { method: 'PUT', auth: ROOT, body: { roles: ['user'], predicate: 'method(GET)' } });
    expect(put.status).toBe(201);
    expect((await call(stack.proxy.url, '/_admin/acl/readers', { auth: ROOT })).status).toBe(200);
    const del = await call(stack.proxy.url, '/_admin/acl/readers', { method: 'DELETE', auth: ROOT });
    expect(del.status).toBe(204);
    const changes = stack.logLines.filter((l) => typeof l.msg === 'string' && l.msg.startsWith('admin change:'));
    expect(changes.map((l) => l.msg)).toEqual(['admin change: PUT /_admin/acl/readers by root', 'admin change: DELETE /_admin/acl/readers by root']);
    expect(changes[0]).toMatchObject({ level: 30, admin: { user: 'root', via: 'basic' }, status: 201 });
  });

  it('logs a webhook delivery that ends failed, once its retries are used up', async () => {
    const hook = { name: 'broken receiver', type: 'http', condition: "path('/hooked')", url: `${stack.target.url}/in` };
    expect((await call(stack.proxy.url, '/_admin/webhooks/broken', { method: 'PUT', auth: ROOT, body: hook })).status).toBe(201);
    expect((await call(stack.proxy.url, '/hooked')).status).toBe(200);
    const line = await waitForLine((l) => l.msg === 'webhook delivery ended failed (no retry left)', 'for the failed delivery');
    expect(line).toMatchObject({ level: 30, webhook: 'broken', attempt: 2, statusCode: 500, target: `${stack.target.url}/in` });
  });

  it('logs Redis lost and regained, once each', async () => {
    // Its own Redis and no worker: the outage concerns only the connection watch.
    const own = await startTestRedis();
    const local: Array<Record<string, any>> = [];
    const destination = new Writable({
      write: (c, _e, done) => (
        c
          .toString()
          .split('\n')
          .filter(Boolean)
          .forEach((l: string) => local.push(JSON.parse(l))),
        done()
      ),
    });
    const other = await startOutrigger(testConfig({ service: { id: 'operator-logs-redis' }, upstream: { url: stack.upstreamUrl }, redis: { url: own.url }, acl: { mode: 'own-routes' } }), {
      worker: false,
      logger: createLogger({ level: 'info', destination }),
    });
    const seen = async (test: (l: Record<string, any>) => boolean) => {
      for (let i = 0; i < 300 && !local.some(test); i++) await new Promise((r) => setTimeout(r, 50));
      return local.find(test);
    };
    try {
      await own.stop();
      const lost = await seen((l) => typeof l.msg === 'string' && l.msg.startsWith('Redis connection lost'));
      expect(lost).toMatchObject({ level: 40, redis: own.url });
      await own.restart();
      const regained = await seen((l) => l.msg === 'Redis connection regained');
      expect(regained).toMatchObject({ level: 30, redis: own.url });
      expect(regained!.downMs).toBeGreaterThan(0);
      expect(local.filter((l) => typeof l.msg === 'string' && l.msg.startsWith('Redis connection lost'))).toHaveLength(1);
    } finally {
      await other.stop();
      await own.close();
    }
  });
});
