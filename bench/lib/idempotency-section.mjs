/**
 * Idempotency keys' row (SPEC §14, issue 50), section 7 of `npm run bench` (`BENCH_ONLY=idempotency`):
 * the same `POST /orders` (a 23-byte JSON body, the upstream answering 1 KiB) through Outrigger,
 * BENCH_SECONDS × 1,000 of them per run (an exact count, after BENCH_WARMUP_SECONDS × 1,000),
 * without `Idempotency-Key` and with a fresh key on every request (every request a first run:
 * a claim, the write, the record), each in a new process per round, shuffled; the throughput
 * ratio keyed ÷ unkeyed per round, median (min–max), with CPU per request beside it. Redis
 * commands are counted at Redis (INFO commandstats around the measured run): per keyed write,
 * the run's commands less the unkeyed run's background rate (the feature and permission pollers)
 * over the same time, ÷ the writes; expected 2, the claim and the record (a write answers well
 * within a third of `lockSeconds`, so no refresh runs).
 */
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { median, runLoad, shuffle, spread } from './load.mjs';
import { startOutrigger } from './outrigger.mjs';
import { forkServer } from './processes.mjs';
import { commandCounters, commandDelta } from './redis.mjs';

const PATH = '/orders';
const BODY = JSON.stringify({ item: 'oar', qty: 2 });
const HEADERS = { 'content-type': 'application/json' };
/** Records live 2 minutes here: the run writes tens of thousands, and the bench's Redis keeps them in memory. */
const CONFIG = { idempotency: { ttlSeconds: 120 } };
/** Requests per second of BENCH_SECONDS (and of the warm-up's): each run is an exact count of writes, about that long at the keyed rate. */
const REQUESTS_PER_SECOND = 1000;
/** Required keyed ÷ unkeyed throughput (docs/idempotency.md, "Cost", says why this value). */
export const REQUIRED_RATIO = 0.5;
/** Redis round trips a keyed write may pay (SPEC §14 / issue 50). */
export const MAX_ROUND_TRIPS_PER_WRITE = 2;
/**
 * What the claim and settle scripts (src/store/scripts/idempotency/) run inside Redis: INFO counts
 * a script's own commands beside its EVALSHA, and they are no round trip. No other part of this
 * configuration sends these names.
 */
const SCRIPT_COMMANDS = ['hmget', 'hset', 'hdel', 'del', 'pexpire'];

