#!/usr/bin/env node
/* global fetch */
/**
 * The soak: a steady, mixed, unsaturated load on one Outrigger (proxy) and one webhook worker,
 * each in its own process as users run them, for a fixed time. Every 10 s it reports the proxy's
 * and the worker's resident memory, the proxy's V8 heap and event-loop delay p99 (from its own
 * /_metrics), the latency p50 / p99 of the window, and events teed against events delivered.
 *
 *   npm run soak                                  # 10 minutes at 400 requests/s
 *   node bench/soak.mjs --seconds 60 --rate 300   # what CI runs
 *
 * The mix, in turn: GET with an API key, GET with Basic (verified by the upstream, cached),
 * a GraphQL query (100 orders with their users, over the stand-in backend), and a POST that a
 * webhook tees to a local receiver. It fails (exit 1) on any error or non-2xx answer, on a teed
 * event not delivered within 60 s of the end, or on memory growth after the warm-up (the first
 * third, at least 20 s) of more than 10 %: the mean of the samples in the second half of the
 * measured time against the first sample after the warm-up, for the resident memory and the V8
 * heap each process keeps after a full GC (bench/lib/heap-probe.mjs, asked at every sample).
 * Resident memory sampled at a random moment is printed beside it but not judged: it includes
 * garbage V8 has not collected yet.
 * Traffic stays on loopback; the run is bounded by --seconds and stops by itself.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { Agent, request } from 'undici';
import { until } from './lib/drain.mjs';
import { basic, issueKey, startOutrigger } from './lib/outrigger.mjs';
import { forkServer, sleep, stopAll, stopAllOnExit } from './lib/processes.mjs';
import { startRedis } from './lib/redis.mjs';
import { GRAPHQL_APP, GRAPHQL_QUERY, KEYS_PERMISSION, PASS_PATH } from './lib/scenarios.mjs';

const { values: opts } = parseArgs({
  options: {
    seconds: { type: 'string', default: process.env.SOAK_SECONDS ?? '600' },
    rate: { type: 'string', default: process.env.SOAK_RATE ?? '400' },
    connections: { type: 'string', default: '16' },
    'sample-seconds': { type: 'string', default: '10' },
  },
});
const seconds = Number(opts.seconds);
const rate = Number(opts.rate);
const sampleMs = Number(opts['sample-seconds']) * 1000;
const warmupMs = Math.max(20_000, (seconds * 1000) / 3);
const work = resolve('bench/.work', `soak-${new Date().toISOString().replace(/[:.]/g, '-')}`);
const say = (text) => process.stdout.write(`${text}\n`);

const TEED_PATH = '/data/orders';
const GRAPHQL_PERMISSION = { _id: 'soak-graphql', roles: ['user'], predicate: 'path-prefix(/graphql/bench)', priority: 10 };

function rssOf(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)[1]) * 1024;
}

/**
 * Each Outrigger process preloads bench/lib/heap-probe.mjs: SIGUSR2 makes it run a full GC and
 * append what is left (heap used, resident memory) to its own file; this waits for that line.
 */
const probeArgs = ['--expose-gc', `--import=${pathToFileURL(resolve('bench/lib/heap-probe.mjs')).href}`];
const probeEnv = (name) => ({ OUTRIGGER_HEAP_PROBE_FILE: join(work, `${name}.heap.jsonl`) });
async function afterFullGc(proc, name) {
  const file = probeEnv(name).OUTRIGGER_HEAP_PROBE_FILE;
  const linesBefore = existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean).length : 0;
  process.kill(proc.pid, 'SIGUSR2');
  for (const deadline = Date.now() + 10_000; Date.now() < deadline; await sleep(20)) {
    const lines = existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : [];
    if (lines.length > linesBefore) return JSON.parse(lines.at(-1));
  }
  throw new Error(`${name} did not report its memory after a full GC within 10 s`);
}

function metricValue(text, line) {
  const found = text.split('\n').find((l) => l.startsWith(`${line} `));
  return found ? Number(found.slice(line.length + 1)) : NaN;
}

function pick(sorted, p) {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] : NaN;
}

