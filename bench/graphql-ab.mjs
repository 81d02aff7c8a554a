#!/usr/bin/env node
/**
 * A/B of two builds of Outrigger on the GraphQL bench (issue 39): CPU time per query of each
 * build's process over an exact number of queries, beside the hand-written graphql-js server and
 * the floor (bench/servers/graphql-floor.mjs) on the same stand-in backend, several rounds in a
 * new shuffled order each. Same app, permissions, API key and ACL as bench/run.mjs section 4.
 * Ratios are per round: the hand-written server's CPU per query ÷ each side's.
 *
 *   node bench/graphql-ab.mjs --base DIR [--with .] [--shape flat|nested] [--queries 3000]
 *                             [--rounds 5] [--processes 1] [--connections 20] [--warmup 6000] [--cpu-prof]
 *
 * `--processes N` starts N processes of each build, interleaved (one process may run 10-20% dearer
 * than another of the same build for its whole life; bench/ab.mjs); each build's figure is then
 * the median over its processes and rounds, its ratio the median of (hand-written ÷ it) per round
 * and process.
 *
 * A build is a directory holding package.json, dist/ and node_modules/ (bench/ab.mjs).
 */
import { readFileSync } from 'node:fs';
import { mkdirSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { median, shuffle } from './lib/load.mjs';
import { startOutrigger, writeKeys } from './lib/outrigger.mjs';
import { forkServer, stopAll, stopAllOnExit } from './lib/processes.mjs';
import { startRedis } from './lib/redis.mjs';
import { GRAPHQL_APP, GRAPHQL_PERMISSIONS, GRAPHQL_SHAPES } from './lib/scenarios.mjs';

const { values: opts } = parseArgs({
  options: {
    base: { type: 'string' },
    with: { type: 'string', default: '.' },
    shape: { type: 'string', default: 'flat' },
    queries: { type: 'string', default: '3000' },
    /** Un-measured queries per server first: Outrigger's CPU per query settles after some 6,000 (bench/README.md). */
    warmup: { type: 'string', default: '6000' },
    rounds: { type: 'string', default: '5' },
    processes: { type: 'string', default: '1' },
    connections: { type: 'string', default: '20' },
    'cpu-prof': { type: 'boolean', default: false },
  },
});
const shape = GRAPHQL_SHAPES.find((s) => s.id === opts.shape);
if (!shape) throw new Error(`unknown shape ${opts.shape}`);
const queries = Number(opts.queries);
const rounds = Number(opts.rounds);
const work = resolve('bench/.work', `graphql-ab-${new Date().toISOString().replace(/[:.]/g, '-')}`);
const body = JSON.stringify({ query: shape.query });

function cpuMicros(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}

function load(target, amount) {
  return new Promise((ok, fail) =>
    autocannon(
      { url: target.url, method: 'POST', body, amount, connections: Number(opts.connections), headers: { 'content-type': 'application/json', accept: 'application/json', ...target.headers } },
      (error, result) => (error ? fail(error) : ok(result)),
    ),
  );
}

async function main() {
  stopAllOnExit();
  mkdirSync(work, { recursive: true });
  process.stdout.write(
    `graphql-ab: ${shape.id}, ${queries} queries × ${rounds} rounds, load average ${loadavg()
      .map((x) => x.toFixed(1))
      .join(' / ')}; logs in ${work}\n`,
  );
  const redis = await startRedis(work);
  const standin = await forkServer('standin', 'bench/servers/standin.mjs', { log: join(work, 'standin.log') });
  const prof = (name) => (opts['cpu-prof'] ? ['--cpu-prof', `--cpu-prof-dir=${join(work, 'profiles', name)}`] : []);
  const targets = [];
  const builds = opts.base ? { base: resolve(opts.base), with: resolve(opts.with) } : { with: resolve(opts.with) };
  for (let p = 1; p <= Number(opts.processes); p++) {
    for (const [build, root] of Object.entries(builds)) {
      const name = Number(opts.processes) > 1 ? `${build}-${p}` : build;
      const o = await startOutrigger({
        name: `graphql-${name}`,
        workDir: work,
        redisUrl: redis.url,
        upstreamUrl: standin.url,
        root,
        config: { graphql: { backend: { auth: 'caller' } }, acl: { mode: 'enforce' }, shutdown: { drainSeconds: 0 } },
        setup: { permissions: GRAPHQL_PERMISSIONS, apps: [GRAPHQL_APP] },
        nodeArgs: prof(name),
      });
      targets.push({ id: name, build, url: `${o.url}/graphql/bench`, pid: o.pid, headers: { authorization: `Bearer ${(await writeKeys(redis.url, o.serviceId, 1))[0]}` } });
    }
  }
  for (const [id, script] of [
    ['baseline', 'graphql-baseline.mjs'],
    ['floor', 'graphql-floor.mjs'],
  ]) {
    const s = await forkServer(id, `bench/servers/${script}`, { env: { BACKEND: standin.url }, log: join(work, `${id}.log`), execArgv: prof(id) });
    targets.push({ id, build: id, url: `http://127.0.0.1:${s.port}/graphql`, pid: s.pid, headers: {} });
  }
  for (const t of targets) {
    const r = await load(t, Number(opts.warmup));
    if (r['2xx'] !== r.requests.total) throw new Error(`${t.id} answered ${r.requests.total - r['2xx']} of ${r.requests.total} warm-up queries with an error`);
  }
  const cpu = Object.fromEntries(targets.map((t) => [t.id, []]));
  for (let r = 0; r < rounds; r++) {
    for (const t of shuffle(targets)) {
      const before = cpuMicros(t.pid);
      const result = await load(t, queries);
      cpu[t.id].push((cpuMicros(t.pid) - before) / result['2xx']);
    }
    process.stdout.write(`round ${r + 1}: ${targets.map((t) => `${t.id} ${cpu[t.id][r].toFixed(0)} µs`).join(', ')}; load ${loadavg()[0].toFixed(1)}\n`);
  }
  process.stdout.write(`\n| side | CPU µs/query median (min–max) | hand-written ÷ this, per round: median (min–max) |\n|---|---|---|\n`);
  const f = (xs, d) => `${median(xs).toFixed(d)} (${Math.min(...xs).toFixed(d)}–${Math.max(...xs).toFixed(d)})`;
  const byBuild = new Map();
  for (const t of targets) byBuild.set(t.build, [...(byBuild.get(t.build) ?? []), t.id]);
  for (const [build, ids] of byBuild) {
    const all = ids.flatMap((id) => cpu[id]);
    const ratios = ids.flatMap((id) => cpu.baseline.map((b, i) => b / cpu[id][i]));
    process.stdout.write(`| ${build}${ids.length > 1 ? ` (${ids.length} processes)` : ''} | ${f(all, 0)} | ${f(ratios, 2)} |\n`);
  }
  if (byBuild.has('base')) {
    const r = byBuild.get('with').flatMap((id, p) => cpu[id].map((w, i) => w / cpu[byBuild.get('base')[p]][i]));
    process.stdout.write(`\nwith ÷ base CPU per query, per round and process pair: ${f(r, 3)}\n`);
  }
  process.stdout.write(
    `load average at the end ${loadavg()
      .map((x) => x.toFixed(1))
      .join(' / ')}\n`,
  );
  await stopAll();
  process.exit(0);
}

main().catch(async (error) => {
  process.stderr.write(`graphql-ab: ${error?.stack ?? error}\n`);
  await stopAll();
  process.exit(1);
});
