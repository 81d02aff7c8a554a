#!/usr/bin/env node
/**
 * A/B of two builds of Outrigger on the pass-through scenarios: CPU time per request of each
 * build's proxy process over an exact number of requests, user and system time apart, several
 * rounds in a new shuffled order each. For checking one change (README "Comparing two builds").
 *
 *   node bench/ab.mjs --base /tmp/before [--with .] [--scenarios c,e] [--requests 40000]
 *                     [--rounds 5] [--processes 2] [--cpu-prof] [--node-args=--trace-gc] [--with-node-args=...] [--forwarder]
 *
 * A build is a directory holding package.json, dist/ and node_modules/ (e.g. a `git worktree`
 * with `npm ci && npm run build`, or a copy of dist/ beside a symlinked node_modules/).
 * `--processes N` starts N processes of each build and scenario: on this kind of machine one
 * process may run up to 10-20% slower than another of the same build for its whole life, so a
 * difference smaller than that needs several processes and runs to be believed; an A/A run
 * (`--base . --with .`) shows how large that noise is today. `--with-node-args='--flag'` starts
 * only the `with` side with those Node/V8 flags (a flag against the same build: `--base . --with .`).
 *
 * `--rate R [--seconds S]` measures at a fixed, evenly paced rate instead of saturating (issue
 * 30's target 4: CPU per request and p99 at a steady 1,000 requests/s): each run is S seconds
 * at R requests/s (lib/paced.mjs), and the table adds the latency p50/p99 (medians of the runs).
 *
 * `--forwarder` adds the minimal undici forwarder (servers/undici-forwarder.mjs, the floor of
 * issue 30's target 3) as a third side, N processes like the builds, with the same flags, and
 * reads every build against it too.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { median, shuffle } from './lib/load.mjs';
import { runPaced } from './lib/paced.mjs';
import { issueKey, basic, startOutrigger } from './lib/outrigger.mjs';
import { forkServer, stopAll, stopAllOnExit } from './lib/processes.mjs';
import { startRedis } from './lib/redis.mjs';
import { PASS_PATH, passThroughScenarios } from './lib/scenarios.mjs';

const { values: opts } = parseArgs({
  options: {
    base: { type: 'string' },
    with: { type: 'string', default: '.' },
    scenarios: { type: 'string', default: 'c' },
    requests: { type: 'string', default: '40000' },
    rounds: { type: 'string', default: '5' },
    processes: { type: 'string', default: '1' },
    connections: { type: 'string', default: '50' },
    'cpu-prof': { type: 'boolean', default: false },
    'node-args': { type: 'string', default: '' },
    'with-node-args': { type: 'string', default: '' },
    'no-pin': { type: 'boolean', default: false },
    forwarder: { type: 'boolean', default: false },
    rate: { type: 'string', default: '0' },
    seconds: { type: 'string', default: '10' },
  },
});
if (!opts.base) {
  process.stderr.write('usage: node bench/ab.mjs --base DIR [--with DIR] [--scenarios c,e] [--requests N] [--rounds N] [--processes N] [--cpu-prof] [--node-args=ARGS]\n');
  process.exit(2);
}
const requests = Number(opts.requests);
const rounds = Number(opts.rounds);
const processes = Number(opts.processes);
const builds = { base: resolve(opts.base), with: resolve(opts.with) };
const WARM_UP = 20_000;
const work = resolve('bench/.work', `ab-${new Date().toISOString().replace(/[:.]/g, '-')}`);

/** utime and stime of a process, in µs (clock ticks are 10 ms on Linux). */
function cpuTimes(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return { user: Number(fields[11]) * 10_000, sys: Number(fields[12]) * 10_000 };
}

async function load(target, amount) {
  if (Number(opts.rate) > 0 && amount !== WARM_UP) {
    const r = await runPaced({ url: `${target.url}${PASS_PATH}`, headers: target.headers, rate: Number(opts.rate), seconds: Number(opts.seconds), connections: Number(opts.connections) });
    return { '2xx': r.ok, expected: r.ok + r.non2xx + r.skipped, p50: r.p50, p99: r.p99 };
  }
  return new Promise((resolvePromise, reject) =>
    autocannon({ url: `${target.url}${PASS_PATH}`, connections: Number(opts.connections), amount, headers: target.headers }, (error, result) => (error ? reject(error) : resolvePromise(result))),
  );
}

