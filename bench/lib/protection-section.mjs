/**
 * The backend-protection section of `npm run bench` (phase `protection`, issue 49, SPEC §13):
 * Outrigger in front of a backend with a capacity (servers/capacity-backend.mjs: 16 workers of
 * 20 ms, 800 requests/s), offered 200 requests/s open loop (arrivals paced, whatever the answers),
 * in three steps: healthy; the backend 10 × slower (200 ms a request, capacity 80/s, so the same
 * load is 5 × what it can take); healthy again. It reports the p99 of the admitted requests
 * against healthy, what a refusal costs (the client's wait for a 503), whether the health probe
 * was answered throughout, and the throughput in the 5 s after recovery. The admitted p99 is set
 * against both the healthy one (SPEC §13's wording) and the slowed backend's own p99, measured one
 * request at a time straight to it (what Outrigger adds; docs/protection.md gives the model). Then
 * a second Outrigger with the limit pinned (every place held by a request the backend keeps)
 * refuses 3,000 requests, and its CPU time over them gives the cost of one. The slow step's limit,
 * in flight, line and minimum latency are traced every 250 ms from Outrigger's /_metrics (how fast
 * the limit falls, and where it settles). Bounded: ~40 s.
 * Its own report: RESULTS-protection.md beside RESULTS.md (or in the run's work directory).
 */
import { writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool } from 'undici';
import { percentile } from './load.mjs';
import { startOutrigger } from './outrigger.mjs';
import { cpuMicros, forkServer } from './processes.mjs';

const RATE = 200;
const HEALTHY_MS = 20;
const WORKERS = 16;
const STEP_SECONDS = { healthy: 6, slow: 8, recovery: 6 };
/** The refusal-cost step: refusals measured, the clients asking at once, the requests that hold the pinned limit. */
const REFUSALS = { count: 3000, clients: 64, pinned: 8 };

/** The backend's own latency, nothing in front of it and nothing else in flight: `n` GETs one after another, their p99. */
async function ownLatencyP99(pool, n) {
  const took = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    const res = await pool.request({ path: '/own', method: 'GET' });
    await res.body.dump();
    took.push(performance.now() - t0);
  }
  return percentile(
    took.sort((a, b) => a - b),
    99,
  );
}

/**
 * What a refusal costs Outrigger: a process of its own with `upstream.connections` of 8, all held
 * by requests the backend never answers in time (the limit pinned, nothing else moving), then
 * `count` requests refused after the line's wait; its CPU time (utime + stime) over them ÷ count.
 */
async function refusalCost({ work, redis, backend }) {
  await backend.ask('set', { workers: REFUSALS.pinned, serviceMs: 120_000 });
  const o = await startOutrigger({
    name: 'protection-refusals',
    workDir: work,
    redisUrl: redis.url,
    upstreamUrl: `http://127.0.0.1:${backend.port}`,
    config: { upstream: { connections: REFUSALS.pinned, timeoutMs: 300_000 } },
  });
  const pool = new Pool(o.url, { connections: REFUSALS.clients + REFUSALS.pinned });
  try {
    const held = Array.from({ length: REFUSALS.pinned }, () => pool.request({ path: '/hold', method: 'GET', headersTimeout: 300_000 }).catch(() => null));
    await sleep(500);
    const statuses = new Map();
    let next = 0;
    const before = cpuMicros(o.pid);
    const t0 = performance.now();
    const client = async () => {
      while (next++ < REFUSALS.count) {
        const res = await pool.request({ path: '/refused', method: 'GET' });
        await res.body.dump();
        statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1);
      }
    };
    await Promise.all(Array.from({ length: REFUSALS.clients }, client));
    const cpuMs = (cpuMicros(o.pid) - before) / 1000;
    const wallMs = performance.now() - t0;
    void held;
    return { count: REFUSALS.count, refused: statuses.get(503) ?? 0, statuses: Object.fromEntries(statuses), cpuMs, cpuMsPerRefusal: cpuMs / REFUSALS.count, wallMs };
  } finally {
    await pool.destroy();
    await o.stop?.();
  }
}

/** Paced GETs for `seconds`; each answer's status, latency and second after the start. */
async function openLoop(pool, path, seconds) {
  const answers = [];
  const pending = new Set();
  const started = performance.now();
  const total = RATE * seconds;
  for (let i = 0; i < total; i++) {
    const due = started + (i * 1000) / RATE;
    const wait = due - performance.now();
    if (wait > 1) await sleep(wait);
    const t0 = performance.now();
    const p = pool
      .request({ path, method: 'GET', headersTimeout: 30_000 })
      .then(async (res) => {
        await res.body.dump();
        answers.push({ status: res.statusCode, ms: performance.now() - t0, second: Math.floor((t0 - started) / 1000) });
      })
      .catch(() => answers.push({ status: 0, ms: performance.now() - t0, second: Math.floor((t0 - started) / 1000) }))
      .finally(() => pending.delete(p));
    pending.add(p);
  }
  await Promise.all(pending);
  return answers;
}

