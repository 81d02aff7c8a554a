#!/usr/bin/env node
/* global fetch */
/**
 * Outrigger's benchmark suite: `npm run bench` (build, then this). Everything runs on loopback,
 * every process it starts is stopped by PID, every load run is bounded in time or count.
 * Prints a table and writes bench/RESULTS.md; raw JSON per run under bench/.work/.
 * Scenarios, settings and how to read the table: bench/README.md.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { median, runLoad, shuffle } from './lib/load.mjs';
import { ensureNginx, startNginx } from './lib/nginx.mjs';
import { runPaced } from './lib/paced.mjs';
import { basic, issueKey, startOutrigger, writeKeys } from './lib/outrigger.mjs';
import { startMinimalWorker } from './lib/minimal-worker.mjs';
import { forkServer, machineBusyMicros, ownTreeCpuMicros, sleep, stopAll, stopAllOnExit } from './lib/processes.mjs';
import { gitDescribe } from './lib/git.mjs';
import { commandCounters, commandDelta, startRedis, streamEvents } from './lib/redis.mjs';
import { renderResults } from './lib/report/report.mjs';
import { cacheSection } from './lib/cache-section.mjs';
import { measureDeliveryLatency, measureDrain, until } from './lib/drain.mjs';
import { GRAPHQL_APP, GRAPHQL_PERMISSIONS, GRAPHQL_SHAPES, KEYS_PERMISSION, PASS_PATH, matchingWebhook, passThroughScenarios } from './lib/scenarios.mjs';
import { protectionSection } from './lib/protection-section.mjs';
import { idempotencySection } from './lib/idempotency-section.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
process.chdir(ROOT);

const env = process.env;
const quick = env.BENCH_QUICK === '1';
const settings = {
  rounds: int(env.BENCH_ROUNDS, quick ? 1 : 5),
  seconds: num(env.BENCH_SECONDS, quick ? 2 : 5),
  warmupSeconds: num(env.BENCH_WARMUP_SECONDS, quick ? 1 : 2),
  connections: int(env.BENCH_CONNECTIONS, 50),
  /** Also per round: a run at this fixed offered rate (unsaturated), for CPU per request at equal load; 0 turns it off. */
  fixedRate: env.BENCH_FIXED_RATE === '0' ? 0 : int(env.BENCH_FIXED_RATE, 4000),
  fixedSeconds: num(env.BENCH_FIXED_SECONDS, quick ? 2 : 3),
  /**
   * Also per round, for the configurations in LOW_RATE_CONFIGS: a run at this steady, low rate
   * (issue 30 target 4: CPU and p99 at 1,000 req/s against the bare forwarder's); 0 turns it off.
   */
  lowRate: env.BENCH_LOW_RATE === '0' ? 0 : int(env.BENCH_LOW_RATE, 1000),
  lowSeconds: num(env.BENCH_LOW_SECONDS, quick ? 2 : 5),
  coldKeys: int(env.BENCH_COLD_KEYS, quick ? 3000 : 10000),
  pipelineEvents: int(env.BENCH_PIPELINE_EVENTS, quick ? 2000 : 20000),
  pipelineWarmupEvents: count(env.BENCH_PIPELINE_WARMUP_EVENTS, quick ? 0 : 4000),
  pipelineRounds: int(env.BENCH_PIPELINE_ROUNDS, quick ? 1 : 3),
  graphqlConnections: int(env.BENCH_GRAPHQL_CONNECTIONS, 20),
  /**
   * The GraphQL section's un-measured run of each server per shape (issue 39): Outrigger's CPU per
   * flat query settles only after some 6,000 queries (about 5 s here: 835 µs per query over the
   * 2,000 after a 2,000-query warm-up, then 650, then 615), so a 2 s warm-up left round 1 measuring JIT tiering.
   */
  graphqlWarmupSeconds: num(env.BENCH_GRAPHQL_WARMUP_SECONDS, quick ? 1 : 6),
  /** BENCH_GRAPHQL_FLOOR=0: no floor row (issue 39: the same reads and answer without GraphQL). */
  graphqlFloor: env.BENCH_GRAPHQL_FLOOR !== '0',
  graphqlShapes: env.BENCH_GRAPHQL_SHAPES ? new Set(env.BENCH_GRAPHQL_SHAPES.split(',').map((s) => s.trim())) : null,
  waitIdleMinutes: num(env.BENCH_WAIT_IDLE_MIN, 0),
  only: env.BENCH_ONLY ? new Set(env.BENCH_ONLY.split(',').map((s) => s.trim())) : null,
  /** Pass-through configurations to run (e.g. `c,e`); all when unset. */
  configs: env.BENCH_CONFIGS ? new Set(env.BENCH_CONFIGS.split(',').map((s) => s.trim())) : null,
  cpuProf: env.BENCH_CPU_PROF ?? '',
};
/** The configurations measured at the steady low rate too: the baselines and the key path, with and without the tee. */
const LOW_RATE_CONFIGS = new Set(['direct', 'undici', 'c', 'e']);
/** BENCH_CPU_PROF=a,c,e,graphql,pipeline,pipeline-worker: those Outrigger processes run with --cpu-prof (graphql-baseline, graphql-floor: those helper servers). */
let profileDir = null;
/** BENCH_NODE_ARGS='--trace-gc-nvp': Node/V8 flags for every Outrigger process (diagnostics; the figures then include their cost). */
const extraNodeArgs = (env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
const profArgs = (id) => (profileDir && settings.cpuProf.split(',').includes(id) ? ['--cpu-prof', `--cpu-prof-dir=${join(profileDir, id)}`] : []);
const prof = (id) => ({ nodeArgs: [...profArgs(id), ...extraNodeArgs] });
const wanted = (phase) => !settings.only || settings.only.has(phase);

function int(value, fallback) {
  const n = value === undefined || value === '' ? fallback : Number.parseInt(value, 10);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`bench: expected a positive integer, got ${value}`);
  return n;
}
function count(value, fallback) {
  const n = value === undefined || value === '' ? fallback : Number.parseInt(value, 10);
  if (!Number.isInteger(n) || n < 0) throw new Error(`bench: expected a whole number, got ${value}`);
  return n;
}
function num(value, fallback) {
  const n = value === undefined || value === '' ? fallback : Number(value);
  if (!Number.isFinite(n) || n < 0) throw new Error(`bench: expected a non-negative number, got ${value}`);
  return n;
}
const say = (text) => process.stdout.write(`${text}\n`);

