/**
 * The webhook form's fields, a group per component: the condition (checked as it is typed, the
 * parse error under the field with a caret at its position), the HTTP target, the email, and the
 * delivery pace. Each shows the API's problems for its fields under them.
 */
import { useEffect, useState } from 'preact/hooks';
import { admin, api } from './api.js';
import type { FormState } from './webhook-document.js';
import { html } from './ui.js';

const EXAMPLE_TEMPLATE = '{"text": "{{request.method}} {{request.path}} answered {{response.statusCode}}", "id": "{{request.body._id}}"}';

/** What every group of fields gets from the form. */
export interface FieldsProps {
  s: FormState;
  /** The API's problems, by field. */
  fields: Record<string, string[]>;
  /** An input's handler that stores its value (or checked state) under `key`. */
  set: <K extends keyof FormState>(key: K) => (e: Event) => void;
  update: (change: Partial<FormState>) => void;
}

/** `aria-invalid` and `aria-describedby` of a field, from the problems the API named for it. */
export function fieldAria(fields: Record<string, string[]>) {
  const invalid = (name: string) => (fields[name] ? 'true' : undefined);
  const described = (name: string, hint?: string) => [hint, fields[name] ? `${name.replace('.', '-')}-error` : null].filter(Boolean).join(' ') || undefined;
  return { invalid, described };
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

export function FieldErrors({ id, problems }: { id: string; problems?: string[] }) {
  if (!problems?.length) return null;
  return html`<div class="field-error" id=${id}>${problems.map((p) => html`<div>${p}</div>`)}</div>`;
}

export function ConditionField({ s, set, fields }: FieldsProps) {
  const check = useConditionCheck(s.condition);
  const conditionInvalid = (check && !check.valid) || !!fields.condition;
  return html`<label for="wh-condition">Condition</label>
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
    <${FieldErrors} id="condition-error" problems=${fields.condition} />`;
}

export function HttpFields({ s, set, fields, update }: FieldsProps) {
  const { invalid, described } = fieldAria(fields);
  return html` <label for="wh-url">Target URL</label>
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
          string,${' '}<code>{{{x}}}</code> inserts raw.
          <button type="button" class="link" onClick=${() => update({ template: EXAMPLE_TEMPLATE, transformEnabled: true })}>Insert an example</button>
        </p>
        <${FieldErrors} id="transform-error" problems=${fields.transform} />`
    }`;
}

export function EmailFields({ s, set, fields }: FieldsProps) {
  const { invalid, described } = fieldAria(fields);
  return html` <div class="grid2">
      <div>
        <label for="wh-to">To</label>
        <input id="wh-to" type="text" value=${s.to} onInput=${set('to')} placeholder="ops@example.com" aria-invalid=${invalid('email.to')} aria-describedby=${described('email.to', 'to-hint')} />
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
    <${FieldErrors} id="email-bodyTemplate-error" problems=${fields['email.bodyTemplate']} />`;
}

/** How fast and how often deliveries go: the rate limit and the retry schedule. */
export function DeliveryFields({ s, set, fields }: FieldsProps) {
  const { invalid, described } = fieldAria(fields);
  return html`<div class="grid2">
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
  </div>`;
}
