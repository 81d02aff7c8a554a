/** API keys (SPEC §5.2): every key and own token of the service, filtered by holder or client, revoked with confirmation. */
import { useState } from 'preact/hooks';
import { admin, api, enc } from '../api.js';
import { confirmAction, Empty, ErrorBox, html, PageTitle, Pager, Time, useLoad, type EpochDate } from '../ui.js';
import { describeAmount, LimitsEditor, UsageChart, type Amount, type PolicyView } from './key-limits.js';
import { KeyTable } from './key-table.js';

/** A key as `GET /_admin/keys` lists it (the owner's page shows a subset: my-keys.ts). */
export interface KeyView {
  _id: string;
  owner: string;
  name: string;
  /** The key's first characters (SPEC §15); absent on keys issued before they were kept. */
  start?: string;
  roles: string[];
  createdAt: EpochDate;
  expiresAt: EpochDate;
  lastUsedAt?: EpochDate;
  via: string;
  client?: string;
  kind?: string;
  /** An admin's overrides of `by: key` policies (SPEC §10). */
  limits?: Record<string, Amount>;
}

const PAGESIZE = 50;

/** Holder and client, applied together by Filter; Show all clears both. */
function KeyFilter({ filtered, onFilter }: { filtered: boolean; onFilter: (filter: { owner: string; client: string }) => void }) {
  const [owner, setOwner] = useState('');
  const [client, setClient] = useState('');
  return html`<form class="toolbar" role="search" onSubmit=${(e: Event) => (e.preventDefault(), onFilter({ owner: owner.trim(), client: client.trim() }))}>
    <div class="grow">
      <label for="key-owner">Holder</label><input id="key-owner" type="search" value=${owner} onInput=${(e: Event) => setOwner((e.target as HTMLInputElement).value)} placeholder="user id" />
    </div>
    <div class="grow">
      <label for="key-client">Client</label
      ><input id="key-client" type="search" value=${client} onInput=${(e: Event) => setClient((e.target as HTMLInputElement).value)} placeholder="agent client name" />
    </div>
    <button type="submit">Filter</button>
    ${filtered && html`<button type="button" onClick=${() => (setOwner(''), setClient(''), onFilter({ owner: '', client: '' }))}>Show all</button>`}
  </form>`;
}

/** A key's row, and under it, while its limits are edited, the editor's row. */
function KeyRow({
  k,
  editing,
  policies,
  onEdit,
  onCloseLimits,
  onRevoke,
  onLimitsSaved,
}: {
  k: KeyView;
  editing: boolean;
  policies: PolicyView[];
  onEdit: () => void;
  onCloseLimits: () => void;
  onRevoke: () => void;
  onLimitsSaved: (message: string) => void;
}) {
  return html`<tr key=${k._id}>
      <td>${k.owner}</td>
      <td>${k.name}${k.kind === 'token' ? html` <span class="badge neutral">token</span>` : ''}${k.start ? html`<div class="small mono">${k.start}…</div>` : ''}</td>
      <td>${k.roles.length ? k.roles.join(', ') : html`<span class="muted">none</span>`}</td>
      <td>${k.client ?? html`<span class="muted">—</span>`}</td>
      <td>${k.via}</td>
      <td><${Time} value=${k.createdAt} /></td>
      <td>${k.lastUsedAt ? html`<${Time} value=${k.lastUsedAt} />` : html`<span class="muted">never</span>`}</td>
      <td>${(k.expiresAt?.$date ?? 0) < Date.now() ? html`<span class="badge failed">expired</span> ` : ''}<${Time} value=${k.expiresAt} /></td>
      <td><${UsageChart} keyId=${k._id} name=${k.name} /></td>
      <td>
        ${Object.entries(k.limits ?? {}).map(([name, a]) => html`<div class="small"><strong>${name}</strong>: ${describeAmount(a)}</div>`)}
        <button type="button" class="link" onClick=${onEdit} aria-expanded=${editing}>Edit limits<span class="visually-hidden"> of ${k.name}</span></button>
      </td>
      <td>
        <button type="button" class="danger" onClick=${onRevoke}>Revoke<span class="visually-hidden"> ${k.name} of ${k.owner}</span></button>
      </td>
    </tr>
    ${
      editing &&
      html`<tr key=${`${k._id}-limits`}>
        <td colspan="11">
          <${LimitsEditor} keyId=${k._id} keyName=${k.name} current=${k.limits ?? {}} policies=${policies} onSaved=${onLimitsSaved} onCancel=${onCloseLimits} />
        </td>
      </tr>`
    }`;
}

