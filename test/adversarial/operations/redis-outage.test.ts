import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCli, writeTempFile, type RunningCli } from '../../support/clients/cli.js';
import { call } from '../../support/clients/http-client.js';
import { startHttpServer, type TestServer } from '../../support/peers/http-servers.js';
import { basic, startTestOutrigger, staticUsers } from '../../support/outrigger.js';
import { startTestRedis, type TestRedis } from '../../support/redis/redis.js';
import { eventually } from '../support.js';

/** Redis away: Outrigger starts and serves, answers 503 where it needs Redis, and heals when it returns. */
describe('Redis outage', () => {
  let upstream: TestServer;

  beforeAll(async () => {
    upstream = await startHttpServer((req, res) => {
      // users.source: upstream (the guard test): the backend checks Basic credentials, quickly.
      if (req.url!.startsWith('/roles/')) {
        if (req.headers.authorization !== basic('alice', 'alice-password')) return void res.writeHead(401).end();
        return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ roles: ['user'] }));
      }
      res.end(`upstream ${req.url}`);
    });
  });
  afterAll(async () => {
    await upstream?.close();
  });

  describe('start with acl.bootstrap while Redis is down (the built CLI)', () => {
    let redis: TestRedis;
    let cli: RunningCli | null = null;

    beforeAll(async () => {
      redis = await startTestRedis();
      await redis.stop();
    });
    afterAll(async () => {
      cli?.child.kill('SIGTERM');
      await cli?.exited;
      await redis?.close();
    });

    it('keeps serving, then applies the bootstrap once Redis is back', { timeout: 90_000 }, async () => {
      const bootstrap = writeTempFile('setup.yaml', {
        permissions: [{ _id: 'anyone-reads-public', roles: ['$unauthenticated'], predicate: 'method(GET) and path-prefix(/public)', priority: 10 }],
      });
      const config = writeTempFile('outrigger.yaml', {
        service: { id: 'outage-bootstrap' },
        listen: { host: '127.0.0.1', port: 0 },
        // Nothing balances in front of it: stop at once on SIGTERM (the drain is tested in shutdown-signals).
        shutdown: { drainSeconds: 0 },
        upstream: { url: upstream.url },
        redis: { url: redis.url },
        acl: { mode: 'enforce', bootstrap },
        log: { level: 'info' },
      });
      // Generous: the CLI first waits 5 s for Redis, and the machine may be loaded.
      cli = await startCli(config, [], 40_000);
      expect(cli.output()).toMatch(/bootstrap setup file will be applied once Redis is back/);

      // Serving: health says Redis is down, and the ACL (empty yet) refuses the anonymous read.
      expect((await call(cli.url, '/_health/ready')).status).toBe(503);
      const before = await call(cli.url, '/public/a');
      expect([401, 403]).toContain(before.status);

      await redis.restart();
      expect(await eventually(() => /applied the bootstrap setup file/.test(cli!.output()), 20_000, 200)).toBe(true);
      expect(await redis.client.hget('outrigger:{outage-bootstrap}:acl', 'anyone-reads-public')).toContain('path-prefix(/public)');
      expect(await eventually(async () => (await call(cli!.url, '/public/a')).status === 200, 10_000, 200)).toBe(true);
      expect(cli.child.exitCode).toBeNull();
    });
  });

  describe('admin routes while Redis is down', () => {
    let redis: TestRedis;
    let proxy: Awaited<ReturnType<typeof startTestOutrigger>>;
    const ROOT = basic('root', 'root-password');

    beforeAll(async () => {
      redis = await startTestRedis();
      proxy = await startTestOutrigger({
        service: { id: 'outage-admin' },
        upstream: { url: upstream.url },
        redis: { url: redis.url },
        users: await staticUsers({ root: ['root'] }),
      });
      // Signed in (and cached) while Redis is up: the outage below is about the routes, not sign-in.
      expect((await call(proxy.url, '/_admin/webhooks', { auth: ROOT })).status).toBe(200);
      await redis.stop();
      expect(await eventually(async () => (await call(proxy.url, '/_health/ready')).status === 503, 10_000), '/_health/ready answering 503 once Redis stopped').toBe(true);
    });
    afterAll(async () => {
      await proxy?.stop();
      await redis?.close();
    });

    it.each([
      ['GET', '/_admin/webhooks'],
      ['GET', '/_admin/webhooks/hook-1'],
      ['GET', '/_admin/webhooks/hook-1/logs'],
      ['DELETE', '/_admin/webhooks/hook-1'],
      ['GET', '/_admin/webhooks/recording'],
      ['GET', '/_admin/acl'],
      ['GET', '/_admin/acl/p1'],
      ['DELETE', '/_admin/acl/p1'],
      ['GET', '/_admin/keys'],
      ['GET', '/keys'],
    ])('%s %s answers 503 in the error format, not 500', async (method, path) => {
      const res = await call(proxy.url, path, { method, auth: ROOT });
      expect(res.status).toBe(503);
      expect(res.headers['retry-after']).toBeDefined();
      expect(res.json).toMatchObject({ 'http status code': 503, message: expect.stringMatching(/Redis/) });
    });

    it('answers a webhook write 503 too', async () => {
      const res = await call(proxy.url, '/_admin/webhooks', {
        method: 'POST',
        auth: ROOT,
        body: { _id: 'hook-2', type: 'http', url: 'http://127.0.0.1:9/x', condition: 'path-prefix(/x)' },
      });
      expect(res.status).toBe(503);
    });
  });

  describe('the Basic brute-force guard while Redis is down', () => {
    let redis: TestRedis;
    let proxy: Awaited<ReturnType<typeof startTestOutrigger>>;
    const WRONG = basic('alice', 'not-her-password');
    const RIGHT = basic('alice', 'alice-password');
    const from = (ip: string, auth: string) => ({ auth, headers: { 'x-forwarded-for': ip } });

    beforeAll(async () => {
      redis = await startTestRedis();
      proxy = await startTestOutrigger({
        service: { id: 'outage-guard' },
        upstream: { url: upstream.url },
        listen: { trustedProxies: ['127.0.0.1/32'] },
        redis: { url: redis.url },
        users: { source: 'upstream' },
        acl: { mode: 'own-routes' },
      });
    });
    afterAll(async () => {
      await proxy?.stop();
      await redis?.close();
    });

    it('holds a lock earned before the outage, keeps counting during it, and hands the count back to Redis', async () => {
      for (let i = 0; i < 10; i++) expect((await call(proxy.url, '/a', from('127.80.0.1', WRONG))).status).toBe(401);
      expect((await call(proxy.url, '/a', from('127.80.0.1', WRONG))).status).toBe(429);

      await redis.stop();
      try {
        // The lock holds for wrong and right passwords alike (the right one was never verified, so not cached).
        const locked = await call(proxy.url, '/a', from('127.80.0.1', RIGHT));
        expect(locked.status).toBe(429);
        expect(locked.headers['retry-after']).toBeDefined();
        expect((await call(proxy.url, '/a', from('127.80.0.1', WRONG))).status).toBe(429);

        // A new address: counted in-process, locked after ten failures.
        for (let i = 0; i < 10; i++) expect((await call(proxy.url, '/a', from('127.80.0.2', WRONG))).status).toBe(401);
        expect((await call(proxy.url, '/a', from('127.80.0.2', WRONG))).status).toBe(429);
        expect((await call(proxy.url, '/a', from('127.80.0.2', RIGHT))).status).toBe(429);
      } finally {
        await redis.restart();
      }
      expect(await eventually(async () => (await call(proxy.url, '/_health/ready')).status === 200, 10_000), '/_health/ready answering 200 once Redis restarted').toBe(true);
      // Still locked once Redis is back, and Redis now holds the count made during the outage.
      expect((await call(proxy.url, '/a', from('127.80.0.2', RIGHT))).status).toBe(429);
      expect(await eventually(async () => Number(await redis.client.get('outrigger:{outage-guard}:bf:u:alice:127.80.0.2')) >= 10, 5000)).toBe(true);
      // An address with no failures signs in as usual.
      expect((await call(proxy.url, '/a', from('127.80.0.3', RIGHT))).status).toBe(200);
    });

    it('a success during the outage clears the failures Redis counted before it', async () => {
      const key = 'outrigger:{outage-guard}:bf:u:alice:127.80.0.4';
      for (let i = 0; i < 9; i++) expect((await call(proxy.url, '/a', from('127.80.0.4', WRONG))).status).toBe(401);
      expect(Number(await redis.client.get(key))).toBe(9);
      await redis.stop();
      try {
        expect((await call(proxy.url, '/a', from('127.80.0.4', RIGHT))).status).toBe(200);
        expect((await call(proxy.url, '/a', from('127.80.0.4', WRONG))).status).toBe(401); // one failure after the success
      } finally {
        await redis.restart();
      }
      expect(await eventually(async () => (await call(proxy.url, '/_health/ready')).status === 200, 10_000), '/_health/ready answering 200 once Redis restarted').toBe(true);
      // Redis got the clear, then the one failure after it: not 9 + 1, which would lock alice out now.
      const settled = await eventually(async () => (await redis.client.get(key)) === '1', 5000);
      expect(settled, String(await redis.client.get(key))).toBe(true);
      expect((await call(proxy.url, '/a', from('127.80.0.4', WRONG))).status).toBe(401);
      expect((await call(proxy.url, '/a', from('127.80.0.4', RIGHT))).status).toBe(200);
    });
  });
});
