/**
 * The response cache's section of the report (bench/lib/cache-section.mjs measures it): one table
 * and three targets (SPEC §12, issue 47).
 */
import { f, sp, table } from './format.mjs';

/** @returns {{markdown: string, console: string, targets: object[]}} */
export function renderCache(cache) {
  const { throughput: t, mix: m, invalidation: inv } = cache;
  const rows = [
    ['cached read ÷ minimal undici forwarder (same read)', sp(t.ratio, 2), `${f(t.cachedReqPerSec)} vs ${f(t.undiciReqPerSec)} req/s; last answer \`${t.cacheStatus ?? '–'}\``],
    [
      '90 % reads / 10 % writes: backend reads without → with the cache',
      `${m.uncached.backendReads} → ${m.cached.backendReads}`,
      `${f(100 * m.fewerBackendReads, 1)} % fewer; ${m.cached.reads} reads, ${m.cached.writes} writes`,
    ],
    [
      'the least backend reads any cache that drops on writes makes for the same interleaving',
      `${m.cached.idealMisses ?? '–'}`,
      `${f(100 * (m.idealFewerBackendReads ?? NaN), 1)} % fewer: one per write whose document was read again before its next write`,
    ],
    ["stale reads after the reader's own write (with the cache)", String(m.cached.stale), `errors ${m.cached.errors} (without the cache: stale ${m.uncached.stale}, errors ${m.uncached.errors})`],
    [
      'invalidation A → B: write answered on A to the first fresh read on B, ms',
      `p50 ${f(inv.p50, 1)} / p99 ${f(inv.p99, 1)}`,
      `max ${f(inv.max, 1)} ms over ${inv.trials} writes; B's entry was a hit before the write in ${inv.trials - inv.notHitBeforeWrite} of ${inv.trials}`,
    ],
  ];
  const body = table(['row', 'measured', 'beside it'], rows);
  const markdown = `## 6. Response cache\n\nbench/lib/cache-section.mjs (SPEC §12, issue 47) over the stand-in with 1,000 documents. The throughput row runs the undici forwarder and Outrigger (a rule covering \`GET ${t.path}\`) in new processes each round, shuffled; ratio per round, median (min–max). The mix runs the same seeded operations (16 clients, uniform over the 1,000 documents read and written by id, each client writing only its own documents and checking it reads its own writes) without and with a rule, after every document was read once (the steady state); backend reads are counted at the stand-in. Each write drops its document, and RESTHeart answers a write with no body to refill it from, so the first read of that document after the write's answer must reach the backend: nine writes in ten are followed by a read before the next write of their document, so the bound is about 1 − 0.9 × writes ÷ reads = 90 % fewer, and the row beside it counts that bound for the run's own interleaving (reads overlapping a write counted as hits). The invalidation row reads B every millisecond after A answered a write until B answers the new state.\n\n${body}`;
  const targets = [
    {
      name: 'response cache: a cached read ÷ the minimal undici forwarder on the same read (issue 47)',
      judgedOn: 'req/s',
      measured: t.ratio,
      op: '≥',
      required: 1.5,
      beside: '',
      met: (t.ratio.median ?? 0) >= 1.5,
    },
    {
      name: 'response cache: fewer backend reads with 90 % reads / 10 % writes over 1,000 documents (issue 47)',
      judgedOn: 'fraction, one run',
      measured: { median: m.fewerBackendReads, n: 1 },
      op: '≥',
      required: 0.9,
      beside: `stale ${m.cached.stale}`,
      met: m.fewerBackendReads >= 0.9 && m.cached.stale === 0,
    },
    {
      name: 'response cache: invalidation across two replicas, p99 (issue 47)',
      judgedOn: 'ms, one run',
      measured: { median: inv.p99, n: 1 },
      op: '≤',
      required: 50,
      beside: `p50 ${f(inv.p50, 1)} ms`,
      met: inv.p99 <= 50,
    },
  ];
  return { markdown, console: `6. Response cache\n${body}`, targets };
}