/** Other heavy work on the box (test suites of other engineers): recorded, and optionally waited out. */
function heavyProcesses() {
  const out = spawnSync('pgrep', ['-fa', 'vitest'], { encoding: 'utf8' }).stdout ?? '';
  return out.split('\n').filter((line) => line && !line.includes('pgrep'));
}
const busySeen = [];
/** Per interval between checkpoints: the share of the machine's cores used by processes that are not the bench's. */
const foreign = [];
let lastCheckpoint = null;
function noteLoad(where) {
  const heavy = heavyProcesses();
  const [one] = loadavg();
  if (heavy.length > 0) busySeen.push({ where, at: new Date().toISOString(), processes: heavy.length, loadavg1: one });
  const now = { at: performance.now(), machine: machineBusyMicros(), own: ownTreeCpuMicros() };
  if (lastCheckpoint && now.at - lastCheckpoint.at > 1000) {
    const capacity = (now.at - lastCheckpoint.at) * 1000 * cpus().length;
    const others = Math.max(0, now.machine - lastCheckpoint.machine - (now.own - lastCheckpoint.own));
    foreign.push({ until: where, seconds: Math.round((now.at - lastCheckpoint.at) / 1000), share: others / capacity });
  }
  lastCheckpoint = now;
}
async function waitForIdle() {
  if (settings.waitIdleMinutes <= 0) return { waitedSec: 0, idle: heavyProcesses().length === 0 };
  const started = Date.now();
  const deadline = started + settings.waitIdleMinutes * 60_000;
  while (heavyProcesses().length > 0 && Date.now() < deadline) {
    say(`bench: ${heavyProcesses().length} vitest processes are running; waiting for the machine to be idle (up to ${settings.waitIdleMinutes} min)…`);
    await sleep(30_000);
  }
  return { waitedSec: Math.round((Date.now() - started) / 1000), idle: heavyProcesses().length === 0 };
}

