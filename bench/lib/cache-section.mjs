/* global fetch */
/**
 * The response cache's rows (SPEC §12, issue 47), over the stand-in seeded with 1,000 documents
 * (servers/cache-standin.mjs):
 *
 * 1. **Cached read throughput**: `GET /restheart/docs/d0001` through the minimal undici forwarder
 *    and through Outrigger with a rule covering it (every read after the first a hit), each in a
 *    new process per round, shuffled; ratio per round, median (min–max). Target ≥ 1.5.
 * 2. **90 % reads, 10 % writes over 1,000 documents**: the same seeded sequence of operations
 *    (uniform document choice) through Outrigger without a rule and with one; backend reads
 *    counted at the stand-in. Each client owns the documents `i % clients === own` for its writes
 *    (a PATCH of `{v: n}` with its own increasing n) and reads any; after a write's answer, every
 *    read of that document by the same client must show at least that n, else a stale read is
 *    counted. Targets: ≥ 90 % fewer backend reads, 0 stale reads. Beside it, the least backend
 *    reads any cache that drops on writes must make for the interleaving the run had (`leastMisses`).
 * 3. **Invalidation across two replicas**: two processes sharing one Redis; B's entry for a
 *    document is filled (a hit is confirmed), the document is written through A, and B is read
 *    every millisecond until it answers the new value: the time from A's answer to B's first
 *    fresh answer, p50/p99 over the trials. Target p99 ≤ 50 ms.
 */
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Agent, request } from 'undici';
import { median, percentile, runLoad, shuffle, spread } from './load.mjs';
import { startOutrigger } from './outrigger.mjs';
import { forkServer, sleep } from './processes.mjs';

const COLLECTION = '/restheart/docs';
const DOCS = 1000;
const docId = (i) => `d${String(i).padStart(4, '0')}`;
const CACHE_CONFIG = { rules: [{ when: `method(GET) and path-prefix(${COLLECTION})`, maxAgeSeconds: 300 }] };

/**
 * @param {object} ctx  `{work, redis, say, settings: {rounds, seconds, warmupSeconds, connections}}`
 */
export async function cacheSection(ctx) {
  const { work, redis, say, settings } = ctx;
  const standin = await forkServer('cache-standin', 'bench/servers/cache-standin.mjs', { log: join(work, 'cache-standin.log') });
  const upstreamUrl = `http://127.0.0.1:${standin.port}`;
  say(`cache: stand-in with ${DOCS} documents at ${upstreamUrl}`);
  const throughput = await cachedReadThroughput({ work, redis, settings, upstreamUrl, say });
  const mix = await readWriteMix({ work, redis, standin, upstreamUrl, say, settings });
  const invalidation = await crossReplicaInvalidation({ work, redis, upstreamUrl, say, settings });
  await standin.stop?.();
  return { throughput, mix, invalidation };
}

async function cachedReadThroughput({ work, redis, settings, upstreamUrl, say }) {
  const path = `${COLLECTION}/${docId(1)}`;
  const rounds = [];
  for (let round = 1; round <= settings.rounds; round++) {
    const row = {};
    for (const which of shuffle(['undici', 'cached'])) {
      const server =
        which === 'undici'
          ? await forkServer('undici-forwarder', 'bench/servers/undici-forwarder.mjs', { env: { UPSTREAM: upstreamUrl }, log: join(work, 'cache-undici.log') })
          : await startOutrigger({ name: `cache-read-${round}`, workDir: work, redisUrl: redis.url, upstreamUrl, config: { cache: CACHE_CONFIG } });
      const url = which === 'undici' ? `http://127.0.0.1:${server.port}${path}` : `${server.url}${path}`;
      const check = await fetch(url);
      await check.arrayBuffer();
      if (check.status !== 200) throw new Error(`cache bench: ${which} answered ${check.status} on ${path}`);
      await runLoad({ url, connections: settings.connections, duration: settings.warmupSeconds });
      const result = await runLoad({ url, connections: settings.connections, duration: settings.seconds, cpu: { server: [server.pid] } });
      if (which === 'cached') {
        const probe = await fetch(url);
        await probe.arrayBuffer();
        result.cacheStatus = probe.headers.get('cache-status');
      }
      row[which] = result;
      await server.stop();
    }
    row.ratio = row.cached.reqPerSec / row.undici.reqPerSec;
    say(`cache: round ${round}: undici ${Math.round(row.undici.reqPerSec)} req/s, cached ${Math.round(row.cached.reqPerSec)} req/s (${row.cached.cacheStatus}), ratio ${row.ratio.toFixed(2)}`);
    rounds.push(row);
  }
  return {
    path,
    ratio: spread(rounds.map((r) => r.ratio)),
    undiciReqPerSec: median(rounds.map((r) => r.undici.reqPerSec)),
    cachedReqPerSec: median(rounds.map((r) => r.cached.reqPerSec)),
    cacheStatus: rounds.at(-1)?.cached.cacheStatus ?? null,
    rounds: rounds.map((r) => ({ ratio: r.ratio, undici: r.undici.reqPerSec, cached: r.cached.reqPerSec })),
  };
}

