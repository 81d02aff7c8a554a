import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createMetrics } from '../../../src/observability/metrics.js';
import { renderProcessMetrics } from '../../../src/observability/process-metrics.js';

const dashboard = JSON.parse(readFileSync(resolve(import.meta.dirname, '../../../docs/grafana-dashboard.json'), 'utf8'));
const exprs: string[] = dashboard.panels.flatMap((p: any) => p.targets.map((t: any) => t.expr));

/** The names /_metrics exposes (the registry and prom-client's process metrics): each `# TYPE` line, plus a histogram's _bucket, _sum and _count series. */
async function exportedNames(): Promise<Set<string>> {
  const names = new Set<string>();
  for (const m of (createMetrics().registry.render() + (await renderProcessMetrics())).matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    names.add(m[1]!);
    if (m[2] === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) names.add(`${m[1]}${suffix}`);
  }
  return names;
}

describe('docs/grafana-dashboard.json', () => {
  it('is a Grafana dashboard: title, uid, panels with a Prometheus target each, inside a 24-column grid', () => {
    expect(dashboard).toMatchObject({ title: 'Outrigger', uid: expect.any(String), schemaVersion: expect.any(Number) });
    expect(dashboard.panels.length).toBeGreaterThan(5);
    for (const panel of dashboard.panels) {
      expect(panel.targets.length).toBeGreaterThan(0);
      expect(panel.datasource.type).toBe('prometheus');
      expect(panel.gridPos.x + panel.gridPos.w).toBeLessThanOrEqual(24);
    }
    expect(new Set(dashboard.panels.map((p: any) => p.id)).size).toBe(dashboard.panels.length);
  });

  it("queries only metrics /_metrics exports, and every one of Outrigger's own", async () => {
    const exported = await exportedNames();
    expect(exported.size).toBeGreaterThan(5);
    const used = new Set<string>();
    for (const expr of exprs) {
      const names = [...expr.matchAll(/\b(outrigger|process|nodejs)_[a-z0-9_]+/g)].map((m) => m[0]);
      expect(names.length, `no metric in ${expr}`).toBeGreaterThan(0);
      for (const name of names) {
        expect(exported.has(name), `${name} is not exported on /_metrics`).toBe(true);
        used.add(name.replace(/_(bucket|sum|count)$/, ''));
      }
    }
    // Every one of Outrigger's own series has a panel; of prom-client's standard ones, those a panel picked.
    const base = [...exported].filter((n) => n.startsWith('outrigger_') && (!/_(bucket|sum|count)$/.test(n) || !exported.has(n.replace(/_(bucket|sum|count)$/, ''))));
    for (const name of base) expect(used.has(name), `${name} has no panel`).toBe(true);
  });
});