async function main() {
  stopAllOnExit();
  if (!existsSync('dist/src/cli/index.js') || !existsSync('dist/examples/standin-backend/index.js')) {
    throw new Error('dist/ is missing: run `npm run bench` (it builds first) or `npm run build`');
  }
  const startedAt = new Date();
  const runId = startedAt.toISOString().replace(/[:.]/g, '-');
  const work = resolve('bench/.work', `run-${runId}`);
  mkdirSync(work, { recursive: true });
  profileDir = join(work, 'profiles');
  const idleWait = await waitForIdle();
  noteLoad('start');

  const meta = {
    startedAt: startedAt.toISOString(),
    node: process.version,
    cpu: `${cpus()[0]?.model ?? 'unknown'} × ${cpus().length}`,
    loadavgAtStart: loadavg().map((x) => x.toFixed(2)),
    versions: {
      autocannon: pkgVersion('autocannon'),
      undici: pkgVersion('undici'),
      graphql: pkgVersion('graphql'),
      ioredis: pkgVersion('ioredis'),
    },
    git: gitDescribe(),
    settings: { ...settings, only: settings.only ? [...settings.only] : null },
    idleWait,
    work: relative(ROOT, work),
  };
  say(`bench: run ${runId}; raw results and logs in ${meta.work}`);
  say(`bench: ${settings.rounds} rounds × ${settings.seconds} s per configuration, ${settings.connections} connections${quick ? ' (BENCH_QUICK)' : ''}`);

  const redis = await startRedis(work);
  meta.versions.redis = redis.version;
  const receiver = await forkServer('receiver', 'bench/servers/receiver.mjs', { log: join(work, 'receiver.log') });
  const ctx = { work, redis, receiver, receiverUrl: `http://127.0.0.1:${receiver.port}`, meta };
  const results = { meta };
  const t0 = performance.now();
  try {
    if (wanted('passthrough') || wanted('keys')) Object.assign(results, await passThroughAndKeys(ctx));
    noteLoad('pass-through and keys done');
    if (wanted('webhooks')) results.webhooks = await webhookPipeline(ctx);
    noteLoad('webhooks done');
    if (wanted('graphql')) results.graphql = await graphqlComparison(ctx);
    noteLoad('graphql done');
    if (wanted('subscriptions')) results.subscriptions = subscriptionRuns(ctx);
    noteLoad('subscriptions done');
    if (wanted('cache')) results.cache = await cacheSection({ ...ctx, say, settings });
    noteLoad('cache done');
    if (wanted('idempotency')) results.idempotency = await idempotencySection({ ...ctx, say, settings });
    noteLoad('idempotency done');
    // SPEC §13 (issue 49): its own report, RESULTS-protection.md.
    if (wanted('protection')) results.protection = await protectionSection({ ...ctx, say, reportFile: settings.only || settings.configs || quick ? undefined : 'bench/RESULTS-protection.md' });
    noteLoad('protection done');
  } finally {
    await stopAll();
    await redis.stop().catch(() => {});
  }
  noteLoad('end');
  meta.durationSec = Math.round((performance.now() - t0) / 1000);
  meta.busy = busySeen;
  meta.foreignCpu = foreign;

  const rawFile = join(work, 'results.json');
  writeFileSync(rawFile, JSON.stringify(results, null, 2));
  copyFileSync(rawFile, resolve('bench/.work/latest.json'));
  const { table, markdown } = renderResults(results);
  say(`\n${table}`);
  if (settings.only || settings.configs || quick) {
    const partial = join(work, 'RESULTS.md');
    writeFileSync(partial, markdown);
    say(`\nbench: a partial or quick run; RESULTS.md written to ${relative(ROOT, partial)} (bench/RESULTS.md untouched)`);
  } else {
    writeFileSync('bench/RESULTS.md', markdown);
    say('\nbench: wrote bench/RESULTS.md');
  }
  say(`bench: finished in ${meta.durationSec} s`);
  process.exit(0);
}

// ---------------------------------------------------------------------------------------------
// 1 + 2. Pass-through, then key verification on the API-key proxy
// ---------------------------------------------------------------------------------------------

