/**
 * Turns a run's raw results into the console table and bench/RESULTS.md. Every throughput figure
 * is also given as a ratio to a baseline of the same run: the ratio is computed per round (the
 * rounds interleave the configurations in shuffled order) and reported as the median with the
 * min–max over rounds.
 */
import { existsSync, readFileSync } from 'node:fs';
import { renderIdempotency } from '../idempotency-section.mjs';
import { median, spread } from '../load.mjs';
import { renderCache } from './cache-report.mjs';
import { cpuRatio, f, ratios, sp, table, target } from './format.mjs';
import { renderGraphql, renderSubscriptions } from './graphql-report.mjs';

export const ANALYSIS_MARKER = '<!-- hand-written analysis below: kept when the bench rewrites this file -->';

export function renderResults(results) {
  const sections = [];
  const consoleParts = [];
  const targets = [];
  /** `measured` is a spread of per-round ratios; met when its median is on the right side of `required`. */
  const addTarget = (...args) => targets.push(target(...args));
  const pt = results.passThrough;

  if (pt) {
    const rows = Object.fromEntries(pt.rows.map((r) => [r.id, r]));
    const body = pt.rows.map((row) => {
      const rps = spread(row.rounds.map((r) => r.reqPerSec));
      const vsUndici = rows.undici ? ratios(row.rounds, rows.undici.rounds) : null;
      const vsNginx = rows.nginx ? ratios(row.rounds, rows.nginx.rounds) : null;
      const proxyCpu = row.id === 'direct' ? null : median(row.rounds.map((r) => r.cpuMicrosPerRequest.proxy));
      const fixedCpu = row.id === 'direct' || !row.fixedRate?.length ? null : spread(row.fixedRate.map((r) => r.cpuMicrosPerRequest.proxy));
      const fixedP50 = row.fixedRate?.length ? median(row.fixedRate.map((r) => r.p50)) : null;
      const bad = row.rounds.reduce((s, r) => s + r.non2xx + r.errors + r.timeouts, 0);
      return [
        row.label,
        sp(rps),
        vsUndici ? sp(vsUndici, 2) : 'n/a',
        vsNginx ? sp(vsNginx, 2) : 'n/a',
        f(median(row.rounds.map((r) => r.p50)), 2),
        f(median(row.rounds.map((r) => r.p99)), 2),
        f(proxyCpu, 1),
        ...(pt.fixedRate ? [fixedCpu ? sp(fixedCpu, 1) : '–', f(fixedP50, 2)] : []),
        f(median(row.rounds.map((r) => r.cpuMicrosPerRequest.upstream)), 1),
        f(median(row.rounds.map((r) => r.cpuMicrosPerRequest.redis)), 1),
        `${f(median(row.rounds.map((r) => r.redisCommandsPerRequest)), 2)}${row.fixedRate?.length ? ` / ${f(median(row.fixedRate.map((r) => r.redisCommandsPerRequest)), 2)}` : ''}`,
        String(bad),
      ];
    });
    const t = table(
      [
        'configuration',
        'req/s median (min–max)',
        '× undici forwarder',
        '× nginx',
        'p50 ms',
        'p99 ms',
        'proxy CPU µs/req',
        ...(pt.fixedRate ? [`proxy CPU µs/req at ${pt.fixedRate} req/s (min–max)`, `p50 ms at ${pt.fixedRate} req/s`] : []),
        'upstream CPU µs/req',
        'Redis CPU µs/req',
        `Redis commands/req${pt.fixedRate ? ` (saturated / at ${pt.fixedRate} req/s)` : ''}`,
        'non-2xx + errors',
      ],
      body,
    );
    const rounds = pt.rows[0]?.rounds.length ?? 0;
    sections.push(
      `## 1. Pass-through\n\n\`GET ${pt.path}\` answered by the upstream with 1 KiB of JSON; ${results.meta.settings.connections} connections; ${rounds} rounds × ${results.meta.settings.seconds} s per configuration, configurations in shuffled order each round${pt.processPerRound ? '; the undici forwarder and every Outrigger configuration run in a new process each round, warmed up for ' + results.meta.settings.warmupSeconds + ' s before it is measured (one process of a build can cost more than another for its whole life; bench/README.md)' : ''}. Ratios are per round, then median (min–max). CPU columns: utime+stime of that process during the run ÷ 2xx responses (median over rounds).${pt.fixedRate ? ` Each round also runs every configuration at a fixed ${pt.fixedRate} req/s, evenly paced (${results.meta.settings.fixedSeconds} s, below every configuration's capacity): CPU per request at equal, unsaturated load, where nothing is amortised over a batch of requests read in one event-loop turn (every request pays its own wake-ups, and (e) one Redis transaction per event).` : ''}${pt.streamLengthAfterE !== null ? ` The (e) stream held ${pt.streamEventsAfterE != null ? `${pt.streamEventsAfterE} events in ` : ''}${pt.streamLengthAfterE} entries after its runs (\`webhooks.streamMaxLength\` 1000; worker off).` : ''}\n\n${t}`,
    );
    consoleParts.push(`1. Pass-through (GET ${pt.path}, 1 KiB)\n${t}`);

    const cpuBeside = (id, baseId) => `CPU ratio ${f(cpuRatio(rows, id, baseId), 2)} saturated${pt.fixedRate ? `, ${f(cpuRatio(rows, id, baseId, true), 2)} at ${pt.fixedRate} req/s` : ''}`;
    const throughput = (name, id, baseId, required) => {
      if (!rows[id] || !rows[baseId]) return;
      addTarget(name, 'req/s, this ÷ baseline', ratios(rows[id].rounds, rows[baseId].rounds), '≥', required, cpuBeside(id, baseId));
    };
    throughput('(c) API key ÷ minimal undici forwarder (issue 30 target 3)', 'c', 'undici', 0.95);
    throughput('(c) API key ÷ nginx', 'c', 'nginx', 0.5);
    throughput('(d) 20 quiet webhooks ÷ (c)', 'd', 'c', 0.95);
    throughput('(c-limit) one by: key rate limit ÷ (c) (issue 35, SPEC §10)', 'climit', 'c', 0.9);
    throughput('(c-nocache) cache rules, none matching ÷ (c) (issue 47, SPEC §12: within the noise)', 'cnocache', 'c', 0.95);
    if (rows.climit)
      addTarget(
        '(c-limit) Redis commands per request at saturation (issue 35, SPEC §10)',
        "Redis commands/req, saturated (every process's pollers included)",
        spread(rows.climit.rounds.map((r) => r.redisCommandsPerRequest)),
        '≤',
        0.1,
        '',
      );
    const proxyCpu = (r) => r.cpuMicrosPerRequest?.proxy;
    if (rows.e && rows.c && pt.fixedRate)
      addTarget(
        "(e) teeing to Redis: CPU per request ÷ (c)'s (issue 30 target 2)",
        `proxy CPU µs/req at ${pt.fixedRate} req/s, this ÷ baseline`,
        ratios(rows.e.fixedRate, rows.c.fixedRate, proxyCpu),
        '≤',
        1.1,
        `saturated req/s ratio ${sp(ratios(rows.e.rounds, rows.c.rounds), 3)}`,
      );
    if (pt.lowRate && rows.c?.lowRate?.length && rows.undici?.lowRate?.length) {
      addTarget(
        `(c) at a steady ${pt.lowRate} req/s: CPU per request ÷ the undici forwarder's (issue 30 target 4)`,
        'proxy CPU µs/req, this ÷ baseline',
        ratios(rows.c.lowRate, rows.undici.lowRate, proxyCpu),
        '≤',
        1.2,
        '',
      );
      addTarget(
        `(c) at a steady ${pt.lowRate} req/s: p99 ÷ the undici forwarder's (issue 30 target 4)`,
        'p99 latency, this ÷ baseline',
        ratios(rows.c.lowRate, rows.undici.lowRate, (r) => r.p99),
        '≤',
        1.2,
        '',
      );
      const lowRows = pt.rows.filter((row) => row.lowRate?.length);
      const lt = table(
        ['configuration', 'proxy CPU µs/req (min–max)', "CPU × the forwarder's (per round)", 'p50 ms', 'p99 ms (min–max)', "p99 × the forwarder's (per round)", 'non-2xx + unsent'],
        lowRows.map((row) => [
          row.label,
          row.id === 'direct' ? '–' : sp(spread(row.lowRate.map(proxyCpu)), 1),
          row.id === 'direct' ? '–' : sp(ratios(row.lowRate, rows.undici.lowRate, proxyCpu), 2),
          f(median(row.lowRate.map((r) => r.p50)), 2),
          sp(spread(row.lowRate.map((r) => r.p99)), 2),
          sp(
            ratios(row.lowRate, rows.undici.lowRate, (r) => r.p99),
            2,
          ),
          String(row.lowRate.reduce((a, r) => a + r.non2xx + r.skipped, 0)),
        ]),
      );
      sections.push(
        `### At a steady ${pt.lowRate} req/s\n\nEach round, right after its fixed-rate run and in the same process: ${results.meta.settings.lowSeconds} s at ${pt.lowRate} req/s, evenly paced, ${results.meta.settings.connections} connections (issue 30 target 4). Far below saturation, every request pays its own wake-ups, timers and allocations, so what load amortises shows here. Ratios are per round against the forwarder's run of the same round, then median (min–max).\n\n${lt}`,
      );
      consoleParts.push(`At ${pt.lowRate} req/s\n${lt}`);
    }
  }

  const keys = results.keys;
  if (keys) {
    const row = (kind, label) => {
      const runs = keys.runs[kind];
      const per = {};
      for (const run of runs) for (const [cmd, n] of Object.entries(run.redisCommands.perCommand)) per[cmd] = (per[cmd] ?? 0) + n / Math.max(1, run.ok);
      const mix = Object.entries(per)
        .filter(([, v]) => v >= 0.01 * runs.length)
        .sort((a, b) => b[1] - a[1])
        .map(([c, v]) => `${c} ${f(v / runs.length, 2)}`)
        .join(', ');
      return [
        label,
        sp(spread(runs.map((r) => r.reqPerSec))),
        f(median(runs.map((r) => r.p50)), 2),
        f(median(runs.map((r) => r.p99)), 2),
        f(median(runs.map((r) => r.cpuMicrosPerRequest.proxy)), 1),
        f(median(runs.map((r) => r.cpuMicrosPerRequest.redis)), 1),
        f(median(runs.map((r) => r.redisCommands.perRequest)), 2),
        mix || '—',
      ];
    };
    const cold = keys.runs.cold;
    const cached = keys.runs.cached;
    const t = table(
      ['API key', 'req/s median (min–max)', 'p50 ms', 'p99 ms', 'proxy CPU µs/req', 'Redis CPU µs/req', 'Redis commands/req', 'commands per request (all, incl. background)'],
      [row('cached', 'cached (one key, in the in-process cache)'), row('cold', 'cold (a new key every request)')],
    );
    const r = ratios(cold, cached);
    sections.push(
      `## 2. Key verification\n\nThe (c) proxy alone (everything else stopped), ${keys.requestsPerRun} requests per run, ${cached.length} runs of each, alternating. Cold: every request carries a key the process has never seen (${keys.keysIssued} keys written to Redis beforehand with Outrigger's own key store). Redis commands are \`total_commands_processed\` deltas (which count the commands run inside Lua scripts too: each EVALSHA is one round trip, and the GET/HGET/HEXISTS/HSET beside it run inside the key scripts) minus the background rate measured while idle (${f(keys.idleCommandsPerSec, 1)}/s: the feature and permission pollers). Cold ÷ cached throughput: ${sp(r, 2)}.\n\n${t}`,
    );
    consoleParts.push(`2. Key verification\n${t}`);
  }

  const wh = results.webhooks;
  if (wh) {
    const d = wh.drains;
    const minimal = wh.minimalDrains ?? [];
    // Per-round ratios to the minimal worker, drained in the same round: events/s, and its CPU per event over this worker's.
    const drainRow = (label, runs) => [
      label,
      sp(spread(runs.map((x) => x.eventsPerSec))),
      minimal.length
        ? sp(
            ratios(runs, minimal, (x) => x.eventsPerSec),
            2,
          )
        : '–',
      f(median(runs.map((x) => x.workerCpuMicrosPerEvent)), 0),
      minimal.length
        ? sp(
            ratios(minimal, runs, (x) => x.workerCpuMicrosPerEvent),
            2,
          )
        : '–',
      f(median(runs.map((x) => x.redisCpuMicrosPerEvent)), 0),
      f(median(runs.map((x) => x.redisCommandsPerEvent)), 1),
    ];
    const t1 = table(
      ['worker', 'events/s median (min–max)', '× minimal worker', 'worker CPU µs/event', 'CPU ratio (minimal ÷ this)', 'Redis CPU µs/event', 'Redis commands/event'],
      [
        drainRow(`Outrigger worker, ${wh.eventsPerRound} events per round`, d),
        ...(minimal.length ? [drainRow('minimal worker (baseline: the per-event work only, none of the safety)', minimal)] : []),
      ],
    );
    const mix = Object.entries(d[d.length - 1]?.redisCommands ?? {})
      .sort((a, b) => b[1] - a[1])
      .slice(0, 10)
      .map(([c, n]) => `${c} ${f(n / wh.eventsPerRound, 2)}`)
      .join(', ');
    const ms = (v) => (v === 0 ? '<1' : f(v));
    const t2 = table(
      ['offered req/s, evenly paced (all matching)', 'deliveries', 'latency p50 ms', 'p99 ms', 'max ms'],
      wh.latency.map((l) => [String(l.offeredRate), String(l.delivered), ms(l.p50), ms(l.p99), ms(l.max)]),
    );
    if (minimal.length) {
      addTarget(
        'Outrigger worker ÷ minimal worker, events/s (issue 30 target 1)',
        'events/s, this ÷ baseline',
        ratios(d, minimal, (x) => x.eventsPerSec),
        '≥',
        0.75,
        '',
      );
      addTarget(
        'Outrigger worker ÷ minimal worker, CPU per event (issue 30 target 1)',
        "baseline's worker CPU µs/event ÷ this",
        ratios(minimal, d, (x) => x.workerCpuMicrosPerEvent),
        '≥',
        0.75,
        '',
      );
    }
    sections.push(
      `## 3. Webhook pipeline\n\nWorker: ${wh.workerMode}. Throughput: the proxy fills the stream with ${wh.eventsPerRound} matching events while no worker runs; then one worker starts and drains it into a local receiver that answers 200 at once. ${minimal.length ? "Each round drains once with Outrigger's worker and once with the minimal worker (bench/servers/minimal-worker.mjs: per event the decode, default payload, signature, POST, log entry and acknowledgement, on the same libraries, without retries, delivery markers, SSRF guard, timeouts or metrics), in shuffled order; ratios are per round. No worker that keeps those guarantees can cost less than the minimal one. " : ''}${wh.warmupEvents ? `Events/s and worker CPU per event are measured from the delivery after the first ${wh.warmupEvents} to the last: the steady state, without the worker's start-up nor its first second or so, when V8 is still compiling its code (which would weigh more the faster the worker drains).` : 'Events/s is measured from the first to the last delivery (start-up excluded).'} Redis commands per event during the drain: ${mix}.\n\n${t1}\n\nDelivery latency, worker running, requests at a fixed offered rate: from the event's \`timestamp\` (set when the response finished) to the moment the receiver has the whole delivery (1 ms clock resolution).\n\n${t2}`,
    );
    consoleParts.push(`3. Webhook pipeline\n${t1}\n${t2}`);
  }

  for (const part of [renderGraphql(results.graphql, results.meta.settings), renderSubscriptions(results.subscriptions)]) {
    if (part.markdown) sections.push(part.markdown);
    consoleParts.push(...part.console);
    targets.push(...part.targets);
  }

  if (results.cache) {
    const cache = renderCache(results.cache);
    sections.push(cache.markdown);
    consoleParts.push(cache.console);
    targets.push(...cache.targets);
  }

  if (results.idempotency) {
    const idem = renderIdempotency(results.idempotency);
    sections.push(idem.markdown);
    consoleParts.push(idem.console);
    targets.push(...idem.targets);
  }

  if (targets.length) {
    const t = table(
      ['target', 'judged on', 'measured: median of the per-round ratios (min–max)', 'required', 'met', 'beside it'],
      targets.map((x) => [x.name, x.judgedOn, sp(x.measured, 3), `${x.op} ${x.required}`, x.met ? 'yes' : '**no**', x.beside || '–']),
    );
    sections.unshift(
      `## Targets\n\nEach target is a ratio to a baseline measured in the same run, computed per round and judged on the median of the rounds. "CPU ratio" beside a throughput target is the baseline's CPU µs/request ÷ this configuration's (medians): at saturation, what the throughput ratio would be if both were CPU-bound on one core${pt?.fixedRate ? `; at a fixed ${pt.fixedRate} req/s (evenly paced, unsaturated), what each costs per request when requests do not arrive in batches` : ''}.\n\n${t}`,
    );
    consoleParts.unshift(`Targets\n${t}`);
  }

  const m = results.meta;
  const busy = m.busy?.length
    ? `**Measured under load:** other heavy processes (vitest test suites) were running at ${m.busy.length} of the checkpoints (${m.busy.map((b) => `${b.where}: ${b.processes} processes, load ${b.loadavg1.toFixed(1)}`).join('; ')}). Ratios are still from the same rounds, but absolute figures are depressed and the spread is wider.`
    : 'No other test suite (vitest) was running at any checkpoint of this run.';
  const shares = (m.foreignCpu ?? []).filter((x) => x.seconds >= 2);
  const totalSec = shares.reduce((a, x) => a + x.seconds, 0);
  const mean = totalSec ? shares.reduce((a, x) => a + x.share * x.seconds, 0) / totalSec : null;
  const worst = shares.length ? shares.reduce((a, x) => (x.share > a.share ? x : a)) : null;
  const noise =
    mean === null
      ? ''
      : `\n- Other processes on the machine (not started by the bench: machine CPU from /proc/stat minus the bench's process tree) used ${(100 * mean).toFixed(1)}% of its cores on average over the run, at most ${(100 * worst.share).toFixed(1)}% (in the interval ending at "${worst.until}").`;
  const conditions = `## Conditions\n\n- Started ${m.startedAt}, took ${m.durationSec} s; git ${m.git ?? 'unknown'}.\n- ${m.cpu}; Node ${m.node}; load average at start ${m.loadavgAtStart.join(' / ')}.\n- autocannon ${m.versions.autocannon} (in the bench process), undici ${m.versions.undici}, graphql ${m.versions.graphql}, ioredis ${m.versions.ioredis}, redis-server ${m.versions.redis} (no persistence), nginx ${m.versions.nginx ?? `skipped: ${m.nginxSkipped}`}.\n- Settings: ${JSON.stringify(m.settings)}.\n- Every process (load generator, proxy, upstream, Redis) shares the same 2 cores: read ratios and CPU per request, not absolute req/s.\n- ${busy}${noise}${m.idleWait?.waitedSec ? `\n- Waited ${m.idleWait.waitedSec} s for other test suites to finish before starting.` : ''}\n- Raw JSON: \`${m.work}/results.json\` (gitignored).`;

  const generated = `# Benchmark results\n\nGenerated by \`npm run bench\` (bench/run.mjs); how to run and read it: [README.md](README.md).\n\n${sections.join('\n\n')}\n\n${conditions}\n`;
  let analysis = `\n${ANALYSIS_MARKER}\n`;
  if (existsSync('bench/RESULTS.md')) {
    const old = readFileSync('bench/RESULTS.md', 'utf8');
    const at = old.indexOf(ANALYSIS_MARKER);
    if (at >= 0) analysis = `\n${old.slice(at)}`;
  }
  return { table: consoleParts.join('\n\n'), markdown: generated + analysis };
}
