import { createHash } from 'node:crypto';
import type { ServerResponse } from 'node:http';

/** One small stylesheet, allowed by its hash: no inline script anywhere, no third-party assets. */
const STYLE = `body{font:16px/1.5 system-ui,sans-serif;max-width:34rem;margin:2rem auto;padding:0 1rem;color:#1b1b1b}
h1{font-size:1.4rem}label{display:block;margin:.8rem 0 .2rem;font-weight:600}fieldset{border:1px solid #bbb;margin:1rem 0}
input[type=text],input[type=password],select{width:100%;padding:.4rem;font:inherit;box-sizing:border-box}
fieldset label{display:inline;font-weight:400;margin-left:.3rem}button{font:inherit;padding:.5rem 1rem;margin:.8rem .5rem 0 0}
:focus-visible{outline:3px solid #1a5fb4;outline-offset:2px}.error{color:#a51d2d;border-left:4px solid #a51d2d;padding-left:.6rem}
.note{background:#f4f4f4;padding:.6rem}.unverified{border:2px solid #9c6500;background:#fff8e1;padding:.6rem}code{overflow-wrap:anywhere}table{border-collapse:collapse;width:100%}td,th{text-align:left;padding:.3rem;border-bottom:1px solid #ddd}`;
const STYLE_HASH = createHash('sha256').update(STYLE).digest('base64');

export const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/** Stricter than STRICT_CSP: nothing but the one stylesheet; forms post to this origin and may end in a redirect to the client's registered callback. */
function csp(formTargets: readonly string[]): string {
  return [
    "default-src 'none'",
    `style-src 'sha256-${STYLE_HASH}'`,
    "img-src 'none'",
    "base-uri 'none'",
    `form-action 'self'${formTargets.map((t) => ` ${t}`).join('')}`,
    "frame-ancestors 'none'",
  ].join('; ');
}

export interface PageOptions {
  status?: number;
  title: string;
  body: string;
  /** Origins (or schemes) a form on the page may end up at after the server's redirect. */
  formTargets?: readonly string[];
  cookies?: string[];
}

export function sendPage(res: ServerResponse, o: PageOptions): void {
  const html = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(o.title)}</title><style>${STYLE}</style></head>
<body><main>
${o.body}
</main></body></html>`;
  res.writeHead(o.status ?? 200, {
    'content-type': 'text/html; charset=utf-8',
    'content-length': Buffer.byteLength(html),
    'cache-control': 'no-store',
    'content-security-policy': csp(o.formTargets ?? []),
    'x-frame-options': 'DENY',
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    ...(o.cookies?.length ? { 'set-cookie': o.cookies } : {}),
  });
  res.end(html);
}

/** The hidden fields every form of one authorization request carries. */
export function hiddenFields(requestId: string, csrf: string): string {
  return `<input type="hidden" name="request" value="${escapeHtml(requestId)}"><input type="hidden" name="csrf" value="${escapeHtml(csrf)}">`;
}

export const alert = (message: string | undefined) => (message ? `<p class="error" role="alert" id="problem">${escapeHtml(message)}</p>` : '');

export interface ClientView {
  clientName: string;
  clientId: string;
  /** Named by its own metadata document (the client_id URL); false: it registered itself, name unchecked. */
  verified: boolean;
  redirectHost: string;
}

/** Who the client is, as far as this service knows: a self-registered client's name is its own claim. */
export function clientIdentity(c: ClientView): string {
  if (c.verified) return `<p class="client">Application identified by its address <code>${escapeHtml(c.clientId)}</code>, where its description was read.</p>`;
  return `<p class="unverified"><strong>Unverified application.</strong> It registered itself: the name "${escapeHtml(c.clientName)}" is its own claim and nobody checked it. Client id: <code>${escapeHtml(c.clientId)}</code>. Allow only if you just started this sign-in from an application you trust.</p>`;
}

export function signInPage(c: ClientView, fields: string, action: string, problem?: string): PageOptions {
  return {
    title: 'Sign in',
    body: `<h1>Sign in to connect ${escapeHtml(c.clientName)}</h1>
<p><strong>${escapeHtml(c.clientName)}</strong> (returning to <strong>${escapeHtml(c.redirectHost)}</strong>) asks to act on this service for you. Sign in to choose what it may do.</p>
${clientIdentity(c)}
${alert(problem)}
<form method="post" action="${escapeHtml(action)}">${fields}
<input type="hidden" name="action" value="sign-in">
<label for="username">User id</label>
<input type="text" id="username" name="username" autocomplete="username" required autofocus${problem ? ' aria-describedby="problem"' : ''}>
<label for="password">Password</label>
<input type="password" id="password" name="password" autocomplete="current-password" required>
<button type="submit">Sign in</button>
</form>
<form method="post" action="${escapeHtml(action)}">${fields}<input type="hidden" name="action" value="deny"><button type="submit">Cancel</button></form>`,
  };
}

export function errorPage(title: string, message: string, status: number): PageOptions {
  return {
    status,
    title,
    body: `<h1>${escapeHtml(title)}</h1>\n<p class="error" role="alert">${escapeHtml(message)}</p>\n<p>Nothing was shared with the application. You can close this page and start the sign-in again from the application.</p>`,
  };
}

const days = (n: number) => (n === 1 ? '1 day' : `${n} days`);

/** Lifetime choices within the maximum; the default is always one of them. */
export function lifetimeChoices(max: number, fallback: number): number[] {
  return [...new Set([1, 7, 30, 90, 180, 365, 3650, fallback, max].filter((d) => d <= max))].sort((a, b) => a - b);
}

export interface KeyConsent {
  user: string;
  availableRoles: readonly string[];
  preselected: readonly string[];
  lifetimes: number[];
  defaultLifetime: number;
  /** The console's page of the user's own keys, and the keys route (for `DELETE <keys>/<id>`). */
  manage: { console: string; keys: string };
}

export function keyConsentPage(c: ClientView, fields: string, action: string, k: KeyConsent, problem?: string): PageOptions {
  const roles = k.availableRoles
    .map(
      (role, i) =>
        `<div><input type="checkbox" id="role-${i}" name="roles" value="${escapeHtml(role)}"${k.preselected.includes(role) ? ' checked' : ''}><label for="role-${i}">${escapeHtml(role)}</label></div>`,
    )
    .join('\n');
  const options = k.lifetimes.map((d) => `<option value="${d}"${d === k.defaultLifetime ? ' selected' : ''}>${days(d)}</option>`).join('');
  return {
    title: 'Allow access',
    body: `<h1>Allow ${escapeHtml(c.clientName)} to act as ${escapeHtml(k.user)}?</h1>