async function passThroughAndKeys(ctx) {
  const { work, redis, receiverUrl } = ctx;
  const upstream = await forkServer('upstream', 'bench/servers/upstream.mjs', { log: join(work, 'upstream.log') });
  const upstreamUrl = `http://127.0.0.1:${upstream.port}`;
  const targets = [];

  targets.push({ id: 'direct', label: 'direct to the upstream (no proxy)', url: upstreamUrl, proxyPids: [] });

  const nginx = ensureNginx(say);
  ctx.meta.versions.nginx = nginx.version ?? null;
  let nginxProc = null;
  if (nginx.skipped) {
    say(`bench: SKIPPING the nginx baseline: ${nginx.skipped}`);
    ctx.meta.nginxSkipped = nginx.skipped;
  } else {
    nginxProc = await startNginx({ binary: nginx.binary, workDir: work, upstreamPort: upstream.port });
    targets.push({ id: 'nginx', label: 'nginx 1 worker, upstream keep-alive', url: nginxProc.url, proxyPids: nginxProc.pids });
  }

  // The Node proxies run in a new process every round: on these machines one process of a build
  // can cost more per request than another for its whole life (bench/README.md), and a
  // median over rounds only averages that out when the rounds do not share a process.
  targets.push({
    id: 'undici',
    label: 'minimal undici forwarder (Pool.stream)',
    launch: async () => {
      const forwarder = await forkServer('undici-forwarder', 'bench/servers/undici-forwarder.mjs', { env: { UPSTREAM: upstreamUrl }, log: join(work, 'undici-forwarder.log') });
      return { url: `http://127.0.0.1:${forwarder.port}`, proxyPids: [forwarder.pid], stop: forwarder.stop };
    },
  });
  // Peers: the pass-through as a user would otherwise build it in Node (issue 14; docs/decisions.md).
  for (const [id, label, script] of [
    ['httpproxy', 'http-proxy + keep-alive agent (peer)', 'bench/servers/http-proxy-forwarder.mjs'],
    ['fastify', '@fastify/http-proxy (undici) (peer)', 'bench/servers/fastify-proxy.mjs'],
  ]) {
    targets.push({
      id,
      label,
      launch: async () => {
        const peer = await forkServer(id, script, { env: { UPSTREAM: upstreamUrl }, log: join(work, `${id}.log`) });
        return { url: `http://127.0.0.1:${peer.port}`, proxyPids: [peer.pid], stop: peer.stop };
      },
    });
  }
  const scenarios = passThroughScenarios({ receiverUrl, upstreamUrl });
  /** API keys issued on first start, reused by the processes of later rounds (same service id, same Redis). */
  const keyOf = {};
  const serviceIdOf = {};
  const launchOutrigger = async (id) => {
    const scenario = scenarios[id];
    const o = await startOutrigger({ name: id, workDir: work, redisUrl: redis.url, upstreamUrl, ...prof(id), setup: scenario.setup, config: scenario.config });
    serviceIdOf[id] = o.serviceId;
    if (scenario.auth === 'key') keyOf[id] ??= await issueKey(o.url);
    const headers = scenario.auth === 'key' ? { authorization: `Bearer ${keyOf[id]}` } : scenario.auth === 'basic' ? { authorization: basic('alice') } : {};
    return { url: o.url, headers, proxyPids: [o.pid], serviceId: o.serviceId, stop: o.stop, process: o };
  };
  for (const [id, scenario] of Object.entries(scenarios)) targets.push({ id, label: scenario.label, launch: () => launchOutrigger(id), outrigger: true });

  if (settings.configs) {
    const unknown = [...settings.configs].filter((id) => !targets.some((t) => t.id === id));
    if (unknown.length > 0) throw new Error(`BENCH_CONFIGS: unknown ${unknown.join(', ')}; one of ${targets.map((t) => t.id).join(', ')}`);
    targets.splice(0, targets.length, ...targets.filter((t) => settings.configs.has(t.id)));
  }
  const cpuGroups = (live) => ({ proxy: live.proxyPids, upstream: [upstream.pid], redis: [redis.pid] });
  const out = { redisPid: redis.pid };
  /** Every configuration must answer the upstream's 1 KiB body before it is measured. */
  const checkAnswers = async (t, live) => {
    const res = await fetch(`${live.url}${PASS_PATH}`, { headers: live.headers ?? {} });
    const body = await res.arrayBuffer();
    if (res.status !== 200 || body.byteLength !== 1024) throw new Error(`${t.label} answered ${res.status} with ${body.byteLength} bytes; expected 200 with the 1 KiB body`);
  };
  const warmUp = (live) => runLoad({ url: `${live.url}${PASS_PATH}`, headers: live.headers, connections: settings.connections, duration: settings.warmupSeconds });

  if (wanted('passthrough')) {
    say(`\n== 1. pass-through: GET ${PASS_PATH} (1 KiB JSON), ${settings.connections} connections`);
    for (const t of targets) {
      if (t.launch) continue; // warmed up in each round's new process
      await checkAnswers(t, t);
      await warmUp(t);
    }
    const rounds = Object.fromEntries(targets.map((t) => [t.id, []]));
    const fixed = Object.fromEntries(targets.map((t) => [t.id, []]));
    const low = Object.fromEntries(targets.map((t) => [t.id, []]));
    for (let r = 0; r < settings.rounds; r++) {
      noteLoad(`pass-through round ${r + 1}`);
      for (const t of shuffle(targets)) {
        const live = t.launch ? await t.launch() : t;
        try {
          if (t.launch) {
            await checkAnswers(t, live);
            await warmUp(live);
          }
          const result = await withRedisCommands(redis, () =>
            runLoad({ url: `${live.url}${PASS_PATH}`, headers: live.headers, connections: settings.connections, duration: settings.seconds, cpu: cpuGroups(live) }),
          );
          rounds[t.id].push(result);
          let atRate = null;
          if (settings.fixedRate) {
            atRate = await withRedisCommands(redis, () =>
              runPaced({ url: `${live.url}${PASS_PATH}`, headers: live.headers, connections: settings.connections, seconds: settings.fixedSeconds, rate: settings.fixedRate, cpu: cpuGroups(live) }),
            );
            fixed[t.id].push(atRate);
          }
          let atLowRate = null;
          if (settings.lowRate && LOW_RATE_CONFIGS.has(t.id)) {
            atLowRate = await runPaced({
              url: `${live.url}${PASS_PATH}`,
              headers: live.headers,
              connections: settings.connections,
              seconds: settings.lowSeconds,
              rate: settings.lowRate,
              cpu: cpuGroups(live),
            });
            low[t.id].push(atLowRate);
          }
          say(
            `  round ${r + 1} ${t.id.padEnd(7)} ${fmt(result.reqPerSec, 0).padStart(7)} req/s  p50 ${fmt(result.p50, 2)} ms  p99 ${fmt(result.p99, 2)} ms  proxy ${live.proxyPids.length ? `${fmt(result.cpuMicrosPerRequest.proxy, 1)} µs/req${atRate ? ` (${fmt(atRate.cpuMicrosPerRequest.proxy, 1)} at ${settings.fixedRate}/s)` : ''}${atLowRate ? ` (${fmt(atLowRate.cpuMicrosPerRequest.proxy, 1)} µs/req, p99 ${fmt(atLowRate.p99, 2)} ms at ${settings.lowRate}/s)` : ''}` : '–'}${result.non2xx || result.errors ? `  non-2xx ${result.non2xx} errors ${result.errors}` : ''}`,
          );
        } finally {
          if (t.launch) await live.stop();
        }
      }
    }
    const { redisKeys } = await import('../dist/src/store/keys.js');
    const eKey = serviceIdOf.e ? redisKeys('outrigger', serviceIdOf.e).events : null;
    const xlen = eKey ? await redis.client.xlen(eKey).catch(() => null) : null;
    const eventsAfterE = eKey ? await streamEvents(redis.client, eKey).catch(() => null) : null;
    out.passThrough = {
      path: PASS_PATH,
      fixedRate: settings.fixedRate,
      lowRate: settings.lowRate,
      rows: targets.map((t) => ({ id: t.id, label: t.label, rounds: rounds[t.id], fixedRate: fixed[t.id], lowRate: low[t.id] })),
      streamLengthAfterE: xlen,
      streamEventsAfterE: eventsAfterE,
      processPerRound: true,
    };
  }

  if (wanted('keys')) {
    // Only the API-key proxy runs: nothing else talks to Redis while commands are counted.
    await nginxProc?.stop();
    const c = await launchOutrigger('c');
    try {
      await checkAnswers({ label: scenarios.c.label }, c);
      out.keys = await keyVerification(ctx, c.process, keyOf.c, upstream);
    } finally {
      await c.stop();
    }
  }
  await upstream.stop();
  return out;
}

