/** Recording (SPEC §7.4): start, a live list of captured requests with each webhook's evaluation, countdown, Stop, and a condition from a request. */
import { useEffect, useState } from 'preact/hooks';
import { admin, api } from './api.js';
import { prefillCondition } from './webhook-form.js';
import { confirmAction, Empty, ErrorBox, html, Json, PageTitle, Time } from './ui.js';

interface Recorded {
  eventId: string;
  timestamp: { $date: number };
  method: string;
  path: string;
  query: Record<string, string | string[]>;
  headers: Record<string, string | string[]>;
  body: unknown;
  response: { statusCode: number };
  completed: boolean;
  webhooks: Array<{ id: string; name: string; enabled: boolean; matched: boolean }>;
}

interface RecordingView {
  active: boolean;
  startedAt: { $date: number } | null;
  endsAt: { $date: number } | null;
  windowSeconds: number;
  total: number;
  requests: Recorded[];
}

/** A condition matching this request's method and path (quoted, so any path parses). */
export function conditionFor(r: Pick<Recorded, 'method' | 'path'>): string {
  const quoted = r.path.includes("'") ? `"${r.path}"` : `'${r.path}'`;
  return `method(${r.method}) and path(${quoted})`;
}

// eslint-disable-next-line max-lines-per-function -- a UI component: one page's state, effects and markup read together
export function RecordingPage() {
  const [view, setView] = useState<RecordingView | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [now, setNow] = useState(Date.now());
  const [open, setOpen] = useState<string | null>(null);

  const load = () =>
    api<RecordingView>('GET', admin('/webhooks/recording?pagesize=100')).then(
      (r) => (setView(r.data), setError(null)),
      (err: unknown) => setError(err),
    );
  useEffect(() => {
    void load();
  }, []);
  const active = !!view?.active && (view.endsAt?.$date ?? 0) > now;
  useEffect(() => {
    if (!active) return;
    // Live: the list every second while the recording runs, and the countdown with it.
    const timer = setInterval(() => {
      setNow(Date.now());
      void load();
    }, 1000);
    return () => clearInterval(timer);
  }, [active]);

  const start = async () => {
    try {
      const r = await api<RecordingView>('POST', admin('/webhooks/recording'));
      setNow(Date.now());
      setView(r.data);
      setError(null);
    } catch (err) {
      setError(err);
    }
  };
  const stop = async () => {
    try {
      await api('DELETE', admin('/webhooks/recording'));
      setNow(Date.now());
      await load();
    } catch (err) {
      setError(err);
    }
  };
  const restart = async () => {
    if (view && view.requests.length > 0 && !(await confirmAction('Start a new recording?', html`<p>The ${view.total} requests captured so far are discarded.</p>`, 'Start new recording'))) return;
    await start();
  };
  const remaining = active ? Math.max(0, Math.ceil(((view!.endsAt?.$date ?? 0) - now) / 1000)) : 0;
  const requests = view?.requests ?? [];

  return html`<main id="main">
    <${PageTitle}>Recording<//>
    <p class="muted">
      A recording captures every request through Outrigger for ${view?.windowSeconds ?? 60} seconds, on every replica, whatever the conditions say, with each webhook's evaluation: read real paths and
      body fields before you write a condition.
    </p>
    <div class="toolbar">
      ${
        active
          ? html`<p class="notice" role="status" style="margin:0">Recording… <span class="countdown" aria-live="off">${remaining} s</span> left</p>
              <button type="button" class="danger" onClick=${stop}>Stop</button>`
          : html`<button type="button" class="primary" onClick=${restart}>Start Recording</button>`
      }
    </div>
    <${ErrorBox} error=${error} />
    ${
      view &&
      requests.length === 0 &&
      (active
        ? html`<${Empty} title="Waiting for requests…"
            ><p>Send a request through Outrigger (not to <code>/_admin</code>, <code>/_health</code> or <code>/_metrics</code>, which are never recorded). It appears here within a second.</p><//
          >`
        : html`<${Empty} title="Nothing recorded.">
            <p>Press <strong>Start Recording</strong>, then use your application as usual. Each request shows up here, and <em>Make a condition</em> turns one into a new webhook's condition.</p><//
          >`)
    }
    ${
      requests.length > 0 &&
      html`<p class="muted small">${view!.total} request${view!.total === 1 ? '' : 's'} captured${active ? '' : view!.endsAt ? html`; the recording ended <${Time} value=${view!.endsAt} />` : ''}.</p>
        <ul class="cards" aria-label="Recorded requests">
          ${requests.map(
            (r) =>
              html`<li class="card" key=${r.eventId}>
                <div class="head">
                  <span class="title mono">${r.method} ${r.path}</span>
                  <span class=${`badge ${r.response.statusCode < 400 ? 'success' : 'failed'}`}>${r.response.statusCode}</span>
                  <span class="small"><${Time} value=${r.timestamp} /></span>
                </div>
                ${!r.completed && html`<p class="warning small">The client left before the answer was complete: no webhook fires for it.</p>`}
                <div class="row small" aria-label="Webhook evaluations">
                  ${
                    r.webhooks.length === 0
                      ? html`<span class="muted">No webhooks yet.</span>`
                      : r.webhooks.map(
                          (w) => html`<span class=${`badge ${w.matched ? 'success' : 'neutral'}`}>${w.name}: ${w.matched ? 'matches' : 'no match'}${w.enabled ? '' : ' (disabled)'}</span>`,
                        )
                  }
                </div>
                <div class="row">
                  <button type="button" onClick=${() => (prefillCondition(conditionFor(r)), (location.hash = '#/webhooks/new'))}>Make a condition from this request</button>
                  <button type="button" aria-expanded=${open === r.eventId ? 'true' : 'false'} onClick=${() => setOpen(open === r.eventId ? null : r.eventId)}>
                    ${open === r.eventId ? 'Hide request' : 'Show request'}
                  </button>
                </div>
                ${open === r.eventId && html`<${Json} value=${{ query: r.query, headers: r.headers, body: r.body }} label="Recorded request" />`}
              </li>`,
          )}
        </ul>`
    }
  </main>`;
}
