/**
 * Issue 28 item 5: the embedded redis-server must not outlive a killed Outrigger. The built CLI
 * runs with `redis.url: embedded` in a directory of its own; SIGKILL to it must stop its
 * redis-server (through the watchdog's pipe), and a redis-server left running on that data
 * directory anyway (its watchdog killed too) must be found by its pidfile and stopped at the next
 * start, saying so in the log, with the data it held kept.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI } from '../support/clients/cli.js';
import { startHttpServer, type TestServer } from '../support/peers/http-servers.js';
import { eventually } from '../adversarial/support.js';

const SERVICE = 'chaos-orphan';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function parentOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
}

describe.skipIf(process.platform !== 'linux')('chaos: the embedded redis-server dies with its Outrigger', () => {
  let upstream: TestServer;
  let dir: string;
  const pidfile = () => join(dir, '.outrigger', `redis-${SERVICE}`, 'redis-server.pid');
  const children = new Set<ChildProcess>();
  const redisPids = new Set<number>();

  beforeAll(async () => {
    upstream = await startHttpServer((_req, res) => res.end('ok'));
    dir = mkdtempSync(join(tmpdir(), 'outrigger-chaos-orphan-'));
    writeFileSync(
      join(dir, 'outrigger.yaml'),
      [
        `service: { id: ${SERVICE} }`,
        'listen: { host: 127.0.0.1, port: 0 }',
        'shutdown: { drainSeconds: 0 }',
        `upstream: { url: ${upstream.url} }`,
        'redis: { url: embedded }',
        'acl: { mode: own-routes }',
        'log: { level: info }',
      ].join('\n'),
    );
  });
  afterAll(async () => {
    for (const child of children) child.kill('SIGKILL');
    for (const pid of redisPids) if (alive(pid)) process.kill(pid, 'SIGKILL');
    await upstream?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** `outrigger start` in `dir`, resolved once it listens, with its output so far. */
  function start(): Promise<{ child: ChildProcess; url: string; output: () => string; redisPid: number }> {
    return new Promise((resolve, reject) => {
      const child = spawn(process.execPath, [CLI, 'start', '-c', 'outrigger.yaml'], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
      children.add(child);
      child.once('exit', () => children.delete(child));
      let output = '';
      const timer = setTimeout(() => reject(new Error(`outrigger did not start within 20 s:\n${output}`)), 20_000);
      const onData = (chunk: Buffer) => {
        output += chunk.toString();
        const url = /"url":"(http:\/\/[^"]+)"/.exec(output)?.[1];
        if (url) {
          child.stdout!.off('data', onData);
          child.stdout!.on('data', (c: Buffer) => (output += c.toString()));
          clearTimeout(timer);
          const redisPid = Number(readFileSync(pidfile(), 'utf8').trim());
          redisPids.add(redisPid);
          resolve({ child, url, output: () => output, redisPid });
        }
      };
      child.stdout!.on('data', onData);
      child.stderr!.on('data', (c: Buffer) => (output += c.toString()));
      child.once('exit', (code) => reject(new Error(`outrigger exited with ${code}:\n${output}`)));
    });
  }

  it('SIGKILL to Outrigger stops its redis-server within seconds (the watchdog sees its pipe close)', { timeout: 40_000 }, async () => {
    const first = await start();
    expect(alive(first.redisPid)).toBe(true);
    expect((await fetch(`${first.url}/_health/ready`)).status).toBe(200);
    first.child.kill('SIGKILL');
    expect(await eventually(() => !alive(first.redisPid), 5000, 50)).toBe(true);
    // A clean SIGTERM shutdown of redis-server: it removed its own pidfile.
    expect(existsSync(pidfile())).toBe(false);
  });

  it('a redis-server left running on the data directory is stopped at the next start, said in the log, its data kept', { timeout: 60_000 }, async () => {
    const first = await start();
    const orphan = first.redisPid;
    const port = Number(/"redis":"redis:\/\/127\.0\.0\.1:(\d+)"/.exec(first.output())![1]);
    const client = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    client.on('error', () => {});
    await client.connect();
    await client.set('chaos:written-before', 'kept');
    client.disconnect();
    // The worst case: the watchdog dies too (kill -9 of the whole tree but redis-server, the OOM killer).
    const watchdog = parentOf(orphan);
    expect(readFileSync(`/proc/${watchdog}/cmdline`, 'utf8')).toContain('outrigger-embedded-redis-watchdog');
    process.kill(watchdog, 'SIGKILL');
    first.child.kill('SIGKILL');
    await new Promise((r) => setTimeout(r, 500));
    expect(alive(orphan)).toBe(true); // orphaned, still holding the directory

    const second = await start();
    expect(second.output()).toMatch(new RegExp(`a redis-server \\(pid ${orphan}\\) left running on .*redis-${SERVICE} by an Outrigger that did not stop cleanly was found; stopping it`));
    expect(alive(orphan)).toBe(false);
    expect(second.redisPid).not.toBe(orphan);
    const port2 = Number(/"redis":"redis:\/\/127\.0\.0\.1:(\d+)"/.exec(second.output())![1]);
    const client2 = new Redis({ port: port2, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    client2.on('error', () => {});
    await client2.connect();
    expect(await client2.get('chaos:written-before')).toBe('kept');
    client2.disconnect();

    second.child.kill('SIGTERM');
    expect(await eventually(() => !alive(second.redisPid), 10_000, 50)).toBe(true);
  });
});
