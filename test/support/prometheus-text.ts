/**
 * A strict reader of the Prometheus text exposition format (0.0.4), for tests: every family
 * declared once by `# HELP` and `# TYPE` before its samples, every sample named after its family
 * (histograms: `_bucket`, `_sum`, `_count`; summaries: the name, `_sum`, `_count`), labels well
 * quoted, values numbers, no family's samples split by another's, and histogram buckets
 * cumulative up to `+Inf` = `_count`. Throws naming the first line that breaks a rule.
 */
export interface Family {
  name: string;
  type: string;
  help: string;
  samples: Array<{ name: string; labels: Record<string, string>; value: number }>;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)(?: -?\d+)?$/;
const LABEL = /\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\["\\n])*)"\s*(?:,|$)/y;

function parseLabels(text: string, line: string): Record<string, string> {
  const labels: Record<string, string> = {};
  LABEL.lastIndex = 0;
  while (LABEL.lastIndex < text.length) {
    const at = LABEL.lastIndex;
    const m = LABEL.exec(text);
    if (!m || LABEL.lastIndex === at) throw new Error(`bad labels in: ${line}`);
    if (m[1]! in labels) throw new Error(`label ${m[1]} twice in: ${line}`);
    labels[m[1]!] = m[2]!;
  }
  return labels;
}

function parseValue(text: string, line: string): number {
  if (text === '+Inf') return Infinity;
  if (text === '-Inf') return -Infinity;
  // Prometheus reads values with Go's ParseFloat, which takes NaN in any case; prom-client writes
  // `Nan` for a mean of no samples (event-loop lag over a scrape interval shorter than its 10 ms sampling).
  if (text.toLowerCase() === 'nan') return NaN;
  const value = Number(text);
  if (text === '' || Number.isNaN(value)) throw new Error(`value is not a number in: ${line}`);
  return value;
}

function belongs(family: Family, sample: string): boolean {
  if (family.type === 'histogram') return [`${family.name}_bucket`, `${family.name}_sum`, `${family.name}_count`].includes(sample);
  if (family.type === 'summary') return [family.name, `${family.name}_sum`, `${family.name}_count`].includes(sample);
  return sample === family.name;
}

function checkHistogram(family: Family): void {
  const series = new Map<string, { buckets: number[]; inf?: number; count?: number }>();
  for (const s of family.samples) {
    const { le, ...rest } = s.labels;
    const key = JSON.stringify(Object.entries(rest).sort());
    const entry = series.get(key) ?? { buckets: [] };
    series.set(key, entry);
    if (s.name.endsWith('_bucket')) {
      if (le === undefined) throw new Error(`${s.name} without le`);
      if (le === '+Inf') entry.inf = s.value;
      else entry.buckets.push(s.value);
    } else if (s.name.endsWith('_count')) entry.count = s.value;
  }
  for (const [key, e] of series) {
    for (let i = 1; i < e.buckets.length; i++) if (e.buckets[i]! < e.buckets[i - 1]!) throw new Error(`${family.name} ${key}: buckets not cumulative`);
    if (e.inf === undefined || e.inf !== e.count) throw new Error(`${family.name} ${key}: +Inf bucket ${e.inf} is not _count ${e.count}`);
  }
}

export function parsePrometheusText(text: string): Map<string, Family> {
  if (!text.endsWith('\n')) throw new Error('the exposition does not end with a newline');
  const families = new Map<string, Family>();
  const helps = new Map<string, string>();
  let current: Family | null = null;
  for (const line of text.slice(0, -1).split('\n')) {
    if (line === '') continue;
    const help = /^# HELP ([a-zA-Z_:][a-zA-Z0-9_:]*) (.*)$/.exec(line);
    const type = /^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram|summary|untyped)$/.exec(line);
    if (help) {
      if (helps.has(help[1]!) || families.has(help[1]!)) throw new Error(`${help[1]} declared twice`);
      helps.set(help[1]!, help[2]!);
    } else if (type) {
      if (families.has(type[1]!)) throw new Error(`${type[1]} declared twice`);
      current = { name: type[1]!, type: type[2]!, help: helps.get(type[1]!) ?? '', samples: [] };
      families.set(current.name, current);
    } else if (line.startsWith('#')) {
      throw new Error(`not a HELP or TYPE line: ${line}`);
    } else {
      const m = SAMPLE.exec(line);
      if (!m) throw new Error(`not a sample line: ${line}`);
      if (!current || !belongs(current, m[1]!)) throw new Error(`sample outside its family's block: ${line}`);
      current.samples.push({ name: m[1]!, labels: parseLabels(m[2] ?? '', line), value: parseValue(m[3]!, line) });
    }
  }
  for (const family of families.values()) if (family.type === 'histogram') checkHistogram(family);
  return families;
}
