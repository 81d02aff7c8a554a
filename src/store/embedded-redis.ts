import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { Redis } from 'ioredis';
import { freePort } from '../util/free-port.js';

export interface EmbeddedRedis {
  url: string;
  port: number;
  dir: string;
  stop(): Promise<void>;
}

/**
 * Starts a private `redis-server` child: loopback only, its own data dir, AOF on (so queued
 * webhook events survive a restart of the child), no RDB snapshots. Used by `redis.url:
 * embedded` and by the tests, which also stop and restart it on the same port and dir.
 */
export async function startEmbeddedRedis(options: { dir: string; port?: number; binary?: string }): Promise<EmbeddedRedis> {
  const binary = options.binary ?? 'redis-server';
  const probe = spawnSync(binary, ['--version'], { encoding: 'utf8' });
  if (probe.error) {
    throw new Error(
      `redis.url is "embedded" but ${binary} could not be run (${(probe.error as NodeJS.ErrnoException).code}). ` +
        'Install it (Debian/Ubuntu: apt-get install redis-server; macOS: brew install redis) or set redis.url to an existing Redis.',
    );
  }
  mkdirSync(options.dir, { recursive: true });
  const port = options.port ?? (await freePort());
  const child = spawn(
    binary,
    ['--port', String(port), '--bind', '127.0.0.1', '--dir', options.dir, '--appendonly', 'yes', '--appendfsync', 'everysec',
      '--save', '', '--protected-mode', 'yes', '--daemonize', 'no', '--loglevel', 'warning'],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()).slice(-2000));
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);

  const url = `redis://127.0.0.1:${port}`;
  await waitUntilPingable(url, child, () => stderr);
  return {
    url,
    port,
    dir: options.dir,
    stop: () => stopChild(child, killOnExit),
  };
}

async function waitUntilPingable(url: string, child: ChildProcess, stderr: () => string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`redis-server exited with code ${child.exitCode}: ${stderr().trim()}`);
    const probe = new Redis(url, { lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0 });
    probe.on('error', () => {});
    try {
      await probe.connect();
      await probe.ping();
      probe.disconnect();
      return;
    } catch {
      probe.disconnect();
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  child.kill('SIGKILL');
  throw new Error(`redis-server did not accept connections within 10 s: ${stderr().trim()}`);
}

function stopChild(child: ChildProcess, killOnExit: () => void): Promise<void> {
  process.off('exit', killOnExit);
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const force = setTimeout(() => child.kill('SIGKILL'), 5000);
    child.once('exit', () => {
      clearTimeout(force);
      resolve();
    });
    child.kill('SIGTERM');
  });
}
