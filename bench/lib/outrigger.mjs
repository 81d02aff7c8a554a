/* global fetch */
/**
 * Starts Outrigger as a user runs it: the built CLI (`dist/src/cli/index.js start -c FILE
 * --no-worker`, or `worker -c FILE`) in its own process, so its CPU time can be read from
 * /proc/<pid>/stat, with NODE_ENV=production (notes §A4). Config and setup files are written as
 * JSON (which is YAML) under bench/.work/.
 */
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { freePort, sleep, spawnProcess } from './processes.mjs';

/**
 * BENCH_OUTRIGGER_ROOT (or `root`) runs another build (a directory holding package.json, dist/
 * and node_modules/), e.g. a scratch copy with a change to compare against this one.
 */
const cliOf = (root) => resolve(root ?? process.env.BENCH_OUTRIGGER_ROOT ?? '.', 'dist/src/cli/index.js');

/**
 * @param {object} o
 * @param {string} o.name  scenario name (also the service id, so scenarios never share Redis state)
 * @param {string} o.workDir
 * @param {string} o.redisUrl
 * @param {string} o.upstreamUrl
 * @param {object} [o.config]  merged over the defaults below (top-level sections replaced shallowly per section)
 * @param {object} [o.setup]   the acl.bootstrap setup file (permissions, apps, webhooks)
 * @param {'start'|'worker'} [o.mode]
 * @param {string} [o.serviceId]  default `bench-<name>`
 * @param {string[]} [o.nodeArgs]  e.g. --cpu-prof
 * @param {string} [o.root]  the build to run (default: BENCH_OUTRIGGER_ROOT, else this checkout)
 * @param {Record<string, string>} [o.env]  added to the process's environment
 */
export async function startOutrigger({ name, workDir: dir, redisUrl, upstreamUrl, config = {}, setup, mode = 'start', serviceId, nodeArgs = [], root, env = {} }) {
  const workDir = resolve(dir);
  const port = mode === 'start' ? await freePort() : 0;
  const setupFile = join(workDir, `${name}.setup.json`);
  if (setup) writeFileSync(setupFile, JSON.stringify(setup, null, 2));
  const base = {
    service: { id: serviceId ?? `bench-${name}` },
    listen: { host: '127.0.0.1', port: port || 8080 },
    // No drain: nothing balances load in front of a bench process, and a 5 s drain (the default)
    // would outlast the stop's wait, so the process is killed before --cpu-prof writes its profile.
    shutdown: { drainSeconds: 0, timeoutSeconds: 2 },
    upstream: { url: upstreamUrl },
    redis: { url: redisUrl },
    users: { source: 'upstream' },
    acl: { mode: 'own-routes', ...(setup ? { bootstrap: setupFile } : {}) },
    webhooks: { allowPrivateTargets: ['127.0.0.0/8'] },
    log: { level: 'warn' },
  };
  const merged = { ...base };
  for (const [section, value] of Object.entries(config)) merged[section] = { ...(base[section] ?? {}), ...value };
  const configFile = join(workDir, `${name}.config.json`);
  writeFileSync(configFile, JSON.stringify(merged, null, 2));

  const log = join(workDir, `${name}.${mode}.log`);
  const cli = cliOf(root);
  const args = [...nodeArgs, ...(mode === 'start' ? [cli, 'start', '-c', configFile, '--no-worker'] : [cli, 'worker', '-c', configFile])];
  const proc = spawnProcess(`outrigger ${name} (${mode})`, process.execPath, args, { env: { NODE_ENV: 'production', ...env }, log });
  const url = mode === 'start' ? `http://127.0.0.1:${port}` : null;
  // A worker has no port: callers watch its deliveries instead.
  if (url) await waitReady(url, proc, log);
  return { name, url, pid: proc.pid, log, configFile, serviceId: merged.service.id, stop: () => proc.stop() };
}

async function waitReady(url, proc, log) {
  const deadline = Date.now() + 30_000;
  let exited = null;
  proc.exited.then((e) => (exited = e));
  while (Date.now() < deadline) {
    if (exited) throw new Error(`Outrigger exited (${JSON.stringify(exited)}) before it was ready; see ${log}`);
    try {
      const res = await fetch(`${url}/_health/ready`);
      await res.arrayBuffer();
      if (res.status === 200) return;
    } catch {
      /* not listening yet */
    }
    await sleep(100);
  }
  await proc.stop();
  throw new Error(`Outrigger at ${url} was not ready within 30 s; see ${log}`);
}

/** Issues an API key as a user does: POST /keys with Basic. */
export async function issueKey(url, user = 'alice', roles = ['reader']) {
  const res = await fetch(`${url}/keys`, {
    method: 'POST',
    headers: { authorization: basic(user), 'content-type': 'application/json' },
    body: JSON.stringify({ name: `bench-${Date.now()}`, roles }),
  });
  const body = await res.text();
  if (res.status !== 201) throw new Error(`POST /keys answered ${res.status}: ${body}`);
  return JSON.parse(body).key;
}

/**
 * API keys written straight to Redis through Outrigger's own store (dist), as
 * POST /keys would write them but without 10,000 HTTP round trips: spread over 1,000 owners so
 * the issuing script's per-owner scan stays short.
 */
export async function writeKeys(redisUrl, serviceId, count) {
  const { Redis } = await import('ioredis');
  const { ApiKeyStore } = await import('../../dist/src/keys/key-store.js');
  const { generateApiKey, hashApiKey } = await import('../../dist/src/keys/key-format.js');
  const { redisKeys } = await import('../../dist/src/store/keys.js');
  const { randomBytes } = await import('node:crypto');
  const client = new Redis(redisUrl);
  try {
    const store = new ApiKeyStore(client, redisKeys('outrigger', serviceId));
    const keys = [];
    const now = Date.now();
    const batch = 500;
    for (let i = 0; i < count; i += batch) {
      const jobs = [];
      for (let j = i; j < Math.min(count, i + batch); j++) {
        const key = generateApiKey('rig');
        keys.push(key);
        const record = {
          _id: randomBytes(12).toString('hex'),
          owner: `bench-${j % 1000}`,
          name: `bench ${j}`,
          roles: ['reader'],
          createdAt: now,
          expiresAt: now + 86_400_000,
          via: 'api',
          serviceId,
          keyHash: hashApiKey(key),
        };
        jobs.push(store.issueWithinLimit(record, 1_000_000, now));
      }
      const outcomes = await Promise.all(jobs);
      if (outcomes.some((x) => !x.issued)) throw new Error('could not write the bench keys');
    }
    return keys;
  } finally {
    client.disconnect();
  }
}

/** The upstream's /roles accepts `<id>:<id>-password`. */
export function basic(user) {
  return `Basic ${Buffer.from(`${user}:${user}-password`).toString('base64')}`;
}
