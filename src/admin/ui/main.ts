/** The console's frame: sign-in, navigation by hash routes, and the page of the current route. */
import './console.css';
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { admin, api, ApiError, own, setCredentials, signOut, whenSignedOut } from './api.js';
import { BackendPage } from './backend.js';
import { DocumentsPage } from './documents.js';
import { FeaturesPage } from './features.js';
import { CachePage } from './cache.js';
import { KeysPage } from './keys/all-keys.js';
import { MyKeysPage } from './keys/my-keys.js';
import { RecordingPage } from './recording.js';
import { ConfirmHost, errorText, html, viewerZone } from './ui.js';
import { WebhookPage, WebhooksPage } from './webhooks.js';

const PAGES = [
  { hash: '#/webhooks', label: 'Webhooks' },
  { hash: '#/recording', label: 'Recording' },
  { hash: '#/keys', label: 'API keys' },
  { hash: '#/features', label: 'Features' },
  { hash: '#/cache', label: 'Cache' },
  { hash: '#/permissions', label: 'Permissions' },
  { hash: '#/apps', label: 'GraphQL apps' },
  { hash: '#/backend', label: 'Backend' },
];

/** What a signed-in user without an admin role sees (SPEC §15): their own keys, nothing of the service. */
const OWNER_PAGES = [{ hash: '#/my-keys', label: 'Your API keys' }];

/** `admin`: every page, through the admin API; `owner`: only the caller's own keys, through the keys route. */
type Role = 'admin' | 'owner';

/**
 * Which console the account gets: any admin route proves an admin (features is small and every
 * admin may read it); refused there, the owner's own key list proves a user whose keys the
 * console can show. Throws what the last check answered.
 */
async function roleOf(): Promise<Role> {
  try {
    await api('GET', admin('/features'), undefined, { signInCheck: true });
    return 'admin';
  } catch (err) {
    if (!(err instanceof ApiError && err.status === 403)) throw err;
  }
  await api('GET', own('?pagesize=1'), undefined, { signInCheck: true });
  return 'owner';
}

function useHash(): string {
  const [hash, setHash] = useState(location.hash || '#/webhooks');
  useEffect(() => {
    // The event's own URL, not location.hash: when two changes come close together, reading
    // location.hash gives both events the last one, the page in between never renders, and the
    // page before it stays mounted with its old state.
    const update = (e: HashChangeEvent) => setHash(new URL(e.newURL).hash || '#/webhooks');
    addEventListener('hashchange', update);
    return () => removeEventListener('hashchange', update);
  }, []);
  return hash;
}

function SignIn({ onSignedIn, notice }: { onSignedIn: (user: string, role: Role) => void; notice: string | null }) {
  const [user, setUser] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    setCredentials(user, password);
    try {
      const role = await roleOf();
      setPassword('');
      onSignedIn(user, role);
    } catch (err) {
      signOut();
      if (err instanceof ApiError && err.status === 401) setError('Wrong username or password.');
      else if (err instanceof ApiError && err.status === 403) setError(`The account "${user}" cannot use the console: ${err.message}`);
      else if (err instanceof ApiError && err.status === 429) setError(`Too many failed sign-ins: ${err.message}`);
      else setError(errorText(err));
    } finally {
      setBusy(false);
    }
  };
  return html`<main class="signin" id="main">
    <h1>Outrigger console</h1>
    <form class="panel" onSubmit=${submit} aria-describedby=${error ? 'signin-error' : undefined}>
      ${notice && html`<p class="notice" role="status">${notice}</p>`}
      <label for="signin-user">Username</label>
      <input id="signin-user" type="text" autocomplete="username" required value=${user} onInput=${(e: Event) => setUser((e.target as HTMLInputElement).value)} autofocus />
      <label for="signin-password">Password</label>
      <input id="signin-password" type="password" autocomplete="current-password" required value=${password} onInput=${(e: Event) => setPassword((e.target as HTMLInputElement).value)} />
      ${error && html`<p class="field-error" id="signin-error" role="alert">${error}</p>`}
      <button class="primary" type="submit" disabled=${busy}>${busy ? 'Signing in…' : 'Sign in'}</button>
      <p class="hint">Your password stays in this tab's memory only: reloading or closing the tab signs you out.</p>
    </form>
  </main>`;
}

function Page({ hash }: { hash: string }) {
  const parts = hash.replace(/^#\/?/, '').split('/').map(decodeURIComponent);
  const [first, second, third] = parts;
  switch (first) {
    case 'webhooks':
      if (!second) return html`<${WebhooksPage} />`;
      return html`<${WebhookPage} key=${second} id=${second === 'new' ? null : second} tab=${third === 'logs' ? 'logs' : 'settings'} />`;
    case 'recording':
      return html`<${RecordingPage} />`;
    case 'keys':
      return html`<${KeysPage} />`;
    case 'features':
      return html`<${FeaturesPage} />`;
    case 'cache':
      return html`<${CachePage} />`;
    case 'permissions':
      return html`<${DocumentsPage} key="permissions" kind="permissions" />`;
    case 'apps':
      return html`<${DocumentsPage} key="apps" kind="apps" />`;
    case 'backend':
      return html`<${BackendPage} />`;
    default:
      return html`<main id="main">
        <h1>Nothing here</h1>
        <p>There is no page at ${hash}. <a href="#/webhooks">Go to webhooks</a>.</p>
      </main>`;
  }
}

function App() {
  const [session, setSession] = useState<{ user: string; role: Role } | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const hash = useHash();
  useEffect(() => {
    whenSignedOut((message) => {
      setNotice(message);
      setSession(null);
    });
  }, []);
  if (!session) return html`<${SignIn} notice=${notice} onSignedIn=${(u: string, role: Role) => (setNotice(null), setSession({ user: u, role }))} />`;
  const owner = session.role === 'owner';
  const section = owner ? '#/my-keys' : `#/${hash.replace(/^#\/?/, '').split('/')[0]}`;
  return html` <a class="skip" href="#main" onClick=${(e: Event) => (e.preventDefault(), document.getElementById('main')?.querySelector('h1')?.focus())}>Skip to content</a>
    <header class="top">
      <span class="brand">Outrigger console</span>
      <nav aria-label="Main">
        <ul>
          ${(owner ? OWNER_PAGES : PAGES).map((p) => html`<li><a href=${p.hash} aria-current=${section === p.hash ? 'page' : undefined}>${p.label}</a></li>`)}
        </ul>
      </nav>
      <span class="who"
        >Signed in as <strong>${session.user}</strong>
        <button type="button" onClick=${() => (signOut(), setNotice('You signed out.'), setSession(null))}>Sign out</button>
      </span>
    </header>
    ${owner ? html`<${MyKeysPage} />` : html`<${Page} hash=${hash} />`}
    <footer>Times are shown in your time zone (${viewerZone}).</footer>
    <${ConfirmHost} />`;
}

render(html`<${App} />`, document.getElementById('app')!);
