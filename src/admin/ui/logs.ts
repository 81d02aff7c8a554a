/** A webhook's Logs tab: status filter, Refresh, Clear Logs, entries expandable into the six sections of SPEC §7.3, Resend. */
import { useRef, useState } from 'preact/hooks';
import { admin, api, enc } from './api.js';
import type { Webhook } from './webhook-parts.js';
import { EntryDetail, StatusBadge } from './log-entry-view.js';
import { Empty, ErrorBox, errorText, html, Pager, Time, useLoad } from './ui.js';

const PAGESIZE = 20;

function Entry({ entry, webhook, onResent }: { entry: any; webhook: Webhook; onResent: () => void }) {
  const [expanded, setExpanded] = useState(false);
  const [note, setNote] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(null);
  const s = entry.summary ?? {};
  const resend = async () => {
    setError(null);
    setNote(null);
    try {
      const res = await api<any>('POST', admin(`/webhooks/${enc(webhook._id)}/logs/${enc(entry._id)}/resend`));
      setNote(`Resend queued as attempt ${res.data.attempt}. Refresh in a moment to see it.`);
      setTimeout(onResent, 1500);
    } catch (err) {
      setError(err);
    }
  };
  const detailId = `entry-${entry._id}`;
  return html`<li class="card">
    <div class="head">
      <${StatusBadge} status=${entry.status} />
      <span class="title mono">${s.method} ${s.path}</span>
      <span class="small"><${Time} value=${entry.timestamp} /></span>
    </div>
    <div class="row small muted meta">
      ${entry.status !== 'skipped' && html`<span>Attempt ${entry.attempt}</span>`} ${s.statusCode != null && html`<span>Target answered ${s.statusCode}</span>`}
      ${entry.status !== 'skipped' && html`<span>${entry.durationMs} ms</span>`} ${entry.nextAttemptAt && html`<span>Next attempt <${Time} value=${entry.nextAttemptAt} /></span>`}
    </div>
    ${s.error && html`<p class="field-error small">${s.error}</p>`}
    <div class="row">
      <button type="button" aria-expanded=${expanded ? 'true' : 'false'} aria-controls=${detailId} onClick=${() => setExpanded(!expanded)}>${expanded ? 'Hide details' : 'Show details'}</button>
      ${entry.status !== 'skipped' && html`<button type="button" onClick=${resend}>Resend</button>`}
    </div>
    ${note && html`<p class="notice small" role="status">${note}</p>`}
    <${ErrorBox} error=${error} />
    <div id=${detailId} hidden=${!expanded}>${expanded && html`<${EntryDetail} entry=${entry} />`}</div>
  </li>`;
}

function ClearLogs({ webhook, onCleared }: { webhook: Webhook; onCleared: () => void }) {
  const dialog = useRef<HTMLDialogElement>(null);
  const [mode, setMode] = useState<'all' | 'before'>('all');
  const [before, setBefore] = useState('');
  const [error, setError] = useState<string | null>(null);
  const close = () => dialog.current?.close();
  const clear = async (e: Event) => {
    e.preventDefault();
    setError(null);
    let query = '';
    if (mode === 'before') {
      const at = new Date(before);
      if (!before || Number.isNaN(at.getTime())) return setError('Choose the date and time: entries older than it are deleted.');
      query = `?before=${enc(at.toISOString())}`;
    }
    try {
      await api('DELETE', admin(`/webhooks/${enc(webhook._id)}/logs${query}`));
      close();
      onCleared();
    } catch (err) {
      setError(errorText(err));
    }
  };
  return html`<span>
    <button type="button" class="danger" onClick=${() => (setError(null), dialog.current?.showModal())}>Clear Logs</button>
    <dialog ref=${dialog} aria-labelledby="clear-title">
      <form onSubmit=${clear}>
        <h2 id="clear-title">Clear the logs of "${webhook.name}"?</h2>
        <p>Deleted entries cannot be recovered, resent or read again.</p>
        <fieldset>
          <legend>Which entries</legend>
          <label class="inline"><input type="radio" name="clear-mode" checked=${mode === 'all'} onChange=${() => setMode('all')} /> All entries</label><br />
          <label class="inline"><input type="radio" name="clear-mode" checked=${mode === 'before'} onChange=${() => setMode('before')} /> Entries older than a date</label>
          ${
            mode === 'before' &&
            html`<label for="clear-before">Older than (your time zone)</label>
              <input id="clear-before" type="datetime-local" step="1" value=${before} onInput=${(e: Event) => setBefore((e.target as HTMLInputElement).value)} />`
          }
        </fieldset>
        ${error && html`<p class="field-error" role="alert">${error}</p>`}
        <div class="actions">
          <button type="button" onClick=${close}>Cancel</button>
          <button type="submit" class="danger">Delete entries</button>
        </div>
      </form>
    </dialog>
  </span>`;
}

