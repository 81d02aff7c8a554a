/**
 * Reloading the config without a restart (SPEC §15; src/reload.ts), on the built CLI with a real
 * Redis: SIGHUP applies a changed `limits.policies` (RateLimit-Policy changes; a policy whose
 * name and window are unchanged keeps its count; a changed window starts a new one) and a changed
 * `cors.allowOrigins`; an invalid file keeps the running config with exactly one log line naming
 * the problem; a changed `listen.port` is logged as needing a restart and not applied; a change
 * of the file alone (the poll) reloads too; `outrigger worker` takes SIGHUP as a reload as well
 * instead of dying of it.
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, requireBuiltCli, startCli, writeTempFile, type RunningCli } from '../../support/clients/cli.js';
import { call, type CallResult } from '../../support/clients/http-client.js';
import { startHttpServer, type TestServer } from '../../support/peers/http-servers.js';
import { startTestRedis, type TestRedis } from '../../support/redis/redis.js';
import { sleep, until } from '../../support/wait.js';
import { configText, reloaded, reloadLines, type Version } from './config-reload-helpers.js';
import { rateLimitHeaders } from '../limits/rate-limit-helpers.js';

const allowOrigin = (res: CallResult) => res.headers['access-control-allow-origin'];

describe('reloading limits.policies and cors on SIGHUP (built CLI)', () => {
  let redis: TestRedis;
  let upstream: TestServer;
  let proxy: RunningCli;
  let file: string;
  const write = (v: Version) => writeFileSync(file, configText('reload-sighup', redis, upstream, v));

  beforeAll(async () => {
    requireBuiltCli('the reload tests send signals to the built CLI');
    redis = await startTestRedis();
    upstream = await startHttpServer((req, res) => {
      req.resume();
      res.end('ok');
    });
    file = writeTempFile('outrigger.yaml', configText('reload-sighup', redis, upstream, { limit: 10, origins: ['https://a.example'] }));
    // Only SIGHUP reloads here: a poll could take a write first and log its own line.
    proxy = await startCli(file, ['--no-worker', '--config-poll', '0']);
  });
  afterAll(async () => {
    proxy?.child.kill('SIGKILL');
    await upstream?.close();
    await redis?.close();
  });

  it('applies a new limit keeping the count of a policy whose name and window are unchanged, and a new allowOrigins', async () => {
    for (let i = 0; i < 4; i++) {
      const res = await call(proxy.url, '/api/items');
      expect(res.status).toBe(200);
      expect(rateLimitHeaders(res).policies).toEqual([{ name: 'ceiling', q: 10, w: 86_400 }]);
    }
    expect(allowOrigin(await call(proxy.url, '/open', { headers: { origin: 'https://a.example' } }))).toBe('https://a.example');
    expect(allowOrigin(await call(proxy.url, '/open', { headers: { origin: 'https://b.example' } }))).toBeUndefined();

    write({ limit: 6, origins: ['https://b.example'] });
    proxy.child.kill('SIGHUP');
    const [line] = await reloaded(proxy, 1);
    expect(line).toMatchObject({ msg: 'config reload: applied limits.policies, cors', trigger: 'SIGHUP', applied: ['limits.policies', 'cors'] });

    // Four were counted under the old limit: of the new 6, at most 2 are left (a reset would leave 6).
    let admitted = 0;
    let refused: CallResult | undefined;
    for (let i = 0; i < 8 && !refused; i++) {
      const res = await call(proxy.url, '/api/items');
      expect(rateLimitHeaders(res).policies).toEqual([{ name: 'ceiling', q: 6, w: 86_400 }]);
      if (res.status === 429) refused = res;
      else admitted++;
    }
    expect(admitted).toBeGreaterThanOrEqual(1);
    expect(admitted).toBeLessThanOrEqual(2);
    expect(refused?.json?.message).toMatch(/rate limit 'ceiling': 6 requests per 86400 s/);

    expect(allowOrigin(await call(proxy.url, '/open', { headers: { origin: 'https://b.example' } }))).toBe('https://b.example');
    expect(allowOrigin(await call(proxy.url, '/open', { headers: { origin: 'https://a.example' } }))).toBeUndefined();
    const preflight = await call(proxy.url, '/api/items', { method: 'OPTIONS', headers: { origin: 'https://b.example', 'access-control-request-method': 'PUT' } });
    expect([preflight.status, allowOrigin(preflight)]).toEqual([204, 'https://b.example']);
  });

  it('keeps the running config when the new file is invalid, with exactly one log line naming the problem', async () => {
    const before = reloadLines(proxy).length;
    write({ limit: 0, origins: ['https://c.example/'] });
    proxy.child.kill('SIGHUP');
    const lines = await reloaded(proxy, before + 1);
    const refused = lines.slice(before);
    expect(refused).toHaveLength(1);
    expect(refused[0]!.level).toBe(50);
    expect(refused[0]!.msg).toMatch(/^config reload refused, the running config is kept: /);
    expect(refused[0]!.msg).toContain('limits.policies[0].limit: must be an integer from 1');
    expect(refused[0]!.msg).toContain('cors.allowOrigins[0]: must be written as the browser sends it');
    expect(refused[0]!.problems).toHaveLength(2);

    const res = await call(proxy.url, '/api/items', { headers: { origin: 'https://b.example' } });
    expect(rateLimitHeaders(res).policies).toEqual([{ name: 'ceiling', q: 6, w: 86_400 }]);
    expect(allowOrigin(res)).toBe('https://b.example');
    // Still one: the requests above logged nothing more about the reload.
    expect(reloadLines(proxy).slice(before)).toHaveLength(1);
  });

  it('logs a changed listen.port as needing a restart and does not apply it, while applying what reloads', async () => {
    const before = reloadLines(proxy).length;
    write({ limit: 6, origins: ['https://c.example'], port: 1 });
    proxy.child.kill('SIGHUP');
    const lines = (await reloaded(proxy, before + 2)).slice(before);
    expect(lines.map((l) => l.msg)).toEqual(['config reload: applied cors', 'config reload: listen.port changed; needs a restart, not applied (reloadable: limits.policies, cors)']);
    expect(lines[1]).toMatchObject({ level: 40, needsRestart: ['listen.port'] });
    // Still served where it listened, with the new CORS answer.
    expect(allowOrigin(await call(proxy.url, '/open', { headers: { origin: 'https://c.example' } }))).toBe('https://c.example');
  });

  it('starts a new count when a policy keeps its name but changes its window', async () => {
    const before = reloadLines(proxy).length;
    write({ limit: 6, window: '12h', origins: ['https://c.example'] });
    proxy.child.kill('SIGHUP');
    await reloaded(proxy, before + 1);
    const res = await call(proxy.url, '/api/items');
    expect(res.status).toBe(200);
    const { policies, limit } = rateLimitHeaders(res);
    expect(policies).toEqual([{ name: 'ceiling', q: 6, w: 43_200 }]);
    expect(limit!.r).toBe(5);
  });
});

describe('reloading when the config file changes (the poll, built CLI)', () => {
  let redis: TestRedis;
  let upstream: TestServer;
  let proxy: RunningCli;

  beforeAll(async () => {
    requireBuiltCli('the reload tests run the built CLI');
    redis = await startTestRedis();
    upstream = await startHttpServer((req, res) => {
      req.resume();
      res.end('ok');
    });
  });
  afterAll(async () => {
    proxy?.child.kill('SIGKILL');
    await upstream?.close();
    await redis?.close();
  });

  it('applies a new policy once the file has changed, without a signal', async () => {
    const file = writeTempFile('outrigger.yaml', configText('reload-poll', redis, upstream, { limit: 10, origins: ['https://a.example'] }));
    proxy = await startCli(file, ['--no-worker', '--config-poll', '0.2']);
    expect(rateLimitHeaders(await call(proxy.url, '/api/items')).policies).toEqual([{ name: 'ceiling', q: 10, w: 86_400 }]);

    writeFileSync(file, configText('reload-poll', redis, upstream, { limit: 7, origins: ['https://a.example'] }));
    const [line] = await reloaded(proxy, 1);
    expect(line).toMatchObject({ msg: 'config reload: applied limits.policies', trigger: 'file change' });
    expect(rateLimitHeaders(await call(proxy.url, '/api/items')).policies).toEqual([{ name: 'ceiling', q: 7, w: 86_400 }]);
    // Written again unchanged (its stat changes, its text does not): no reload, no line; the next change is the second line.
    writeFileSync(file, configText('reload-poll', redis, upstream, { limit: 7, origins: ['https://a.example'] }));
    await sleep(1500);
    writeFileSync(file, configText('reload-poll', redis, upstream, { limit: 8, origins: ['https://a.example'] }));
    const lines = await reloaded(proxy, 2);
    await sleep(1000);
    expect(reloadLines(proxy).map((l) => l.msg)).toEqual(['config reload: applied limits.policies', 'config reload: applied limits.policies']);
    expect(lines[1]).toMatchObject({ trigger: 'file change' });
    expect(rateLimitHeaders(await call(proxy.url, '/api/items')).policies).toEqual([{ name: 'ceiling', q: 8, w: 86_400 }]);
  });
});

describe('SIGHUP on `outrigger worker` (built CLI)', () => {
  let redis: TestRedis;
  let upstream: TestServer;

  beforeAll(async () => {
    requireBuiltCli('the reload tests signal the built CLI');
    redis = await startTestRedis();
    upstream = await startHttpServer((_req, res) => res.end('ok'));
  });
  afterAll(async () => {
    await upstream?.close();
    await redis?.close();
  });

  it('reloads instead of ending the process (Node ends one on SIGHUP by default)', async () => {
    const file = writeTempFile('worker.yaml', configText('reload-worker', redis, upstream, { limit: 10, origins: ['https://a.example'] }));
    const child = spawn(process.execPath, [CLI, 'worker', '-c', file, '--config-poll', '0'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr.on('data', (c: Buffer) => (output += c.toString()));
    try {
      await until(() => output.includes('webhook worker started'), 'the worker to start', 60_000);
      writeFileSync(file, configText('reload-worker', redis, upstream, { limit: 10, origins: ['https://a.example'], port: 1 }));
      child.kill('SIGHUP');
      await until(() => output.includes('config reload'), 'the reload line', 30_000);
      const line = JSON.parse(output.split('\n').find((l) => l.includes('config reload'))!) as Record<string, unknown>;
      expect(line).toMatchObject({ msg: 'config reload: listen.port changed; needs a restart, not applied (reloadable: limits.policies, cors)', trigger: 'SIGHUP' });
      expect(child.exitCode).toBeNull();
      expect(child.signalCode).toBeNull();
    } finally {
      child.kill('SIGKILL');
    }
  });
});