/** Runs a load and adds the Redis commands it caused per 2xx response (every Outrigger's pollers included: a few per second). */
async function withRedisCommands(redis, run) {
  const before = await commandCounters(redis.client);
  const result = await run();
  const delta = commandDelta(before, await commandCounters(redis.client));
  result.redisCommandsPerRequest = delta.total / Math.max(1, result.ok);
  return result;
}

async function keyVerification(ctx, proxy, cachedKey, upstream) {
  const { redis } = ctx;
  const perRound = settings.coldKeys;
  const warmupKeys = Math.ceil(perRound / 5);
  const needed = settings.rounds * (perRound + 2 * settings.connections + 50) + warmupKeys + 2 * settings.connections;
  say(`\n== 2. key verification: cached vs cold (${perRound} requests per run; issuing ${needed} keys for the cold runs)`);
  const keys = await writeKeys(redis.url, proxy.serviceId, needed);
  // A sample cold key must authenticate, or the cold runs would measure 401s.
  const probe = await fetch(`${proxy.url}${PASS_PATH}`, { headers: { authorization: `Bearer ${keys.pop()}` } });
  await probe.arrayBuffer();
  if (probe.status !== 200) throw new Error(`a key written for the cold runs was refused (${probe.status}); the key record format may have changed`);

  // The background rate (feature/permission pollers) is subtracted from the counts.
  const idleBefore = await commandCounters(redis.client);
  await sleep(3000);
  const idle = commandDelta(idleBefore, await commandCounters(redis.client));
  const idlePerSec = idle.total / 3;

  let next = 0;
  const coldRequests = [{ method: 'GET', path: PASS_PATH, setupRequest: (req) => ({ ...req, headers: { ...req.headers, authorization: `Bearer ${keys[next++ % keys.length]}` } }) }];
  const runs = { cached: [], cold: [] };
  await runLoad({ url: `${proxy.url}${PASS_PATH}`, headers: { authorization: `Bearer ${cachedKey}` }, connections: settings.connections, duration: settings.warmupSeconds });
  await runLoad({ url: `${proxy.url}${PASS_PATH}`, connections: settings.connections, amount: warmupKeys, requests: coldRequests });
  for (let r = 0; r < settings.rounds; r++) {
    noteLoad(`keys round ${r + 1}`);
    for (const kind of r % 2 ? ['cold', 'cached'] : ['cached', 'cold']) {
      const before = await commandCounters(redis.client);
      const result = await runLoad({
        url: `${proxy.url}${PASS_PATH}`,
        connections: settings.connections,
        amount: perRound,
        ...(kind === 'cached' ? { headers: { authorization: `Bearer ${cachedKey}` } } : { requests: coldRequests }),
        cpu: { proxy: [proxy.pid], redis: [redis.pid], upstream: [upstream.pid] },
      });
      const delta = commandDelta(before, await commandCounters(redis.client));
      const background = idlePerSec * result.elapsedSec;
      result.redisCommands = { total: delta.total, perCommand: delta.perCommand, background, perRequest: Math.max(0, delta.total - background) / Math.max(1, result.ok) };
      runs[kind].push(result);
      say(
        `  round ${r + 1} ${kind.padEnd(6)} ${fmt(result.reqPerSec, 0).padStart(7)} req/s  p50 ${fmt(result.p50, 2)} ms  p99 ${fmt(result.p99, 2)} ms  proxy ${fmt(result.cpuMicrosPerRequest.proxy, 1)} µs/req  Redis ${fmt(result.redisCommands.perRequest, 2)} commands/req${result.non2xx ? `  non-2xx ${result.non2xx}` : ''}`,
      );
    }
  }
  if (next > keys.length) say(`  note: the cold runs used ${next} requests for ${keys.length} keys; some keys were reused`);
  return { requestsPerRun: perRound, keysIssued: keys.length, coldRequestsSent: next, idleCommandsPerSec: idlePerSec, runs };
}