/** @param {object} ctx  `{work, redis, say, settings: {rounds, seconds, warmupSeconds, connections}}` */
export async function idempotencySection(ctx) {
  const { work, redis, say, settings } = ctx;
  const upstream = await forkServer('upstream-idempotency', 'bench/servers/upstream.mjs', { log: join(work, 'upstream-idempotency.log') });
  const upstreamUrl = `http://127.0.0.1:${upstream.port}`;
  const rounds = [];
  try {
    for (let round = 1; round <= settings.rounds; round++) {
      const row = {};
      for (const which of shuffle(['unkeyed', 'keyed'])) row[which] = await oneRun({ work, redis, settings, upstreamUrl, round, which });
      row.ratio = row.keyed.reqPerSec / row.unkeyed.reqPerSec;
      // The unkeyed run's commands are the background (pollers): its rate, over the keyed run's time, is not the writes'.
      const background = (row.unkeyed.commands.total / row.unkeyed.elapsedSec) * row.keyed.elapsedSec;
      const { total, perCommand } = row.keyed.commands;
      const inScripts = SCRIPT_COMMANDS.reduce((sum, name) => sum + (perCommand[name] ?? 0), 0);
      row.roundTripsPerWrite = (total - inScripts - background) / row.keyed.sent;
      row.commandsPerWrite = (total - background) / row.keyed.sent;
      row.scriptsPerWrite = ((perCommand.evalsha ?? 0) + (perCommand.eval ?? 0)) / row.keyed.sent;
      say(
        `idempotency: round ${round}: unkeyed ${Math.round(row.unkeyed.reqPerSec)} req/s, keyed ${Math.round(row.keyed.reqPerSec)} req/s, ratio ${row.ratio.toFixed(2)}; ` +
          `Redis round trips per keyed write ${row.roundTripsPerWrite.toFixed(3)} (EVALSHA+EVAL ${row.scriptsPerWrite.toFixed(3)}; commands run, the scripts' own included, ${row.commandsPerWrite.toFixed(2)}), per unkeyed ${(row.unkeyed.commands.total / row.unkeyed.sent).toFixed(4)}`,
      );
      rounds.push(row);
    }
  } finally {
    await upstream.stop?.();
  }
  return {
    path: PATH,
    ratio: spread(rounds.map((r) => r.ratio)),
    cpuRatio: spread(rounds.map((r) => r.unkeyed.cpuMicrosPerRequest.server / r.keyed.cpuMicrosPerRequest.server)),
    roundTripsPerWrite: spread(rounds.map((r) => r.roundTripsPerWrite)),
    commandsPerWrite: spread(rounds.map((r) => r.commandsPerWrite)),
    scriptsPerWrite: spread(rounds.map((r) => r.scriptsPerWrite)),
    unkeyedReqPerSec: median(rounds.map((r) => r.unkeyed.reqPerSec)),
    keyedReqPerSec: median(rounds.map((r) => r.keyed.reqPerSec)),
    unkeyedCpu: median(rounds.map((r) => r.unkeyed.cpuMicrosPerRequest.server)),
    keyedCpu: median(rounds.map((r) => r.keyed.cpuMicrosPerRequest.server)),
    unkeyedCommandsPerWrite: median(rounds.map((r) => r.unkeyed.commands.total / r.unkeyed.sent)),
    rounds: rounds.map((r) => ({
      ratio: r.ratio,
      unkeyed: r.unkeyed.reqPerSec,
      keyed: r.keyed.reqPerSec,
      roundTripsPerWrite: r.roundTripsPerWrite,
      sent: r.keyed.sent,
      perCommand: r.keyed.commands.perCommand,
    })),
  };
}

/** One process, one warm-up, one measured run with Redis's counters read around it. */
async function oneRun({ work, redis, settings, upstreamUrl, round, which }) {
  const server = await startOutrigger({ name: `idem-${which}-${round}`, workDir: work, redisUrl: redis.url, upstreamUrl, config: CONFIG });
  try {
    let n = 0;
    const sign = (i) => (which === 'keyed' ? { ...HEADERS, 'idempotency-key': `"r${round}-${i}"` } : HEADERS);
    // Each request a new key (a first run), or none; built the same way in both, so the load generator costs the same.
    const requests = [{ setupRequest: (req) => ({ ...req, method: 'POST', path: PATH, body: BODY, headers: sign(n++) }) }];
    await checkAnswers(server.url, which, sign('check'));
    // Exact counts, not durations: no write is cut off at a run's end, so every one sent was answered and its record settled inside the counted window.
    await runLoad({ url: server.url, connections: settings.connections, amount: Math.round(settings.warmupSeconds * REQUESTS_PER_SECOND), requests });
    const before = await commandCounters(redis.client);
    const first = n;
    const result = await runLoad({ url: server.url, connections: settings.connections, amount: Math.round(settings.seconds * REQUESTS_PER_SECOND), requests, cpu: { server: [server.pid] } });
    result.sent = n - first;
    result.commands = commandDelta(before, await commandCounters(redis.client));
    if (result.non2xx > 0 || result.errors > 0) throw new Error(`idempotency bench: ${which} run had ${result.non2xx} non-2xx answers and ${result.errors} errors`);
    return result;
  } finally {
    await server.stop();
  }
}

