/**
 * A paced load generator: requests at evenly spaced times (rate per second, for a bounded
 * duration), unlike autocannon's `overallRate`, which spends each second's budget in a burst at
 * the start of the second. Used where arrivals must be smooth: CPU per request at a fixed,
 * unsaturated rate, and webhook delivery latency.
 */
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool } from 'undici';
import { cpuMicrosOf } from './processes.mjs';
import { percentile } from './load.mjs';

/**
 * @param {object} o
 * @param {string} o.url  origin and path of every request (GET)
 * @param {number} o.rate  requests per second, evenly spaced
 * @param {number} o.seconds
 * @param {(pool: Pool) => Promise<number>} [o.exchange]  instead of one GET of `url`: what one
 *   "request" is (e.g. a POST, or two reads in sequence); resolves with the status code that
 *   decides 2xx, and its whole time is the latency recorded
 * @param {number} [o.maxInflight]  when this many are in flight, a due request is not sent but
 *   counted in `skipped` (bounds a run against a server slower than the rate; default: no bound)
 */
export async function runPaced({ url, headers = {}, rate, seconds, connections = 50, cpu = {}, exchange, maxInflight = Infinity }) {
  const target = new URL(url);
  const pool = new Pool(target.origin, { connections, pipelining: 1 });
  const total = Math.round(rate * seconds);
  const interval = 1000 / rate;
  const latencies = [];
  let ok = 0;
  let failed = 0;
  let sent = 0;
  let skipped = 0;
  const inflight = new Set();
  const cpuBefore = {};
  for (const [group, pids] of Object.entries(cpu)) cpuBefore[group] = cpuMicrosOf(pids);
  const started = performance.now();
  const one = async () => {
    const t0 = performance.now();
    try {
      let status;
      if (exchange) status = await exchange(pool);
      else {
        const res = await pool.request({ method: 'GET', path: target.pathname + target.search, headers });
        await res.body.dump();
        status = res.statusCode;
      }
      if (status >= 200 && status < 300) {
        ok++;
        latencies.push(performance.now() - t0);
      } else failed++;
    } catch {
      failed++;
    }
  };
  while (sent < total) {
    const due = Math.min(total, Math.floor((performance.now() - started) / interval) + 1);
    while (sent < due) {
      sent++;
      if (inflight.size >= maxInflight) {
        skipped++;
        continue;
      }
      const p = one();
      inflight.add(p);
      p.finally(() => inflight.delete(p));
    }
    const next = started + sent * interval;
    const wait = next - performance.now();
    if (wait > 1) await sleep(Math.floor(wait));
    else await new Promise((resolve) => setImmediate(resolve));
  }
  await Promise.all(inflight);
  const elapsedSec = (performance.now() - started) / 1000;
  const cpuPerRequest = {};
  for (const [group, pids] of Object.entries(cpu)) cpuPerRequest[group] = ok > 0 ? (cpuMicrosOf(pids) - cpuBefore[group]) / ok : null;
  await pool.close();
  latencies.sort((a, b) => a - b);
  return {
    ok,
    non2xx: failed,
    errors: 0,
    timeouts: 0,
    offeredRate: rate,
    skipped,
    elapsedSec,
    reqPerSec: ok / elapsedSec,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    cpuMicrosPerRequest: cpuPerRequest,
  };
}
