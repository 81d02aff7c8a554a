import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashPassword } from '../../../src/access/password-hash.js';
import { startStandinBackend, type StandinBackend } from '../../../examples/standin-backend/index.js';
import { startTestRedis, type TestRedis } from '../../support/redis/redis.js';
import { runCli, startCli, writeTempFile, type RunningCli } from '../../support/clients/cli.js';
import { call } from '../../support/clients/http-client.js';
import { changeGoalBound, timedMs } from '../../support/timing.js';

const basic = (id: string, pw: string) => `Basic ${Buffer.from(`${id}:${pw}`).toString('base64')}`;

/** `outrigger keys list|revoke` from the built CLI, against the Redis a separately running `outrigger start` uses. */
// Each row runs the built CLI several times (a Node start, a config load, a Redis connection
// each): seconds apiece on a loaded machine, where the default 30 s cut a passing row short.
const CLI_RUNS_MS = 120_000;

describe('outrigger keys (built CLI)', () => {
  let redis: TestRedis;
  let backend: StandinBackend;
  let proxy: RunningCli;
  let configFile: string;
  const ALICE = basic('alice', 'alice-password');
  const BOB = basic('bob', 'bob-password');

  beforeAll(async () => {
    redis = await startTestRedis();
    backend = await startStandinBackend({ data: { shop: { items: [{ _id: 'i1' }] } } });
    const users = [
      { id: 'root', password: await hashPassword('root-password'), roles: ['root'] },
      { id: 'alice', password: await hashPassword('alice-password'), roles: ['user'] },
      { id: 'bob', password: await hashPassword('bob-password'), roles: ['user'] },
    ];
    const setup = writeTempFile('setup.yaml', {
      permissions: [
        { _id: 'keys', predicate: 'path-prefix(/keys)', roles: ['user'], apiKeys: { roles: ['reader'] } },
        { _id: 'read', predicate: 'method(GET) and path-prefix(/shop)', roles: ['reader'] },
      ],
    });
    configFile = writeTempFile('outrigger.yaml', {
      service: { id: 'e2e-keys' },
      listen: { host: '127.0.0.1', port: 0 },
      // Nothing balances in front of it: stop at once on SIGTERM (the drain is tested in shutdown-signals).
      shutdown: { drainSeconds: 0 },
      upstream: { url: backend.url },
      redis: { url: redis.url },
      users: { source: 'static', static: users },
      acl: { mode: 'enforce', bootstrap: setup },
      features: { webhooks: 'disabled' },
      log: { level: 'info' },
    });
    proxy = await startCli(configFile, ['--no-worker']);
  });

  afterAll(async () => {
    proxy?.child.kill('SIGTERM');
    await proxy?.exited;
    await backend?.close();
    await redis?.close();
  });

  it(
    'lists keys as a table with a summary, filtered by owner, or as JSON; never the key itself',
    async () => {
      const a = await call(proxy.url, '/keys', { method: 'POST', auth: ALICE, body: { name: 'alice laptop', roles: ['reader'] } });
      const b = await call(proxy.url, '/keys', { method: 'POST', auth: BOB, body: { name: 'bob ci', roles: [] } });
      expect([a.status, b.status]).toEqual([201, 201]);

      const all = await runCli(['keys', 'list', '-c', configFile]);
      expect(all.code).toBe(0);
      const lines = all.stdout.trim().split('\n');
      expect(lines[0]).toMatch(/^ID\s+OWNER\s+NAME\s+ROLES\s+VIA\s+CLIENT\s+CREATED\s+EXPIRES\s+LAST USED\s+STATUS$/);
      expect(lines[1]).toMatch(new RegExp(`^${b.json._id}\\s+bob\\s+bob ci\\s+-\\s+api\\s+-\\s+\\S+Z\\s+\\S+Z\\s+-\\s+active$`));
      expect(lines[2]).toMatch(new RegExp(`^${a.json._id}\\s+alice\\s+alice laptop\\s+reader\\s+api`));
      expect(lines.at(-1)).toBe('2 keys: 2 active, 0 expired');
      expect(all.stdout).not.toContain(a.json.key.slice(4, 40));

      const alices = await runCli(['keys', 'list', '-c', configFile, '--owner', 'alice']);
      expect(alices.stdout).toContain(a.json._id);
      expect(alices.stdout).not.toContain(b.json._id);
      expect(alices.stdout.trim().split('\n').at(-1)).toBe('1 key (owner alice): 1 active, 0 expired');

      const none = await runCli(['keys', 'list', '-c', configFile, '--client', 'claude']);
      expect(none.stdout.trim()).toBe('0 keys (client claude): 0 active, 0 expired');

      const json = JSON.parse((await runCli(['keys', 'list', '-c', configFile, '--owner', 'alice', '--json'])).stdout);
      expect(json).toEqual([{ _id: a.json._id, owner: 'alice', name: 'alice laptop', roles: ['reader'], via: 'api', createdAt: expect.stringMatching(/Z$/), expiresAt: expect.stringMatching(/Z$/) }]);
    },
    CLI_RUNS_MS,
  );

  it(
    'revokes a key, and the running Outrigger (another process, whose cache held it) refuses it within 1 s',
    async () => {
      const issued = await call(proxy.url, '/keys', { method: 'POST', auth: ALICE, body: { name: 'to revoke', roles: ['reader'] } });
      const key = `Bearer ${issued.json.key}`;
      expect((await call(proxy.url, '/shop/items', { auth: key })).status).toBe(200);
      expect((await call(proxy.url, '/shop/items', { auth: key })).status).toBe(200);

      // A request the proxy answers from its cache, timed: how slow this machine is right now.
      const baseline = await timedMs(async () => expect((await call(proxy.url, '/shop/items', { auth: key })).status).toBe(200));
      const revoked = await runCli(['keys', 'revoke', issued.json._id, '-c', configFile]);
      const doneAt = Date.now();
      expect(revoked.code).toBe(0);
      expect(revoked.stdout.trim()).toBe(`revoked key ${issued.json._id} ("to revoke" of alice)`);
      let status = 200;
      while (status === 200 && Date.now() - doneAt < 10_000) {
        status = (await call(proxy.url, '/shop/items', { auth: key })).status;
        if (status === 200) await new Promise((r) => setTimeout(r, 10));
      }
      expect(status).toBe(401);
      // SPEC §5.4: 1 s (goal), carried by the change bus, with the margin this machine needs now:
      // 2 s, or ten requests as slow as the baseline (issues 40, 54). A process left to its cache's
      // background re-read (5 s after the key was last confirmed) mostly exceeds it; the 20 s
      // guarantee is the cache's hard bound.
      expect(Date.now() - doneAt).toBeLessThan(changeGoalBound(baseline));

      const again = await runCli(['keys', 'revoke', issued.json._id, '-c', configFile]);
      expect(again.code).toBe(1);
      expect(again.stderr).toMatch(/no key "[0-9a-f]+" on service "e2e-keys"/);
    },
    CLI_RUNS_MS,
  );

  it(
    'explains an unreachable Redis and an embedded one',
    async () => {
      const unreachable = writeTempFile('bad.yaml', { service: { id: 'x' }, upstream: { url: backend.url }, redis: { url: 'redis://127.0.0.1:1' } });
      const res = await runCli(['keys', 'list', '-c', unreachable]);
      expect(res.code).toBe(1);
      expect(res.stderr).toMatch(/cannot reach Redis at redis:\/\/127\.0\.0\.1:1/);
      const embedded = writeTempFile('embedded.yaml', { service: { id: 'x' }, upstream: { url: backend.url }, redis: { url: 'embedded' } });
      const res2 = await runCli(['keys', 'revoke', 'abc', '-c', embedded]);
      expect(res2.code).toBe(1);
      expect(res2.stderr).toMatch(/redis\.url is "embedded".*use the admin API \(GET\/DELETE \/_admin\/keys\)/);
    },
    CLI_RUNS_MS,
  );
});