// ---------------------------------------------------------------------------------------------
// 3. Webhook pipeline: one worker process draining the stream into a local receiver
// ---------------------------------------------------------------------------------------------

async function webhookPipeline(ctx) {
  const { work, redis, receiver, receiverUrl } = ctx;
  const n = settings.pipelineEvents;
  say(`\n== 3. webhook pipeline: ${n} events per round through one worker process to a local receiver`);
  const upstream = await forkServer('upstream-pipeline', 'bench/servers/upstream.mjs', { log: join(work, 'upstream-pipeline.log') });
  const upstreamUrl = `http://127.0.0.1:${upstream.port}`;
  const common = {
    workDir: work,
    redisUrl: redis.url,
    upstreamUrl,
    serviceId: 'bench-pipeline',
    setup: { permissions: [KEYS_PERMISSION], webhooks: [matchingWebhook(receiverUrl)] },
    config: { webhooks: { allowPrivateTargets: ['127.0.0.0/8'], streamMaxLength: Math.max(100_000, 4 * n) } },
  };
  const proxy = await startOutrigger({ name: 'pipeline', ...common, ...prof('pipeline') });
  const key = await issueKey(proxy.url);
  const headers = { authorization: `Bearer ${key}` };
  const streamKey = `outrigger:{bench-pipeline}:events`;
  const startWorker = () => startOutrigger({ name: 'pipeline-worker', mode: 'worker', ...common, setup: undefined, ...prof('pipeline-worker') });

  // The baseline: the least work per event any worker must do (bench/servers/minimal-worker.mjs).
  const startMinimal = () => startMinimalWorker({ redisUrl: redis.url, streamKey, targetUrl: `${receiverUrl}/hook`, log: join(work, 'minimal-worker.log') });

  // Fill the stream with the worker off, then let one worker drain it.
  const drainRound = (startWorker) =>
    measureDrain({
      receiver,
      redis,
      streamKey,
      url: `${proxy.url}${PASS_PATH}`,
      headers,
      connections: settings.connections,
      amount: n,
      warmupEvents: settings.pipelineWarmupEvents,
      startWorker,
      deadlineMs: 120_000,
    });

  const drains = [];
  const minimalDrains = [];
  for (let r = 0; r < settings.pipelineRounds; r++) {
    noteLoad(`pipeline round ${r + 1}`);
    // Both workers each round, in a new order each round: a ratio is per round, as in the pass-through phase.
    for (const which of shuffle(['outrigger', 'minimal'])) {
      const result = await drainRound(which === 'outrigger' ? startWorker : startMinimal);
      (which === 'outrigger' ? drains : minimalDrains).push(result);
      say(
        `  round ${r + 1} drain (${which === 'outrigger' ? 'Outrigger' : 'minimal worker'}): ${fmt(result.eventsPerSec, 0)} events/s, worker ${fmt(result.workerCpuMicrosPerEvent, 0)} µs/event, Redis ${fmt(result.redisCommandsPerEvent, 1)} commands/event`,
      );
    }
  }

  // Delivery latency at fixed offered rates, below the drain capacity, worker running.
  const capacity = median(drains.map((d) => d.eventsPerSec));
  // 1,000/s is issue 14's latency target (p99 ≤ 50 ms), measured whatever the drain rate.
  const rates = [...new Set([100, 1000, Math.max(100, Math.min(2000, Math.round((capacity * 0.5) / 50) * 50))])].sort((a, b) => a - b);
  const worker = await startWorker();
  // The worker is ready once a probe event has gone through.
  await receiver.ask('reset');
  const probe = await fetch(`${proxy.url}${PASS_PATH}`, { headers });
  await probe.arrayBuffer();
  await until(async () => (await receiver.ask('stats')).count >= 1, 30_000, 'the worker to deliver a first event');
  const latency = [];
  for (const rate of rates) {
    const result = await measureDeliveryLatency({ receiver, url: `${proxy.url}${PASS_PATH}`, headers, rate, seconds: quick ? 2 : 5 });
    latency.push(result);
    say(`  ${rate} req/s offered: delivery latency p50 ${result.p50} ms, p99 ${result.p99} ms, max ${result.max} ms (${result.delivered} deliveries)`);
  }
  await worker.stop();
  await proxy.stop();
  await upstream.stop();
  return { eventsPerRound: n, warmupEvents: settings.pipelineWarmupEvents, drains, minimalDrains, latency, workerMode: 'separate process: outrigger worker -c (proxy started with --no-worker)' };
}

