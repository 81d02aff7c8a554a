#!/usr/bin/env node
/* global fetch */
/**
 * MCP resource change notifications under load (SPEC §11.1, issue 51), beside
 * bench/subscriptions.mjs: two Outrigger replicas (`mcp.server: outrigger`, `mcp.resources` on the
 * stand-in's orders) on one Redis and the RESTHeart stand-in; LISTENERS 2026-07-28
 * `subscriptions/listen` streams (raw POSTs, half on each replica), listener i watching the
 * document URI `outrigger://restheart/orders/d<i mod DOCS>`, and RATE REST `PATCH`es per second of
 * document `d<seq mod DOCS>` (alternating replicas) for SECONDS, after WARMUP seconds at the same
 * rate. Reported: p50/p99/max from a write's answer reaching the writer to each watching
 * listener's `notifications/resources/updated` (a document is written once every DOCS/RATE
 * seconds, so a notification is the latest write of its document), notifications expected and
 * received, the replicas' CPU and the load average.
 *
 *   npm run build && node bench/mcp-updates.mjs     (BENCH_MCP_LISTENERS, BENCH_MCP_RATE, BENCH_MCP_SECONDS, BENCH_MCP_DOCS)
 *
 * The listeners are one signed-in user (Basic, `acl.mode: enforce`) whose permission has
 * `readFilter: {owner: "@user.id"}`; every document is theirs. Everything runs on loopback; every
 * process it starts is stopped by PID.
 */
import http from 'node:http';
import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Pool } from 'undici';
import { startOutrigger } from './lib/outrigger.mjs';
import { cpuMicrosOf, forkServer, runThenStopAll, sleep } from './lib/processes.mjs';
import { startRedis } from './lib/redis.mjs';
import { hashPassword } from '../dist/src/access/password-hash.js';

const env = process.env;
const LISTENERS = Number(env.BENCH_MCP_LISTENERS ?? 200);
const RATE = Number(env.BENCH_MCP_RATE ?? 200);
const SECONDS = Number(env.BENCH_MCP_SECONDS ?? 10);
const DOCS = Number(env.BENCH_MCP_DOCS ?? 100);
const WARMUP = Number(env.BENCH_MCP_WARMUP_SECONDS ?? 2);
const AUTH = `Basic ${Buffer.from('agent:pw-agent').toString('base64')}`;
const work = resolve('bench/.work/mcp-updates');
mkdirSync(work, { recursive: true });
const percentile = (sorted, p) => (sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]);

