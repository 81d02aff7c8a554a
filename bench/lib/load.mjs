/**
 * One load run with autocannon (in this process), plus what autocannon does not give:
 * sub-millisecond latency percentiles (every 2xx response time is kept), and the CPU time the
 * measured processes spent during the run (utime+stime from /proc/<pid>/stat).
 */
import autocannon from 'autocannon';
import { performance } from 'node:perf_hooks';
import { cpuMicrosOf } from './processes.mjs';

/**
 * @param {object} o
 * @param {string} o.url
 * @param {number} [o.connections]
 * @param {number} [o.duration]  seconds (or `amount` requests)
 * @param {number} [o.amount]
 * @param {object} [o.headers]
 * @param {string} [o.method]
 * @param {string} [o.body]
 * @param {Array}  [o.requests]  autocannon request sequence (setupRequest per request)
 * @param {number} [o.overallRate]  requests per second across all connections (fixed-rate runs)
 * @param {Record<string, number[]>} [o.cpu]  named groups of PIDs whose CPU time is reported per request
 * @param {(res: {statusCode: number, bytes: number}) => void} [o.check]
 */
export async function runLoad(o) {
  const latencies = [];
  const cpuBefore = {};
  for (const [group, pids] of Object.entries(o.cpu ?? {})) cpuBefore[group] = cpuMicrosOf(pids);
  const started = performance.now();
  const instance = autocannon({
    url: o.url,
    connections: o.connections ?? 50,
    ...(o.amount ? { amount: o.amount } : { duration: o.duration ?? 5 }),
    method: o.method ?? 'GET',
    headers: o.headers ?? {},
    ...(o.body !== undefined ? { body: o.body } : {}),
    ...(o.requests ? { requests: o.requests } : {}),
    ...(o.overallRate ? { overallRate: o.overallRate } : {}),
    timeout: 10,
  });
  let lastResponseAt = started;
  instance.on('response', (_client, statusCode, _bytes, responseTime) => {
    lastResponseAt = performance.now();
    if (statusCode >= 200 && statusCode < 300) latencies.push(responseTime);
  });
  const result = await instance;
  // autocannon ends a run on its next 1 s sampling tick; the run really ended at the last response.
  const elapsedSec = (lastResponseAt - started) / 1000;
  const ok = result['2xx'];
  const cpu = {};
  for (const [group, pids] of Object.entries(o.cpu ?? {})) {
    const spent = cpuMicrosOf(pids) - cpuBefore[group];
    cpu[group] = ok > 0 ? spent / ok : null;
  }
  latencies.sort((a, b) => a - b);
  return {
    ok,
    total: result.requests.total ?? ok + result.non2xx,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    elapsedSec,
    reqPerSec: ok / elapsedSec,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    mean: latencies.length ? latencies.reduce((a, b) => a + b, 0) / latencies.length : null,
    cpuMicrosPerRequest: cpu,
    statusCodeStats: result.statusCodeStats,
  };
}

/** Nearest-rank percentile of an ascending array. */
export function percentile(sorted, p) {
  if (sorted.length === 0) return null;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank];
}

export function median(values) {
  const v = values.filter((x) => x !== null && x !== undefined && !Number.isNaN(x)).sort((a, b) => a - b);
  if (v.length === 0) return null;
  const mid = Math.floor(v.length / 2);
  return v.length % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
}

/** {median, min, max} of the numbers (nulls ignored). */
export function spread(values) {
  const v = values.filter((x) => x !== null && x !== undefined && !Number.isNaN(x));
  if (v.length === 0) return { median: null, min: null, max: null, n: 0 };
  return { median: median(v), min: Math.min(...v), max: Math.max(...v), n: v.length };
}

export function shuffle(items, random = Math.random) {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}