/** The health probe every 100 ms while `until` is pending: how many were not 200. */
async function probeHealth(pool, until) {
  let done = false;
  until.finally(() => (done = true));
  const probes = { sent: 0, failed: 0, worstMs: 0 };
  while (!done) {
    const t0 = performance.now();
    const res = await pool.request({ path: '/_health/ready', method: 'GET' }).catch(() => null);
    if (res) await res.body.dump();
    probes.sent++;
    if (res?.statusCode !== 200) probes.failed++;
    probes.worstMs = Math.max(probes.worstMs, performance.now() - t0);
    await sleep(100);
  }
  return probes;
}

/** Outrigger's limit, in flight and line (its /_metrics) every `everyMs` while `until` is pending. */
async function traceLimit(pool, until, everyMs = 250) {
  let done = false;
  until.finally(() => (done = true));
  const value = (text, name) => Number(text.match(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm'))?.[1] ?? NaN);
  const trace = [];
  while (!done) {
    const res = await pool.request({ path: '/_metrics', method: 'GET' }).catch(() => null);
    const text = res ? await res.body.text() : '';
    trace.push({
      limit: value(text, 'outrigger_upstream_concurrency_limit'),
      inFlight: value(text, 'outrigger_upstream_in_flight'),
      queued: value(text, 'outrigger_upstream_queue_length'),
      minMs: 1000 * value(text, 'outrigger_upstream_min_latency_seconds'),
    });
    await sleep(everyMs);
  }
  return trace;
}

function summary(answers) {
  const ok = answers
    .filter((a) => a.status >= 200 && a.status < 300)
    .map((a) => a.ms)
    .sort((a, b) => a - b);
  const refused = answers
    .filter((a) => a.status === 503)
    .map((a) => a.ms)
    .sort((a, b) => a - b);
  const other = answers.length - ok.length - refused.length;
  return {
    sent: answers.length,
    ok: ok.length,
    refused: refused.length,
    other,
    okP50: percentile(ok, 50),
    okP99: percentile(ok, 99),
    refusedP50: percentile(refused, 50),
    refusedP99: percentile(refused, 99),
  };
}

export async function protectionSection({ work, redis, say = (line) => process.stdout.write(`${line}\n`), reportFile }) {
  const backend = await forkServer('capacity-backend', 'bench/servers/capacity-backend.mjs', { log: join(work, 'capacity-backend.log') });
  await backend.ask('set', { workers: WORKERS, serviceMs: HEALTHY_MS });
  const o = await startOutrigger({ name: 'protection', workDir: work, redisUrl: redis.url, upstreamUrl: `http://127.0.0.1:${backend.port}` });
  const pool = new Pool(o.url, { connections: 512 });
  const probePool = new Pool(o.url, { connections: 1 });
  const direct = new Pool(`http://127.0.0.1:${backend.port}`, { connections: 1 });
  const load = { start: loadavg()[0] };
  let result;
  try {
    say(`protection: ${RATE} requests/s, open loop; backend ${WORKERS} workers × ${HEALTHY_MS} ms`);
    await openLoop(pool, '/warm', 4);
    const ownHealthyP99 = await ownLatencyP99(direct, 50);
    const healthyRun = openLoop(pool, '/data', STEP_SECONDS.healthy);
    const healthyProbes = probeHealth(probePool, healthyRun);
    const healthy = summary(await healthyRun);
    await backend.ask('peak');
    await backend.ask('set', { serviceMs: HEALTHY_MS * 10 });
    const ownSlowP99 = await ownLatencyP99(direct, 20);
    const slowRun = openLoop(pool, '/data', STEP_SECONDS.slow);
    const slowProbes = probeHealth(probePool, slowRun);
    const slowTrace = traceLimit(probePool, slowRun);
    const slowAnswers = await slowRun;
    const slow = summary(slowAnswers.filter((a) => a.second >= 2)); // past the limit's first descent
    const slowPeak = (await backend.ask('peak')).peak;
    await backend.ask('set', { serviceMs: HEALTHY_MS });
    const recoveryAnswers = await openLoop(pool, '/data', STEP_SECONDS.recovery);
    const perSecond = Array.from({ length: 5 }, (_, s) => recoveryAnswers.filter((a) => a.second === s && a.status === 200).length);
    load.end = loadavg()[0];
    result = {
      rate: RATE,
      load,
      healthy,
      slow,
      backendOwnP99: { healthy: ownHealthyP99, slow: ownSlowP99 },
      slowBackendPeakInFlight: slowPeak,
      slowTrace: await slowTrace,
      critical: { healthy: await healthyProbes, slow: await slowProbes },
      recovery: { okPerSecond: perSecond, healthyOkPerSecond: healthy.ok / STEP_SECONDS.healthy },
      targets: {
        admittedP99Ratio: slow.okP99 / healthy.okP99,
        admittedP99OverBackendOwn: slow.okP99 / ownSlowP99,
        refusalP50Ms: slow.refusedP50,
        criticalFailures: (await slowProbes).failed,
        recoveryRatioWithin5s: Math.min(...perSecond.slice(1)) / (healthy.ok / STEP_SECONDS.healthy),
      },
    };
  } finally {
    await pool.close();
    await probePool.close();
    await direct.close();
    await o.stop?.();
  }
  try {
    result.refusals = await refusalCost({ work, redis, backend });
    result.targets.refusalCpuMs = result.refusals.cpuMsPerRefusal;
  } finally {
    await backend.stop();
  }
  const markdown = render(result);
  writeFileSync(reportFile ?? join(work, 'RESULTS-protection.md'), markdown);
  say(markdown);
  return result;
}

function render(r) {
  const f = (n) => (Number.isFinite(n) ? n.toFixed(1) : '—');
  const t = r.targets;
  return [
    '# Backend protection (SPEC §13, `npm run bench`, phase `protection`)',
    '',
    `Open loop at ${r.rate} requests/s; the backend serves 16 at once, 20 ms each, then 200 ms each ("10 × slower"); SPEC §13's targets.`,
    '',
    '| | sent | 2xx | 503 | other | 2xx p50 ms | 2xx p99 ms | 503 p50 ms | 503 p99 ms |',
    '|---|---|---|---|---|---|---|---|---|',
    `| healthy | ${r.healthy.sent} | ${r.healthy.ok} | ${r.healthy.refused} | ${r.healthy.other} | ${f(r.healthy.okP50)} | ${f(r.healthy.okP99)} | — | — |`,
    `| 10 × slower (from its 3rd second) | ${r.slow.sent} | ${r.slow.ok} | ${r.slow.refused} | ${r.slow.other} | ${f(r.slow.okP50)} | ${f(r.slow.okP99)} | ${f(r.slow.refusedP50)} | ${f(r.slow.refusedP99)} |`,
    '',
    `The backend's own p99 (one request at a time, straight to it, nothing in front): healthy ${f(r.backendOwnP99.healthy)} ms, 10 × slower ${f(r.backendOwnP99.slow)} ms. Load average (1 min) ${r.load.start.toFixed(1)} at the start, ${r.load.end.toFixed(1)} at the end, on ${cpus().length} cores.`,
    '',
    '| target | measured | goal |',
    '|---|---|---|',
    `| admitted p99 while slow ÷ the slowed backend's own p99 (docs/protection.md: what Outrigger adds) | ${f(t.admittedP99OverBackendOwn)} × (${f(r.slow.okP99)} ÷ ${f(r.backendOwnP99.slow)} ms) | ≤ 2 × |`,
    `| admitted p99 while slow ÷ healthy admitted p99 (SPEC §13's wording; bounded below by the backend's own 10 ×) | ${f(t.admittedP99Ratio)} × (${f(r.slow.okP99)} ÷ ${f(r.healthy.okP99)} ms) | ≤ 2 ×, unreachable: see docs/protection.md |`,
    `| CPU per refusal, limit pinned (${r.refusals.count} refusals, ${REFUSALS.clients} clients; ${JSON.stringify(r.refusals.statuses)}) | ${r.refusals.cpuMsPerRefusal.toFixed(3)} ms (${f(r.refusals.cpuMs)} ms CPU in ${f(r.refusals.wallMs)} ms) | ≤ 1 ms |`,
    `| a refusal, p50 at the client | ${f(t.refusalP50Ms)} ms (the \`queueTimeoutMs\` wait, not CPU) | — |`,
    `| health probe failures while slow | ${t.criticalFailures} of ${r.critical.slow.sent} (slowest ${f(r.critical.slow.worstMs)} ms) | 0 |`,
    `| 2xx per second in the 5 s after recovery | ${r.recovery.okPerSecond.join(', ')} (healthy ${f(r.recovery.healthyOkPerSecond)}/s) | ≥ 90 % from the second second: ${f(100 * t.recoveryRatioWithin5s)} % |`,
    `| most requests inside the backend while slow | ${r.slowBackendPeakInFlight} | (16 served, the rest queued inside it) |`,
    '',
    `While slow, every 250 ms (Outrigger's /_metrics): limit / in flight / waiting in its line / minimum latency ms:`,
    r.slowTrace.map((p) => `${p.limit}/${p.inFlight}/${p.queued}/${f(p.minMs)}`).join(' '),
    '',
  ].join('\n');
}