// ---------------------------------------------------------------------------------------------
// 4. GraphQL: Outrigger vs a hand-written graphql-js server over the same stand-in backend
// ---------------------------------------------------------------------------------------------

async function graphqlComparison(ctx) {
  const { work, redis } = ctx;
  say(`\n== 4. GraphQL: ${GRAPHQL_SHAPES.map((s) => s.id).join(' and ')} shapes, ${settings.graphqlConnections} connections`);
  const standin = await forkServer('standin', 'bench/servers/standin.mjs', { log: join(work, 'standin.log') });
  // The production path (issue 39): an API key, and every backend read decided by the ACL as the
  // same REST GET from the same caller (graphql.backend.auth: caller, acl.mode: enforce).
  const outrigger = await startOutrigger({
    name: 'graphql',
    workDir: work,
    redisUrl: redis.url,
    upstreamUrl: standin.url,
    // No drain on stop: the process exits within the bench's grace, so --cpu-prof writes its profile.
    config: { graphql: { backend: { auth: 'caller' } }, acl: { mode: 'enforce' }, shutdown: { drainSeconds: 0 } },
    setup: { permissions: GRAPHQL_PERMISSIONS, apps: [GRAPHQL_APP] },
    ...prof('graphql'),
  });
  const [key] = await writeKeys(redis.url, outrigger.serviceId, 1);
  const baseline = await forkServer('graphql-baseline', 'bench/servers/graphql-baseline.mjs', {
    env: { BACKEND: standin.url },
    log: join(work, 'graphql-baseline.log'),
    execArgv: profArgs('graphql-baseline'),
  });
  // The floor (issue 39): the same reads and answer built by hand, no GraphQL; what both servers pay.
  const floor = settings.graphqlFloor
    ? await forkServer('graphql-floor', 'bench/servers/graphql-floor.mjs', { env: { BACKEND: standin.url }, log: join(work, 'graphql-floor.log'), execArgv: profArgs('graphql-floor') })
    : undefined;
  const servers = [
    { id: 'outrigger', label: 'Outrigger /graphql/bench (API key, ACL on every read)', url: `${outrigger.url}/graphql/bench`, pid: outrigger.pid, auth: { authorization: `Bearer ${key}` } },
    { id: 'baseline', label: 'hand-written graphql-js + batching loader', url: `http://127.0.0.1:${baseline.port}/graphql`, pid: baseline.pid, auth: {} },
    ...(floor
      ? [{ id: 'floor', label: 'floor: the same reads and answer by hand, no GraphQL (bench/servers/graphql-floor.mjs)', url: `http://127.0.0.1:${floor.port}/graphql`, pid: floor.pid, auth: {} }]
      : []),
  ];
  const shapes = [];
  for (const shape of GRAPHQL_SHAPES.filter((x) => !settings.graphqlShapes || settings.graphqlShapes.has(x.id))) {
    say(`  shape ${shape.id}: ${shape.query}`);
    const body = JSON.stringify({ query: shape.query });
    const headersOf = (s) => ({ 'content-type': 'application/json', accept: 'application/json', ...s.auth });

    // Both must give the same data, with the same number of backend reads.
    const answers = {};
    const probes = {};
    for (const s of servers) {
      // Reads of queries cut off at the end of the previous shape's last run land first.
      let before = (await standin.ask('stats')).count;
      for (let settled = -1; settled !== before;) {
        settled = before;
        await sleep(200);
        before = (await standin.ask('stats')).count;
      }
      const res = await fetch(s.url, { method: 'POST', headers: headersOf(s), body });
      const json = await res.json();
      if (res.status !== 200 || json.errors) throw new Error(`${s.label} answered ${res.status}: ${JSON.stringify(json).slice(0, 500)}`);
      if (json.data.orders.length !== 100) throw new Error(`${s.label} returned ${json.data.orders.length} orders, not 100`);
      answers[s.id] = JSON.stringify(json.data);
      const stats = await standin.ask('stats');
      probes[s.id] = stats.count - before;
      say(`    ${s.id} reads: ${stats.last.slice(-probes[s.id]).join('  ')}`);
    }
    for (const s of servers) if (answers[s.id] !== answers.baseline) throw new Error(`${s.id} and the hand-written server returned different data for the ${shape.id} query`);

    for (const s of servers) await runLoad({ url: s.url, method: 'POST', headers: headersOf(s), body, connections: settings.graphqlConnections, duration: settings.graphqlWarmupSeconds });
    const rounds = Object.fromEntries(servers.map((s) => [s.id, []]));
    for (let r = 0; r < settings.rounds; r++) {
      noteLoad(`graphql ${shape.id} round ${r + 1}`);
      for (const s of shuffle(servers)) {
        const before = (await standin.ask('stats')).count;
        const result = await runLoad({
          url: s.url,
          method: 'POST',
          headers: headersOf(s),
          body,
          connections: settings.graphqlConnections,
          duration: settings.seconds,
          cpu: { server: [s.pid], backend: [standin.pid] },
        });
        result.backendReadsPerQuery = ((await standin.ask('stats')).count - before) / Math.max(1, result.ok + result.non2xx);
        rounds[s.id].push(result);
        say(
          `  ${shape.id} round ${r + 1} ${s.id.padEnd(9)} ${fmt(result.reqPerSec, 0).padStart(6)} queries/s  p50 ${fmt(result.p50, 2)} ms  p99 ${fmt(result.p99, 2)} ms  server ${fmt(result.cpuMicrosPerRequest.server, 0)} µs/query  backend reads/query ${fmt(result.backendReadsPerQuery, 2)}`,
        );
      }
    }
    shapes.push({ id: shape.id, query: shape.query, what: shape.what, rows: servers.map((s) => ({ id: s.id, label: s.label, readsPerQueryProbe: probes[s.id], rounds: rounds[s.id] })) });
  }
  await outrigger.stop();
  await baseline.stop();
  await floor?.stop();
  await standin.stop();
  return { shapes };
}