/** One listener: a raw 2026-07-28 listen POST held open; calls `onUri` for every updated URI; resolves once acknowledged. */
function listen(base, uri, onUri) {
  return new Promise((resolveOpen, reject) => {
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'subscriptions/listen', params: { notifications: { resourceSubscriptions: [uri] } } });
    const headers = { accept: 'application/json, text/event-stream', 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), authorization: AUTH };
    const req = http.request(`${base}/mcp`, { method: 'POST', agent: false, headers }, (res) => {
      if (res.statusCode !== 200) return reject(new Error(`listen answered ${res.statusCode}`));
      res.setEncoding('utf8');
      let acknowledged = false;
      res.on('data', (text) => {
        if (!acknowledged && text.includes('notifications/subscriptions/acknowledged')) {
          acknowledged = true;
          resolveOpen(() => req.destroy());
        }
        for (const m of text.matchAll(/"method":"notifications\/resources\/updated","params":\{"uri":"([^"]+)"/g)) onUri(m[1]);
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

async function main() {
  const redis = await startRedis(work);
  const standin = await forkServer('standin', 'bench/servers/standin.mjs', { log: join(work, 'standin.log') });
  const common = {
    workDir: work,
    redisUrl: redis.url,
    upstreamUrl: standin.url,
    serviceId: 'bench-mcp-updates',
    config: {
      subscriptions: { maxPerPrincipal: LISTENERS, maxPerProcess: LISTENERS },
      users: { source: 'static', static: [{ id: 'agent', password: await hashPassword('pw-agent'), roles: ['agent'] }] },
      acl: { mode: 'enforce' },
      mcp: { server: 'outrigger', resources: ['path-prefix(/restheart/orders)'] },
    },
    setup: {
      permissions: [
        { _id: 'bench-agent-orders', roles: ['agent'], predicate: 'method(GET) and path-prefix(/restheart/orders)', priority: 10, mongo: { readFilter: { owner: '@user.id' } } },
        { _id: 'bench-writes', roles: ['$unauthenticated'], predicate: '(method(POST) or method(PATCH)) and path-prefix(/restheart/orders)', priority: 5 },
      ],
    },
  };
  const a = await startOutrigger({ name: 'mcp-a', ...common });
  const b = await startOutrigger({ name: 'mcp-b', ...common });
  const replicas = [a, b];
  const say = (m) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${m}\n`);
  // The documents, then both replicas answering the agent's GET (the permissions applied by a, heard by b).
  for (let d = 0; d < DOCS; d++) {
    const res = await fetch(`${a.url}/restheart/orders`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ _id: `d${d}`, owner: 'agent', seq: -1 }) });
    if (res.status !== 201) throw new Error(`creating d${d} answered ${res.status}`);
  }
  for (const r of replicas) {
    for (let i = 0; i < 100; i++) {
      if ((await fetch(`${r.url}/restheart/orders/d0`, { headers: { authorization: AUTH } })).status === 200) break;
      await sleep(100);
    }
  }

  const answered = new Map();
  const latencies = [];
  let received = 0;
  let early = 0;
  /** Documents with a measured write sent and not yet answered. */
  const pending = new Set();
  // A change is published ahead of its write's answer (src/graphql/subscribe/feed/publisher.ts
  // `publishAround`), so a notification can come before the writer has its answer: latency 0.
  const onUri = (uri) => {
    received++;
    const t = answered.get(uri);
    if (t !== undefined) latencies.push(performance.now() - t);
    else if (pending.has(uri)) {
      early++;
      latencies.push(0);
    }
  };
  const closers = [];
  for (let i = 0; i < LISTENERS; i += 50)
    closers.push(...(await Promise.all(Array.from({ length: Math.min(50, LISTENERS - i) }, (_, k) => listen(replicas[(i + k) % 2].url, `outrigger://restheart/orders/d${(i + k) % DOCS}`, onUri)))));
  say(`${closers.length} listeners acknowledged`);
  await sleep(1000);

  const pools = replicas.map((r) => new Pool(r.url, { connections: 32 }));
  let measuring = false;
  let failed = 0;
  const statuses = {};
  const write = (seq) => {
    const doc = `d${((seq % DOCS) + DOCS) % DOCS}`;
    const uri = `outrigger://restheart/orders/${doc}`;
    if (measuring) {
      answered.delete(uri);
      pending.add(uri);
    }
    return pools[((seq % 2) + 2) % 2]
      .request({ method: 'PATCH', path: `/restheart/orders/${doc}`, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ $set: { seq } }) })
      .then(async (res) => {
        pending.delete(uri);
        await res.body.dump();
        if (res.statusCode >= 300) {
          failed++;
          statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1;
        } else if (measuring) answered.set(uri, performance.now());
      })
      .catch((error) => {
        pending.delete(uri);
        failed++;
        statuses[error.code ?? 'error'] = (statuses[error.code ?? 'error'] ?? 0) + 1;
      });
  };
  // Warm-up writes at the same rate, not measured.
  const warmup = Math.round(RATE * WARMUP);
  const warmStarted = performance.now();
  for (let s = 0; s < warmup; s++) {
    const wait = warmStarted + (s * 1000) / RATE - performance.now();
    if (wait > 1) await sleep(wait);
    void write(s);
  }
  await sleep(1500);
  received = 0;
  early = 0;
  failed = 0;
  measuring = true;
  const cpuBefore = cpuMicrosOf(replicas.map((r) => r.pid));
  const total = Math.round(RATE * SECONDS);
  const started = performance.now();
  const inflight = [];
  for (let seq = 0; seq < total; seq++) {
    const wait = started + (seq * 1000) / RATE - performance.now();
    if (wait > 1) await sleep(wait);
    inflight.push(write(seq));
  }
  await Promise.all(inflight);
  const writeSeconds = (performance.now() - started) / 1000;
  const expected = (total - failed) * (LISTENERS / DOCS);
  const deadline = performance.now() + 20_000;
  while (received < expected && performance.now() < deadline) await sleep(100);
  const cpu = (cpuMicrosOf(replicas.map((r) => r.pid)) - cpuBefore) / 1e6;
  for (const close of closers) close();
  await Promise.all(pools.map((p) => p.close()));

  latencies.sort((x, y) => x - y);
  const result = {
    at: new Date().toISOString(),
    listeners: LISTENERS,
    replicas: 2,
    documents: DOCS,
    writesPerSecond: RATE,
    seconds: SECONDS,
    writes: total,
    writesFailed: failed,
    failures: statuses,
    writeSeconds: Number(writeSeconds.toFixed(2)),
    notificationsExpected: expected,
    notificationsReceived: received,
    receivedBeforeTheWriteAnswer: early,
    latencyMs: { p50: Number(percentile(latencies, 50).toFixed(1)), p99: Number(percentile(latencies, 99).toFixed(1)), max: Number((latencies.at(-1) ?? NaN).toFixed(1)) },
    replicasCpuSeconds: Number(cpu.toFixed(2)),
    loadAverageAtEnd: Number(loadavg()[0].toFixed(1)),
  };
  writeFileSync(join(work, 'result.json'), JSON.stringify(result, null, 2));
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
}

await runThenStopAll(main, (m) => process.stderr.write(`${m}\n`));
