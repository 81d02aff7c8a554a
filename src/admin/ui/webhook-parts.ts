/** What the webhook list, a webhook's page and its form share: the document's shape, the enable switch, the delete. */
import { useState } from 'preact/hooks';
import { admin, api, enc } from './api.js';
import { confirmAction, ErrorBox, html, Time, type EpochDate } from './ui.js';

export interface Webhook {
  _id: string;
  name: string;
  type: 'http' | 'email';
  condition: string;
  enabled: boolean;
  url?: string;
  email?: { to: string[]; cc?: string[]; subject: string; bodyType: 'json' | 'html'; bodyTemplate: string };
  timeout_ms?: number;
  headers?: Record<string, string>;
  transform?: { enabled: boolean; template?: string };
  maxPerSecond?: number;
  retrySchedule?: Array<number | string>;
  secret?: string;
  disabledReason?: string;
  disabledAt?: EpochDate;
  createdAt?: EpochDate;
  updatedAt?: EpochDate;
}

/** "Disabled automatically" (a failing target, SPEC §7.1), when the webhook says so. */
export function AutoDisabled({ webhook }: { webhook: Webhook }) {
  if (webhook.enabled || !webhook.disabledReason) return null;
  return html`<p class="warning small">
    Disabled automatically${webhook.disabledAt ? html` on <${Time} value=${webhook.disabledAt} />` : ''}: ${webhook.disabledReason}. Fix the target, then enable the webhook again.
  </p>`;
}

export function EnableToggle({ webhook, onChanged }: { webhook: Webhook; onChanged: (w: Webhook) => void }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const toggle = async () => {
    setBusy(true);
    setError(null);
    try {
      const res = await api<Webhook>('PATCH', admin(`/webhooks/${enc(webhook._id)}`), { enabled: !webhook.enabled });
      onChanged(res.data);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return html`<span class="row">
    <label class="inline switch"><input type="checkbox" role="switch" aria-label=${`Enabled: ${webhook.name}`} checked=${webhook.enabled} disabled=${busy} onChange=${toggle} /> Enabled</label>
    ${!webhook.enabled && html`<span class="badge disabled">Disabled</span>`}
    <${ErrorBox} error=${error} />
  </span>`;
}

export async function deleteWebhook(webhook: Webhook): Promise<boolean> {
  const ok = await confirmAction(
    `Delete the webhook "${webhook.name}"?`,
    html`<p>It stops firing at once and retries still pending for it are dropped. Its logs stay readable until they expire. This cannot be undone.</p>`,
    'Delete webhook',
  );
  if (!ok) return false;
  await api('DELETE', admin(`/webhooks/${enc(webhook._id)}`));
  return true;
}