const ALL_KEYS_COLUMNS = ['Holder', 'Name', 'Roles', 'Client', 'Via', 'Created', 'Last use', 'Expires', 'Use, 30 days', 'Own limits'];

/** No key to list: none matches the filter, or the service has none yet. */
function NoKeys({ filtered }: { filtered: boolean }) {
  return filtered
    ? html`<${Empty} title="No key matches this filter."><p>Holder and client must match exactly.</p><//>`
    : html`<${Empty} title="No API keys on this service yet.">
        <p>
          Users issue their own keys with <code>POST /keys</code> once a permission offers them (an <code>apiKeys</code> block), and agents get one when a user signs them in. Revoked keys are not
          listed.
        </p><//
      >`;
}

export function KeysPage() {
  const [filter, setFilter] = useState({ owner: '', client: '' });
  const [page, setPage] = useState(1);
  const [note, setNote] = useState<string | null>(null);
  const [actionError, setActionError] = useState<unknown>(null);
  const keys = useLoad(
    () => api<KeyView[]>('GET', admin(`/keys?page=${page}&pagesize=${PAGESIZE}${filter.owner ? `&owner=${enc(filter.owner)}` : ''}${filter.client ? `&client=${enc(filter.client)}` : ''}`)),
    [page, filter.owner, filter.client],
  );
  const rows = keys.data?.data ?? [];
  const policies = useLoad(() => api<{ policies: PolicyView[] }>('GET', admin('/limits')), []);
  const [editing, setEditing] = useState<string | null>(null);
  const filtered = !!(filter.owner || filter.client);

  const revoke = async (k: KeyView) => {
    setActionError(null);
    setNote(null);
    const ok = await confirmAction(
      `Revoke ${k.kind === 'token' ? 'the token' : 'the key'} "${k.name}" of ${k.owner}?`,
      html`<p>Every client using it gets 401 within seconds, on every replica. This cannot be undone: ${k.owner} must issue a new key.</p>`,
      'Revoke',
    );
    if (!ok) return;
    try {
      await api('DELETE', admin(`/keys/${enc(k._id)}`));
      setNote(`Revoked "${k.name}" of ${k.owner}.`);
      keys.reload();
    } catch (err) {
      setActionError(err);
    }
  };

  return html`<main id="main">
    <${PageTitle}>API keys<//>
    <${KeyFilter} filtered=${filtered} onFilter=${(f: { owner: string; client: string }) => (setPage(1), setFilter(f))} />
    ${note && html`<p class="notice" role="status">${note}</p>`}
    <${ErrorBox} error=${keys.error || actionError} />
    ${keys.data && rows.length === 0 && html`<${NoKeys} filtered=${filtered} />`}
    ${
      rows.length > 0 &&
      html`<${KeyTable} caption="API keys of this service" columns=${ALL_KEYS_COLUMNS}>
        ${rows.map(
          (k) =>
            html`<${KeyRow}
              key=${k._id}
              k=${k}
              editing=${editing === k._id}
              policies=${policies.data?.data.policies ?? []}
              onEdit=${() => setEditing(editing === k._id ? null : k._id)}
              onCloseLimits=${() => setEditing(null)}
              onRevoke=${() => revoke(k)}
              onLimitsSaved=${(message: string) => (setEditing(null), setNote(message), keys.reload())}
            />`,
        )}
      <//>`
    }
    <${Pager} page=${page} pagesize=${PAGESIZE} total=${keys.data?.total ?? null} onPage=${setPage} label="Keys" />
  </main>`;
}
