#!/usr/bin/env node
/* global fetch */
/**
 * The sidecar's overhead beside Istio's published figures (issue 30 item 5): the same paced load
 * generator, at the same fixed offered rates, sends requests directly to a backend and through
 * Outrigger, in one run; per row it reports latency p50 / p99 direct and through Outrigger and
 * the difference, Outrigger's CPU per 1,000 requests/s (vCPU; the webhook worker apart) and the
 * RSS of the proxy (and worker) at the end.
 *
 * Rows (each at every rate):
 *   direct    GET /data/item straight to the upstream (bench/servers/upstream.mjs, 1 KiB JSON)
 *   key       the same through Outrigger with an API key (scenario c)
 *   webhook   the same with a key and one matching webhook (scenario e), an `outrigger worker`
 *             process delivering every event to the receiver meanwhile
 *   rest      the GraphQL query's data straight from the stand-in: the two REST reads Outrigger
 *             itself sends for it (100 orders, then their users with one $in filter), in sequence;
 *             the client parses the first answer (it needs the user ids), not the second
 *   graphql   `{ orders(limit: 100) { number total status user { id name city } } }` through
 *             Outrigger (POST /graphql/bench); the answer is not parsed either
 * Added latency: key and webhook against direct, graphql against rest, per round.
 *
 * Every round runs every (row, rate) in a new shuffled order: an unmeasured warm-up at the rate,
 * then the measured run. The Outrigger processes live for the whole run (RSS at the end is after
 * every round). Loopback only; every process is stopped by its PID at the end.
 *
 *   npm run build && node bench/overhead.mjs [--rates 1000,4000] [--seconds 10] [--warmup 2]
 *     [--rounds 3] [--connections 50] [--wait-idle-min 0]
 *
 * BENCH_OUTRIGGER_ROOT runs another build of Outrigger (bench/README.md). Prints a Markdown
 * table and writes it with the raw JSON to bench/.work/overhead-<time>/; RESULTS.md is written
 * by hand from it.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { median, shuffle } from './lib/load.mjs';
import { issueKey, startOutrigger } from './lib/outrigger.mjs';
import { runPaced } from './lib/paced.mjs';
import { forkServer, sleep, stopAll, stopAllOnExit } from './lib/processes.mjs';
import { gitDescribe } from './lib/git.mjs';
import { startRedis } from './lib/redis.mjs';
import { until } from './lib/drain.mjs';
import { GRAPHQL_APP, GRAPHQL_PERMISSION, GRAPHQL_QUERY, PASS_PATH, passThroughScenarios } from './lib/scenarios.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
process.chdir(ROOT);

const { values: opts } = parseArgs({
  options: {
    rates: { type: 'string', default: '1000,4000' },
    seconds: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '2' },
    rounds: { type: 'string', default: '3' },
    connections: { type: 'string', default: '50' },
    'wait-idle-min': { type: 'string', default: '0' },
    /** e.g. `rest,graphql`: only these rows (a row's baseline must be among them for its added latency) */
    rows: { type: 'string', default: 'direct,key,webhook,rest,graphql' },
  },
});
const rates = opts.rates.split(',').map(Number);
const seconds = Number(opts.seconds);
const warmupSeconds = Number(opts.warmup);
const rounds = Number(opts.rounds);
const connections = Number(opts.connections);
/** A run never queues more than this many requests: a row slower than the rate reports its achieved rate instead of growing a queue. */
const maxInflight = 10 * connections;
const say = (text) => process.stdout.write(`${text}\n`);

const ORDERS_PATH = `/restheart/orders?sort=${encodeURIComponent('{"number":1}')}&page=1&pagesize=100`;
const usersPath = (ids) => `/restheart/users?filter=${encodeURIComponent(JSON.stringify({ _id: { $in: ids } }))}&sort=${encodeURIComponent('{"_id":1}')}&page=1&pagesize=1000`;

function statusOf(pid) {
  const text = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (name) => Number(new RegExp(`${name}:\\s+(\\d+)`).exec(text)?.[1] ?? NaN);
  return { rssMb: kb('VmRSS') / 1024, peakRssMb: kb('VmHWM') / 1024 };
}
/** Waiting for test suites (vitest) to end: at most --wait-idle-min minutes over the whole run. */
const idleDeadline = Date.now() + Number(opts['wait-idle-min']) * 60_000;
const idleBudgetLeft = () => Date.now() < idleDeadline;
let waitedSec = 0;
async function waitForIdle() {
  while (vitestRunning() > 0 && idleBudgetLeft()) {
    say(`overhead: a test suite (vitest) is running; waiting (${Math.round((idleDeadline - Date.now()) / 1000)} s of waiting left)…`);
    await sleep(15_000);
    waitedSec += 15;
  }
}
const vitestRunning = () => (spawnSync('pgrep', ['-fa', 'vitest'], { encoding: 'utf8' }).stdout ?? '').split('\n').filter((l) => l && !l.includes('pgrep')).length;

