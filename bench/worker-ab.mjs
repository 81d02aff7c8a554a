#!/usr/bin/env node
/* global fetch */
/**
 * A/B of two builds' webhook workers, in one run (issue 14): for each build, a proxy
 * (`--no-worker`, its own service id) with one webhook matching every request; each round fills
 * that build's stream with N events while no worker runs, then starts one `outrigger worker`
 * process of that build and lets it drain the stream into the local receiver. Per drain: events/s
 * (first to last delivery), worker CPU µs per delivered event (/proc, from the first delivery on),
 * Redis commands per event (INFO deltas; only that worker talks to Redis then, besides the idle
 * proxies' pollers). Then the delivery latency of each build at a fixed, evenly paced rate.
 *
 *
 * The latency phase starts a fresh worker and first runs `--warmup-seconds` (default 2) of the
 * same paced load, unmeasured: a cold worker runs in V8's interpreter and compilers for its first
 * second or so, and that start-up backlog, not the steady state, would otherwise set the p99.
 * `--warmup-seconds 0` measures from a cold start.
 *
 * `--warmup-events N` does the same for the drains: their events/s and CPU per event are
 * measured from the delivery after the N-th (at most half of the drain), so that a drain of a few
 * seconds shows the steady state and not V8 compiling the worker's code (which weighs more the
 * faster the build: 8,000 events last under 2 s). 0 (the default) measures from the first delivery.
 *
 *
 * `--with-node-args='--flag --other'` starts the `with` side's workers with those Node/V8 flags
 * (trying a heap setting against the same build: `--base . --with .`).
 *
 * `--minimal` adds a third side: the `with` build's proxy drained by the minimal worker
 * (servers/minimal-worker.mjs, the per-event work without any of the guarantees), the floor
 * both builds are read against.
 *
 *   node bench/worker-ab.mjs --base /tmp/before [--with .] [--events 8000] [--rounds 3] [--rate 1000] [--seconds 5] [--warmup-seconds 2] [--warmup-events 0] [--cpu-prof] [--with-node-args=...] [--minimal]
 */
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { median, shuffle } from './lib/load.mjs';
import { issueKey, startOutrigger } from './lib/outrigger.mjs';
import { runPaced } from './lib/paced.mjs';
import { MINIMAL_WORKER, startMinimalWorker } from './lib/minimal-worker.mjs';
import { forkServer, runThenStopAll, stopAllOnExit } from './lib/processes.mjs';
import { startRedis } from './lib/redis.mjs';
import { measureDeliveryLatency, measureDrain, until } from './lib/drain.mjs';
import { KEYS_PERMISSION, PASS_PATH, matchingWebhook } from './lib/scenarios.mjs';

const { values: opts } = parseArgs({
  options: {
    base: { type: 'string' },
    with: { type: 'string', default: '.' },
    events: { type: 'string', default: '8000' },
    rounds: { type: 'string', default: '3' },
    rate: { type: 'string', default: '1000' },
    seconds: { type: 'string', default: '5' },
    'warmup-seconds': { type: 'string', default: '2' },
    'warmup-events': { type: 'string', default: '0' },
    'cpu-prof': { type: 'boolean', default: false },
    'with-node-args': { type: 'string', default: '' },
    minimal: { type: 'boolean', default: false },
  },
});
if (!opts.base) {
  process.stderr.write(
    'usage: node bench/worker-ab.mjs --base DIR [--with DIR] [--events N] [--rounds N] [--rate N] [--seconds N] [--warmup-seconds N] [--warmup-events N] [--cpu-prof] [--with-node-args=...] [--minimal]\n',
  );
  process.exit(2);
}
const n = Number(opts.events);
const warmupEvents = Number(opts['warmup-events']);
const builds = { base: resolve(opts.base), with: resolve(opts.with) };
/** The sides of the run: each build's worker, and with `--minimal` the minimal worker behind the `with` build's proxy. */
const sideNames = opts.minimal ? ['base', 'with', 'minimal'] : ['base', 'with'];
const rootOf = (side) => (side === 'minimal' ? builds.with : builds[side]);
const labelOf = (side) => (side === 'minimal' ? MINIMAL_WORKER : builds[side]);
const work = resolve('bench/.work', `worker-ab-${new Date().toISOString().replace(/[:.]/g, '-')}`);
const say = (text) => process.stdout.write(`${text}\n`);

