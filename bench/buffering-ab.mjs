#!/usr/bin/env node
/**
 * A/B of request buffering (issue 28 item 1, upstream.bufferBodyBytes): what reading a body in
 * full before it takes an upstream slot costs the pass-through, against streaming it (0). Two
 * Outrigger processes of this build, one per setting, against one upstream that drains POST
 * bodies; POSTs of a small body (1 KiB) and of a 1 MiB body (exactly the default bound, so the
 * buffered side buffers it), each over exact request counts, several rounds in a new shuffled
 * order. Per run: proxy CPU µs per request (/proc), requests/s over the run's wall time, latency
 * p50/p99 (autocannon); at the end each proxy's peak RSS (VmHWM). Loopback only; every process
 * stops at the end.
 *
 *   node bench/buffering-ab.mjs [--small 10000] [--large 400] [--rounds 3] [--connections 50]
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { median, shuffle } from './lib/load.mjs';
import { startOutrigger } from './lib/outrigger.mjs';
import { forkServer, runThenStopAll, stopAllOnExit } from './lib/processes.mjs';
import { startRedis } from './lib/redis.mjs';
import { PASS_PATH } from './lib/scenarios.mjs';

const { values: opts } = parseArgs({
  options: {
    small: { type: 'string', default: '10000' },
    large: { type: 'string', default: '400' },
    rounds: { type: 'string', default: '3' },
    connections: { type: 'string', default: '50' },
  },
});
const work = resolve('bench/.work', `buffering-ab-${new Date().toISOString().replace(/[:.]/g, '-')}`);
const say = (text) => process.stdout.write(`${text}\n`);
const MIB = 1024 * 1024;
const BODIES = {
  '1 KiB': { body: Buffer.alloc(1024, 'a'), amount: Number(opts.small) },
  '1 MiB': { body: Buffer.alloc(MIB, 'b'), amount: Number(opts.large) },
};

function cpuMicros(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}
const peakRssMb = (pid) => Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) / 1024;

const load = (url, body, amount) =>
  new Promise((ok, fail) =>
    autocannon({ url: `${url}${PASS_PATH}`, method: 'POST', body, headers: { 'content-type': 'application/octet-stream' }, connections: Number(opts.connections), amount }, (e, r) =>
      e ? fail(e) : ok(r),
    ),
  );

async function main() {
  stopAllOnExit();
  mkdirSync(work, { recursive: true });
  say(
    `buffering-ab: logs in ${work}; load average ${loadavg()
      .map((x) => x.toFixed(2))
      .join(' / ')}`,
  );
  const redis = await startRedis(work);
  const upstream = await forkServer('upstream', 'bench/servers/upstream.mjs', { log: join(work, 'upstream.log') });
  const upstreamUrl = `http://127.0.0.1:${upstream.port}`;
  const sides = [];
  for (const [id, bufferBodyBytes] of [
    ['buffered', MIB],
    ['streamed', 0],
  ]) {
    const o = await startOutrigger({ name: `buffering-${id}`, workDir: work, redisUrl: redis.url, upstreamUrl, config: { upstream: { url: upstreamUrl, bufferBodyBytes } } });
    sides.push({ id, url: o.url, pid: o.pid });
  }
  // Warm-up: V8 compiles the paths before anything is measured.
  for (const s of sides) for (const b of Object.values(BODIES)) await load(s.url, b.body, Math.min(b.amount, 2000));
  const samples = {};
  for (let round = 1; round <= Number(opts.rounds); round++) {
    const runs = shuffle(sides.flatMap((s) => Object.keys(BODIES).map((size) => ({ s, size }))));
    for (const { s, size } of runs) {
      const { body, amount } = BODIES[size];
      const before = cpuMicros(s.pid);
      const startedAt = performance.now();
      const r = await load(s.url, body, amount);
      const seconds = (performance.now() - startedAt) / 1000;
      if (r['2xx'] !== amount) throw new Error(`${s.id} ${size}: ${r['2xx']} of ${amount} answers were 2xx (errors ${r.errors}, non2xx ${r.non2xx})`);
      const key = `${s.id} ${size}`;
      (samples[key] ??= []).push({ cpu: (cpuMicros(s.pid) - before) / amount, rps: amount / seconds, p50: r.latency.p50, p99: r.latency.p99 });
      const last = samples[key].at(-1);
      say(`  round ${round} ${key.padEnd(16)} ${last.cpu.toFixed(1)} µs/request, ${last.rps.toFixed(0)} req/s, p50 ${last.p50} ms, p99 ${last.p99} ms`);
    }
  }
  say('\n| side | body | CPU µs/request, median (min–max) | req/s, median | p50 / p99 ms, median | CPU × streamed |\n|---|---|---|---|---|---|');
  for (const size of Object.keys(BODIES)) {
    const streamed = median(samples[`streamed ${size}`].map((x) => x.cpu));
    for (const s of sides) {
      const xs = samples[`${s.id} ${size}`];
      const cpu = xs.map((x) => x.cpu);
      say(
        `| ${s.id} | ${size} | ${median(cpu).toFixed(1)} (${Math.min(...cpu).toFixed(1)}–${Math.max(...cpu).toFixed(1)}) | ${median(xs.map((x) => x.rps)).toFixed(0)} | ${median(xs.map((x) => x.p50))} / ${median(xs.map((x) => x.p99))} | ${(median(cpu) / streamed).toFixed(2)} |`,
      );
    }
  }
  for (const s of sides) say(`peak RSS (VmHWM) ${s.id}: ${peakRssMb(s.pid).toFixed(0)} MB`);
}

await runThenStopAll(main, say);