async function main() {
  stopAllOnExit();
  const startedAt = new Date();
  const work = resolve('bench/.work', `overhead-${startedAt.toISOString().replace(/[:.]/g, '-')}`);
  mkdirSync(work, { recursive: true });
  await waitForIdle();
  const meta = {
    startedAt: startedAt.toISOString(),
    node: process.version,
    cpu: `${cpus()[0]?.model ?? 'unknown'} × ${cpus().length}`,
    loadavgAtStart: loadavg().map((x) => x.toFixed(2)),
    git: gitDescribe(),
    outriggerRoot: process.env.BENCH_OUTRIGGER_ROOT ?? '.',
    settings: { rates, seconds, warmupSeconds, rounds, connections, maxInflight },
    work: relative(ROOT, work),
  };
  say(`overhead: logs and raw JSON in ${meta.work}; ${meta.cpu}; Node ${meta.node}; load average ${meta.loadavgAtStart.join(' / ')}`);

  const redis = await startRedis(work);
  const upstream = await forkServer('upstream', 'bench/servers/upstream.mjs', { log: join(work, 'upstream.log') });
  const receiver = await forkServer('receiver', 'bench/servers/receiver.mjs', { log: join(work, 'receiver.log') });
  const standin = await forkServer('standin', 'bench/servers/standin.mjs', { log: join(work, 'standin.log') });
  const upstreamUrl = `http://127.0.0.1:${upstream.port}`;
  const receiverUrl = `http://127.0.0.1:${receiver.port}`;
  const scenarios = passThroughScenarios({ receiverUrl, upstreamUrl });
  const common = { workDir: work, redisUrl: redis.url, upstreamUrl };

  const keyProxy = await startOutrigger({ name: 'ovh-key', ...common, setup: scenarios.c.setup, config: scenarios.c.config });
  const hookConfig = { webhooks: { allowPrivateTargets: ['127.0.0.0/8'], streamMaxLength: 100_000 } };
  const hookProxy = await startOutrigger({ name: 'ovh-webhook', ...common, setup: scenarios.e.setup, config: hookConfig });
  const worker = await startOutrigger({ name: 'ovh-webhook-worker', mode: 'worker', ...common, serviceId: hookProxy.serviceId, config: hookConfig });
  const gqlProxy = await startOutrigger({
    name: 'ovh-graphql',
    ...common,
    upstreamUrl: standin.url,
    config: { graphql: { backend: { auth: 'service' } } },
    setup: { permissions: [GRAPHQL_PERMISSION], apps: [GRAPHQL_APP] },
  });
  const keyHeaders = { authorization: `Bearer ${await issueKey(keyProxy.url)}` };
  const hookHeaders = { authorization: `Bearer ${await issueKey(hookProxy.url)}` };

  const gqlBody = JSON.stringify({ query: GRAPHQL_QUERY });
  const gqlTarget = new URL(`${gqlProxy.url}/graphql/bench`);
  const graphqlExchange = async (pool) => {
    const res = await pool.request({ method: 'POST', path: gqlTarget.pathname, headers: { 'content-type': 'application/json', accept: 'application/json' }, body: gqlBody });
    await res.body.dump();
    return res.statusCode;
  };
  const restExchange = async (pool) => {
    const first = await pool.request({ method: 'GET', path: ORDERS_PATH, headers: { accept: 'application/json' } });
    if (first.statusCode !== 200) {
      await first.body.dump();
      return first.statusCode;
    }
    const orders = await first.body.json();
    const ids = [...new Set(orders.map((o) => o.userId))];
    const second = await pool.request({ method: 'GET', path: usersPath(ids), headers: { accept: 'application/json' } });
    await second.body.dump();
    return second.statusCode;
  };

  const allRows = [
    { id: 'direct', label: 'GET 1 KiB, direct to the upstream', url: `${upstreamUrl}${PASS_PATH}`, pids: { upstream: [upstream.pid] } },
    {
      id: 'key',
      label: 'GET 1 KiB through Outrigger, API key (c)',
      url: `${keyProxy.url}${PASS_PATH}`,
      headers: keyHeaders,
      baseline: 'direct',
      pids: { proxy: [keyProxy.pid] },
      rss: { proxy: keyProxy.pid },
    },
    {
      id: 'webhook',
      label: 'GET 1 KiB through Outrigger, key + 1 matching webhook (e), worker delivering',
      url: `${hookProxy.url}${PASS_PATH}`,
      headers: hookHeaders,
      baseline: 'direct',
      pids: { proxy: [hookProxy.pid], worker: [worker.pid], redis: [redis.pid] },
      rss: { proxy: hookProxy.pid, worker: worker.pid },
    },
    { id: 'rest', label: "the query's data direct from the stand-in: 2 REST reads in sequence", url: standin.url, exchange: restExchange, pids: { backend: [standin.pid] } },
    {
      id: 'graphql',
      label: 'GraphQL query through Outrigger (100 orders + users, 2 backend reads)',
      url: gqlTarget.href,
      exchange: graphqlExchange,
      baseline: 'rest',
      pids: { proxy: [gqlProxy.pid], backend: [standin.pid] },
      rss: { proxy: gqlProxy.pid },
    },
  ];

  const rows = allRows.filter((row) => opts.rows.split(',').includes(row.id));
  await checkAnswers({ upstreamUrl, keyProxy, keyHeaders, hookProxy, hookHeaders, receiver, standin, gqlTarget, gqlBody });

  // One warm-up of every row before round 1 (JIT of the long-lived processes), at the lowest rate.
  for (const row of rows) await runPaced({ url: row.url, headers: row.headers, exchange: row.exchange, rate: rates[0], seconds: 3, connections, maxInflight });

  const runs = [];
  const t0 = performance.now();
  for (let r = 0; r < rounds; r++) {
    const order = shuffle(rows.flatMap((row) => rates.map((rate) => ({ row, rate }))));
    for (const { row, rate } of order) {
      const base = { url: row.url, headers: row.headers, exchange: row.exchange, rate, connections, maxInflight };
      let result;
      let load1;
      let vitest;
      let repeated = 0;
      // A run during which a test suite was seen (at its start or end) is measured again, once
      // the suite is over, while the waiting budget lasts; otherwise it is kept and marked.
      for (;;) {
        await waitForIdle();
        await runPaced({ ...base, seconds: warmupSeconds });
        load1 = loadavg()[0];
        vitest = vitestRunning();
        result = await runPaced({ ...base, seconds, cpu: row.pids });
        vitest = Math.max(vitest, vitestRunning());
        if (vitest === 0 || !idleBudgetLeft() || repeated >= 3) break;
        repeated++;
        say(`  round ${r + 1} ${row.id} @${rate}/s: a test suite ran during the run; measuring it again`);
      }
      const run = {
        round: r + 1,
        row: row.id,
        rate,
        ok: result.ok,
        failed: result.non2xx,
        skipped: result.skipped,
        achieved: result.reqPerSec,
        elapsedSec: result.elapsedSec,
        p50: result.p50,
        p99: result.p99,
        cpuMicrosPerRequest: result.cpuMicrosPerRequest,
        loadavg1: load1,
        vitest,
        repeated,
      };
      runs.push(run);
      const cpu = Object.entries(run.cpuMicrosPerRequest)
        .map(([k, v]) => `${k} ${(v / 1000).toFixed(3)} vCPU/1k`)
        .join('  ');
      say(
        `  round ${r + 1} ${row.id.padEnd(7)} @${String(rate).padStart(5)}/s: achieved ${result.reqPerSec.toFixed(0).padStart(5)}/s  p50 ${fmt(result.p50)} ms  p99 ${fmt(result.p99)} ms  ${cpu}${result.non2xx ? `  non-2xx ${result.non2xx}` : ''}${result.skipped ? `  skipped ${result.skipped}` : ''}  (load ${load1.toFixed(2)}${vitest ? `, vitest running` : ''})`,
      );
    }
  }
  const measuredSec = Math.round((performance.now() - t0) / 1000);
  const rss = {};
  for (const row of rows) if (row.rss) rss[row.id] = Object.fromEntries(Object.entries(row.rss).map(([k, pid]) => [k, statusOf(pid)]));
  const delivered = (await receiver.ask('stats')).count;
  meta.loadavgAtEnd = loadavg().map((x) => x.toFixed(2));
  meta.measuredSec = measuredSec;
  meta.waitedForTestsSec = waitedSec;
  meta.runsWithTestsRunning = runs.filter((x) => x.vitest > 0).length;
  meta.runsRepeated = runs.reduce((a, x) => a + x.repeated, 0);
  meta.keptRuns = runs.length;
  await stopAll();
  await redis.stop().catch(() => {});

  const summary = summarise(rows, runs, rss);
  const markdown = render(summary, meta, delivered);
  writeFileSync(join(work, 'results.json'), JSON.stringify({ meta, runs, rss, summary, webhookDeliveries: delivered }, null, 2));
  writeFileSync(join(work, 'overhead.md'), markdown);
  say(`\n${markdown}`);
  say(`overhead: ${measuredSec} s of rounds; raw JSON and overhead.md in ${meta.work}`);
  process.exit(0);
}

