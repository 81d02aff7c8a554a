/** One webhook log entry as the console shows it (SPEC §7.3's sections, folded), shared by the Logs tab and the form's test send. */
import { html, Json } from './ui.js';

export function StatusBadge({ status }: { status: string }) {
  return html`<span class=${`badge ${status}`}>${status}</span>`;
}

function Section({ title, open, children }: { title: string; open: boolean; children: unknown }) {
  return html`<details class="section" open=${open}>
    <summary>${title}</summary>
    <div>${children}</div>
  </details>`;
}

function Headers({ headers }: { headers?: Record<string, string | string[]> }) {
  const entries = Object.entries(headers ?? {});
  if (!entries.length) return html`<p class="muted small">No headers.</p>`;
  return html`<dl class="kv small mono">
    ${entries.map(
      ([k, v]) =>
        html`<dt>${k}</dt>
          <dd>${Array.isArray(v) ? v.join(', ') : v}</dd>`,
    )}
  </dl>`;
}

function Body({ body, label }: { body: unknown; label: string }) {
  if (body === null || body === undefined || body === '') return html`<p class="muted small">No body.</p>`;
  return html`<${Json} value=${body} label=${label} />`;
}

function queryText(query: Record<string, string | string[]> | undefined): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query ?? {})) for (const one of Array.isArray(v) ? v : [v]) params.append(k, one);
  const text = params.toString();
  return text ? `?${text}` : '';
}

/** The six sections of a log entry; `open` names those shown expanded at first. */
export function EntryDetail({ entry, open = [] }: { entry: any; open?: string[] }) {
  const d = entry.detail ?? {};
  const req = d.incomingRequest ?? {};
  const is = (name: string) => open.includes(name);
  return html`<div class="entry-detail">
    <${Section} title="Incoming request" open=${is('incomingRequest')}>
      <p class="mono">${req.method} ${req.path}${queryText(req.query)}</p>
      <${Headers} headers=${req.headers} />
      <${Body} body=${req.body} label="Incoming request body" />
      ${req.bodyTruncated && html`<p class="hint">The body was cut at the capture limit.</p>`}
    <//>
    <${Section} title="Condition" open=${is('condition')}>
      <p><strong>${d.condition?.matched ? 'Matched' : 'Did not match'}</strong>: ${d.condition?.reason}</p>
    <//>
    <${Section} title="Transformation" open=${is('transformation')}>
      ${
        d.transformation
          ? html`${d.transformation.error && html`<p class="field-error">${d.transformation.error}</p>`}
              <h3>Output</h3>
              <${Body} body=${d.transformation.output} label="Transformation output" />
              <h3>Input (the template's variables)</h3>
              <${Json} value=${d.transformation.input} label="Transformation input" />`
          : html`<p class="muted small">No template: the default payload was sent.</p>`
      }
    <//>
    <${Section} title="Outgoing request" open=${is('outgoingRequest')}>
      ${
        d.outgoingRequest
          ? html`<p class="mono">${d.outgoingRequest.method} ${d.outgoingRequest.url}</p>
              <${Headers} headers=${d.outgoingRequest.headers} /><${Body} body=${d.outgoingRequest.body} label="Outgoing request body" />`
          : html`<p class="muted small">Nothing was sent.</p>`
      }
    <//>
    <${Section} title="Response" open=${is('response')}>
      ${
        d.response
          ? html`<p>Status <strong>${d.response.statusCode}</strong></p>
              <${Headers} headers=${d.response.headers} /><${Body} body=${d.response.body} label="Target response body" />`
          : html`<p class="muted small">No answer from the target.</p>`
      }
    <//>
    <${Section} title="Error" open=${is('error')}> ${d.error ? html`<p class="field-error">${d.error}</p>` : html`<p class="muted small">No error.</p>`} <//>
  </div>`;
}
