#!/usr/bin/env node
/* global fetch */
/**
 * GraphQL subscriptions under load (SPEC §6.5, issue 38): two Outrigger replicas on one Redis and
 * the RESTHeart stand-in; SUBS subscribers over SSE, half on each replica, each following one of
 * GROUPS groups (`find: {group: {$arg}}`), and RATE writes per second (REST POSTs, alternating
 * replicas) for SECONDS. Reported: p50/p99/max from the write's answer reaching the writer to each
 * matching subscriber's receipt, events delivered and missing, the replicas' CPU, and the resident
 * memory per idle subscriber (before/after opening them, on each replica). Also the cost the
 * subscription observer adds to a write of a collection nobody subscribes to (ns per `begin`).
 *
 *   npm run build && node bench/subscriptions.mjs        (BENCH_SUBS, BENCH_SUB_RATE, BENCH_SUB_SECONDS, BENCH_SUB_GROUPS)
 *
 * Who subscribes (issue 38): by default every subscriber is anonymous (`acl.mode: own-routes`), so
 * a replica's 500 subscribers are one identity and one re-read serves them. BENCH_SUB_USERS=N
 * (e.g. 100) makes them N signed-in users (static users, Basic, `acl.mode: enforce`) whose
 * permission has `readFilter: {owner: "@user.id"}`: subscriber i is user i mod N and follows
 * group i mod GROUPS, and write s has owner s mod N and group s mod GROUPS, so with N = GROUPS
 * every subscriber a write's group reaches may read it (the same 10 events per write) while each
 * replica holds N/2 identities. BENCH_SUB_IDENTITY=jwt also sends each user's identity to the
 * backend (`upstream.identity` minted JWTs), so the backend can tell the users apart and each
 * identity re-reads on its own; without it the backend sees the same headers for every user.
 *
 * Everything runs on loopback; every process it starts is stopped by PID; the load is bounded.
 */
import http from 'node:http';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Pool } from 'undici';
import { startOutrigger } from './lib/outrigger.mjs';
import { cpuMicrosOf, forkServer, runThenStopAll, sleep } from './lib/processes.mjs';
import { startRedis } from './lib/redis.mjs';
import { hashPassword } from '../dist/src/access/password-hash.js';

const env = process.env;
const SUBS = Number(env.BENCH_SUBS ?? 1000);
const RATE = Number(env.BENCH_SUB_RATE ?? 500);
const SECONDS = Number(env.BENCH_SUB_SECONDS ?? 10);
const GROUPS = Number(env.BENCH_SUB_GROUPS ?? 100);
const USERS = Number(env.BENCH_SUB_USERS ?? 0);
const WARMUP = Number(env.BENCH_SUB_WARMUP_SECONDS ?? 2);
const IDENTITY = env.BENCH_SUB_IDENTITY ?? 'none';
const JWT_SECRET = 'bench-subscriptions-secret-at-least-32-characters';
const userName = (i) => `u${i}`;
const basicOf = (i) => `Basic ${Buffer.from(`${userName(i)}:pw-${userName(i)}`).toString('base64')}`;
const work = resolve('bench/.work/subscriptions');
mkdirSync(work, { recursive: true });

const APP = {
  _id: 'subs',
  descriptor: { uri: 'subs' },
  schema: 'type Order { _id: ObjectId, group: Int, seq: Int } type Change { op: String, document: Order } type Query { orders: [Order] } type Subscription { orderChanged(group: Int): Change }',
  mappings: {
    Query: { orders: { collection: 'orders' } },
    Subscription: { orderChanged: { collection: 'orders', on: ['insert'], find: { group: { $arg: 'group' } } } },
  },
};

const rssKb = (pid) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
const percentile = (sorted, p) => (sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]);

