/**
 * Create or edit a webhook (HTTP / Email tabs): the condition is checked as it is typed (the
 * parse error under the field, with a caret at its position), Test Webhook sends the unsaved
 * form once and shows the target's answer here, and the API's validation problems are shown
 * under the fields they name.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { admin, api, ApiError, enc } from './api.js';
import { deleteWebhook, EnableToggle, type Webhook } from './webhook-parts.js';
import { EntryDetail, StatusBadge } from './log-entry-view.js';
import { ErrorBox, errorText, html, Time } from './ui.js';

let pendingCondition: string | null = null;
let flash: string | null = null;

/** "Make a condition from this request" (Recording): the next new-webhook form starts with it. */
export function prefillCondition(condition: string): void {
  pendingCondition = condition;
}

const EXAMPLE_TEMPLATE = '{"text": "{{request.method}} {{request.path}} answered {{response.statusCode}}", "id": "{{request.body._id}}"}';

interface FormState {
  type: 'http' | 'email';
  name: string;
  condition: string;
  enabled: boolean;
  url: string;
  timeout: string;
  headers: string;
  transformEnabled: boolean;
  template: string;
  to: string;
  cc: string;
  subject: string;
  bodyType: 'json' | 'html';
  bodyTemplate: string;
  maxPerSecond: string;
  retrySchedule: string;
}

function initialState(webhook: Webhook | null): FormState {
  const prefill = pendingCondition;
  pendingCondition = null;
  return {
    type: webhook?.type ?? 'http',
    name: webhook?.name ?? '',
    condition: webhook?.condition ?? prefill ?? '',
    enabled: webhook?.enabled ?? true,
    url: webhook?.url ?? '',
    timeout: String(webhook?.timeout_ms ?? 5000),
    headers: Object.entries(webhook?.headers ?? {})
      .map(([k, v]) => `${k}: ${v}`)
      .join('\n'),
    transformEnabled: webhook?.transform?.enabled ?? false,
    template: webhook?.transform?.template ?? '',
    to: (webhook?.email?.to ?? []).join(', '),
    cc: (webhook?.email?.cc ?? []).join(', '),
    subject: webhook?.email?.subject ?? '',
    bodyType: webhook?.email?.bodyType ?? 'html',
    bodyTemplate: webhook?.email?.bodyTemplate ?? '',
    maxPerSecond: webhook?.maxPerSecond === undefined ? '' : String(webhook.maxPerSecond),
    retrySchedule: webhook?.retrySchedule === undefined ? '' : webhook.retrySchedule.length === 0 ? 'none' : webhook.retrySchedule.join(', '),
  };
}

function list(text: string): string[] {
  return text
    .split(/[,\s]+/)
    .map((s) => s.trim())
    .filter(Boolean);
}

/** What the form edits; every other field of a stored webhook (its secret, ...) is kept as it is. */
const FORM_FIELDS = ['_id', 'name', 'type', 'condition', 'enabled', 'url', 'timeout_ms', 'headers', 'transform', 'email', 'maxPerSecond', 'retrySchedule', 'createdAt', 'updatedAt'];

/**
 * The retry schedule as typed: empty for the service's schedule, "none" for no retries, else
 * delays separated by commas (a bare number is seconds, as the API takes it). The API checks
 * each delay and its problems show under the field.
 */
function retryScheduleOf(text: string): Array<number | string> | undefined {
  const trimmed = text.trim();
  if (trimmed === '') return undefined;
  if (trimmed.toLowerCase() === 'none') return [];
  return list(trimmed).map((d) => (/^\d+(\.\d+)?$/.test(d) ? Number(d) : d));
}

/** The document the API takes, from the form; `headers` lines that are not `Name: value` are reported. */
function documentOf(s: FormState, stored: Webhook | null): { doc: Record<string, unknown>; problem: string | null } {
  const kept = Object.fromEntries(Object.entries(stored ?? {}).filter(([k]) => !FORM_FIELDS.includes(k)));
  const doc: Record<string, unknown> = { ...kept, ...(stored ? { _id: stored._id } : {}), name: s.name, type: s.type, condition: s.condition, enabled: s.enabled };
  // A bad number goes to the API as typed (NaN would be sent as null), so its problem names the field.
  if (s.maxPerSecond.trim() !== '') doc.maxPerSecond = Number.isFinite(Number(s.maxPerSecond)) ? Number(s.maxPerSecond) : s.maxPerSecond;
  const schedule = retryScheduleOf(s.retrySchedule);
  if (schedule) doc.retrySchedule = schedule;
  if (s.type === 'http') {
    doc.url = s.url;
    if (s.timeout.trim() !== '') doc.timeout_ms = Number(s.timeout);
    const headers: Record<string, string> = {};
    for (const line of s.headers.split('\n')) {
      if (line.trim() === '') continue;
      const colon = line.indexOf(':');
      if (colon <= 0) return { doc, problem: `headers: "${line.trim()}" is not "Name: value"` };
      headers[line.slice(0, colon).trim()] = line.slice(colon + 1).trim();
    }
    if (Object.keys(headers).length) doc.headers = headers;
    if (s.transformEnabled || s.template) doc.transform = { enabled: s.transformEnabled, ...(s.template ? { template: s.template } : {}) };
  } else {
    const cc = list(s.cc);
    doc.email = { to: list(s.to), ...(cc.length ? { cc } : {}), subject: s.subject, bodyType: s.bodyType, bodyTemplate: s.bodyTemplate };
  }
  return { doc, problem: null };
}

