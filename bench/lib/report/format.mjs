/**
 * What every section of the report formats with: numbers, spreads (median (min–max)), Markdown
 * tables, per-round ratios, and a target judged on a spread.
 */
import { median, spread } from '../load.mjs';

export const f = (v, d = 0) => (v === null || v === undefined || Number.isNaN(v) ? '–' : Number(v).toFixed(d));
export const sp = (s, d = 0) => (s.median === null ? '–' : s.n > 1 ? `${f(s.median, d)} (${f(s.min, d)}–${f(s.max, d)})` : f(s.median, d));
export const table = (head, rows) => [`| ${head.join(' | ')} |`, `|${head.map(() => '---').join('|')}|`, ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');

/** Per-round ratios a[i]/b[i] of a metric. */
export function ratios(a, b, metric = (r) => r.reqPerSec) {
  const out = [];
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    const x = metric(a[i]);
    const y = metric(b[i]);
    if (x && y) out.push(x / y);
  }
  return spread(out);
}
/**
 * Baseline CPU per request over this config's: the throughput ratio a CPU-bound proxy would
 * reach; from the saturating runs, or (`fixed`) from the fixed-rate runs.
 */
export function cpuRatio(rows, id, baseId, fixed = false) {
  const runs = (rid) => (fixed ? rows[rid]?.fixedRate : rows[rid]?.rounds) ?? [];
  const m = (rid) => median(runs(rid).map((r) => r.cpuMicrosPerRequest?.proxy));
  const x = m(id);
  const y = m(baseId);
  return x && y ? y / x : null;
}

/** A target judged on a spread of per-round ratios: met when its median is on the right side of `required`. */
export function target(name, judgedOn, measured, op, required, beside) {
  return { name, judgedOn, measured, op, required, beside, met: measured.median !== null && (op === '≥' ? measured.median >= required : measured.median <= required) };
}
