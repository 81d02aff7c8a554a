/**
 * Create or edit a webhook (HTTP / Email tabs): the condition is checked as it is typed (the
 * parse error under the field, with a caret at its position), Test Webhook sends the unsaved
 * form once and shows the target's answer here, and the API's validation problems are shown
 * under the fields they name.
 */
import type { Ref } from 'preact';
import { useRef, useState } from 'preact/hooks';
import { admin, api, ApiError, enc } from './api.js';
import { deleteWebhook, EnableToggle, type Webhook } from './webhook-parts.js';
import { documentOf, initialState, problemsByField, type FormState } from './webhook-document.js';
import { ConditionField, DeliveryFields, EmailFields, fieldAria, FieldErrors, HttpFields, type FieldsProps } from './webhook-fields.js';
import { EntryDetail, StatusBadge } from './log-entry-view.js';
import { ErrorBox, html, Time } from './ui.js';

let pendingCondition: string | null = null;
let flash: string | null = null;

/** "Make a condition from this request" (Recording): the next new-webhook form starts with it. */
export function prefillCondition(condition: string): void {
  pendingCondition = condition;
}

/** Takes the condition "Make a condition from this request" left for the next new form. */
function takePendingCondition(): string | null {
  const prefill = pendingCondition;
  pendingCondition = null;
  return prefill;
}

type TestResult = { entry?: any; error?: unknown } | null;

/** Save and Test Webhook: both send the form's document; their progress, problems and the test's answer. */
function useWebhookActions(s: FormState, webhook: Webhook | null, current: Webhook | null, onSaved?: () => void) {
  const [saving, setSaving] = useState(false);
  const [saveError, setSaveError] = useState<unknown>(null);
  const [testing, setTesting] = useState(false);
  const [testResult, setTestResult] = useState<TestResult>(null);
  const testPanel = useRef<HTMLDivElement>(null);

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

  return { saving, saveError, setSaveError, testing, testResult, testPanel, save, test };
}

/** The HTTP / Email tabs of a new webhook (arrow keys move between them). */
function TypeTabs({ type, update }: { type: FormState['type']; update: (change: Partial<FormState>) => void }) {
  return html`<div class="tabs" role="tablist" aria-label="Webhook type">
    ${(['http', 'email'] as const).map(
      (t) =>
        html`<button
          type="button"
          role="tab"
          id=${`tab-${t}`}
          aria-selected=${type === t ? 'true' : 'false'}
          tabindex=${type === t ? 0 : -1}
          onClick=${() => update({ type: t })}
          onKeyDown=${(e: KeyboardEvent) => {
            if (e.key === 'ArrowRight' || e.key === 'ArrowLeft') {
              const next = t === 'http' ? 'email' : 'http';
              // Both tabs are always rendered: focus moves now, not a frame after the
              // re-render, so a key pressed meanwhile already lands on the new tab.
              document.getElementById(`tab-${next}`)?.focus();
              update({ type: next });
            }
          }}
        >
          ${t === 'http' ? 'HTTP' : 'Email'}
        </button>`,
    )}
  </div>`;
}

/** Above the fields: the flash message, why the webhook was not saved, and the type (a badge once saved, tabs before). */
function FormHeader({
  webhook,
  type,
  update,
  message,
  general,
  fields,
}: {
  webhook: Webhook | null;
  type: FormState['type'];
  update: (change: Partial<FormState>) => void;
  message: string | null;
  general: string[];
  fields: Record<string, string[]>;
}) {
  return html`${message && html`<p class="notice" role="status">${message}</p>`}
  ${general.length > 0 && html`<div class="alert" role="alert"><strong>The webhook was not saved:</strong> ${general.map((g) => html`<div>${g}</div>`)}</div>`}
  ${Object.keys(fields).length > 0 && general.length === 0 && html`<div class="alert" role="alert">The webhook was not saved: fix the fields marked below.</div>`}
  ${
    webhook
      ? html`<p class="row">
          <span class="badge type">${type === 'http' ? 'HTTP' : 'Email'}</span> <span class="muted small">Created <${Time} value=${webhook.createdAt} />, updated <${Time} value=${webhook.updatedAt} /></span>
        </p>`
      : html`<${TypeTabs} type=${type} update=${update} />`
  }`;
}

/** Below the fields: Enabled for a new webhook; for a stored one, its switch and its signing secret. */
function StateFields({ webhook, current, s, set, onToggled }: { webhook: Webhook | null; current: Webhook | null; s: FormState; set: FieldsProps['set']; onToggled: (w: Webhook) => void }) {
  const [showSecret, setShowSecret] = useState(false);
  const editing = !!webhook;
  return html`${
    !editing &&
    html`<p>
      <label class="inline" for="wh-enabled"><input id="wh-enabled" type="checkbox" checked=${s.enabled} onChange=${set('enabled')} /> Enabled (fires as soon as it is saved)</label>
    </p>`
  }
  ${editing && current && html`<p class="row"><span>State:</span> <${EnableToggle} webhook=${current} onChanged=${onToggled} /></p>`}
  ${
    editing &&
    webhook!.secret &&
    html`<label for="wh-secret">Signing secret (Standard Webhooks)</label>
      <div class="row">
        <input id="wh-secret" class="code" style="flex:1" type=${showSecret ? 'text' : 'password'} readonly value=${webhook!.secret} />
        <button type="button" aria-pressed=${showSecret ? 'true' : 'false'} onClick=${() => setShowSecret(!showSecret)}>${showSecret ? 'Hide' : 'Show'}</button>
      </div>`
  }`;
}

