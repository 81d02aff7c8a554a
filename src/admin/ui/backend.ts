/** Backend protection (SPEC §13): per upstream origin the adaptive limit, what is in flight and waiting, and the circuit breaker, refreshed every second. */
import { useEffect } from 'preact/hooks';
import { admin, api } from './api.js';
import { Empty, ErrorBox, html, PageTitle, Time, useLoad } from './ui.js';

interface OriginState {
  origin: string;
  limit: number;
  connections: number;
  adaptive: { minLimit: number; minLatencyMs: number | null; lastLatencyMs: number | null } | null;
  inFlight: number;
  queued: number;
  queueTimeoutMs: number;
  breaker: { enabled: boolean; state: 'closed' | 'open' | 'half-open'; retryAfterSeconds: number | null };
  retries: number;
}

const REFRESH_MS = 1000;
const BREAKER: Record<OriginState['breaker']['state'], { label: string; badge: string; text: string }> = {
  closed: { label: 'Closed', badge: 'enabled', text: 'Requests go to the backend.' },
  'half-open': { label: 'Half-open', badge: 'warn', text: 'A few probe requests decide whether it closes; the rest are refused.' },
  open: { label: 'Open', badge: 'danger', text: 'The backend failed: every request is answered 503 at once, nothing sent.' },
};

const ms = (v: number | null) => (v === null ? '—' : `${v} ms`);

/** In flight against the limit, the limit against upstream.connections: one bar. */
function LimitBar({ s }: { s: OriginState }) {
  const pct = (n: number) => `${Math.min(100, (100 * n) / s.connections)}%`;
  const label = `${s.inFlight} in flight of a limit of ${s.limit} (upstream.connections ${s.connections})${s.queued > 0 ? `, ${s.queued} waiting` : ''}`;
  return html`<div class="limit-bar" role="img" aria-label=${label}>
    <div class="limit-allowed" style=${{ width: pct(s.limit) }}></div>
    <div class=${s.inFlight >= s.limit ? 'limit-used full' : 'limit-used'} style=${{ width: pct(Math.min(s.inFlight, s.limit)) }}></div>
  </div>`;
}

function OriginCard({ s }: { s: OriginState }) {
  const breaker = BREAKER[s.breaker.state];
  const headingId = `origin-${s.origin.replace(/[^A-Za-z0-9]/g, '-')}`;
  const bound = s.limit < s.connections;
  return html`<li class="card" aria-labelledby=${headingId}>
    <div class="head">
      <h2 class="title" id=${headingId} style="margin:0">${s.origin}</h2>
      <span class=${`badge ${bound ? 'warn' : 'enabled'}`}>${bound ? 'Limited' : 'Full limit'}</span>
      <span class=${`badge ${s.breaker.enabled ? breaker.badge : 'neutral'}`} aria-label=${`Circuit breaker: ${s.breaker.enabled ? breaker.label : 'off'}`}
        >Breaker ${s.breaker.enabled ? breaker.label : 'off'}</span
      >
    </div>
    <${LimitBar} s=${s} />
    <dl class="backend-stats">
      <div><dt>Concurrency limit</dt><dd>${s.limit}<span class="muted"> of ${s.connections}${s.adaptive ? `, floor ${s.adaptive.minLimit}` : ' (adaptive off)'}</span></dd></div>
      <div><dt>In flight</dt><dd>${s.inFlight}</dd></div>
      <div><dt>Queued</dt><dd>${s.queued}<span class="muted"> (wait at most ${s.queueTimeoutMs} ms)</span></dd></div>
      <div><dt>Minimum latency</dt><dd>${ms(s.adaptive?.minLatencyMs ?? null)}</dd></div>
      <div><dt>Latest median</dt><dd>${ms(s.adaptive?.lastLatencyMs ?? null)}</dd></div>
      <div><dt>Retries</dt><dd>${s.retries}</dd></div>
    </dl>
    <p class="muted">
      ${s.breaker.enabled ? breaker.text : 'The circuit breaker is off (upstream.breaker).'}
      ${s.breaker.retryAfterSeconds !== null ? ` Probes in ${s.breaker.retryAfterSeconds} s.` : ''}
    </p>
  </li>`;
}

export function BackendPage() {
  const state = useLoad(() => api<{ origins: OriginState[] }>('GET', admin('/backend')), []);
  useEffect(() => {
    const timer = setInterval(state.reload, REFRESH_MS);
    return () => clearInterval(timer);
  }, []);
  const origins = state.data?.data.origins;
  return html`<main id="main">
    <${PageTitle}>Backend<//>
    <p class="muted">
      What stands between this replica and the backend (docs/protection.md): the limit learned from its latency, the requests in flight and waiting under it, and the circuit breaker.
      Refreshed every second${origins ? html`; last at <${Time} value=${Date.now()} />` : ''}.
    </p>
    <${ErrorBox} error=${state.error} />
    ${origins && origins.length === 0 && html`<${Empty} title="No request has gone to a backend yet." />`}
    <ul class="cards" aria-label="Backend origins">
      ${(origins ?? []).map((s) => html`<${OriginCard} key=${s.origin} s=${s} />`)}
    </ul>
  </main>`;
}