async function main() {
  stopAllOnExit();
  mkdirSync(work, { recursive: true });
  say(`soak: ${seconds} s at ${rate} requests/s (warm-up ${Math.round(warmupMs / 1000)} s); logs in ${work}`);
  const redis = await startRedis(work);
  const upstream = await forkServer('upstream', 'bench/servers/upstream.mjs', { log: join(work, 'upstream.log') });
  const standin = await forkServer('standin', 'bench/servers/standin.mjs', { log: join(work, 'standin.log') });
  const receiver = await forkServer('receiver', 'bench/servers/receiver.mjs', { log: join(work, 'receiver.log') });
  const receiverUrl = `http://127.0.0.1:${receiver.port}`;
  const common = {
    workDir: work,
    redisUrl: redis.url,
    upstreamUrl: `http://127.0.0.1:${upstream.port}`,
    serviceId: 'soak',
    config: {
      graphql: { backend: { url: standin.url, auth: 'service' } },
      webhooks: { allowPrivateTargets: ['127.0.0.0/8'] },
    },
  };
  const proxy = await startOutrigger({
    name: 'soak-proxy',
    ...common,
    nodeArgs: probeArgs,
    env: probeEnv('soak-proxy'),
    setup: {
      permissions: [KEYS_PERMISSION, GRAPHQL_PERMISSION],
      apps: [GRAPHQL_APP],
      webhooks: [{ _id: 'soak-tee', name: 'every POST of /data/orders', type: 'http', url: `${receiverUrl}/hook`, condition: `method(POST) and path-prefix(${TEED_PATH})` }],
    },
  });
  const worker = await startOutrigger({ name: 'soak-worker', mode: 'worker', ...common, nodeArgs: probeArgs, env: probeEnv('soak-worker') });
  const key = await issueKey(proxy.url);

  const kinds = [
    { name: 'key', method: 'GET', path: PASS_PATH, headers: { authorization: `Bearer ${key}` } },
    { name: 'basic', method: 'GET', path: PASS_PATH, headers: { authorization: basic('alice') } },
    { name: 'graphql', method: 'POST', path: '/graphql/bench', headers: { authorization: basic('alice'), 'content-type': 'application/json' }, body: JSON.stringify({ query: GRAPHQL_QUERY }) },
    { name: 'teed', method: 'POST', path: TEED_PATH, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ item: 'soak', qty: 1 }) },
  ];
  const agent = new Agent({ connections: Number(opts.connections), keepAliveTimeout: 30_000 });
  const counts = { sent: 0, ok: 0, teed: 0, errors: 0 };
  const firstErrors = [];
  let window = [];

  // Requests start on a fixed schedule (an open model: a slow answer does not slow the offered rate).
  const started = Date.now();
  const end = started + seconds * 1000;
  const inflight = new Set();
  const fire = (kind) => {
    const t0 = performance.now();
    counts.sent++;
    const p = request(`${proxy.url}${kind.path}`, { method: kind.method, headers: kind.headers, body: kind.body, dispatcher: agent })
      .then(async (res) => {
        await res.body.arrayBuffer();
        const ms = performance.now() - t0;
        window.push(ms);
        if (res.statusCode >= 200 && res.statusCode < 300) {
          counts.ok++;
          if (kind.name === 'teed') counts.teed++;
        } else {
          counts.errors++;
          if (firstErrors.length < 5) firstErrors.push(`${kind.name}: ${res.statusCode}`);
        }
      })
      .catch((error) => {
        counts.errors++;
        if (firstErrors.length < 5) firstErrors.push(`${kind.name}: ${error.code ?? error.message}`);
      })
      .finally(() => inflight.delete(p));
    inflight.add(p);
  };

  const samples = [];
  const sampler = async () => {
    const metrics = await (await fetch(`${proxy.url}/_metrics`)).text();
    const delivered = (await receiver.ask('stats')).count;
    window.sort((a, b) => a - b);
    const at = Math.round((Date.now() - started) / 1000);
    const proxyRss = rssOf(proxy.pid);
    const workerRss = rssOf(worker.pid);
    const [proxyKept, workerKept] = await Promise.all([afterFullGc(proxy, 'soak-proxy'), afterFullGc(worker, 'soak-worker')]);
    const s = {
      at,
      proxyRss,
      workerRss,
      proxyHeapKept: proxyKept.heapUsed,
      workerHeapKept: workerKept.heapUsed,
      proxyRssKept: proxyKept.rss,
      workerRssKept: workerKept.rss,
      proxyHeap: metricValue(metrics, 'nodejs_heap_size_used_bytes'),
      loopDelayP99Ms: metricValue(metrics, 'nodejs_eventloop_lag_p99_seconds') * 1000,
      requests: window.length,
      p50: pick(window, 50),
      p99: pick(window, 99),
      teed: counts.teed,
      delivered,
      errors: counts.errors,
    };
    window = [];
    samples.push(s);
    const mb = (b) => (b / 1024 / 1024).toFixed(1);
    say(
      `  ${String(s.at).padStart(4)} s  proxy RSS ${mb(s.proxyRss)} MB heap ${mb(s.proxyHeap)} MB, after full GC ${mb(s.proxyRssKept)} / ${mb(s.proxyHeapKept)} MB  ` +
        `worker RSS ${mb(s.workerRss)} MB, after full GC ${mb(s.workerRssKept)} / ${mb(s.workerHeapKept)} MB  ` +
        `loop delay p99 ${s.loopDelayP99Ms.toFixed(1)} ms  latency p50 ${s.p50.toFixed(1)} / p99 ${s.p99.toFixed(1)} ms (${s.requests} answers)  ` +
        `teed ${s.teed} delivered ${s.delivered}  errors ${s.errors}`,
    );
  };

  await fetch(`${proxy.url}/_metrics`).then((r) => r.text()); // starts the delay window
  let nextSample = started + sampleMs;
  let i = 0;
  const intervalMs = 1000 / rate;
  for (let due = started; due < end; due += intervalMs) {
    const wait = due - Date.now();
    if (wait > 1) await sleep(wait);
    fire(kinds[i++ % kinds.length]);
    if (Date.now() >= nextSample) {
      nextSample += sampleMs;
      await sampler();
    }
  }
  await Promise.allSettled([...inflight]);
  if (samples.at(-1)?.at < seconds) await sampler();

  // Every teed event must arrive.
  let delivered = 0;
  await until(async () => (delivered = (await receiver.ask('stats')).count) >= counts.teed, 60_000, `${counts.teed} teed events to be delivered`).catch(() => {});
  await agent.close();
  await worker.stop();
  await proxy.stop();

  const afterWarmup = samples.filter((s) => s.at * 1000 >= warmupMs);
  const secondHalf = afterWarmup.slice(Math.floor(afterWarmup.length / 2));
  const growth = (field) => {
    if (afterWarmup.length < 2) return 0;
    const mean = secondHalf.reduce((sum, s) => sum + s[field], 0) / secondHalf.length;
    return mean / afterWarmup[0][field] - 1;
  };
  const windowP99s = samples.map((s) => s.p99).filter(Number.isFinite);
  const summary = {
    seconds,
    rate,
    requests: counts.sent,
    errors: counts.errors,
    teed: counts.teed,
    delivered,
    proxyRssGrowth: growth('proxyRss'),
    workerRssGrowth: growth('workerRss'),
    proxyHeapGrowth: growth('proxyHeap'),
    proxyKeptRssGrowth: growth('proxyRssKept'),
    workerKeptRssGrowth: growth('workerRssKept'),
    proxyKeptHeapGrowth: growth('proxyHeapKept'),
    workerKeptHeapGrowth: growth('workerHeapKept'),
    maxLoopDelayP99Ms: Math.max(...samples.map((s) => s.loopDelayP99Ms)),
    worstWindowP99Ms: Math.max(...windowP99s),
    samples,
  };
  const pct = (x) => `${(x * 100).toFixed(1)} %`;
  say(
    `\nsoak: ${counts.sent} requests, ${counts.errors} errors; ${counts.teed} events teed, ${delivered} delivered; ` +
      `growth after warm-up: proxy RSS ${pct(summary.proxyRssGrowth)}, heap ${pct(summary.proxyHeapGrowth)}, worker RSS ${pct(summary.workerRssGrowth)}; ` +
      `after a full GC: proxy RSS ${pct(summary.proxyKeptRssGrowth)}, heap ${pct(summary.proxyKeptHeapGrowth)}, worker RSS ${pct(summary.workerKeptRssGrowth)}, heap ${pct(summary.workerKeptHeapGrowth)}; ` +
      `worst 10 s window p99 ${summary.worstWindowP99Ms.toFixed(1)} ms; event-loop delay p99 at most ${summary.maxLoopDelayP99Ms.toFixed(1)} ms`,
  );
  const failures = [];
  if (counts.errors > 0) failures.push(`${counts.errors} requests failed (first: ${firstErrors.join(', ')})`);
  if (delivered < counts.teed) failures.push(`${counts.teed - delivered} teed events were not delivered within 60 s of the end`);
  // Judged on what a full GC leaves: resident memory sampled at a random moment also holds
  // garbage V8 has not collected yet (CI saw the worker's go 131 → 180 → 163 MB in a run
  // that lost nothing, and failed on it).
  for (const [name, value] of [
    ['proxy RSS after a full GC', summary.proxyKeptRssGrowth],
    ['proxy heap after a full GC', summary.proxyKeptHeapGrowth],
    ['worker RSS after a full GC', summary.workerKeptRssGrowth],
    ['worker heap after a full GC', summary.workerKeptHeapGrowth],
  ])
    if (value > 0.1) failures.push(`${name} grew ${pct(value)} after the warm-up (limit 10 %)`);
  writeFileSync(join(work, 'soak.json'), JSON.stringify(summary, null, 2));
  if (failures.length) {
    for (const f of failures) say(`soak: FAILED: ${f}`);
    return 1;
  }
  say('soak: passed');
  return 0;
}

let code = 1;
try {
  code = await main();
} catch (error) {
  say(`soak: FAILED: ${error instanceof Error ? error.message : String(error)}`);
} finally {
  await stopAll();
}
process.exit(code);
