/**
 * A reload storm (SPEC §15; src/reload.ts): the config file rewritten back and forth while
 * SIGHUPs arrive by the dozen and the poll watches it too, with requests flowing throughout. The
 * process stays up, every request is answered, nothing fails to apply, and once the storm ends
 * one consistent config is in force: the last file's limit and CORS answer, on every request.
 */
import { writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requireBuiltCli, startCli, writeTempFile, type RunningCli } from '../../support/clients/cli.js';
import { call } from '../../support/clients/http-client.js';
import { startHttpServer, type TestServer } from '../../support/peers/http-servers.js';
import { startTestRedis, type TestRedis } from '../../support/redis/redis.js';
import { sleep, until } from '../../support/wait.js';
import { configText, reloadLines } from '../../integration/operations/config-reload-helpers.js';
import { rateLimitHeaders } from '../../integration/limits/rate-limit-helpers.js';

const SERVICE = 'reload-storm';
const ORIGINS = ['https://a.example', 'https://b.example', 'https://c.example'];

describe('a reload storm', () => {
  let redis: TestRedis;
  let upstream: TestServer;
  let proxy: RunningCli;
  let file: string;

  beforeAll(async () => {
    requireBuiltCli('the storm signals the built CLI');
    redis = await startTestRedis();
    upstream = await startHttpServer((req, res) => {
      req.resume();
      res.end('ok');
    });
    file = writeTempFile('outrigger.yaml', configText(SERVICE, redis, upstream, { limit: 100_000, origins: [ORIGINS[0]!] }));
    proxy = await startCli(file, ['--no-worker', '--config-poll', '0.05']);
  });
  afterAll(async () => {
    proxy?.child.kill('SIGKILL');
    await upstream?.close();
    await redis?.close();
  });

  it('leaves the last file in force, whole, after many SIGHUPs and rewrites with requests in flight', async () => {
    const statuses = new Map<number, number>();
    let storming = true;
    const traffic = (async () => {
      while (storming) {
        const res = await call(proxy.url, '/api/items', { headers: { origin: ORIGINS[1]! } });
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      }
    })();

    for (let i = 0; i < 60; i++) {
      writeFileSync(file, configText(SERVICE, redis, upstream, { limit: 100_000 + (i % 2), origins: [ORIGINS[i % 2]!] }));
      for (let k = 0; k < 5; k++) proxy.child.kill('SIGHUP');
      if (i % 6 === 0) await sleep(10);
    }
    writeFileSync(file, configText(SERVICE, redis, upstream, { limit: 123_456, origins: [ORIGINS[2]!] }));
    for (let k = 0; k < 20; k++) proxy.child.kill('SIGHUP');

    await until(async () => rateLimitHeaders(await call(proxy.url, '/api/items')).policies[0]?.q === 123_456, 'the last limit in force');
    storming = false;
    await traffic;

    expect(proxy.child.exitCode).toBeNull();
    expect([...statuses.keys()]).toEqual([200]);
    const lines = reloadLines(proxy);
    expect(lines.length).toBeGreaterThan(0);
    // Each reload either applied, found nothing new, or (a read caught the file between its truncation and its write) kept the running config.
    for (const line of lines) expect(line.msg).toMatch(/^config reload: (applied|nothing changed)|^config reload refused, the running config is kept: /);
    expect(lines.some((l) => l.msg.includes('failed'))).toBe(false);

    // The last file, whole and stable: its limit and its CORS answer on every request from here on.
    for (let i = 0; i < 10; i++) {
      const [origin, res] = [ORIGINS[i % 3]!, await call(proxy.url, '/api/items', { headers: { origin: ORIGINS[i % 3]! } })];
      expect(res.status).toBe(200);
      expect(rateLimitHeaders(res).policies).toEqual([{ name: 'ceiling', q: 123_456, w: 86_400 }]);
      expect(res.headers['access-control-allow-origin']).toBe(origin === ORIGINS[2] ? origin : undefined);
    }
  });
});