/** One write before the runs, on a connection of its own (no socket of an earlier round's process is reused). */
async function checkAnswers(url, which, headers) {
  const dispatcher = new Agent({ connections: 1 });
  try {
    const res = await request(`${url}${PATH}`, { method: 'POST', body: BODY, headers, dispatcher });
    await res.body.arrayBuffer();
    if (res.statusCode !== 200) throw new Error(`idempotency bench: ${which} answered ${res.statusCode} on POST ${PATH}`);
  } catch (error) {
    throw new Error(`idempotency bench: ${which} at ${url} did not answer POST ${PATH}: ${error.message}${error.code ? ` (${error.code})` : ''}`);
  } finally {
    await dispatcher.close();
  }
}

const f = (v, d = 0) => (v === null || v === undefined || Number.isNaN(v) ? '–' : Number(v).toFixed(d));
const sp = (s, d = 0) => (s.median === null ? '–' : s.n > 1 ? `${f(s.median, d)} (${f(s.min, d)}–${f(s.max, d)})` : f(s.median, d));
const table = (head, rows) => [`| ${head.join(' | ')} |`, `|${head.map(() => '---').join('|')}|`, ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');

/** The section of the report: one table and two targets. @returns {{markdown: string, console: string, targets: object[]}} */
export function renderIdempotency(idem) {
  const rows = [
    ['keyed ÷ unkeyed, req/s', sp(idem.ratio, 2), `${f(idem.keyedReqPerSec)} vs ${f(idem.unkeyedReqPerSec)} req/s`],
    ['unkeyed CPU ÷ keyed CPU, per request', sp(idem.cpuRatio, 2), `${f(idem.keyedCpu)} vs ${f(idem.unkeyedCpu)} µs per request (the Outrigger process)`],
    [
      'Redis round trips per keyed write',
      sp(idem.roundTripsPerWrite, 3),
      `EVALSHA + EVAL ${sp(idem.scriptsPerWrite, 3)}; commands Redis ran, the scripts' own included, ${sp(idem.commandsPerWrite, 2)}; per unkeyed write ${f(idem.unkeyedCommandsPerWrite, 4)} (the pollers)`,
    ],
  ];
  const body = table(['row', 'measured', 'beside it'], rows);
  const markdown = `## 7. Idempotency keys\n\nbench/lib/idempotency-section.mjs (SPEC §14, issue 50): \`POST ${idem.path}\` with a small JSON body through Outrigger without \`Idempotency-Key\` and with a fresh key on every request (each a first run: claim, write, record), each in a new process per round, shuffled; ratio per round, median (min–max). Redis round trips are INFO commandstats deltas around the keyed run, less the commands the two scripts run inside Redis (INFO counts them beside their EVALSHA) and less the unkeyed run's rate over the same time (the pollers), ÷ the writes sent in the run.\n\n${body}`;
  const targets = [
    {
      name: 'idempotency: a keyed write ÷ the same write without the header (issue 50)',
      judgedOn: 'req/s',
      measured: idem.ratio,
      op: '≥',
      required: REQUIRED_RATIO,
      beside: `CPU ratio ${sp(idem.cpuRatio, 2)}`,
      met: (idem.ratio.median ?? 0) >= REQUIRED_RATIO,
    },
    {
      name: 'idempotency: Redis round trips per keyed write, counted at Redis (issue 50)',
      judgedOn: 'commands per write',
      measured: idem.roundTripsPerWrite,
      op: '≤',
      required: MAX_ROUND_TRIPS_PER_WRITE,
      beside: `EVALSHA + EVAL ${sp(idem.scriptsPerWrite, 3)}`,
      // The pollers' rate is subtracted as measured in another run: a few hundredths either way are theirs.
      met: (idem.roundTripsPerWrite.median ?? Infinity) <= MAX_ROUND_TRIPS_PER_WRITE + 0.02,
    },
  ];
  return { markdown, console: `7. Idempotency keys\n${body}`, targets };
}