async function main() {
  stopAllOnExit();
  mkdirSync(work, { recursive: true });
  const redis = await startRedis(work);
  process.stdout.write(`ab: logs in ${work}\n`);
  const upstream = await forkServer('upstream', 'bench/servers/upstream.mjs', { log: join(work, 'upstream.log') });
  const upstreamUrl = `http://127.0.0.1:${upstream.port}`;
  const scenarios = passThroughScenarios({ receiverUrl: 'http://127.0.0.1:9', upstreamUrl });
  const targets = [];
  for (const id of opts.scenarios.split(',')) {
    const scenario = scenarios[id];
    if (!scenario) throw new Error(`unknown scenario ${id}; one of ${Object.keys(scenarios).join(', ')}`);
    // Interleaved (base-1, with-1, base-2, ...): in an A/A run, processes started later measured up to 20% dearer.
    for (let p = 1; p <= processes; p++) {
      for (const [build, root] of Object.entries(builds)) {
        const name = `${id}-${build}-${p}`;
        const nodeArgs = [
          ...(opts['cpu-prof'] ? ['--cpu-prof', `--cpu-prof-dir=${join(work, 'profiles', name)}`] : []),
          ...opts['node-args'].split(' ').filter(Boolean),
          ...(build === 'with' ? opts['with-node-args'].split(' ').filter(Boolean) : []),
        ];
        // Each process its own service id: no shared keys, webhooks or stream between them.
        const o = await startOutrigger({ name, workDir: work, redisUrl: redis.url, upstreamUrl, setup: scenario.setup, config: scenario.config, root, nodeArgs });
        const headers = scenario.auth === 'key' ? { authorization: `Bearer ${await issueKey(o.url)}` } : scenario.auth === 'basic' ? { authorization: basic('alice') } : {};
        targets.push({ id, build, name, url: o.url, pid: o.pid, headers });
      }
    }
  }
  if (opts.forwarder) {
    for (let p = 1; p <= processes; p++) {
      const name = `undici-${p}`;
      const execArgv = [...(opts['cpu-prof'] ? ['--cpu-prof', `--cpu-prof-dir=${join(work, 'profiles', name)}`] : []), ...opts['node-args'].split(' ').filter(Boolean)];
      const f = await forkServer(name, 'bench/servers/undici-forwarder.mjs', { env: { UPSTREAM: upstreamUrl }, execArgv, log: join(work, `${name}.log`) });
      targets.push({ id: 'undici', build: 'forwarder', name, url: `http://127.0.0.1:${f.port}`, pid: f.pid, headers: {} });
    }
  }
  if (!opts['no-pin']) {
    // Where the scheduler puts a process (beside the load generator or not) changes its cost per
    // request more than most changes do: the proxies get the last core, everything else the others.
    const last = availableParallelism() - 1;
    const others = last > 1 ? `0-${last - 1}` : '0';
    for (const pid of [process.pid, upstream.pid, redis.pid]) execFileSync('taskset', ['-apc', others, String(pid)], { stdio: 'ignore' });
    for (const t of targets) execFileSync('taskset', ['-apc', String(last), String(t.pid)], { stdio: 'ignore' });
    process.stdout.write(`ab: proxies pinned to CPU ${last}, load generator, upstream and Redis to CPU ${others}\n`);
  }
  process.stdout.write(`ab: ${targets.length} processes; warming up (20,000 requests each)\n`);
  for (const t of targets) await load(t, WARM_UP);

  const samples = new Map();
  for (let round = 1; round <= rounds; round++) {
    for (const t of shuffle(targets)) {
      const before = cpuTimes(t.pid);
      const result = await load(t, requests);
      const after = cpuTimes(t.pid);
      const ok = result['2xx'];
      const expected = result.expected ?? requests;
      if (ok !== expected) throw new Error(`${t.name}: ${ok} of ${expected} answers were 2xx`);
      const sample = { user: (after.user - before.user) / ok, sys: (after.sys - before.sys) / ok, p50: result.p50, p99: result.p99 };
      const key = `${t.id} ${t.build}`;
      if (!samples.has(key)) samples.set(key, []);
      samples.get(key).push(sample);
      process.stdout.write(
        `  round ${round} ${t.name.padEnd(12)} ${(sample.user + sample.sys).toFixed(1)} µs/request (user ${sample.user.toFixed(1)}, sys ${sample.sys.toFixed(1)})${sample.p99 !== undefined ? ` p50 ${sample.p50.toFixed(2)} ms p99 ${sample.p99.toFixed(2)} ms` : ''}\n`,
      );
    }
  }

  const forwarderTotal = opts.forwarder ? median(samples.get('undici forwarder').map((s) => s.user + s.sys)) : null;
  const paced = Number(opts.rate) > 0;
  if (paced) process.stdout.write(`\nat ${opts.rate} requests/s, evenly paced, ${opts.seconds} s per run`);
  process.stdout.write(
    `\n| scenario | build | CPU µs/request, median (min–max) | user | sys | ÷ base |${opts.forwarder ? ' forwarder ÷ this |' : ''}${paced ? ' p50 ms | p99 ms (min–max) |' : ''}\n|---|---|---|---|---|---|${opts.forwarder ? '---|' : ''}${paced ? '---|---|' : ''}\n`,
  );
  const rows = opts.scenarios.split(',').map((id) => [id, Object.keys(builds)]);
  if (opts.forwarder) rows.push(['undici', ['forwarder']]);
  for (const [id, buildNames] of rows) {
    const baseTotal = median(samples.get(`${id} ${buildNames[0]}`).map((s) => s.user + s.sys));
    for (const build of buildNames) {
      const list = samples.get(`${id} ${build}`);
      const totals = list.map((s) => s.user + s.sys);
      const total = median(totals);
      process.stdout.write(
        `| ${id} | ${build} (${builds[build] ?? 'bench/servers/undici-forwarder.mjs'}) | ${total.toFixed(1)} (${Math.min(...totals).toFixed(1)}–${Math.max(...totals).toFixed(1)}) | ${median(list.map((s) => s.user)).toFixed(1)} | ${median(list.map((s) => s.sys)).toFixed(1)} | ${(total / baseTotal).toFixed(3)} |${forwarderTotal ? ` ${(forwarderTotal / total).toFixed(3)} |` : ''}${paced ? ` ${median(list.map((s) => s.p50)).toFixed(2)} | ${median(list.map((s) => s.p99)).toFixed(2)} (${Math.min(...list.map((s) => s.p99)).toFixed(2)}–${Math.max(...list.map((s) => s.p99)).toFixed(2)}) |` : ''}\n`,
      );
    }
  }
  if (opts['cpu-prof']) process.stdout.write(`\nprofiles: ${join(work, 'profiles')}/<scenario>-<build>-<n>/ (node bench/profile-top.mjs FILE --requests ${20_000 + rounds * requests})\n`);
}

try {
  await main();
} finally {
  await stopAll();
}
process.exit(0);