function FormActions({ webhook, saving, testing, onTest, onError }: { webhook: Webhook | null; saving: boolean; testing: boolean; onTest: () => void; onError: (err: unknown) => void }) {
  const editing = !!webhook;
  return html`<div class="row" style="margin-top:1rem">
      <button type="submit" class="primary" disabled=${saving}>${saving ? 'Saving…' : editing ? 'Save changes' : 'Save webhook'}</button>
      <button type="button" onClick=${onTest} disabled=${testing}>${testing ? 'Sending…' : 'Test Webhook'}</button>
      ${
        editing
          ? html`<button
              type="button"
              class="danger"
              onClick=${async () => {
                try {
                  if (await deleteWebhook(webhook!)) location.hash = '#/webhooks';
                } catch (err) {
                  onError(err);
                }
              }}
            >
              Delete webhook
            </button>`
          : html`<a href="#/webhooks">Cancel</a>`
      }
    </div>
    <p class="hint">Test Webhook sends this form, unsaved, once now, for a sample <code>POST /sample/orders</code> answered 201, and shows what the target answered. Nothing is stored.</p>`;
}

/** What the target answered Test Webhook (focused when it comes). */
function TestResultPanel({ result, panelRef }: { result: TestResult; panelRef: Ref<HTMLDivElement> }) {
  if (!result) return null;
  return html`<section class="panel" aria-labelledby="test-title" tabindex="-1" ref=${panelRef} style="margin-top:1rem">
    <h2 id="test-title">Test result</h2>
    ${
      result.error
        ? html`<${ErrorBox} error=${result.error} />`
        : html`<div role="status">
              <p class="row">
                <${StatusBadge} status=${result.entry.status} />
                <span>Target answered <strong>${result.entry.summary.statusCode ?? 'nothing'}</strong> in ${result.entry.durationMs} ms</span>
              </p>
              ${result.entry.summary.error && html`<p class="field-error">${result.entry.summary.error}</p>`}
            </div>
            <${EntryDetail} entry=${result.entry} open=${['response']} />`
    }
  </section>`;
}

export function WebhookForm({ webhook, onSaved }: { webhook: Webhook | null; onSaved?: () => void }) {
  const [s, setS] = useState<FormState>(() => initialState(webhook, takePendingCondition()));
  const [message] = useState(() => {
    const m = flash;
    flash = null;
    return m;
  });
  const [current, setCurrent] = useState(webhook);
  const { saving, saveError, setSaveError, testing, testResult, testPanel, save, test } = useWebhookActions(s, webhook, current, onSaved);
  const set =
    <K extends keyof FormState>(key: K) =>
    (e: Event) => {
      const target = e.target as HTMLInputElement;
      const value = (target.type === 'checkbox' ? target.checked : target.value) as FormState[K];
      setS((old) => ({ ...old, [key]: value }));
    };
  const { fields, general } = problemsByField(saveError);
  const editing = !!webhook;
  const update = (change: Partial<FormState>) => setS((o) => ({ ...o, ...change }));
  const { invalid, described } = fieldAria(fields);
  const props: FieldsProps = { s, fields, set, update };

  return html`<form class="panel" onSubmit=${save} novalidate>
    <${FormHeader} webhook=${webhook} type=${s.type} update=${update} message=${message} general=${general} fields=${fields} />
    <div role=${editing ? undefined : 'tabpanel'} aria-labelledby=${editing ? undefined : `tab-${s.type}`}>
      <label for="wh-name">Name</label>
      <input id="wh-name" type="text" value=${s.name} onInput=${set('name')} aria-invalid=${invalid('name')} aria-describedby=${described('name')} required />
      <${FieldErrors} id="name-error" problems=${fields.name} />

      <${ConditionField} ...${props} />

      ${s.type === 'http' ? html`<${HttpFields} ...${props} />` : html`<${EmailFields} ...${props} />`}

      <${DeliveryFields} ...${props} />

      <${StateFields} webhook=${webhook} current=${current} s=${s} set=${set} onToggled=${(w: Webhook) => (setCurrent(w), setS((o) => ({ ...o, enabled: w.enabled })))} />
    </div>

    <${FormActions} webhook=${webhook} saving=${saving} testing=${testing} onTest=${test} onError=${setSaveError} />

    <${TestResultPanel} result=${testResult} panelRef=${testPanel} />
  </form>`;
}