/** Re-queues every event whose last attempt failed since a date (POST .../recover). */
function RecoverFailed({ webhook, onDone }: { webhook: Webhook; onDone: (message: string) => void }) {
  const dialog = useRef<HTMLDialogElement>(null);
  const [since, setSince] = useState('');
  const [error, setError] = useState<string | null>(null);
  const open = () => {
    // Default: one hour ago, in the viewer's zone, as datetime-local wants it.
    const d = new Date(Date.now() - 3600_000);
    const local = new Date(d.getTime() - d.getTimezoneOffset() * 60_000).toISOString().slice(0, 19);
    setSince(local);
    setError(null);
    dialog.current?.showModal();
  };
  const submit = async (e: Event) => {
    e.preventDefault();
    const at = new Date(since);
    if (!since || Number.isNaN(at.getTime())) return setError('Choose the date and time to recover from.');
    try {
      const res = await api<{ requeued: number; alreadyScheduled: number; more: boolean }>('POST', admin(`/webhooks/${enc(webhook._id)}/recover`), { since: at.toISOString() });
      dialog.current?.close();
      const r = res.data;
      onDone(
        `Re-queued ${r.requeued} event${r.requeued === 1 ? '' : 's'}${r.alreadyScheduled ? `; ${r.alreadyScheduled} already have a retry scheduled` : ''}${r.more ? '; more remain, recover again' : ''}. Refresh in a moment to see the new attempts.`,
      );
    } catch (err) {
      setError(errorText(err));
    }
  };
  return html`<span>
    <button type="button" onClick=${open}>Recover failed…</button>
    <dialog ref=${dialog} aria-labelledby="recover-title">
      <form onSubmit=${submit}>
        <h2 id="recover-title">Recover failed events of "${webhook.name}"</h2>
        <p>Every event whose last attempt failed since this time is sent again now (same <code>webhook-id</code>). Events with a retry still scheduled are left to it.</p>
        <label for="recover-since">Since (your time zone)</label>
        <input id="recover-since" type="datetime-local" step="1" value=${since} onInput=${(e: Event) => setSince((e.target as HTMLInputElement).value)} />
        ${error && html`<p class="field-error" role="alert">${error}</p>`}
        <div class="actions">
          <button type="button" onClick=${() => dialog.current?.close()}>Cancel</button>
          <button type="submit" class="primary">Recover</button>
        </div>
      </form>
    </dialog>
  </span>`;
}

/**
 * The view opens on deliveries, success and failed (SPEC §15): skipped entries of requests that
 * did not match are one filter away, not the bulk of the first page.
 */
const DEFAULT_STATUS = 'success,failed';
const STATUS_NAMES: Record<string, string> = { 'success,failed': 'success or failed', '': '', success: 'success', failed: 'failed', skipped: 'skipped' };

export function LogsTab({ webhook }: { webhook: Webhook }) {
  const [status, setStatus] = useState(DEFAULT_STATUS);
  const [page, setPage] = useState(1);
  const [note, setNote] = useState<string | null>(null);
  const logs = useLoad(() => api<any[]>('GET', admin(`/webhooks/${enc(webhook._id)}/logs?page=${page}&pagesize=${PAGESIZE}${status ? `&status=${status}` : ''}`)), [webhook._id, status, page]);
  const entries = logs.data?.data ?? [];
  return html`<section aria-labelledby="logs-title">
    <h2 id="logs-title" class="visually-hidden">Logs</h2>
    <div class="toolbar">
      <div>
        <label for="log-status">Status</label>
        <select id="log-status" value=${status} onChange=${(e: Event) => (setPage(1), setStatus((e.target as HTMLSelectElement).value))}>
          <option value="success,failed">Success and failed</option>
          <option value="">All</option>
          <option value="success">Success</option>
          <option value="failed">Failed</option>
          <option value="skipped">Skipped</option>
        </select>
      </div>
      <button type="button" onClick=${() => (setNote(null), logs.reload())}>Refresh</button>
      <${RecoverFailed} webhook=${webhook} onDone=${(m: string) => setNote(m)} />
      <${ClearLogs} webhook=${webhook} onCleared=${() => (setNote('Logs cleared.'), setPage(1), logs.reload())} />
      <span class="muted small" aria-live="polite"
        >${logs.loading ? 'Loading…' : logs.data ? `${logs.data.total ?? entries.length} ${(logs.data.total ?? entries.length) === 1 ? 'entry' : 'entries'}` : ''}</span
      >
    </div>
    ${note && html`<p class="notice" role="status">${note}</p>`}
    <${ErrorBox} error=${logs.error} />
    ${
      logs.data &&
      entries.length === 0 &&
      (status
        ? html`<${Empty} title=${`No ${STATUS_NAMES[status] ?? status} entries.`}
            ><p>
              Choose "All" to see every entry${status === DEFAULT_STATUS ? ', or "Skipped" for the requests that did not match the condition (at most one every 10 s)' : ''}.
            </p><//
          >`
        : html`<${Empty} title="No log entries yet.">
            <p>
              An entry appears for each delivery attempt once a request matches the condition (<code>${webhook.condition}</code>). Send such a request through Outrigger, or use Test Webhook on the
              <a href=${`#/webhooks/${enc(webhook._id)}`}>Settings</a> tab (test sends are not logged).
            </p>
          <//>`)
    }
    ${
      entries.length > 0 &&
      html`<ul class="cards" aria-label="Log entries">
        ${entries.map((e) => html`<${Entry} key=${e._id} entry=${e} webhook=${webhook} onResent=${logs.reload} />`)}
      </ul>`
    }
    <${Pager} page=${page} pagesize=${PAGESIZE} total=${logs.data?.total ?? null} onPage=${setPage} label="Log" />
  </section>`;
}
