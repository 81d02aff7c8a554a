#!/usr/bin/env node
/**
 * CPU per request of the Node pass-through peers and Outrigger (c) over exact request counts
 * (like ab.mjs, robust to a loaded machine where saturated req/s is not): the minimal undici
 * forwarder, http-proxy with a keep-alive agent, @fastify/http-proxy, and Outrigger (c), each in
 * its own process against one upstream, several rounds in a new shuffled order. For
 * docs/decisions.md ("forwarding with undici").
 *
 *   node bench/peers-ab.mjs [--requests 20000] [--rounds 3] [--connections 50]
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { median, shuffle } from './lib/load.mjs';
import { issueKey, startOutrigger } from './lib/outrigger.mjs';
import { forkServer, runThenStopAll, stopAllOnExit } from './lib/processes.mjs';
import { startRedis } from './lib/redis.mjs';
import { PASS_PATH, passThroughScenarios } from './lib/scenarios.mjs';

const { values: opts } = parseArgs({
  options: { requests: { type: 'string', default: '20000' }, rounds: { type: 'string', default: '3' }, connections: { type: 'string', default: '50' } },
});
const requests = Number(opts.requests);
const work = resolve('bench/.work', `peers-ab-${new Date().toISOString().replace(/[:.]/g, '-')}`);
const say = (text) => process.stdout.write(`${text}\n`);

function cpuTimes(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}
const load = (t, amount) =>
  new Promise((ok, fail) => autocannon({ url: `${t.url}${PASS_PATH}`, connections: Number(opts.connections), amount, headers: t.headers ?? {} }, (e, r) => (e ? fail(e) : ok(r))));

async function main() {
  stopAllOnExit();
  mkdirSync(work, { recursive: true });
  say(
    `peers-ab: logs in ${work}; load average ${loadavg()
      .map((x) => x.toFixed(2))
      .join(' / ')}`,
  );
  const redis = await startRedis(work);
  const upstream = await forkServer('upstream', 'bench/servers/upstream.mjs', { log: join(work, 'upstream.log') });
  const upstreamUrl = `http://127.0.0.1:${upstream.port}`;
  const targets = [];
  for (const [id, script] of [
    ['undici', 'bench/servers/undici-forwarder.mjs'],
    ['httpproxy', 'bench/servers/http-proxy-forwarder.mjs'],
    ['fastify', 'bench/servers/fastify-proxy.mjs'],
  ]) {
    const p = await forkServer(id, script, { env: { UPSTREAM: upstreamUrl }, log: join(work, `${id}.log`) });
    targets.push({ id, url: `http://127.0.0.1:${p.port}`, pid: p.pid });
  }
  const c = passThroughScenarios({ receiverUrl: 'http://127.0.0.1:9', upstreamUrl }).c;
  const o = await startOutrigger({ name: 'peers-c', workDir: work, redisUrl: redis.url, upstreamUrl, setup: c.setup, config: c.config });
  targets.push({ id: 'outrigger-c', url: o.url, pid: o.pid, headers: { authorization: `Bearer ${await issueKey(o.url)}` } });
  for (const t of targets) await load(t, 10_000);
  const samples = Object.fromEntries(targets.map((t) => [t.id, []]));
  for (let round = 1; round <= Number(opts.rounds); round++) {
    for (const t of shuffle(targets)) {
      const before = cpuTimes(t.pid);
      const r = await load(t, requests);
      if (r['2xx'] !== requests) throw new Error(`${t.id}: ${r['2xx']} of ${requests} answers were 2xx`);
      samples[t.id].push((cpuTimes(t.pid) - before) / requests);
      say(`  round ${round} ${t.id.padEnd(12)} ${samples[t.id].at(-1).toFixed(1)} µs/request`);
    }
  }
  const undici = median(samples.undici);
  say('\n| forwarder | CPU µs/request, median (min–max) | × undici forwarder (CPU) |\n|---|---|---|');
  for (const t of targets) {
    const m = median(samples[t.id]);
    say(`| ${t.id} | ${m.toFixed(1)} (${Math.min(...samples[t.id]).toFixed(1)}–${Math.max(...samples[t.id]).toFixed(1)}) | ${(m / undici).toFixed(2)} |`);
  }
}

await runThenStopAll(main, say);
