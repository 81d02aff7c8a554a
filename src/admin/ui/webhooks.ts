/** Webhooks: the list (search, paging, enable toggle, delete) and one webhook's page (Settings and Logs tabs). */
import { useState } from 'preact/hooks';
import { admin, api, enc } from './api.js';
import { LogsTab } from './logs.js';
import { Empty, ErrorBox, html, PageTitle, Pager, useLoad } from './ui.js';
import { WebhookForm } from './webhook-form.js';
import { AutoDisabled, deleteWebhook, EnableToggle, type Webhook } from './webhook-parts.js';

const PAGESIZE = 20;

function target(webhook: Webhook): string {
  if (webhook.type === 'http') return webhook.url ?? '';
  return `mailto:${[...(webhook.email?.to ?? []), ...(webhook.email?.cc ?? [])].join(', ')}`;
}

export function WebhooksPage() {
  const [search, setSearch] = useState('');
  const [query, setQuery] = useState('');
  const [page, setPage] = useState(1);
  const [actionError, setActionError] = useState<unknown>(null);
  const list = useLoad(() => api<Webhook[]>('GET', admin(`/webhooks?page=${page}&pagesize=${PAGESIZE}${query ? `&search=${enc(query)}` : ''}`)), [page, query]);
  const [changed, setChanged] = useState<Record<string, Webhook>>({});
  const items = (list.data?.data ?? []).map((w) => changed[w._id] ?? w);

  return html`<main id="main">
    <${PageTitle}>Webhooks<//>
    <form class="toolbar" role="search" onSubmit=${(e: Event) => (e.preventDefault(), setPage(1), setQuery(search.trim()))}>
      <div class="grow">
        <label for="webhook-search">Search by name, condition or URL</label>
        <input id="webhook-search" type="search" value=${search} onInput=${(e: Event) => setSearch((e.target as HTMLInputElement).value)} />
      </div>
      <button type="submit">Search</button>
      <a class="button primary" href="#/webhooks/new">New webhook</a>
    </form>
    <${ErrorBox} error=${list.error || actionError} />
    ${list.loading && !list.data ? html`<p class="muted" role="status">Loading webhooks…</p>` : null}
    ${
      list.data && items.length === 0
        ? query
          ? html`<${Empty} title=${`No webhook matches "${query}".`}
              ><p>Search looks at names, conditions and URLs. <button type="button" class="link" onClick=${() => (setSearch(''), setQuery(''))}>Show all webhooks</button></p><//
            >`
          : html`<${Empty} title="No webhooks yet.">
              <p>A webhook sends an HTTP POST or an email whenever a request through Outrigger matches its condition.</p>
              <p><a class="button primary" href="#/webhooks/new">Create your first webhook</a> or <a href="#/recording">start a recording</a> to see real requests before writing a condition.</p>
            <//>`
        : null
    }
    ${
      items.length > 0 &&
      html`<ul class="cards" aria-label="Webhooks">
        ${items.map(
          (w) =>
            html`<li class="card" key=${w._id}>
              <div class="head">
                <a class="title" href=${`#/webhooks/${enc(w._id)}`}>${w.name}</a>
                <span class="badge type">${w.type === 'http' ? 'HTTP' : 'Email'}</span>
                <${EnableToggle} webhook=${w} onChanged=${(n: Webhook) => setChanged((c) => ({ ...c, [n._id]: n }))} />
              </div>
              <code class="cond" aria-label="Condition">${w.condition}</code>
              <div class="row small muted">
                <span>Sends to <span class="mono">${target(w)}</span></span>
              </div>
              <${AutoDisabled} webhook=${w} />
              <div class="row">
                <a href=${`#/webhooks/${enc(w._id)}`}>Edit<span class="visually-hidden"> ${w.name}</span></a>
                <a href=${`#/webhooks/${enc(w._id)}/logs`}>Logs<span class="visually-hidden"> of ${w.name}</span></a>
                <button
                  type="button"
                  class="link"
                  onClick=${async () => {
                    setActionError(null);
                    try {
                      if (await deleteWebhook(w)) list.reload();
                    } catch (err) {
                      setActionError(err);
                    }
                  }}
                >
                  Delete<span class="visually-hidden"> ${w.name}</span>
                </button>
              </div>
            </li>`,
        )}
      </ul>`
    }
    <${Pager} page=${page} pagesize=${PAGESIZE} total=${list.data?.total ?? null} onPage=${setPage} label="Webhooks" />
  </main>`;
}

export function WebhookPage({ id, tab }: { id: string | null; tab: 'settings' | 'logs' }) {
  const loaded = useLoad(() => (id ? api<Webhook>('GET', admin(`/webhooks/${enc(id)}`)).then((r) => r.data) : Promise.resolve(null)), [id]);
  if (!id) return html`<main id="main"><${PageTitle}>New webhook<//><${WebhookForm} webhook=${null} /></main>`;
  const webhook = loaded.data;
  return html`<main id="main">
    <p class="small"><a href="#/webhooks">← All webhooks</a></p>
    <${PageTitle}>${webhook ? webhook.name : 'Webhook'}<//>
    <${ErrorBox} error=${loaded.error} />
    ${
      webhook &&
      html`<nav class="tabs" aria-label="Webhook">
          <a href=${`#/webhooks/${enc(id)}`} aria-current=${tab === 'settings' ? 'page' : undefined}>Settings</a>
          <a href=${`#/webhooks/${enc(id)}/logs`} aria-current=${tab === 'logs' ? 'page' : undefined}>Logs</a>
        </nav>
        <${AutoDisabled} webhook=${webhook} />
        ${tab === 'logs' ? html`<${LogsTab} webhook=${webhook} />` : html`<${WebhookForm} webhook=${webhook} key=${webhook.updatedAt?.$date ?? 0} onSaved=${loaded.reload} />`}`
    }
  </main>`;
}