<p class="note">If you allow it, <strong>${escapeHtml(c.clientName)}</strong> gets an API key in your name, sent to <strong>${escapeHtml(c.redirectHost)}</strong>. The key carries only the roles you tick below and stops working after the lifetime you choose. You can revoke or rotate it at any time on <a href="${escapeHtml(k.manage.console)}">your keys page</a> in the console (sign in with the same user id and password), or with <code>DELETE ${escapeHtml(k.manage.keys)}/&lt;id&gt;</code>.</p>
${clientIdentity(c)}
${alert(problem)}
<form method="post" action="${escapeHtml(action)}">${fields}
<fieldset><legend>Roles the key carries (what the agent will be able to do)</legend>
${roles || '<p>No roles are offered: the key would authenticate but could do nothing.</p>'}
</fieldset>
<label for="lifetime">Key lifetime</label>
<select id="lifetime" name="lifetime">${options}</select>
<button type="submit" name="action" value="allow">Allow</button>
<button type="submit" name="action" value="deny">Deny</button>
</form>`,
  };
}

export function tokenConsentPage(c: ClientView, fields: string, action: string, t: { user: string; roles: readonly string[]; withheld: readonly string[]; minutes: number }): PageOptions {
  const carries = t.withheld.length
    ? `carries your roles except the admin ones: <strong>${escapeHtml(t.roles.join(', '))}</strong> (${escapeHtml(t.withheld.join(', '))} never go to an agent on this service)`
    : `carries <strong>all your roles</strong> (${escapeHtml(t.roles.join(', ') || 'none')})`;
  return {
    title: 'Allow access',
    body: `<h1>Allow ${escapeHtml(c.clientName)} to act as ${escapeHtml(t.user)}?</h1>
<p class="note">If you allow it, <strong>${escapeHtml(c.clientName)}</strong> gets a sign-in token sent to <strong>${escapeHtml(c.redirectHost)}</strong>. The token ${carries} and expires after <strong>${t.minutes} minutes</strong>. An administrator can revoke it sooner.</p>
${clientIdentity(c)}
<form method="post" action="${escapeHtml(action)}">${fields}
<button type="submit" name="action" value="allow">Allow</button>
<button type="submit" name="action" value="deny">Deny</button>
</form>`,
  };
}

export interface HeldKey {
  id: string;
  name: string;
  client: string | undefined;
  expiresAt: number;
}

export function keyLimitPage(c: ClientView, fields: string, action: string, l: { user: string; limit: number; keys: HeldKey[] }, problem?: string): PageOptions {
  const rows = l.keys
    .map(
      (k, i) => `<tr><td id="key-${i}">${escapeHtml(k.name)}</td><td>${escapeHtml(k.client ?? '')}</td><td>${new Date(k.expiresAt).toISOString().slice(0, 10)}</td>
<td><form method="post" action="${escapeHtml(action)}">${fields}<input type="hidden" name="action" value="revoke"><input type="hidden" name="key" value="${escapeHtml(k.id)}"><button type="submit" aria-describedby="key-${i}">Revoke</button></form></td></tr>`,
    )
    .join('\n');
  return {
    status: 409,
    title: 'Key limit reached',
    body: `<h1>Key limit reached</h1>
${alert(problem)}
<p class="error" role="alert">${escapeHtml(l.user)}, you already hold ${l.keys.length} unexpired API keys and the limit is ${l.limit}: revoke a key first, then ${escapeHtml(c.clientName)} can get one.</p>
<table><caption>Your keys</caption><thead><tr><th scope="col">Name</th><th scope="col">Client</th><th scope="col">Expires</th><th scope="col"><span class="sr">Action</span></th></tr></thead>
<tbody>${rows}</tbody></table>
<form method="post" action="${escapeHtml(action)}">${fields}<input type="hidden" name="action" value="deny"><button type="submit">Cancel sign-in</button></form>`,
  };
}

export function refusedPage(c: ClientView, fields: string, action: string, message: string): PageOptions {
  return {
    status: 403,
    title: 'Access not possible',
    body: `<h1>${escapeHtml(c.clientName)} cannot get access</h1>
<p class="error" role="alert">${escapeHtml(message)}</p>
${clientIdentity(c)}
<form method="post" action="${escapeHtml(action)}">${fields}<input type="hidden" name="action" value="deny"><button type="submit">Return to ${escapeHtml(c.clientName)}</button></form>`,
  };
}
