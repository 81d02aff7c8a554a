#!/usr/bin/env node
/**
 * The webhook tee alone, without HTTP: each build's WebhookObserver and EventProducer (from its
 * dist/) against one private redis-server, fed requests shaped like the bench's (e): a GET with
 * a Bearer key, a 1 KiB JSON answer, one matching webhook. Reports per event the CPU of this
 * process (observer, producer, ioredis), of Redis, and the GC pause time, builds alternating
 * round by round. Steadier than ab.mjs for changes to the tee's own code, but blind to what the
 * tee does to the rest of a proxy (its GC above all; bench/RESULTS.md, "The tee").
 *
 * `--rate R` feeds the events evenly paced instead, one per turn of the event loop, R per second
 * (a 1 ms timer, then R/1000 turns): what a proxy at a fixed, unsaturated rate sees, where each
 * request arrives on its own wake-up and the producer's linger decides how many events share a
 * write. A pseudo-build `(loop only)` runs the same pacing without a tee, so the difference is
 * the tee's cost at that rate: its own work, the writes and the replies' wake-ups.
 *
 *   node bench/tee-alone.mjs DIR [DIR...] [--events 100000] [--rounds 4] [--stream-node-max-bytes 4096] [--rate 4000]
 */
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import { PerformanceObserver, performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { median } from './lib/load.mjs';
import { cpuMicros, freePort, sleep, waitForPort } from './lib/processes.mjs';

const { values: opts, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    events: { type: 'string', default: '100000' },
    rounds: { type: 'string', default: '4' },
    'stream-node-max-bytes': { type: 'string', default: '4096' },
    rate: { type: 'string', default: '0' },
  },
});
if (positionals.length === 0) {
  process.stderr.write('usage: node bench/tee-alone.mjs DIR [DIR...] [--events N] [--rounds N] [--stream-node-max-bytes N]\n');
  process.exit(2);
}
const RATE = Number(opts.rate);
const EVENTS = RATE > 0 && opts.events === '100000' ? RATE * 5 : Number(opts.events);
/** Requests finished per turn of the event loop (the proxy's 50 connections answer in bursts). */
const PER_TURN = 25;

const port = await freePort();
const redisProc = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--stream-node-max-bytes', opts['stream-node-max-bytes']], {
  stdio: 'ignore',
});
process.on('exit', () => redisProc.kill());
await waitForPort(port, 10_000, 'redis-server');

let gcMs = 0;
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) gcMs += entry.duration;
}).observe({ entryTypes: ['gc'] });

const builds = [];
for (const dir of positionals) {
  const root = resolve(dir);
  const { Redis } = createRequire(`${root}/package.json`)('ioredis');
  const { WebhookObserver } = await import(`${root}/dist/src/webhooks/capture/observer.js`);
  const { EventProducer } = await import(`${root}/dist/src/webhooks/capture/event-producer.js`);
  const { exchangeFromParts, parseCondition } = await import(`${root}/dist/src/condition/index.js`);
  const redis = new Redis({ port });
  const quiet = { inc() {}, track() {} };
  const metrics = { webhookQueueDepth: quiet, webhookEventsQueued: quiet, webhookEventsDropped: quiet, webhookEventsUnreplicated: quiet };
  const logger = { warn: (o, m) => console.warn(m, o), info() {}, error: (o, m) => console.error(m, o) };
  const key = `tee-alone:${builds.length}:events`;
  const producer = new EventProducer({
    redis,
    keys: { events: key, recordingEntries: `${key}:recording` },
    capacity: 1_000_000,
    streamMaxLength: 1000,
    recordingMaxEntries: 10,
    recordingTtlMs: 60_000,
    metrics,
    logger,
  });
  const webhooks = [{ id: 'tee', name: 'tee', enabled: true, condition: parseCondition('method(GET) and path-prefix(/data)') }];
  const compiled = { all: webhooks, enabled: webhooks };
  const observer = new WebhookObserver({
    serviceId: 'bench-e',
    captureBytes: 65_536,
    secretHeaders: [],
    keysPath: '/keys',
    webhooksEnabled: () => true,
    webhooks: () => compiled,
    recordingActive: () => false,
    exchangeFor: (scope) => exchangeFromParts({ method: scope.method, path: scope.path }),
    producer,
  });
  builds.push({ dir, observer, producer, redis, key, samples: [] });
}