const FIELDS = [
  'name',
  'condition',
  'url',
  'timeout_ms',
  'headers',
  'transform',
  'email.to',
  'email.cc',
  'email.subject',
  'email.bodyType',
  'email.bodyTemplate',
  'enabled',
  'maxPerSecond',
  'retrySchedule',
];

/** Sorts the API's problems (`field ...; other ...`) under the fields they name; the rest go on top. */
function problemsByField(error: unknown): { fields: Record<string, string[]>; general: string[] } {
  const fields: Record<string, string[]> = {};
  const general: string[] = [];
  if (!(error instanceof ApiError) || error.status !== 400) return { fields, general: error ? [errorText(error)] : [] };
  for (const raw of error.problems) {
    const problem = raw.replace(/^webhook\./, '');
    const field = FIELDS.filter((f) => problem === f || problem.startsWith(`${f} `) || problem.startsWith(`${f}:`) || problem.startsWith(`${f}.`) || problem.startsWith(`${f}[`)).sort(
      (a, b) => b.length - a.length,
    )[0];
    if (field) (fields[field] ??= []).push(problem);
    else general.push(problem);
  }
  return { fields, general };
}

interface ConditionCheck {
  valid: boolean;
  error?: string;
  position?: number;
}

/** The condition's line with a caret under the offending character. */
function Caret({ source, position }: { source: string; position: number }) {
  const lineStart = source.lastIndexOf('\n', position - 1) + 1;
  const lineEnd = source.indexOf('\n', position) === -1 ? source.length : source.indexOf('\n', position);
  const line = source.slice(lineStart, lineEnd);
  const lead = `${line}\n${' '.repeat(position - lineStart)}`;
  return html`<pre aria-hidden="true">${lead}<span class="caret">^</span></pre>`;
}

