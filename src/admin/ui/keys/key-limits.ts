/**
 * The keys page's rate-limit parts (SPEC §10): each key's last 30 days of use as a small bar
 * chart (admitted and refused requests per UTC day), and the editor of a key's own limits for
 * the service's `by: key` policies (`PATCH /_admin/keys/<id>`).
 */
import { useState } from 'preact/hooks';
import { admin, api, enc } from '../api.js';
import { ErrorBox, html, useLoad } from '../ui.js';

export interface UsageDay {
  day: string;
  requests: number;
  units: number;
  refused: number;
}

/** An override or a policy's amount as the API writes it. */
export type Amount = { limit: number; window: string } | { quota: { limit: number; period: 'day' | 'month' } };

export interface PolicyView {
  name: string;
  by: string;
  units: string;
  limit?: number;
  window?: string;
  quota?: { limit: number; period: 'day' | 'month' };
}

export function describeAmount(a: Partial<Amount> & { limit?: number; window?: string; quota?: { limit: number; period: string } }, units = 'requests'): string {
  if (a.quota) return `${a.quota.limit.toLocaleString()} ${units} per ${a.quota.period} (UTC)`;
  return `${(a.limit ?? 0).toLocaleString()} ${units} per ${a.window}`;
}

const W = 120;
const H = 28;

/** 30 bars, one per UTC day, oldest first; refused requests stacked in red on the admitted ones. */
export function UsageChart({ keyId, name, path }: { keyId: string; name: string; path?: string }) {
  // An admin reads any key's usage under the admin area; an owner reads their own under the keys route (`path`).
  const usage = useLoad(() => api<UsageDay[]>('GET', path ?? admin(`/keys/${enc(keyId)}/usage`)), [keyId, path]);
  const days = usage.data?.data;
  if (usage.error) return html`<span class="muted small">usage unavailable</span>`;
  if (!days) return html`<span class="muted small">…</span>`;
  const max = Math.max(1, ...days.map((d) => d.requests + d.refused));
  const requests = days.reduce((n, d) => n + d.requests, 0);
  const refused = days.reduce((n, d) => n + d.refused, 0);
  const bar = W / days.length;
  const label = `Use of ${name} over the last ${days.length} days: ${requests.toLocaleString()} requests admitted, ${refused.toLocaleString()} refused`;
  return html`<figure class="usage" aria-label=${label}>
    <svg width=${W} height=${H} viewBox="0 0 ${W} ${H}" role="img" aria-label=${label}>
      ${days.map((d, i) => {
        const ok = (d.requests / max) * H;
        const no = (d.refused / max) * H;
        return html`<g key=${d.day}>
          <title>${d.day}: ${d.requests} admitted (${d.units} units), ${d.refused} refused</title>
          <rect class="usage-ok" x=${i * bar + 0.5} y=${H - ok} width=${Math.max(1, bar - 1)} height=${ok} />
          <rect class="usage-refused" x=${i * bar + 0.5} y=${H - ok - no} width=${Math.max(1, bar - 1)} height=${no} />
        </g>`;
      })}
      <line class="usage-axis" x1="0" y1=${H - 0.5} x2=${W} y2=${H - 0.5} />
    </svg>
    <figcaption class="small muted">${requests.toLocaleString()} req${refused ? html`, <span class="refused">${refused.toLocaleString()} refused</span>` : ''}</figcaption>
  </figure>`;
}

type Mode = 'default' | 'window' | 'day' | 'month';

function modeOf(a: Amount | undefined): Mode {
  if (!a) return 'default';
  return 'quota' in a ? a.quota.period : 'window';
}

type Field = { mode: Mode; limit: string; window: string };

