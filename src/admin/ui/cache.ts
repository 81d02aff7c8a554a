/** The response cache (SPEC §12): per rule, hits, misses, the hit ratio and the bytes held, as this replica counts them (`GET <admin>/cache`). */
import { useState } from 'preact/hooks';
import { admin, api, ApiError } from './api.js';
import { confirmAction, Empty, ErrorBox, html, PageTitle, useLoad } from './ui.js';

interface RuleStats {
  rule: string;
  hits: number;
  misses: number;
  revalidated: number;
  bypassed: number;
  hitRatio: number | null;
  stores: number;
  evictions: number;
  bytes: number;
}

interface CacheState {
  entries: number;
  bytes: number;
  maxBytes: number;
  storing: boolean;
  rules: Array<{ name: string; maxAgeSeconds: number }>;
  byRule: RuleStats[];
}

const count = new Intl.NumberFormat('en');

function bytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

function ratio(value: number | null) {
  if (value === null) return html`<span class="muted">no lookups yet</span>`;
  const percent = Math.round(value * 1000) / 10;
  return html`<span class="ratio"
    ><meter min="0" max="1" low="0.5" high="0.8" optimum="1" value=${value} aria-label="Hit ratio"></meter> <strong>${percent}%</strong></span
  >`;
}

function RuleRow({ s, maxAge }: { s: RuleStats; maxAge: number | undefined }) {
  const answers = s.rule.startsWith('graphql:');
  return html`<tr>
    <th scope="row"><code>${s.rule}</code> ${answers ? html`<span class="badge type">whole GraphQL answers</span>` : maxAge !== undefined ? html`<span class="small muted">${maxAge} s</span>` : html`<span class="badge disabled">no longer configured</span>`}</th>
    <td class="num">${count.format(s.hits)}</td>
    <td class="num">${count.format(s.misses)}</td>
    <td>${ratio(s.hitRatio)}</td>
    <td class="num">${bytes(s.bytes)}</td>
    <td class="num small muted">${count.format(s.stores)} / ${count.format(s.evictions)}</td>
  </tr>`;
}

export function CachePage() {
  const state = useLoad(() => api<CacheState>('GET', admin('/cache')), []);
  const [error, setError] = useState<unknown>(null);
  const data = state.data?.data;
  const missing = state.error instanceof ApiError && state.error.status === 404;
  const purge = async () => {
    if (!(await confirmAction('Purge the whole cache?', html`<p>Every replica drops every cached answer; the next reads go to the backend.</p>`, 'Purge'))) return;
    setError(null);
    try {
      await api('DELETE', admin('/cache'));
      state.reload();
    } catch (err) {
      setError(err);
    }
  };
  const maxAge = new Map((data?.rules ?? []).map((r) => [r.name, r.maxAgeSeconds]));
  return html`<main id="main">
    <${PageTitle}>Response cache<//>
    <p class="muted">This replica's numbers since it started (each replica keeps its own; the metrics <code>outrigger_cache_*</code> add them up). The hit ratio counts hits over the lookups that could hit.</p>
    <${ErrorBox} error=${missing ? null : (state.error ?? error)} />
    ${missing && html`<${Empty} title="No response cache"><p>This service caches nothing: <code>cache.rules</code> is empty and no GraphQL app sets <code>descriptor.cache</code>.</p><//>`}
    ${
      data &&
      html`<div class="row small" aria-label="Cache totals">
          <span><strong>${count.format(data.entries)}</strong> entries</span>
          <span><strong>${bytes(data.bytes)}</strong> of ${bytes(data.maxBytes)}</span>
          ${data.storing ? '' : html`<span class="badge disabled">not storing: Redis is away</span>`}
          <button type="button" onClick=${() => state.reload()}>Refresh</button>
          <button type="button" class="danger" onClick=${purge}>Purge all</button>
        </div>
        <div class="table-wrap">
          <table>
            <caption class="visually-hidden">
              Hits, misses, hit ratio and bytes per cache rule
            </caption>
            <thead>
              <tr>
                <th scope="col">Rule</th>
                <th scope="col" class="num">Hits</th>
                <th scope="col" class="num">Misses</th>
                <th scope="col">Hit ratio</th>
                <th scope="col" class="num">Bytes</th>
                <th scope="col" class="num">Stored / evicted</th>
              </tr>
            </thead>
            <tbody>
              ${data.byRule.map((s) => html`<${RuleRow} key=${s.rule} s=${s} maxAge=${maxAge.get(s.rule)} />`)}
            </tbody>
          </table>
        </div>`
    }
  </main>`;
}