// Response chunks are views into a larger buffer, as the upstream's are.
const socketBuffer = Buffer.alloc(65_536, 'x');
const responseHeaders = { 'content-type': 'application/json', 'content-length': '1024', date: new Date().toUTCString() };
function request(observer, i) {
  const scope = {
    method: 'GET',
    path: '/data/item',
    rawQuery: '',
    routeKind: 'proxy',
    req: { headers: { host: '127.0.0.1:40000', authorization: 'Bearer rig_abcdefghijklmnopqrstuvwxyz0123456789', connection: 'keep-alive' } },
    res: { statusCode: 200, getHeaders: () => responseHeaders },
  };
  const observed = observer.begin();
  observed.onResponseHead(200, responseHeaders);
  const offset = (i * 1100) % 60_000;
  observed.onResponseData(socketBuffer.subarray(offset, offset + 1024));
  observed.finish(scope, true);
}
async function runPaced(build, n) {
  const perMs = RATE / 1000;
  const started = performance.now();
  for (let i = 0; i < n;) {
    // Catch up to the schedule, one event per turn of the event loop.
    const due = Math.min(n, Math.floor((performance.now() - started) * perMs) + 1);
    for (; i < due; i++) {
      if (build.observer) request(build.observer, i);
      await new Promise((r) => setImmediate(r));
    }
    await sleep(1);
  }
  while (build.producer && build.producer.depth > 0) await sleep(2);
}
async function run(build, n) {
  if (RATE > 0) return runPaced(build, n);
  for (let i = 0; i < n; i += PER_TURN) {
    for (let j = 0; j < PER_TURN; j++) request(build.observer, i + j);
    await new Promise((r) => setImmediate(r));
    // Timers (the producer's linger) get their turn too.
    if (i % 2000 === 0) await sleep(1);
  }
  while (build.producer.depth > 0) await sleep(2);
}

if (RATE > 0) builds.push({ dir: '(loop only)', observer: null, producer: null, redis: null, key: null, samples: [] });
for (const build of builds) await run(build, RATE > 0 ? RATE : 20_000); // JIT warm-up
for (let round = 1; round <= Number(opts.rounds); round++) {
  for (const build of round % 2 ? builds : [...builds].reverse()) {
    const cpu0 = process.cpuUsage();
    const redis0 = cpuMicros(redisProc.pid);
    const gc0 = gcMs;
    await run(build, EVENTS);
    const cpu = process.cpuUsage(cpu0);
    const sample = { proxy: (cpu.user + cpu.system) / EVENTS, redis: (cpuMicros(redisProc.pid) - redis0) / EVENTS, gc: ((gcMs - gc0) * 1000) / EVENTS };
    build.samples.push(sample);
    process.stdout.write(
      `round ${round} ${build.dir}: this process ${sample.proxy.toFixed(2)} µs/event, Redis ${sample.redis.toFixed(2)}, GC pauses ${sample.gc.toFixed(2)} (stream length ${build.redis ? await build.redis.xlen(build.key) : '–'})\n`,
    );
  }
}
process.stdout.write('\n| build | this process µs/event | Redis µs/event | GC pauses µs/event |\n|---|---|---|---|\n');
for (const build of builds) {
  const m = (k) => median(build.samples.map((s) => s[k])).toFixed(2);
  process.stdout.write(`| ${build.dir} | ${m('proxy')} | ${m('redis')} | ${m('gc')} |\n`);
}
if (RATE > 0) {
  const loop = median(builds.at(-1).samples.map((x) => x.proxy));
  for (const build of builds.slice(0, -1))
    process.stdout.write(`${build.dir}: the tee at ${RATE}/s, paced: ${(median(build.samples.map((x) => x.proxy)) - loop).toFixed(2)} µs/event beyond the loop\n`);
}
for (const build of builds) {
  build.producer?.close();
  build.redis?.disconnect();
}
process.exit(0);
