import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readlinkSync, realpathSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { freePort } from '../util/free-port.js';

export interface EmbeddedRedis {
  url: string;
  port: number;
  dir: string;
  stop(): Promise<void>;
}

/** The name the watchdog carries on its command line, so a leftover check can recognise it. */
const WATCHDOG_MARK = 'outrigger-embedded-redis-watchdog';
/** Written by redis-server itself (`--pidfile`) and removed by it on a clean shutdown. */
export const PIDFILE = 'redis-server.pid';

/**
 * The embedded redis-server's life is tied to its parent's through a pipe. Outrigger does not run
 * redis-server itself but this small watchdog (a second `node`, no file of its own: it works the
 * same from the sources and from dist), which runs redis-server and holds the read end of a pipe
 * whose write end only the parent holds. However the parent ends (exit, crash, SIGKILL, the OOM
 * killer), the kernel closes that end; the watchdog reads end-of-file and stops redis-server with
 * SIGTERM (it saves its AOF and removes its pidfile), SIGKILL after 10 s. Node cannot reach
 * prctl(PR_SET_PDEATHSIG), and redis-server has no parent watch of its own.
 */
const WATCHDOG = `
const { spawn } = require('node:child_process');
const [binary, ...args] = JSON.parse(process.argv[2]);
const redis = spawn(binary, args, { stdio: ['ignore', 'inherit', 'inherit'] });
let stopping = false;
const stop = () => {
  if (stopping) return;
  stopping = true;
  redis.kill('SIGTERM');
  setTimeout(() => redis.kill('SIGKILL'), 10000).unref();
};
process.stdin.on('data', () => {});
process.stdin.on('end', stop);
process.stdin.on('close', stop);
process.stdin.on('error', stop);
for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP']) process.on(signal, stop);
redis.on('error', (error) => { process.stderr.write(error.message); process.exit(127); });
redis.on('exit', (code, signal) => process.exit(code ?? (signal === 'SIGTERM' ? 0 : 1)));
`;

/**
 * Starts a private `redis-server`: loopback only, its own data dir, AOF on (so queued webhook
 * events survive a restart of the child), no RDB snapshots. Used by `redis.url: embedded` and by
 * the tests, which also stop and restart it on the same port and dir. It runs under a watchdog
 * that stops it when this process is gone, however it died (above); a redis-server still
 * running on the same dir from before (its pidfile, a process that is redis-server in that dir,
 * not kept by a live watchdog) is stopped first, and `onLeftover` says so.
 */
export async function startEmbeddedRedis(options: { dir: string; port?: number; binary?: string; onLeftover?: (message: string) => void }): Promise<EmbeddedRedis> {
  const binary = options.binary ?? 'redis-server';
  const probe = spawnSync(binary, ['--version'], { encoding: 'utf8' });
  if (probe.error) {
    throw new Error(
      `redis.url is "embedded" but ${binary} could not be run (${(probe.error as NodeJS.ErrnoException).code}). ` +
        'Install it (Debian/Ubuntu: apt-get install redis-server; macOS: brew install redis) or set redis.url to an existing Redis.',
    );
  }
  mkdirSync(options.dir, { recursive: true });
  await stopLeftover(options.dir, options.onLeftover);
  // A port found free can be taken by another process before redis-server binds it (tests start
  // many at once; two Outriggers may start together): a new one is picked, three tries at most.
  for (let attempt = 1; ; attempt++) {
    const port = options.port ?? (await freePort());
    const { child, output } = launch(binary, port, options.dir);
    const url = `redis://127.0.0.1:${port}`;
    try {
      await waitUntilPingable(url, child, output);
    } catch (error) {
      if (options.port === undefined && attempt < 3 && child.exitCode !== null && /address already in use/i.test(output())) continue;
      throw error;
    }
    return { url, port, dir: options.dir, stop: () => stopChild(child) };
  }
}