/** One SSE subscriber: a raw keep-open POST; calls `onSeq` for every event's `seq`. */
function subscribe(base, group, onSeq, authorization) {
  return new Promise((resolveOpen, reject) => {
    const body = JSON.stringify({ query: `subscription { orderChanged(group: ${group}) { document { seq } } }` });
    const headers = { accept: 'text/event-stream', 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...(authorization ? { authorization } : {}) };
    const req = http.request(`${base}/graphql/subs`, { method: 'POST', agent: false, headers }, (res) => {
      if (res.statusCode !== 200) return reject(new Error(`subscription answered ${res.statusCode}`));
      res.setEncoding('utf8');
      let opened = false;
      res.on('data', (text) => {
        if (!opened) {
          opened = true;
          resolveOpen(() => req.destroy());
        }
        for (const m of text.matchAll(/"seq":(\d+)/g)) onSeq(Number(m[1]));
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

async function main() {
  const redis = await startRedis(work);
  const standin = await forkServer('standin', 'bench/servers/standin.mjs', { log: join(work, 'standin.log') });
  const anonymous = { config: {}, permissions: [{ _id: 'bench-subs-anyone', roles: ['$unauthenticated'], predicate: 'path-prefix(/graphql/subs)', priority: 10 }] };
  const signedIn = USERS > 0 && {
    config: {
      users: { source: 'static', static: await Promise.all(Array.from({ length: USERS }, async (_, i) => ({ id: userName(i), password: await hashPassword(`pw-${userName(i)}`), roles: ['user'] }))) },
      acl: { mode: 'enforce' },
      ...(IDENTITY === 'jwt' ? { upstream: { identity: { mode: 'jwt', jwt: { secret: JWT_SECRET } } } } : {}),
    },
    permissions: [
      { _id: 'bench-subs-users', roles: ['user'], predicate: 'path-prefix(/graphql/subs)', priority: 10 },
      { _id: 'bench-own-orders', roles: ['user'], predicate: 'method(GET) and path-prefix(/restheart/orders)', priority: 10, mongo: { readFilter: { owner: '@user.id' } } },
      { _id: 'bench-writes', roles: ['$unauthenticated'], predicate: 'method(POST) and path-prefix(/restheart/orders)', priority: 5 },
    ],
  };
  const shape = signedIn || anonymous;
  const common = {
    workDir: work,
    redisUrl: redis.url,
    upstreamUrl: standin.url,
    serviceId: 'bench-subscriptions',
    config: { subscriptions: { maxPerPrincipal: SUBS, maxPerProcess: SUBS }, shutdown: { drainSeconds: 0 }, ...shape.config },
    setup: { apps: [APP], permissions: shape.permissions },
  };
  const prof = env.BENCH_SUB_PROF ? { nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${work}`] } : {};
  const a = await startOutrigger({ name: 'subs-a', ...common, ...prof });
  const b = await startOutrigger({ name: 'subs-b', ...common });
  const replicas = [a, b];
  // Both replicas serve the app (applied by a, seen by b through Redis within a second).
  for (const r of replicas) {
    for (let i = 0; i < 100; i++) {
      const res = await fetch(`${r.url}/graphql/subs`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(USERS > 0 ? { authorization: basicOf(0) } : {}) },
        body: '{"query":"{ __typename }"}',
      });
      if (res.status === 200) break;
      await sleep(100);
    }
  }

  const say = (m) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${m}\n`);
  say('replicas ready; opening subscribers');
  const rssBefore = replicas.map((r) => rssKb(r.pid));
  const answered = new Map();
  const latencies = [];
  const bySecond = [];
  let delivered = 0;
  let early = 0;
  const onSeq = (seq) => {
    delivered++;
    const t = answered.get(seq);
    // A change is published ahead of its write's answer (src/graphql/subscribe/feed/publisher.ts
    // `publishAround`): one delivered before the writer has its answer counts as 0 ms.
    if (t === undefined) early++;
    const ms = t === undefined ? 0 : performance.now() - t;
    latencies.push(ms);
    // By the second of the run the write was sent in: a backlog shows where it starts and drains.
    (bySecond[Math.floor(seq / RATE)] ??= []).push(ms);
  };
  const closers = [];
  for (let i = 0; i < SUBS; i += 50) {
    closers.push(
      ...(await Promise.all(Array.from({ length: Math.min(50, SUBS - i) }, (_, k) => subscribe(replicas[(i + k) % 2].url, (i + k) % GROUPS, onSeq, USERS > 0 ? basicOf((i + k) % USERS) : undefined)))),
    );
  }
  say(`${closers.length} subscribers open`);
  await sleep(3000);
  const rssIdle = replicas.map((r) => rssKb(r.pid));

  // RATE writes per second, evenly spaced, alternating replicas; each write's group picks its subscribers.
  const pools = replicas.map((r) => new Pool(r.url, { connections: 32 }));
  // The first writes meet code not yet optimized by the JIT (every replica's, the stand-in's):
  // WARMUP seconds at the same rate go first and are not measured (their events carry a negative `seq`, which `onSeq` never sees).
  const warmupTotal = Math.round(RATE * WARMUP);
  const warmupStarted = performance.now();
  for (let seq = -warmupTotal; seq < 0; seq++) {
    const due = warmupStarted + ((seq + warmupTotal) * 1000) / RATE;
    const wait = due - performance.now();
    if (wait > 1) await sleep(wait);
    void pools[-seq % 2]
      .request({
        method: 'POST',
        path: '/restheart/orders',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ group: -seq % GROUPS, seq, ...(USERS > 0 ? { owner: userName(-seq % USERS) } : {}) }),
      })
      .then(
        (res) => res.body.dump(),
        () => {},
      );
  }
  if (warmupTotal > 0) await sleep(1000);
  const cpuBefore = cpuMicrosOf(replicas.map((r) => r.pid));
  const standinBefore = cpuMicrosOf([standin.pid]);
  const requestsBefore = (await standin.ask('stats')).count;
  const total = Math.round(RATE * SECONDS);
  const started = performance.now();
  let failed = 0;
  const inflight = new Set();
  for (let seq = 0; seq < total; seq++) {
    const due = started + (seq * 1000) / RATE;
    const wait = due - performance.now();
    if (wait > 1) await sleep(wait);
    const p = pools[seq % 2]
      .request({
        method: 'POST',
        path: '/restheart/orders',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ group: seq % GROUPS, seq, ...(USERS > 0 ? { owner: userName(seq % USERS) } : {}) }),
      })
      .then(async (res) => {
        await res.body.dump();
        if (res.statusCode === 201) answered.set(seq, performance.now());
        else failed++;
      })
      .catch(() => failed++)
      .finally(() => inflight.delete(p));
    inflight.add(p);
  }
  await Promise.all(inflight);
  say(`${total} writes sent (${failed} failed); waiting for deliveries`);
  const writeSeconds = (performance.now() - started) / 1000;
  // Each write reaches the subscribers of its group; with users, those of its owner among them.
  let perWrite = SUBS / GROUPS;
  if (USERS > 0) perWrite = Array.from({ length: SUBS }, (_, i) => i).filter((i) => i % GROUPS === 0 && i % USERS === 0).length;
  const expected = (total - failed) * perWrite;
  const deadline = performance.now() + 30_000;
  while (delivered < expected && performance.now() < deadline) await sleep(100);
  const cpu = (cpuMicrosOf(replicas.map((r) => r.pid)) - cpuBefore) / 1e6;
  const standinCpu = (cpuMicrosOf([standin.pid]) - standinBefore) / 1e6;
  // Every request the backend received in the run: the writes, and the subscribers' re-reads.
  const backendRequests = (await standin.ask('stats')).count - requestsBefore;
  for (const close of closers) close();
  await Promise.all(pools.map((p) => p.close()));

  // The observer's cost on a write of a collection nobody subscribes to: its `begin`, in process.
  const { restWritesObserver } = await import('../dist/src/graphql/subscribe/rest-writes.js');
  const { collectionPathMatcher } = await import('../dist/src/graphql/subscribe/change.js');
  // Some collection is subscribed somewhere (the claims are not empty), just not this one.
  const observer = restWritesObserver(
    collectionPathMatcher('/{db}/{collection}'),
    () => false,
    () => {},
    () => true,
  );
  const scope = { method: 'POST', routeKind: 'proxy', path: '/restheart/unsubscribed' };
  const n = 1_000_000;
  for (let i = 0; i < 100_000; i++) observer.begin(scope);
  const t0 = performance.now();
  for (let i = 0; i < n; i++) observer.begin(scope);
  const nsPerBegin = ((performance.now() - t0) * 1e6) / n;
  const get = { ...scope, method: 'GET' };
  const t1 = performance.now();
  for (let i = 0; i < n; i++) observer.begin(get);
  const nsPerGet = ((performance.now() - t1) * 1e6) / n;

  latencies.sort((x, y) => x - y);
  const result = {
    at: new Date().toISOString(),
    subscribers: SUBS,
    replicas: 2,
    groups: GROUPS,
    identities: USERS > 0 ? `${USERS} users (readFilter owner = @user.id), backend identity ${IDENTITY}` : 'anonymous (one per replica)',
    writesPerSecond: RATE,
    seconds: SECONDS,
    writes: total,
    writesFailed: failed,
    writeSeconds: Number(writeSeconds.toFixed(2)),
    eventsExpected: expected,
    eventsDelivered: delivered,
    receivedBeforeTheWriteAnswer: early,
    p99BySecondMs: bySecond.map((l) =>
      Math.round(
        percentile(
          l.sort((x, y) => x - y),
          99,
        ),
      ),
    ),
    latencyMs: { p50: Number(percentile(latencies, 50).toFixed(1)), p99: Number(percentile(latencies, 99).toFixed(1)), max: Number((latencies.at(-1) ?? NaN).toFixed(1)) },
    replicasCpuSeconds: Number(cpu.toFixed(2)),
    standinCpuSeconds: Number(standinCpu.toFixed(2)),
    backendReadsPerWrite: Number(((backendRequests - total) / Math.max(1, total - failed)).toFixed(2)),
    loadAverageAtEnd: Number((await import('node:os')).loadavg()[0].toFixed(1)),
    idleSubscriberKb: replicas.map((_, i) => Number(((rssIdle[i] - rssBefore[i]) / (SUBS / 2)).toFixed(1))),
    unsubscribedWriteObserverNs: Number(nsPerBegin.toFixed(0)),
    readObserverNs: Number(nsPerGet.toFixed(0)),
  };
  writeFileSync(join(work, 'result.json'), JSON.stringify(result, null, 2));
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
}

await runThenStopAll(main, (m) => process.stderr.write(`${m}\n`));