/** A seeded operation sequence (xorshift): the same reads and writes with and without the cache. */
function operations(count, seed) {
  let x = seed >>> 0 || 1;
  const next = () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x / 0x100000000;
  };
  return Array.from({ length: count }, () => ({ write: next() < 0.1, doc: Math.floor(next() * DOCS) }));
}

async function readWriteMix({ work, redis, standin, upstreamUrl, say, settings }) {
  const clients = 16;
  const perClient = settings.mixOperations ?? 1500;
  const out = {};
  for (const mode of ['uncached', 'cached']) {
    const proxy = await startOutrigger({ name: `cache-mix-${mode}`, workDir: work, redisUrl: redis.url, upstreamUrl, config: mode === 'cached' ? { cache: CACHE_CONFIG } : {} });
    // Every document read once before counting, in both modes: the row measures the steady state,
    // not the 1,000 first reads any cache must make.
    await warmUp(proxy.url);
    const before = await standin.ask('stats');
    const started = performance.now();
    const tallies = await Promise.all(Array.from({ length: clients }, (_, c) => mixClient(proxy.url, c, clients, operations(perClient, 7919 * (c + 1)))));
    const elapsed = (performance.now() - started) / 1000;
    const after = await standin.ask('stats');
    await proxy.stop();
    const sum = (k) => tallies.reduce((n, t) => n + t[k], 0);
    const idealMisses = leastMisses(tallies.flatMap((t) => t.events));
    const statuses = {};
    for (const t of tallies) for (const [status, n] of Object.entries(t.statuses)) statuses[status] = (statuses[status] ?? 0) + n;
    out[mode] = {
      reads: sum('reads'),
      writes: sum('writes'),
      stale: sum('stale'),
      errors: sum('errors'),
      backendReads: after.reads - before.reads,
      backendWrites: after.writes - before.writes,
      idealMisses,
      seconds: elapsed,
    };
    say(
      `cache: mix ${mode}: ${out[mode].reads} reads, ${out[mode].writes} writes, backend reads ${out[mode].backendReads} (any cache dropping on write: ≥ ${idealMisses}), stale ${out[mode].stale}, errors ${out[mode].errors} ${JSON.stringify(statuses)}`,
    );
  }
  out.fewerBackendReads = 1 - out.cached.backendReads / out.uncached.backendReads;
  out.idealFewerBackendReads = 1 - out.cached.idealMisses / out.uncached.backendReads;
  return out;
}

/**
 * The backend reads any cache that drops an entry on a write must make for this interleaving: for
 * each write, one if some read of its document started after the write was answered and before
 * the next write of that document was (that read cannot be served from what was cached before
 * the write, and the write's answer carries no document to refill with: RESTHeart answers PATCH
 * with no body). Reads that overlap a write are counted as hits, so this is a lower bound.
 */
function leastMisses(events) {
  const byDoc = new Map();
  for (const e of events) {
    let list = byDoc.get(e.doc);
    if (!list) byDoc.set(e.doc, (list = []));
    list.push(e);
  }
  let misses = 0;
  for (const list of byDoc.values()) {
    const writes = list.filter((e) => e.write).sort((a, b) => a.end - b.end);
    const readStarts = list.filter((e) => !e.write).map((e) => e.start);
    writes.forEach((w, i) => {
      const until = writes[i + 1]?.end ?? Infinity;
      if (readStarts.some((t) => t > w.end && t <= until)) misses++;
    });
  }
  return misses;
}