/** One `by: key` policy's override in the editor: none, a limit per window, or a quota per day or month. */
function PolicyFieldset({ keyId, policy: p, field, onChange }: { keyId: string; policy: PolicyView; field: Field; onChange: (change: Partial<Field>) => void }) {
  const id = `lim-${keyId}-${p.name}`;
  return html`<fieldset>
    <legend>${p.name} <span class="muted small">(policy: ${describeAmount(p, p.units)})</span></legend>
    <div class="row">
      <div>
        <label for=${`${id}-mode`}>Override</label>
        <select id=${`${id}-mode`} value=${field.mode} onChange=${(e: Event) => onChange({ mode: (e.target as HTMLSelectElement).value as Mode })}>
          <option value="default">the policy's own</option>
          <option value="window">a limit per window</option>
          <option value="day">a quota per UTC day</option>
          <option value="month">a quota per UTC month</option>
        </select>
      </div>
      ${
        field.mode !== 'default' &&
        html`<div>
          <label for=${`${id}-limit`}>Limit (${p.units})</label>
          <input id=${`${id}-limit`} type="number" min="1" required value=${field.limit} onInput=${(e: Event) => onChange({ limit: (e.target as HTMLInputElement).value })} />
        </div>`
      }
      ${
        field.mode === 'window' &&
        html`<div>
          <label for=${`${id}-window`}>Window</label>
          <input id=${`${id}-window`} type="text" class="code" required value=${field.window} onInput=${(e: Event) => onChange({ window: (e.target as HTMLInputElement).value })} />
          <p class="hint">1s to 1d, like 60s, 15m, 1h</p>
        </div>`
      }
    </div>
  </fieldset>`;
}

/** One form for the key's overrides of every `by: key` policy; saves them in one PATCH. */
export function LimitsEditor({
  keyId,
  keyName,
  current,
  policies,
  onSaved,
  onCancel,
}: {
  keyId: string;
  keyName: string;
  current: Record<string, Amount>;
  policies: PolicyView[];
  onSaved: (message: string) => void;
  onCancel: () => void;
}) {
  const byKey = policies.filter((p) => p.by === 'key');
  const [fields, setFields] = useState(() =>
    Object.fromEntries(
      byKey.map((p) => {
        const a = current[p.name];
        return [p.name, { mode: modeOf(a), limit: a ? String('quota' in a ? a.quota.limit : a.limit) : '', window: a && 'window' in a ? a.window : '60s' }];
      }),
    ),
  );
  const [error, setError] = useState<unknown>(null);
  const [saving, setSaving] = useState(false);
  const set = (name: string, change: Partial<Field>) => setFields((f) => ({ ...f, [name]: { ...f[name]!, ...change } }));

  const save = async (e: Event) => {
    e.preventDefault();
    setError(null);
    setSaving(true);
    const limits: Record<string, unknown> = {};
    for (const p of byKey) {
      const f = fields[p.name]!;
      const limit = Number(f.limit);
      limits[p.name] = f.mode === 'default' ? null : f.mode === 'window' ? { limit, window: f.window } : { quota: { limit, period: f.mode } };
    }
    try {
      await api('PATCH', admin(`/keys/${enc(keyId)}`), { limits });
      onSaved(`Saved the limits of "${keyName}".`);
    } catch (err) {
      setError(err);
    } finally {
      setSaving(false);
    }
  };

  if (byKey.length === 0)
    return html`<div class="panel">
      <p>No <code>by: key</code> policy is configured (<code>limits.policies</code>), so a key has no limit to override.</p>
      <button type="button" onClick=${onCancel}>Close</button>
    </div>`;
  return html`<form class="panel limits-editor" onSubmit=${save} aria-label=${`Limits of ${keyName}`}>
    <h2>Limits of “${keyName}”</h2>
    ${byKey.map((p) => html`<${PolicyFieldset} key=${p.name} keyId=${keyId} policy=${p} field=${fields[p.name]!} onChange=${(change: Partial<Field>) => set(p.name, change)} />`)}
    <${ErrorBox} error=${error} />
    <div class="actions row">
      <button type="submit" class="primary" disabled=${saving}>Save limits</button>
      <button type="button" onClick=${onCancel}>Cancel</button>
    </div>
  </form>`;
}
