import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { answerBodyDigest, startHttpServer, type TestServer } from '../../support/peers/http-servers.js';
import { startTestRedis, type TestRedis } from '../../support/redis/redis.js';
import { rssOf, startCli, writeTempFile } from '../../support/clients/cli.js';
import { waitFor } from '../../support/wait.js';

const MB = 1024 * 1024;
// 160 MB, not 100: Node 24 leaves up to ~90 MB of 64 KiB socket buffers uncollected (Node 20
// ~60 MB) whatever the size of the transfer, so a bound that tells streaming from buffering
// must sit between that and the body size.
const TRANSFER = Number(process.env.OUTRIGGER_TRANSFER_MB ?? 160) * MB;

/** Deterministic chunks of a large body, produced lazily so the test itself stays small. */
function* bigBody(total: number): Generator<Buffer> {
  const chunk = Buffer.alloc(64 * 1024);
  for (let i = 0; i < chunk.length; i++) chunk[i] = (i * 31) & 0xff;
  for (let sent = 0; sent < total; sent += chunk.length) yield chunk.subarray(0, Math.min(chunk.length, total - sent));
}

function digestOf(total: number): string {
  const hash = createHash('sha256');
  for (const c of bigBody(total)) hash.update(c);
  return hash.digest('hex');
}

describe('the built CLI as a proxy', () => {
  let redis: TestRedis;
  let upstream: TestServer;
  /** Requests to /slow the upstream has received (so a test knows one is in flight). */
  let slowArrived = 0;

  beforeAll(async () => {
    redis = await startTestRedis();
    upstream = await startHttpServer((req, res) => {
      if (req.url === '/upload') return answerBodyDigest(req, res);
      if (req.url === '/download') {
        res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': TRANSFER });
        Readable.from(bigBody(TRANSFER)).pipe(res);
        return;
      }
      if (req.url === '/slow') {
        slowArrived++;
        setTimeout(() => res.end('finished despite SIGTERM'), 1500);
        return;
      }
      res.end('ok');
    });
  });

  afterAll(async () => {
    await upstream?.close();
    await redis?.close();
  });

  function config(extra = '') {
    return writeTempFile(
      'outrigger.yaml',
      `service: { id: e2e-proxy }\nlisten: { host: 127.0.0.1, port: 0 }\nshutdown: { drainSeconds: 0, timeoutSeconds: 5 }\nupstream: { url: ${upstream.url} }\nredis: { url: ${redis.url} }\nacl: { mode: own-routes }\nlog: { level: info }\n${extra}`,
    );
  }

  it('streams a 160 MB upload and a 160 MB download with bounded memory', async () => {
    const proxy = await startCli(config(), ['--no-worker']);
    try {
      const pid = proxy.child.pid!;
      const baseline = rssOf(pid);
      let peak = baseline;
      const sampler = setInterval(() => (peak = Math.max(peak, rssOf(pid))), 25);

      const up = await request(`${proxy.url}/upload`, { method: 'POST', body: Readable.from(bigBody(TRANSFER)), headers: { 'content-type': 'application/octet-stream' } });
      const upResult = (await up.body.json()) as { bytes: number; sha256: string };
      expect(upResult.bytes).toBe(TRANSFER);
      expect(upResult.sha256).toBe(digestOf(TRANSFER));
      const afterUpload = peak;

      const down = await request(`${proxy.url}/download`);
      const hash = createHash('sha256');
      let bytes = 0;
      for await (const chunk of down.body) {
        bytes += chunk.length;
        hash.update(chunk);
      }
      clearInterval(sampler);
      expect(bytes).toBe(TRANSFER);
      expect(hash.digest('hex')).toBe(digestOf(TRANSFER));
      // Buffering either body would add at least TRANSFER. Streaming adds only what V8 has not yet
      // collected of 64 KiB socket buffers: measured 40-65 MB on Node 20 and 80-93 MB on Node 24,
      // the same for 200 and 400 MB transfers, so the growth is bounded, not proportional to the body.
      const bound = 0.75 * TRANSFER;
      expect(afterUpload - baseline).toBeLessThan(bound);
      expect(peak - baseline).toBeLessThan(bound);
    } finally {
      proxy.child.kill('SIGTERM');
      await proxy.exited;
    }
  }, 90_000);

  it('finishes in-flight requests on SIGTERM, then exits 0', async () => {
    const proxy = await startCli(config(), ['--no-worker']);
    const before = slowArrived;
    const inFlight = request(`${proxy.url}/slow`);
    await waitFor(
      () => slowArrived,
      (n) => n > before,
      15_000,
      'the upstream to receive /slow through the proxy',
    );
    proxy.child.kill('SIGTERM');
    const res = await inFlight;
    expect(res.statusCode).toBe(200);
    expect(await res.body.text()).toBe('finished despite SIGTERM');
    expect(await proxy.exited).toBe(0);
    await expect(request(`${proxy.url}/`)).rejects.toThrow();
  });

  it('starts and stops an embedded redis-server with redis.url: embedded', async () => {
    const file = writeTempFile(
      'embedded.yaml',
      `service: { id: e2e-embedded }\nlisten: { host: 127.0.0.1, port: 0 }\nupstream: { url: ${upstream.url} }\nredis: { url: embedded }\nlog: { level: info }\n`,
    );
    const proxy = await startCli(file, ['--no-worker']);
    const ready = await request(`${proxy.url}/_health/ready`);
    expect(ready.statusCode).toBe(200);
    expect(((await ready.body.json()) as { checks: { redis: string } }).checks.redis).toBe('ok');
    let redisPid = 0;
    try {
      // redis-server runs under a watchdog (a node child of the CLI) that stops it when the CLI is gone.
      // Found by its command line: Node 24 names its main thread "MainThread", so `comm` is no longer "node".
      const watchdog = execFileSync('ps', ['-o', 'pid=,args=', '--ppid', String(proxy.child.pid)], { encoding: 'utf8' });
      const watchdogPid = Number(/^\s*(\d+)\s.*outrigger-embedded-redis-watchdog/m.exec(watchdog)?.[1]);
      expect(watchdogPid, `no watchdog among the CLI's children:\n${watchdog}`).toBeGreaterThan(0);
      const children = execFileSync('ps', ['-o', 'pid=,comm=', '--ppid', String(watchdogPid)], { encoding: 'utf8' });
      expect(children).toMatch(/redis-server/);
      redisPid = Number(/(\d+)\s+redis-server/.exec(children)![1]);
    } finally {
      proxy.child.kill('SIGTERM');
    }
    expect(await proxy.exited).toBe(0);
    expect(() => process.kill(redisPid, 0)).toThrow();
  });
});