async function main() {
  stopAllOnExit();
  mkdirSync(work, { recursive: true });
  say(
    `worker-ab: logs in ${work}; load average at start ${loadavg()
      .map((x) => x.toFixed(2))
      .join(' / ')}`,
  );
  const redis = await startRedis(work);
  const receiver = await forkServer('receiver', 'bench/servers/receiver.mjs', { log: join(work, 'receiver.log') });
  const receiverUrl = `http://127.0.0.1:${receiver.port}`;
  const upstream = await forkServer('upstream', 'bench/servers/upstream.mjs', { log: join(work, 'upstream.log') });
  const upstreamUrl = `http://127.0.0.1:${upstream.port}`;

  const sides = {};
  for (const build of sideNames) {
    const root = rootOf(build);
    const serviceId = `wab-${build}`;
    const common = {
      workDir: work,
      redisUrl: redis.url,
      upstreamUrl,
      serviceId,
      root,
      setup: { permissions: [KEYS_PERMISSION], webhooks: [matchingWebhook(receiverUrl)] },
      config: { webhooks: { allowPrivateTargets: ['127.0.0.0/8'], streamMaxLength: Math.max(100_000, 4 * n) } },
    };
    const proxy = await startOutrigger({ name: `wab-proxy-${build}`, ...common });
    const key = await issueKey(proxy.url);
    const streamKey = `outrigger:{${serviceId}}:events`;
    let workers = 0;
    sides[build] = {
      proxy,
      headers: { authorization: `Bearer ${key}` },
      streamKey,
      startWorker: async () => {
        const name = `wab-worker-${build}-${++workers}`;
        const nodeArgs = opts['cpu-prof'] ? ['--cpu-prof', `--cpu-prof-dir=${join(work, 'profiles', name)}`] : [];
        if (build === 'minimal') return startMinimalWorker({ redisUrl: redis.url, streamKey, targetUrl: `${receiverUrl}/hook`, log: join(work, `${name}.log`), nodeArgs });
        if (build === 'with' && opts['with-node-args']) nodeArgs.push(...opts['with-node-args'].split(' '));
        return startOutrigger({ name, mode: 'worker', ...common, setup: undefined, nodeArgs });
      },
      drains: [],
    };
  }

  for (let round = 1; round <= Number(opts.rounds); round++) {
    for (const build of shuffle(sideNames)) {
      const side = sides[build];
      const result = await measureDrain({
        receiver,
        redis,
        streamKey: side.streamKey,
        url: `${side.proxy.url}${PASS_PATH}`,
        headers: side.headers,
        connections: 50,
        amount: n,
        warmupEvents,
        startWorker: side.startWorker,
      });
      side.drains.push(result);
      say(
        `  round ${round} ${build.padEnd(4)} ${result.eventsPerSec.toFixed(0).padStart(6)} events/s  worker ${result.workerCpuMicrosPerEvent.toFixed(0)} µs/event  Redis ${result.redisCommandsPerEvent.toFixed(2)} commands/event ${JSON.stringify(result.perCommand)}`,
      );
      await redis.client.xtrim(side.streamKey, 'MAXLEN', 0);
    }
  }

  const rate = Number(opts.rate);
  const seconds = Number(opts.seconds);
  for (const build of sideNames) {
    const side = sides[build];
    const worker = await side.startWorker();
    await receiver.ask('reset');
    await (await fetch(`${side.proxy.url}${PASS_PATH}`, { headers: side.headers })).arrayBuffer();
    await until(async () => (await receiver.ask('stats')).count >= 1, 30_000, 'a first delivery');
    const warmupSeconds = Number(opts['warmup-seconds']);
    if (warmupSeconds > 0) {
      await receiver.ask('reset');
      const warm = await runPaced({ url: `${side.proxy.url}${PASS_PATH}`, headers: side.headers, connections: 20, rate, seconds: warmupSeconds });
      await until(async () => (await receiver.ask('stats')).count >= warm.ok, 60_000, 'the warm-up events to be delivered');
    }
    const result = await measureDeliveryLatency({ receiver, url: `${side.proxy.url}${PASS_PATH}`, headers: side.headers, rate, seconds });
    side.latency = { offered: rate, delivered: result.delivered, p50: result.p50, p99: result.p99, max: result.max };
    say(`  latency ${build}: ${rate}/s offered (after a ${opts['warmup-seconds']} s warm-up), ${result.delivered} delivered, p50 ${result.p50} ms, p99 ${result.p99} ms, max ${result.max} ms`);
    await worker.stop();
  }

  say('\n| build | events/s median (min–max) | worker CPU µs/event | Redis CPU µs/event | Redis commands/event | latency p50 / p99 ms at ' + rate + '/s |\n|---|---|---|---|---|---|');
  const base = sides.base;
  const m = (side, f) => median(side.drains.map(f));
  for (const [build, side] of Object.entries(sides)) {
    const eps = side.drains.map((d) => d.eventsPerSec);
    say(
      `| ${build} (${labelOf(build)}) | ${m(side, (d) => d.eventsPerSec).toFixed(0)} (${Math.min(...eps).toFixed(0)}–${Math.max(...eps).toFixed(0)}) | ${m(side, (d) => d.workerCpuMicrosPerEvent).toFixed(0)} | ${m(side, (d) => d.redisCpuMicrosPerEvent).toFixed(0)} | ${m(side, (d) => d.redisCommandsPerEvent).toFixed(2)} | ${side.latency.p50} / ${side.latency.p99} |`,
    );
  }
  const w = sides.with;
  const compare = (a, b) =>
    `events/s ×${(m(a, (d) => d.eventsPerSec) / m(b, (d) => d.eventsPerSec)).toFixed(2)}, worker CPU per event ×${(m(a, (d) => d.workerCpuMicrosPerEvent) / m(b, (d) => d.workerCpuMicrosPerEvent)).toFixed(3)}`;
  say(`\nwith ÷ base: ${compare(w, base)}`);
  if (sides.minimal) {
    say(`minimal ÷ base: ${compare(sides.minimal, base)}`);
    say(`with ÷ minimal: ${compare(w, sides.minimal)}`);
  }
}

await runThenStopAll(main, say);