// ---------------------------------------------------------------------------------------------

function fmt(value, digits) {
  return value === null || value === undefined || Number.isNaN(value) ? '–' : value.toFixed(digits);
}

function pkgVersion(name) {
  try {
    return JSON.parse(readFileSync(`node_modules/${name}/package.json`, 'utf8')).version;
  } catch {
    return null;
  }
}

main().catch(async (error) => {
  process.stderr.write(`bench: ${error?.stack ?? error}\n`);
  await stopAll();
  process.exit(1);
});

// ---------------------------------------------------------------------------------------------
// 5. GraphQL subscriptions (issue 38): bench/subscriptions.mjs in a process of its own per shape
// ---------------------------------------------------------------------------------------------

/**
 * SPEC §6.5's latency bound (1,000 subscribers over two replicas, 500 writes/s, p99 ≤ 100 ms) in
 * two shapes: anonymous subscribers (one identity per replica, the shape tracked since the first
 * run) and 100 signed-in users under `readFilter: {owner: "@user.id"}` (BENCH_SUB_USERS). Each run
 * starts its own Redis, stand-in and replicas (bench/subscriptions.mjs); BENCH_SUB_SECONDS (10)
 * and BENCH_SUB_RATE (500) apply to both.
 */
function subscriptionRuns(ctx) {
  const shapes = [
    { id: 'anonymous', what: 'anonymous subscribers (one identity per replica)', env: {} },
    { id: 'users', what: '100 users, readFilter owner = @user.id (50 identities per replica)', env: { BENCH_SUB_USERS: '100' } },
  ];
  const rows = [];
  for (const shape of shapes) {
    say(`subscriptions: ${shape.what}`);
    const run = spawnSync(process.execPath, ['bench/subscriptions.mjs'], {
      env: { ...process.env, BENCH_SUB_SECONDS: process.env.BENCH_SUB_SECONDS ?? '10', ...shape.env },
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
      timeout: 600_000,
    });
    writeFileSync(join(ctx.work, `subscriptions-${shape.id}.json`), run.stdout ?? '');
    let result = null;
    try {
      result = JSON.parse(run.stdout.slice(run.stdout.indexOf('{')));
    } catch {
      say(`subscriptions: the ${shape.id} run gave no result (exit ${run.status})`);
    }
    rows.push({ id: shape.id, what: shape.what, result });
  }
  return { rows };
}
