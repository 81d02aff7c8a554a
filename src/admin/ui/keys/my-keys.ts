/**
 * "Your API keys" (SPEC §15): a signed-in user without an admin role lists their own keys (name,
 * start, created, last use, use), issues one (the secret shown once), rotates one with a grace
 * period they choose (at most 7 days), and revokes one. Everything goes through the keys route
 * with the user's own Basic credentials, as `curl` would (SPEC §5.2).
 */
import { useState } from 'preact/hooks';
import { api, enc, own } from '../api.js';
import { confirmAction, Empty, ErrorBox, html, PageTitle, Pager, Time, useLoad } from '../ui.js';
import type { KeyView } from './all-keys.js';
import { UsageChart } from './key-limits.js';
import { KeyTable } from './key-table.js';
import { IssueForm, RotateForm, SecretOnce, type IssuedKey } from './my-key-forms.js';

/** A key as `GET /keys` lists it to its owner: the admin list's view without owner, kind and limits. */
export interface OwnKeyView extends Omit<KeyView, 'owner' | 'kind' | 'limits'> {
  /** Set once the key was rotated: it works until `expiresAt`, its grace end. */
  replacedBy?: string;
}

const PAGESIZE = 50;

function Expiry({ k }: { k: OwnKeyView }) {
  const ended = (k.expiresAt?.$date ?? 0) <= Date.now();
  if (ended) return html`<span class="badge failed">expired</span> <${Time} value=${k.expiresAt} />`;
  if (k.replacedBy) return html`<span class="badge warn">rotated</span> <span class="small">works until</span> <${Time} value=${k.expiresAt} />`;
  return html`<${Time} value=${k.expiresAt} />`;
}

/** A key's row, and under it, while it is being rotated, the rotation's row. */
function OwnKeyRow({
  k,
  rotating,
  onRotate,
  onRotated,
  onCancel,
  onRevoke,
}: {
  k: OwnKeyView;
  rotating: boolean;
  onRotate: () => void;
  onRotated: (issued: IssuedKey) => void;
  onCancel: () => void;
  onRevoke: () => void;
}) {
  const live = (k.expiresAt?.$date ?? 0) > Date.now();
  return html`<tr key=${k._id} data-key-id=${k._id}>
      <td>${k.name}${k.client ? html` <span class="badge neutral">${k.client}</span>` : ''}</td>
      <td>${k.start ? html`<code>${k.start}…</code>` : html`<span class="muted small">not kept</span>`}</td>
      <td>${k.roles.length ? k.roles.join(', ') : html`<span class="muted">none</span>`}</td>
      <td><${Time} value=${k.createdAt} /></td>
      <td>${k.lastUsedAt ? html`<${Time} value=${k.lastUsedAt} />` : html`<span class="muted">never</span>`}</td>
      <td><${Expiry} k=${k} /></td>
      <td><${UsageChart} keyId=${k._id} name=${k.name} path=${own(`/${enc(k._id)}/usage`)} /></td>
      <td class="actions-cell">
        ${live && !k.replacedBy && html`<button type="button" onClick=${onRotate} aria-expanded=${rotating}>Rotate<span class="visually-hidden"> ${k.name}</span></button>`}
        <button type="button" class="danger" onClick=${onRevoke}>Revoke<span class="visually-hidden"> ${k.name}</span></button>
      </td>
    </tr>
    ${
      rotating &&
      html`<tr key=${`${k._id}-rotate`}>
        <td colspan="8"><${RotateForm} keyId=${k._id} keyName=${k.name} onRotated=${onRotated} onCancel=${onCancel} /></td>
      </tr>`
    }`;
}

const OWN_KEYS_COLUMNS = ['Name', 'Starts with', 'Roles', 'Created', 'Last use', 'Expires', 'Use, 30 days'];

export function MyKeysPage() {
  const [page, setPage] = useState(1);
  const [note, setNote] = useState<string | null>(null);
  const [actionError, setActionError] = useState<unknown>(null);
  const [secret, setSecret] = useState<{ issued: IssuedKey; how: string } | null>(null);
  const [rotating, setRotating] = useState<string | null>(null);
  const keys = useLoad(() => api<OwnKeyView[]>('GET', own(`?page=${page}&pagesize=${PAGESIZE}`)), [page]);
  const rows = keys.data?.data ?? [];

  const shown = (issued: IssuedKey, how: string) => (setNote(null), setRotating(null), setSecret({ issued, how }), keys.reload());
  const revoke = async (k: OwnKeyView) => {
    setActionError(null);
    setNote(null);
    const ok = await confirmAction(`Revoke the key "${k.name}"?`, html`<p>Every client using it gets 401 within seconds. This cannot be undone: you would issue a new key.</p>`, 'Revoke');
    if (!ok) return;
    try {
      await api('DELETE', own(`/${enc(k._id)}`));
      setNote(`Revoked "${k.name}".`);
      keys.reload();
    } catch (err) {
      setActionError(err);
    }
  };

  return html`<main id="main">
    <${PageTitle}>Your API keys<//>
    <p class="muted">Keys you send as <code>Authorization: Bearer …</code> instead of your password. Rotate a key to get a new secret while the old one keeps working for a while.</p>
    ${secret && html`<${SecretOnce} issued=${secret.issued} how=${secret.how} onDone=${() => setSecret(null)} />`}
    <${IssueForm} onIssued=${(issued: IssuedKey) => shown(issued, 'issued')} />
    ${note && html`<p class="notice" role="status">${note}</p>`}
    <${ErrorBox} error=${keys.error || actionError} />
    ${keys.data && rows.length === 0 && html`<${Empty} title="You have no API keys yet."><p>Issue one above; revoked keys are not listed.</p><//>`}
    ${
      rows.length > 0 &&
      html`<${KeyTable} caption="Your API keys" columns=${OWN_KEYS_COLUMNS}>
        ${rows.map(
          (k) =>
            html`<${OwnKeyRow}
              key=${k._id}
              k=${k}
              rotating=${rotating === k._id}
              onRotate=${() => setRotating(rotating === k._id ? null : k._id)}
              onRotated=${(issued: IssuedKey) => shown(issued, `rotated from "${k.name}"`)}
              onCancel=${() => setRotating(null)}
              onRevoke=${() => revoke(k)}
            />`,
        )}
      <//>`
    }
    <${Pager} page=${page} pagesize=${PAGESIZE} total=${keys.data?.total ?? null} onPage=${setPage} label="Keys" />
  </main>`;
}
