import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, writeTempFile } from '../../support/clients/cli.js';
import { startTestRedis, type TestRedis } from '../../support/redis/redis.js';

/** The messages a new user meets first, from the built CLI. */
// Generous timeouts: each case starts Node processes, slow on a loaded CI machine.
describe('CLI messages', { timeout: 120_000 }, () => {
  it('--version prints the version of package.json', async () => {
    const { version } = JSON.parse(readFileSync(resolve(import.meta.dirname, '../../../package.json'), 'utf8')) as { version: string };
    const { code, stdout } = await runCli(['--version'], { timeoutMs: 60_000 });
    expect(code).toBe(0);
    expect(stdout.trim()).toBe(version);
  });

  it('check: invalid CIDRs, a typo with its suggestion, a missing bootstrap file by absolute path', async () => {
    const file = writeTempFile(
      'outrigger.yaml',
      [
        'service: { id: demo }',
        'upstream: { url: "http://127.0.0.1:9", timeoutMS: 5000 }',
        'listen: { trustedProxies: [10.0.0.0/33, "fd00::/40", "fd00::/129"] }',
        'webhooks: { allowPrivateTargets: [127.0.0.0/40] }',
        'acl: { bootstrap: no-such-setup.yaml }',
      ].join('\n'),
    );
    const { code, stderr } = await runCli(['check', '-c', file], { timeoutMs: 60_000 });
    expect(code).toBe(1);
    expect(stderr).toMatch(/^listen\.trustedProxies\[0\]: "10\.0\.0\.0\/33" is not a CIDR: prefix length "\/33" must be an integer from 0 to 32/m);
    expect(stderr).not.toMatch(/trustedProxies\[1\]/); // fd00::/40 is a valid IPv6 CIDR
    expect(stderr).toMatch(/^listen\.trustedProxies\[2\]: .*from 0 to 128/m);
    expect(stderr).toMatch(/^webhooks\.allowPrivateTargets\[0\]: "127\.0\.0\.0\/40" is not a CIDR/m);
    expect(stderr).toMatch(/^upstream\.timeoutMS: unknown option \(did you mean "timeoutMs"\?\)/m);
    // The bootstrap is checked only once the config itself is valid.
    const fixed = writeTempFile('outrigger.yaml', 'service: { id: demo }\nupstream: { url: "http://127.0.0.1:9" }\nacl: { bootstrap: no-such-setup.yaml }\n');
    const second = await runCli(['check', '-c', fixed], { timeoutMs: 60_000 });
    expect(second.code).toBe(1);
    expect(second.stderr).toContain(`file not found: ${resolve(fixed, '..', 'no-such-setup.yaml')}`);
  });

  it('check and start: a missing config file is named by its absolute path', async () => {
    for (const command of ['check', 'start']) {
      const { code, stderr } = await runCli([command, '-c', 'no-such-dir/outrigger.yaml'], { timeoutMs: 60_000 });
      expect(code).toBe(1);
      expect(stderr).toContain(`file not found: ${resolve('no-such-dir/outrigger.yaml')}`);
      expect(stderr).not.toMatch(/ENOENT/);
    }
  });

  describe('start with the port taken', () => {
    let redis: TestRedis;
    let blocker: ReturnType<typeof createServer>;
    let port: number;

    beforeAll(async () => {
      redis = await startTestRedis();
      blocker = createServer();
      await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
      port = (blocker.address() as { port: number }).port;
    });
    afterAll(async () => {
      await new Promise((r) => blocker?.close(r));
      await redis?.close();
    });

    it('names listen.port and writes nothing to Redis (the bootstrap is not applied)', async () => {
      const setup = writeTempFile('setup.yaml', { permissions: [{ _id: 'p', roles: ['user'], predicate: 'path-prefix(/a)' }] });
      const file = writeTempFile('outrigger.yaml', {
        service: { id: 'port-taken' },
        listen: { host: '127.0.0.1', port },
        upstream: { url: 'http://127.0.0.1:9' },
        redis: { url: redis.url },
        acl: { bootstrap: setup },
      });
      const { code, stdout, stderr } = await runCli(['start', '-c', file], { timeoutMs: 60_000 });
      expect(code).toBe(1);
      // One JSON log line (SPEC §15), naming the setting; no errno, no stack.
      const lines = (stdout + stderr).split('\n').filter((l) => l.trim() !== '');
      const parsed = lines.map((l) => JSON.parse(l) as { level: number; msg: string });
      const fatal = parsed.find((l) => l.level === 60);
      expect(fatal?.msg).toMatch(new RegExp(`^Outrigger could not start: listen\\.port: 127\\.0\\.0\\.1:${port} is already in use`));
      expect(stdout + stderr).not.toMatch(/EADDRINUSE|\n\s+at /);
      const { Redis } = await import('ioredis');
      const client = new Redis(redis.url);
      try {
        expect(await client.keys('*port-taken*')).toEqual([]);
      } finally {
        client.disconnect();
      }
    });
  });
});