/** Before measuring: every row answers 200, a webhook event reaches the receiver, and the two GraphQL-side rows carry the same data. */
async function checkAnswers({ upstreamUrl, keyProxy, keyHeaders, hookProxy, hookHeaders, receiver, standin, gqlTarget, gqlBody }) {
  for (const [url, headers] of [
    [upstreamUrl, {}],
    [keyProxy.url, keyHeaders],
    [hookProxy.url, hookHeaders],
  ]) {
    const res = await fetch(`${url}${PASS_PATH}`, { headers });
    const body = await res.arrayBuffer();
    if (res.status !== 200 || body.byteLength !== 1024) throw new Error(`${url}${PASS_PATH} answered ${res.status} with ${body.byteLength} bytes`);
  }
  await until(async () => (await receiver.ask('stats')).count >= 1, 30_000, 'the worker to deliver the first webhook event');
  const gql = await fetch(gqlTarget, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json' }, body: gqlBody });
  const json = await gql.json();
  if (gql.status !== 200 || json.errors) throw new Error(`GraphQL answered ${gql.status}: ${JSON.stringify(json).slice(0, 300)}`);
  const orders = await (await fetch(`${standin.url}${ORDERS_PATH}`)).json();
  const users = await (await fetch(`${standin.url}${usersPath([...new Set(orders.map((o) => o.userId))])}`)).json();
  const byId = new Map(users.map((u) => [u._id, u]));
  const joined = orders.map((o) => ({ number: o.number, total: o.total, status: o.status, user: { id: o.userId, name: byId.get(o.userId)?.name, city: byId.get(o.userId)?.city } }));
  if (JSON.stringify(joined) !== JSON.stringify(json.data.orders)) throw new Error('the two REST reads and the GraphQL query do not carry the same data');
}

function summarise(rows, runs, rss) {
  const out = [];
  for (const row of rows) {
    for (const rate of [...new Set(runs.map((x) => x.rate))]) {
      const mine = runs.filter((x) => x.row === row.id && x.rate === rate);
      const pick = (f) => mine.map(f);
      const entry = {
        row: row.id,
        label: row.label,
        rate,
        baseline: row.baseline ?? null,
        n: mine.length,
        achieved: median(pick((x) => x.achieved)),
        achievedMin: Math.min(...pick((x) => x.achieved)),
        p50: median(pick((x) => x.p50)),
        p99: median(pick((x) => x.p99)),
        failed: pick((x) => x.failed).reduce((a, b) => a + b, 0),
        skipped: pick((x) => x.skipped).reduce((a, b) => a + b, 0),
        vcpuPer1k: {},
        rss: rss[row.id] ?? null,
      };
      for (const group of Object.keys(row.pids)) {
        const values = pick((x) => x.cpuMicrosPerRequest[group] / 1000);
        entry.vcpuPer1k[group] = { median: median(values), min: Math.min(...values), max: Math.max(...values) };
      }
      if (row.baseline) {
        const base = runs.filter((x) => x.row === row.baseline && x.rate === rate);
        const added = (q) => mine.map((x) => x[q] - runs.find((b) => b.row === row.baseline && b.rate === rate && b.round === x.round)[q]);
        if (base.length === 0) {
          out.push(entry);
          continue;
        }
        const a50 = added('p50');
        const a99 = added('p99');
        entry.direct = { p50: median(base.map((x) => x.p50)), p99: median(base.map((x) => x.p99)), achieved: median(base.map((x) => x.achieved)) };
        entry.added = { p50: median(a50), p50Min: Math.min(...a50), p50Max: Math.max(...a50), p99: median(a99), p99Min: Math.min(...a99), p99Max: Math.max(...a99) };
      }
      out.push(entry);
    }
  }
  return out;
}

function render(summary, meta, delivered) {
  const held = (e) => e.achievedMin >= 0.97 * e.rate && e.skipped === 0;
  const rateCell = (e) => (held(e) ? String(e.rate) : `${e.rate} offered, **${Math.round(e.achieved)} achieved**`);
  const lines = [
    `Run ${meta.startedAt} (${meta.measuredSec} s of rounds), git ${meta.git}, Node ${meta.node}, ${meta.cpu}, load average ${meta.loadavgAtStart.join(' / ')} at the start and ${meta.loadavgAtEnd.join(' / ')} at the end; ${meta.settings.rounds} rounds × ${meta.settings.seconds} s per row and rate (after ${meta.settings.warmupSeconds} s of warm-up at the rate), in a new shuffled order each round, ${meta.settings.connections} connections, evenly paced. Waited ${meta.waitedForTestsSec} s for other test suites; ${meta.runsRepeated} runs measured again because a suite started during them; ${meta.runsWithTestsRunning} of ${meta.keptRuns} kept runs had one running. Latencies: median over rounds of each round's percentile; added = through Outrigger − direct in the same round, median (min–max). CPU: utime+stime of the process over the run ÷ 2xx responses × 1,000 = vCPU at 1,000 requests/s (median, min–max). RSS: VmRSS at the end of the run (peak VmHWM).`,
    '',
    '| row | requests/s | direct p50 / p99 ms | through Outrigger p50 / p99 ms | added p50 ms | added p99 ms | Outrigger vCPU per 1,000 req/s | RSS at the end (peak) |',
    '|---|---|---|---|---|---|---|---|',
  ];
  const range = (m, lo, hi, d = 2) => `${fmt(m, d)} (${fmt(lo, d)} – ${fmt(hi, d)})`;
  for (const e of summary.filter((x) => x.baseline && summary.some((b) => b.row === x.baseline))) {
    const cpu = Object.entries(e.vcpuPer1k)
      .filter(([k]) => k === 'proxy' || k === 'worker')
      .map(([k, v]) => `${k === 'worker' ? 'worker ' : ''}${range(v.median, v.min, v.max, 3)}`)
      .join('; ');
    const mem = Object.entries(e.rss ?? {})
      .map(([k, v]) => `${k === 'worker' ? 'worker ' : ''}${v.rssMb.toFixed(0)} MB (${v.peakRssMb.toFixed(0)})`)
      .join('; ');
    const base = summary.find((x) => x.row === e.baseline && x.rate === e.rate);
    const note = [!held(base) ? `direct: ${Math.round(base.achieved)}/s achieved` : '', e.failed ? `${e.failed} non-2xx` : ''].filter(Boolean).join(', ');
    // A side that could not hold the rate measured its own queue (up to maxInflight requests), not the path: no difference is taken.
    const both = held(e) && held(base);
    const mark = (ok) => (ok ? '' : ' †');
    const added = both ? `${range(e.added.p50, e.added.p50Min, e.added.p50Max)} | ${range(e.added.p99, e.added.p99Min, e.added.p99Max)}` : '– † | – †';
    lines.push(
      `| ${e.label} | ${rateCell(e)}${note ? ` (${note})` : ''} | ${fmt(e.direct.p50)} / ${fmt(e.direct.p99)}${mark(held(base))} | ${fmt(e.p50)} / ${fmt(e.p99)}${mark(held(e))} | ${added} | ${cpu} | ${mem} |`,
    );
  }
  if (lines.some((l) => l.includes('†')))
    lines.push(
      '',
      `† did not hold the offered rate (achieved < 97 % of it in some round, or requests left unsent because ${meta.settings.maxInflight} were in flight): its latency is mostly the load generator's own queue, so no added latency is given; CPU per request is still measured over the requests answered.`,
    );
  const hook = summary.filter((x) => x.row === 'webhook');
  if (hook.length)
    lines.push(
      '',
      `Webhook row: Redis ${hook.map((e) => `${fmt(e.vcpuPer1k.redis?.median, 3)} vCPU per 1,000 req/s at ${e.rate}/s`).join(', ')}; ${delivered} webhook deliveries received over the run.`,
    );
  const direct = summary.filter((x) => x.row === 'direct');
  if (direct.length)
    lines.push(`Direct row (how fast the machine was): the upstream ${direct.map((e) => `${fmt(e.vcpuPer1k.upstream?.median * 1000, 1)} µs of CPU per request at ${e.rate}/s`).join(', ')}.`);
  const rest = summary.filter((x) => x.row === 'graphql');
  if (rest.length) lines.push(`GraphQL rows: the stand-in backend ${rest.map((e) => `${fmt(e.vcpuPer1k.backend?.median, 3)} vCPU per 1,000 queries/s at ${e.rate}/s through Outrigger`).join(', ')}.`);
  return `${lines.join('\n')}\n`;
}

function fmt(value, digits = 2) {
  return value === null || value === undefined || Number.isNaN(value) ? '–' : value.toFixed(digits);
}

main().catch(async (error) => {
  process.stderr.write(`overhead: ${error?.stack ?? error}\n`);
  await stopAll();
  process.exit(1);
});
