/** Permissions and GraphQL apps: read-only lists with their documents (editing goes through `outrigger apply`). */
import { useState } from 'preact/hooks';
import { admin, api, ApiError } from './api.js';
import { Empty, ErrorBox, html, Json, PageTitle, Pager, useLoad } from './ui.js';

const PAGESIZE = 50;
const DEFAULT_APPS_PATH = '/gql-apps';
let appsPath = DEFAULT_APPS_PATH;

function summary(kind: 'permissions' | 'apps', doc: any) {
  if (kind === 'permissions')
    return html`<div class="row small">
        <span>Priority ${doc.priority ?? 0}</span><span>Roles: ${(doc.roles ?? []).join(', ') || '—'}</span>${doc.apiKeys ? html`<span class="badge type">offers API keys</span>` : ''}
      </div>
      <code class="cond" aria-label="Predicate">${doc.predicate}</code>`;
  return html`<div class="row small">
      <span>Served at <code>${doc.descriptor?.uri ?? '?'}</code></span
      >${doc.descriptor?.enabled === false ? html`<span class="badge disabled">disabled</span>` : ''}
    </div>
    ${doc.descriptor?.description && html`<p class="small muted">${doc.descriptor.description}</p>`} ${tools(doc)}`;
}

/** The app's MCP tools (SPEC §11): what agents are offered, and the mutations held back without `mcp.mutations`. */
function tools(doc: any) {
  const list: Array<{ name: string; description: string; query: string }> = Array.isArray(doc.mcp?.tools) ? doc.mcp.tools : [];
  if (list.length === 0) return '';
  const isMutation = (query: string) => /^\s*(#[^\n]*\n\s*)*mutation\b/.test(query);
  return html`<div class="small">
    <strong>MCP tools</strong>
    <ul aria-label=${`MCP tools of ${doc._id}`}>
      ${list.map(
        (t) =>
          html`<li key=${t.name}>
            <code>${t.name}</code> ${isMutation(t.query) ? html`<span class="badge type">mutation</span> ${doc.mcp.mutations === true ? '' : html`<span class="badge disabled">hidden: mcp.mutations is off</span>`}` : ''}
            <span class="muted">${t.description}</span>
          </li>`,
      )}
    </ul>
  </div>`;
}

export function DocumentsPage({ kind }: { kind: 'permissions' | 'apps' }) {
  const [page, setPage] = useState(1);
  const [path, setPath] = useState(appsPath);
  const [pathInput, setPathInput] = useState(appsPath);
  const url = kind === 'permissions' ? admin('/acl') : path;
  const docs = useLoad(() => api<any[]>('GET', `${url}?page=${page}&pagesize=${PAGESIZE}`), [url, page]);
  const rows = docs.data?.data ?? [];
  const title = kind === 'permissions' ? 'Permissions' : 'GraphQL apps';
  const missing = kind === 'apps' && docs.error instanceof ApiError && docs.error.status === 404;
  return html`<main id="main">
    <${PageTitle}>${title}<//>
    <p class="muted">Read-only. Change ${kind === 'permissions' ? 'permissions' : 'apps'} with a setup file: <code>outrigger apply -c outrigger.yaml -f setup.yaml</code>, or the HTTP API.</p>
    ${
      kind === 'apps' &&
      html`<form class="toolbar" onSubmit=${(e: Event) => (e.preventDefault(), (appsPath = pathInput.trim() || DEFAULT_APPS_PATH), setPage(1), setPath(appsPath))}>
        <div class="grow">
          <label for="apps-path">Apps route (<code>graphql.appsPath</code>)</label
          ><input id="apps-path" type="text" class="code" value=${pathInput} onInput=${(e: Event) => setPathInput((e.target as HTMLInputElement).value)} />
        </div>
        <button type="submit">Load</button>
      </form>`
    }
    ${
      missing
        ? html`<${Empty} title=${`Nothing answers at ${path}.`}
            ><p>If this deployment moved <code>graphql.appsPath</code>, type its path above.</p><//
          >`
        : html`<${ErrorBox} error=${docs.error} />`
    }
    ${
      docs.data &&
      rows.length === 0 &&
      html`<${Empty} title=${kind === 'permissions' ? 'No permissions yet.' : 'No GraphQL apps yet.'}>
        <p>
          ${
            kind === 'permissions'
              ? 'Admin roles can do everything; everyone else is refused until a permission allows them. Add permissions in a setup file (permissions:) and apply it.'
              : 'A GraphQL app is a document (descriptor, SDL schema, mappings) served at /graphql/<uri>. Add apps in a setup file (apps:) and apply it.'
          }
        </p><//
      >`
    }
    ${
      rows.length > 0 &&
      html`<ul class="cards" aria-label=${title}>
        ${rows.map(
          (d) =>
            html`<li class="card" key=${d._id}>
              <div class="head"><span class="title mono">${d._id}</span></div>
              ${summary(kind, d)}
              <details class="section">
                <summary>Document<span class="visually-hidden"> ${d._id}</span></summary>
                <div><${Json} value=${d} label=${`Document ${d._id}`} /></div>
              </details>
            </li>`,
        )}
      </ul>`
    }
    <${Pager} page=${page} pagesize=${PAGESIZE} total=${docs.data?.total ?? null} onPage=${setPage} label=${title} />
  </main>`;
}