function useConditionCheck(condition: string): ConditionCheck | null {
  const [check, setCheck] = useState<ConditionCheck | null>(null);
  useEffect(() => {
    if (condition.trim() === '') return setCheck(null);
    let live = true;
    const timer = setTimeout(() => {
      api<ConditionCheck>('POST', admin('/conditions/check'), { condition, kind: 'webhook' }).then(
        (r) => live && setCheck(r.data),
        () => live && setCheck(null),
      );
    }, 250);
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [condition]);
  return check;
}

function FieldErrors({ id, problems }: { id: string; problems?: string[] }) {
  if (!problems?.length) return null;
  return html`<div class="field-error" id=${id}>${problems.map((p) => html`<div>${p}</div>`)}</div>`;
}

// eslint-disable-next-line max-lines-per-function -- a UI component: one form's fields, state and markup read together
export function WebhookForm({ webhook, onSaved }: { webhook: Webhook | null; onSaved?: () => void }) {
  const [s, setS] = useState<FormState>(() => initialState(webhook));
  const [saving, setSaving] = useState(false);
  const [saveError, setSaveError] = useState<unknown>(null);
  const [testing, setTesting] = useState(false);
  const [testResult, setTestResult] = useState<{ entry?: any; error?: unknown } | null>(null);
  const [showSecret, setShowSecret] = useState(false);
  const [message] = useState(() => {
    const m = flash;
    flash = null;
    return m;
  });
  const [current, setCurrent] = useState(webhook);
  const check = useConditionCheck(s.condition);
  const testPanel = useRef<HTMLDivElement>(null);
  const set =
    <K extends keyof FormState>(key: K) =>
    (e: Event) => {
      const target = e.target as HTMLInputElement;
      const value = (target.type === 'checkbox' ? target.checked : target.value) as FormState[K];
      setS((old) => ({ ...old, [key]: value }));
    };
  const { fields, general } = problemsByField(saveError);
  const conditionInvalid = (check && !check.valid) || !!fields.condition;
  const editing = !!webhook;

  const save = async (e: Event) => {
    e.preventDefault();
    const { doc, problem } = documentOf(s, current);
    if (problem) return setSaveError(new ApiError(400, problem));
    setSaving(true);
    setSaveError(null);
    try {
      if (webhook) {
        await api('PUT', admin(`/webhooks/${enc(webhook._id)}`), doc);
        flash = 'Saved.';
        onSaved?.();
      } else {
        const res = await api<Webhook>('POST', admin('/webhooks'), doc);
        flash = `Webhook "${res.data.name}" created. It fires on the next matching request; its Logs tab shows each delivery.`;
        location.hash = `#/webhooks/${enc(res.data._id)}`;
      }
    } catch (err) {
      setSaveError(err);
      // Move to the first problem so a keyboard user lands where the fix is.
      requestAnimationFrame(() => (document.querySelector('[aria-invalid="true"]') as HTMLElement | null)?.focus());
    } finally {
      setSaving(false);
    }
  };

  const test = async () => {
    const { doc, problem } = documentOf(s, current);
    if (problem) return setTestResult({ error: new ApiError(400, problem) });
    setTesting(true);
    setTestResult(null);
    try {
      const res = await api<any>('POST', admin('/webhooks/test'), { webhook: doc });
      setTestResult({ entry: res.data });
    } catch (err) {
      setTestResult({ error: err });
    } finally {
      setTesting(false);
      requestAnimationFrame(() => testPanel.current?.focus());
    }
  };

  const invalid = (name: string) => (fields[name] ? 'true' : undefined);
  const described = (name: string, hint?: string) => [hint, fields[name] ? `${name.replace('.', '-')}-error` : null].filter(Boolean).join(' ') || undefined;

  return html`<form class="panel" onSubmit=${save} novalidate>
    ${message && html`<p class="notice" role="status">${message}</p>`}
    ${general.length > 0 && html`<div class="alert" role="alert"><strong>The webhook was not saved:</strong> ${general.map((g) => html`<div>${g}</div>`)}</div>`}
    ${Object.keys(fields).length > 0 && general.length === 0 && html`<div class="alert" role="alert">The webhook was not saved: fix the fields marked below.</div>`}
    ${
      editing
        ? html`<p class="row">
            <span class="badge type">${s.type === 'http' ? 'HTTP' : 'Email'}</span>
            <span class="muted small">Created <${Time} value=${webhook!.createdAt} />, updated <${Time} value=${webhook!.updatedAt} /></span>
          </p>`
        : html`<div class="tabs" role="tablist" aria-label="Webhook type">
            ${(['http', 'email'] as const).map(
              (t) =>
                html`<button
                  type="button"
                  role="tab"
                  id=${`tab-${t}`}
                  aria-selected=${s.type === t ? 'true' : 'false'}
                  tabindex=${s.type === t ? 0 : -1}
                  onClick=${() => setS((o) => ({ ...o, type: t }))}
                  onKeyDown=${(e: KeyboardEvent) => {
                    if (e.key === 'ArrowRight' || e.key === 'ArrowLeft') {
                      const next = t === 'http' ? 'email' : 'http';
                      // Both tabs are always rendered: focus moves now, not a frame after the
                      // re-render, so a key pressed meanwhile already lands on the new tab.
                      document.getElementById(`tab-${next}`)?.focus();
                      setS((o) => ({ ...o, type: next }));
                    }
                  }}
                >
                  ${t === 'http' ? 'HTTP' : 'Email'}
                </button>`,
            )}
          </div>`
    }
    <div role=${editing ? undefined : 'tabpanel'} aria-labelledby=${editing ? undefined : `tab-${s.type}`}>
      <label for="wh-name">Name</label>
      <input id="wh-name" type="text" value=${s.name} onInput=${set('name')} aria-invalid=${invalid('name')} aria-describedby=${described('name')} required />
      <${FieldErrors} id="name-error" problems=${fields.name} />

      <label for="wh-condition">Condition</label>
      <textarea
        id="wh-condition"
        class="code"
        rows="2"
        value=${s.condition}
        onInput=${set('condition')}
        spellcheck="false"
        aria-invalid=${conditionInvalid ? 'true' : undefined}
        aria-describedby="condition-hint condition-check condition-error"
      ></textarea>
      <p class="hint" id="condition-hint">Same language as ACL permissions, e.g. <code>method(POST) and path-prefix(/shop/orders) and equals(%s, 201)</code>. Checked as you type.</p>
      <div id="condition-check" aria-live="polite">
        ${
          check &&
          !check.valid &&
          html`<div class="field-error">
            <div>${check.error} (at position ${check.position})</div>
            <${Caret} source=${s.condition} position=${check.position ?? 0} />
          </div>`
        }
        ${check && check.valid && html`<p class="field-ok">The condition parses.</p>`}
      </div>
      <${FieldErrors} id="condition-error" problems=${fields.condition} />

      ${
        s.type === 'http'
          ? html` <label for="wh-url">Target URL</label>
              <input
                id="wh-url"
                type="url"
                class="code"
                value=${s.url}
                onInput=${set('url')}
                placeholder="https://hooks.example.com/outrigger"
                aria-invalid=${invalid('url')}
                aria-describedby=${described('url')}
              />
              <${FieldErrors} id="url-error" problems=${fields.url} />
              <div class="grid2">
                <div>
                  <label for="wh-timeout">Timeout (ms)</label>
                  <input
                    id="wh-timeout"
                    type="number"
                    min="1000"
                    max="30000"
                    step="500"
                    value=${s.timeout}
                    onInput=${set('timeout')}
                    aria-invalid=${invalid('timeout_ms')}
                    aria-describedby=${described('timeout_ms')}
                  />
                  <${FieldErrors} id="timeout_ms-error" problems=${fields.timeout_ms} />
                </div>
                <div>
                  <label for="wh-headers">Extra headers</label>
                  <textarea
                    id="wh-headers"
                    class="code"
                    rows="2"
                    value=${s.headers}
                    onInput=${set('headers')}
                    placeholder="Authorization: Bearer token-for-the-receiver"
                    aria-invalid=${invalid('headers')}
                    aria-describedby=${described('headers', 'headers-hint')}
                  ></textarea>
                  <p class="hint" id="headers-hint">One <code>Name: value</code> per line.</p>
                  <${FieldErrors} id="headers-error" problems=${fields.headers} />
                </div>
              </div>
              <p>
                <label class="inline" for="wh-transform"
                  ><input id="wh-transform" type="checkbox" checked=${s.transformEnabled} onChange=${set('transformEnabled')} /> Send a template instead of the default payload</label
                >
              </p>
              ${
                (s.transformEnabled || s.template) &&
                html`<label for="wh-template">Template (Mustache)</label>
                  <textarea
                    id="wh-template"
                    class="code"
                    rows="4"
                    value=${s.template}
                    onInput=${set('template')}
                    aria-invalid=${invalid('transform')}
                    aria-describedby=${described('transform', 'template-hint')}
                  ></textarea>
                  <p class="hint" id="template-hint">
                    Variables: <code>request.method</code>, <code>request.path</code>, <code>request.body.field</code>, <code>response.statusCode</code>… In JSON, <code>{{x}}</code> is escaped for a
                    string, <code>{{{x}}}</code> inserts raw.
                    <button type="button" class="link" onClick=${() => setS((o) => ({ ...o, template: EXAMPLE_TEMPLATE, transformEnabled: true }))}>Insert an example</button>
                  </p>
                  <${FieldErrors} id="transform-error" problems=${fields.transform} />`
              }`
          : html` <div class="grid2">
                <div>
                  <label for="wh-to">To</label>
                  <input
                    id="wh-to"
                    type="text"
                    value=${s.to}
                    onInput=${set('to')}
                    placeholder="ops@example.com"
                    aria-invalid=${invalid('email.to')}
                    aria-describedby=${described('email.to', 'to-hint')}
                  />
                  <p class="hint" id="to-hint">Addresses separated by commas.</p>
                  <${FieldErrors} id="email-to-error" problems=${fields['email.to']} />
                </div>
                <div>
                  <label for="wh-cc">Cc (optional)</label>
                  <input id="wh-cc" type="text" value=${s.cc} onInput=${set('cc')} aria-invalid=${invalid('email.cc')} aria-describedby=${described('email.cc')} />
                  <${FieldErrors} id="email-cc-error" problems=${fields['email.cc']} />
                </div>
              </div>
              <label for="wh-subject">Subject</label>
              <input
                id="wh-subject"
                type="text"
                value=${s.subject}
                onInput=${set('subject')}
                placeholder="Refund {{request.body.id}}"
                aria-invalid=${invalid('email.subject')}
                aria-describedby=${described('email.subject')}
              />
              <${FieldErrors} id="email-subject-error" problems=${fields['email.subject']} />
              <label for="wh-bodytype">Body type</label>
              <select id="wh-bodytype" value=${s.bodyType} onChange=${set('bodyType')}>
                <option value="html">HTML</option>
                <option value="json">JSON (sent as text)</option>
              </select>
              <label for="wh-body">Body template (Mustache)</label>
              <textarea
                id="wh-body"
                class="code"
                rows="4"
                value=${s.bodyTemplate}
                onInput=${set('bodyTemplate')}
                aria-invalid=${invalid('email.bodyTemplate')}
                aria-describedby=${described('email.bodyTemplate')}
              ></textarea>
              <${FieldErrors} id="email-bodyTemplate-error" problems=${fields['email.bodyTemplate']} />`
      }

      <div class="grid2">
        <div>
          <label for="wh-rate">Max deliveries per second (optional)</label>
          <input
            id="wh-rate"
            type="number"
            min="1"
            max="10000"
            step="1"
            value=${s.maxPerSecond}
            onInput=${set('maxPerSecond')}
            placeholder="no limit"
            aria-invalid=${invalid('maxPerSecond')}
            aria-describedby=${described('maxPerSecond', 'rate-hint')}
          />
          <p class="hint" id="rate-hint">Deliveries beyond it wait their turn; none is dropped.</p>
          <${FieldErrors} id="maxPerSecond-error" problems=${fields.maxPerSecond} />
        </div>
        <div>
          <label for="wh-retries">Retry schedule (optional)</label>
          <input
            id="wh-retries"
            type="text"
            class="code"
            value=${s.retrySchedule}
            onInput=${set('retrySchedule')}
            placeholder="the service's schedule"
            aria-invalid=${invalid('retrySchedule')}
            aria-describedby=${described('retrySchedule', 'retries-hint')}
          />
          <p class="hint" id="retries-hint">Delays after a failed attempt, e.g. <code>10s, 1m, 10m</code>; <code>none</code> for no retries.</p>
          <${FieldErrors} id="retrySchedule-error" problems=${fields.retrySchedule} />
        </div>
      </div>

      ${
        !editing &&
        html`<p>
          <label class="inline" for="wh-enabled"><input id="wh-enabled" type="checkbox" checked=${s.enabled} onChange=${set('enabled')} /> Enabled (fires as soon as it is saved)</label>
        </p>`
      }
      ${editing && current && html`<p class="row"><span>State:</span> <${EnableToggle} webhook=${current} onChanged=${(w: Webhook) => (setCurrent(w), setS((o) => ({ ...o, enabled: w.enabled })))} /></p>`}
      ${
        editing &&
        webhook!.secret &&
        html`<label for="wh-secret">Signing secret (Standard Webhooks)</label>
          <div class="row">
            <input id="wh-secret" class="code" style="flex:1" type=${showSecret ? 'text' : 'password'} readonly value=${webhook!.secret} />
            <button type="button" aria-pressed=${showSecret ? 'true' : 'false'} onClick=${() => setShowSecret(!showSecret)}>${showSecret ? 'Hide' : 'Show'}</button>
          </div>`
      }
    </div>

    <div class="row" style="margin-top:1rem">
      <button type="submit" class="primary" disabled=${saving}>${saving ? 'Saving…' : editing ? 'Save changes' : 'Save webhook'}</button>
      <button type="button" onClick=${test} disabled=${testing}>${testing ? 'Sending…' : 'Test Webhook'}</button>
      ${
        editing
          ? html`<button
              type="button"
              class="danger"
              onClick=${async () => {
                try {
                  if (await deleteWebhook(webhook!)) location.hash = '#/webhooks';
                } catch (err) {
                  setSaveError(err);
                }
              }}
            >
              Delete webhook
            </button>`
          : html`<a href="#/webhooks">Cancel</a>`
      }
    </div>
    <p class="hint">Test Webhook sends this form, unsaved, once now, for a sample <code>POST /sample/orders</code> answered 201, and shows what the target answered. Nothing is stored.</p>

    ${
      testResult &&
      html`<section class="panel" aria-labelledby="test-title" tabindex="-1" ref=${testPanel} style="margin-top:1rem">
        <h2 id="test-title">Test result</h2>
        ${
          testResult.error
            ? html`<${ErrorBox} error=${testResult.error} />`
            : html`<div role="status">
                  <p class="row">
                    <${StatusBadge} status=${testResult.entry.status} />
                    <span>Target answered <strong>${testResult.entry.summary.statusCode ?? 'nothing'}</strong> in ${testResult.entry.durationMs} ms</span>
                  </p>
                  ${testResult.entry.summary.error && html`<p class="field-error">${testResult.entry.summary.error}</p>`}
                </div>
                <${EntryDetail} entry=${testResult.entry} open=${['response']} />`
        }
      </section>`
    }
  </form>`;
}