async function warmUp(base) {
  const dispatcher = new Agent({ connections: 16 });
  for (let i = 0; i < DOCS; i += 50) {
    await Promise.all(
      Array.from({ length: Math.min(50, DOCS - i) }, async (_, j) => {
        const res = await request(`${base}${COLLECTION}/${docId(i + j)}`, { dispatcher });
        await res.body.arrayBuffer();
      }),
    );
  }
  await dispatcher.close();
}

/** One client: reads any document, writes only its own (doc % clients === c), checks it reads its own writes. */
async function mixClient(base, c, clients, ops) {
  const dispatcher = new Agent({ connections: 1 });
  const written = new Map();
  let n = 0;
  const tally = { reads: 0, writes: 0, stale: 0, errors: 0, statuses: {}, events: [] };
  const seen = (status) => (tally.statuses[status] = (tally.statuses[status] ?? 0) + 1);
  for (const op of ops) {
    const doc = op.write ? ownDocument(op.doc, c, clients) : op.doc;
    const path = `${base}${COLLECTION}/${docId(doc)}`;
    const start = performance.now();
    if (op.write) {
      n++;
      const v = c * 1_000_000 + n;
      const res = await request(path, { method: 'PATCH', dispatcher, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ v }) });
      await res.body.arrayBuffer();
      tally.events.push({ doc, write: true, start, end: performance.now() });
      if (res.statusCode >= 300) {
        tally.errors++;
        seen(res.statusCode);
      } else written.set(doc, v);
      tally.writes++;
      continue;
    }
    const res = await request(path, { dispatcher });
    const body = await res.body.text();
    tally.events.push({ doc, write: false, start, end: performance.now() });
    tally.reads++;
    if (res.statusCode !== 200) {
      tally.errors++;
      seen(res.statusCode);
      continue;
    }
    const mine = written.get(doc);
    if (mine !== undefined && JSON.parse(body).v < mine) tally.stale++;
  }
  await dispatcher.close();
  return tally;
}

/** The document of client c nearest below d (c, c + clients, c + 2 × clients…): only c writes it. */
function ownDocument(d, c, clients) {
  const own = d - (d % clients) + c;
  return own < DOCS ? own : c;
}

async function crossReplicaInvalidation({ work, redis, upstreamUrl, say, settings }) {
  const serviceId = 'bench-cache-replicas';
  const a = await startOutrigger({ name: 'cache-replica-a', serviceId, workDir: work, redisUrl: redis.url, upstreamUrl, config: { cache: CACHE_CONFIG } });
  const b = await startOutrigger({ name: 'cache-replica-b', serviceId, workDir: work, redisUrl: redis.url, upstreamUrl, config: { cache: CACHE_CONFIG } });
  const trials = settings.invalidationTrials ?? 200;
  const delays = [];
  let notHit = 0;
  try {
    for (let t = 0; t < trials; t++) {
      const doc = `${COLLECTION}/${docId(500 + (t % 400))}`;
      // Fill B's entry, and see it served from memory.
      await (await fetch(b.url + doc)).arrayBuffer();
      const hit = await fetch(b.url + doc);
      await hit.arrayBuffer();
      if (!/;\s*hit/.test(hit.headers.get('cache-status') ?? '')) notHit++;
      const v = 1_000_000_000 + t;
      const write = await fetch(a.url + doc, { method: 'PATCH', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ v }) });
      await write.arrayBuffer();
      const answered = performance.now();
      for (;;) {
        const read = await fetch(b.url + doc);
        const body = await read.json();
        if (body.v === v) break;
        if (performance.now() - answered > 5000) throw new Error(`cache bench: replica B still served the old ${doc} 5 s after the write through A`);
        await sleep(1);
      }
      delays.push(performance.now() - answered);
    }
  } finally {
    await a.stop();
    await b.stop();
  }
  delays.sort((x, y) => x - y);
  const result = { trials, p50: percentile(delays, 50), p99: percentile(delays, 99), max: delays.at(-1), notHitBeforeWrite: notHit };
  say(`cache: invalidation A→B over ${trials} writes: p50 ${result.p50.toFixed(1)} ms, p99 ${result.p99.toFixed(1)} ms, max ${result.max.toFixed(1)} ms`);
  return result;
}