/** redis-server under its watchdog; `output` is the tail of what it printed (its log goes to stdout). */
function launch(binary: string, port: number, dir: string): { child: ChildProcess; output: () => string } {
  const args = [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--dir',
    dir,
    '--pidfile',
    join(realpathSync(dir), PIDFILE),
    '--appendonly',
    'yes',
    '--appendfsync',
    'everysec',
    '--save',
    '',
    '--protected-mode',
    'yes',
    '--daemonize',
    'no',
    '--loglevel',
    'warning',
  ];
  // The pipe on stdin is the watchdog's tie to this process: never written, never closed by us.
  const child = spawn(process.execPath, ['-e', WATCHDOG, WATCHDOG_MARK, JSON.stringify([binary, ...args])], { stdio: ['pipe', 'pipe', 'pipe'] });
  child.stdin?.on('error', () => {});
  let tail = '';
  const keep = (chunk: Buffer) => void (tail = (tail + chunk.toString()).slice(-2000));
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  return { child, output: () => tail };
}

/**
 * A redis-server left running on `dir` by an Outrigger that did not stop cleanly (its watchdog
 * killed too, or an Outrigger from before the watchdog): without this, the new one would share
 * the data directory with it, and the orphan's next AOF rewrite could overwrite what the new one
 * wrote. Refuses (throws) when a live watchdog still keeps it: another Outrigger uses that dir.
 */
async function stopLeftover(dir: string, onLeftover: ((message: string) => void) | undefined): Promise<void> {
  const file = join(dir, PIDFILE);
  let pid: number;
  try {
    pid = Number(readFileSync(file, 'utf8').trim());
  } catch {
    return;
  }
  if (!Number.isInteger(pid) || pid <= 1 || !alive(pid) || !isRedisServerIn(pid, dir)) {
    rmSync(file, { force: true }); // stale: the process is gone, or the pid now belongs to another program
    return;
  }
  const parent = parentOf(pid);
  if (parent !== null && parent > 1 && commandLine(parent).includes(WATCHDOG_MARK)) {
    throw new Error(`redis.url is "embedded" but another Outrigger already runs a redis-server (pid ${pid}) on ${dir}; stop that Outrigger, or give this one another service.id or directory`);
  }
  onLeftover?.(`a redis-server (pid ${pid}) left running on ${dir} by an Outrigger that did not stop cleanly was found; stopping it before starting a new one`);
  process.kill(pid, 'SIGTERM');
  if (!(await exited(pid, 10_000))) {
    process.kill(pid, 'SIGKILL');
    await exited(pid, 5_000);
  }
  rmSync(file, { force: true });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function exited(pid: number, ms: number): Promise<boolean> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (!alive(pid)) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return !alive(pid);
}

/** redis-server changes its directory to --dir: on Linux /proc says where it runs; elsewhere, its name must do. */
function isRedisServerIn(pid: number, dir: string): boolean {
  if (existsSync(`/proc/${pid}`)) {
    try {
      return readFileSync(`/proc/${pid}/comm`, 'utf8').startsWith('redis-server') && readlinkSync(`/proc/${pid}/cwd`) === realpathSync(dir);
    } catch {
      return false;
    }
  }
  return commandLine(pid).includes('redis-server');
}

function parentOf(pid: number): number | null {
  if (existsSync(`/proc/${pid}/stat`)) {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  }
  const out = spawnSync('ps', ['-o', 'ppid=', '-p', String(pid)], { encoding: 'utf8' });
  return out.status === 0 ? Number(out.stdout.trim()) : null;
}

function commandLine(pid: number): string {
  if (existsSync(`/proc/${pid}/cmdline`)) {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
    } catch {
      return '';
    }
  }
  const out = spawnSync('ps', ['-o', 'command=', '-p', String(pid)], { encoding: 'utf8' });
  return out.status === 0 ? out.stdout : '';
}

async function waitUntilPingable(url: string, child: ChildProcess, stderr: () => string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`redis-server exited with code ${child.exitCode}: ${stderr().trim()}`);
    // Bounded: the port may be held by something that accepts and never answers a PING.
    const probe = new Redis(url, { lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0, connectTimeout: 1000, commandTimeout: 1000 });
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
  child.kill('SIGTERM'); // the watchdog stops redis-server (SIGKILL to it would orphan redis-server)
  throw new Error(`redis-server did not accept connections within 10 s: ${stderr().trim()}`);
}

function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    // The watchdog passes SIGTERM on and exits with redis-server; SIGKILL only if both hang.
    const force = setTimeout(() => child.kill('SIGKILL'), 15_000);
    child.once('exit', () => {
      clearTimeout(force);
      resolve();
    });
    child.kill('SIGTERM');
  });
}
