import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { Principal } from '../../principal/principal.js';
import { methodNotAllowed, OutriggerError } from '../../errors.js';
import type { RequestScope } from '../../http/scope.js';
import type { Logger } from '../../observability/logger.js';
import type { ApiKeyIssuer } from '../../keys/issuer.js';
import { checkRequestedRoles, keyLifetimeDays } from '../../keys/issuing-rules.js';
import { clientAddressBucket } from '../../net/client-address.js';
import { ClientMetadataError } from '../clients/client-metadata-document.js';
import type { ClientDirectory } from '../clients/client-directory.js';
import type { OAuthEndpoints } from '../endpoints.js';
import { readForm } from '../form.js';
import type { OfferMaker } from './offer.js';
import { sha256, type OAuthStore, type PendingRequest } from '../oauth-store.js';
import { errorPage, hiddenFields, keyConsentPage, keyLimitPage, lifetimeChoices, refusedPage, sendPage, signInPage, tokenConsentPage, type ClientView, type PageOptions } from './pages.js';
import { S256_CHALLENGE } from '../pkce.js';
import { redirectUriMatches } from '../clients/redirect-uris.js';

export interface AuthorizeParts {
  endpoints: OAuthEndpoints;
  /** The route path (`routes.oauth.authorize`): where the forms post. */
  path: string;
  /** Where a user manages the key they allow (SPEC §15): the console's own-keys page and the keys route. */
  manageKeys: { console: string; keys: string };
  /** `mcp.authorizeRequestsPerAddress`: requests one address (IPv6: one /64) may start per 10 minutes. */
  requestsPerAddress: number;
  /** Requests all addresses together may start per 10-minute window: many addresses (one /48 holds 65,536 /64s) cannot store without bound. */
  requestsTotal: number;
  secureCookies: boolean;
  store: OAuthStore;
  clients: ClientDirectory;
  offerFor: OfferMaker;
  issuer: ApiKeyIssuer;
  /** Checks a user id and password like a Basic sign-in (brute-force guard included); throws 401/429. */
  signIn(id: string, password: string, clientIp: string): Promise<Principal>;
  logger: Logger;
}

const random = (bytes: number) => randomBytes(bytes).toString('base64url');
/** The longest `state` or `scope` kept with a request (real clients send 16-64 characters of state and a few role names). */
const MAX_TEXT = 1024;

/**
 * `/authorize` (SPEC §5.6): GET checks the request and shows the sign-in page; the pages' forms
 * POST back here. A problem with the request is shown on an error page and never redirected
 * (every client is self-registered or self-described, so its redirect URI is no proof: RFC 9700
 * §4.11.2); the pages say little and the log says what and which setting. Once the user has
 * acted (Deny, Allow, a refusal's Return) the answer goes back to the client with `state` and
 * `iss`. GET is limited per address (`mcp.authorizeRequestsPerAddress`) and `state`/`scope` are
 * capped, so what a request stores for its 10 minutes stays small.
 *
 * CSRF: each request gets a synchronizer token (a hidden field) and a cookie binding it to the
 * browser that started it (per request, HttpOnly, SameSite=Lax, `__Host-` over https); a POST
 * must carry both. Nothing is issued here: the code records what the user allowed, and the key
 * or token is made when the code is redeemed.
 */
export function createAuthorizeHandler(p: AuthorizeParts) {
  const ui = authorizeUi(p);
  const start = requestStarter(p, ui);
  const post = formHandler(p, ui, consentSteps(p, ui));
  return async function handleAuthorize(scope: RequestScope): Promise<void> {
    if (scope.method === 'GET' || scope.method === 'HEAD') return start(scope);
    if (scope.method === 'POST') return post(scope);
    throw methodNotAllowed(['GET', 'POST']);
  };
}

/** What every step answers with: the binding cookie, the redirect back to the client, the pages. */
function authorizeUi(p: AuthorizeParts) {
  const cookieName = (id: string) => `${p.secureCookies ? '__Host-' : ''}outrigger-signin-${id}`;
  const cookie = (id: string, value: string, maxAge: number) =>
    `${cookieName(id)}=${value}; Path=${p.secureCookies ? '/' : p.path}; Max-Age=${maxAge}; HttpOnly; SameSite=Lax${p.secureCookies ? '; Secure' : ''}`;

  function redirect(scope: RequestScope, to: string, params: Record<string, string | null>, status = 302, cookies: string[] = []): void {
    const url = new URL(to);
    for (const [k, v] of Object.entries(params)) if (v !== null) url.searchParams.set(k, v);
    url.searchParams.set('iss', p.endpoints.issuer);
    scope.res.writeHead(status, { location: url.href, 'cache-control': 'no-store', 'referrer-policy': 'no-referrer', ...(cookies.length ? { 'set-cookie': cookies } : {}) });
    scope.res.end();
  }

  const view = (r: PendingRequest): ClientView => ({ clientName: r.clientName, clientId: r.clientId, verified: r.verified === true, redirectHost: redirectHost(r.redirectUri) });
  const page = (scope: RequestScope, o: PageOptions, r?: PendingRequest) => sendPage(scope.res, { ...o, formTargets: r ? formTargets(r.redirectUri) : [] });

  /** A generic page for the person; what went wrong, and the setting that decides it, for the log. */
  function refuse(scope: RequestScope, title: string, text: string, status: number, log: Record<string, unknown>): void {
    p.logger.info({ clientIp: scope.clientIp, ...log }, `agent sign-in request refused: ${String(log.problem)}`);
    page(scope, errorPage(title, text, status));
  }
  const notValid = (scope: RequestScope, log: Record<string, unknown>) =>
    refuse(scope, 'Sign-in request not valid', 'The application sent a sign-in request this service cannot accept. You were not redirected.', 400, log);

  return { cookieName, cookie, redirect, view, page, refuse, notValid };
}

type AuthorizeUi = ReturnType<typeof authorizeUi>;

/** GET: the request checked (never redirected while it is not valid), stored, and the sign-in page. */
function requestStarter(p: AuthorizeParts, { cookie, page, refuse, notValid, view }: AuthorizeUi) {
  return async function start(scope: RequestScope): Promise<void> {
    if (await tooManyRequests(p, scope, page)) return;
    const q = scope.query;
    const once = (name: string): string | null | 'repeated' => {
      const values = q.getAll(name);
      return values.length > 1 ? 'repeated' : (values[0] ?? null);
    };
    const clientId = once('client_id');
    if (clientId === null || clientId === 'repeated') return notValid(scope, { problem: `client_id is ${clientId === null ? 'missing' : 'repeated'}` });
    let client;
    try {
      client = await p.clients.find(clientId);
    } catch (error) {
      if (error instanceof ClientMetadataError)
        return refuse(scope, 'Unknown application', 'The application could not be identified. You were not redirected.', 400, {
          clientId: clientId.slice(0, 300),
          problem: error.message,
          ...(error.setting ? { setting: error.setting } : {}),
        });
      throw error;
    }
    const asked = once('redirect_uri');
    let redirectUri: string;
    if (asked === 'repeated') return notValid(scope, { clientId, problem: 'redirect_uri is repeated' });
    if (asked === null) {
      if (client.redirectUris.length !== 1) return notValid(scope, { clientId, problem: 'redirect_uri is missing and the client registered several' });
      redirectUri = client.redirectUris[0]!;
    } else if (redirectUriMatches(client.redirectUris, asked)) redirectUri = asked;
    else
      return refuse(scope, 'Unregistered redirect URI', `${client.clientName} asked to send you to an address it did not register. You were not redirected.`, 400, {
        clientId,
        problem: `redirect_uri ${asked.slice(0, 300)} is not registered`,
        registered: client.redirectUris,
      });

    // Every client here registered itself or is named by its own document, so its redirect URI
    // proves nothing about who sent this request: an error is shown, never redirected, until the
    // user has acted (RFC 9700 §4.11.2, the authorization server as open redirector).
    for (const name of ['response_type', 'code_challenge', 'code_challenge_method', 'resource', 'scope', 'state'])
      if (once(name) === 'repeated') return notValid(scope, { clientId, problem: `${name} is repeated` });
    if (q.get('response_type') !== 'code') return notValid(scope, { clientId, problem: 'response_type must be code (unsupported_response_type)' });
    const challenge = q.get('code_challenge');
    if (!challenge) return notValid(scope, { clientId, problem: 'code_challenge is missing (PKCE with S256 is required)' });
    if ((q.get('code_challenge_method') ?? 'plain') !== 'S256') return notValid(scope, { clientId, problem: 'code_challenge_method must be S256 (plain is not accepted)' });
    if (!S256_CHALLENGE.test(challenge)) return notValid(scope, { clientId, problem: 'code_challenge must be 43 base64url characters' });
    const resource = q.get('resource');
    if (resource !== null && resource !== p.endpoints.resource)
      return notValid(scope, { clientId, problem: `resource must be ${p.endpoints.resource} (invalid_target)`, setting: 'service.publicUrl and mcp.path' });
    const state = q.get('state');
    const scopeText = q.get('scope');
    for (const [name, value] of [
      ['state', state],
      ['scope', scopeText],
    ] as const)
      if (value !== null && value.length > MAX_TEXT)
        return refuse(scope, 'Sign-in request too long', `The application's sign-in request is too long (its ${name} is over ${MAX_TEXT} characters). You were not redirected.`, 400, {
          clientId,
          problem: `${name} is ${value.length} characters, over ${MAX_TEXT}`,
        });

    const requestId = random(16);
    const binding = random(24);
    const record: PendingRequest = {
      clientId,
      clientName: client.clientName,
      verified: client.via === 'metadata-document',
      redirectUri,
      state,
      codeChallenge: challenge,
      resource,
      scope: scopeText,
      csrf: random(24),
      browser: sha256(binding),
    };
    await p.store.saveRequest(requestId, record);
    sendPage(scope.res, { ...signInPage(view(record), hiddenFields(requestId, record.csrf), p.path), formTargets: formTargets(redirectUri), cookies: [cookie(requestId, binding, 600)] });
  };
}

/**
 * Counted before anything is fetched or stored: each request may cost a metadata-document fetch
 * and a record kept 10 minutes. True when over a limit (per address, or all addresses together),
 * after the 429 page is sent.
 */
async function tooManyRequests(p: AuthorizeParts, scope: RequestScope, page: AuthorizeUi['page']): Promise<boolean> {
  const address = clientAddressBucket(scope.clientIp);
  const counted = await p.store.countAuthorizeRequest(address);
  if (counted.count > p.requestsPerAddress) {
    p.logger.warn(
      { address, limit: p.requestsPerAddress, setting: 'mcp.authorizeRequestsPerAddress' },
      'agent sign-in: too many authorization requests from one address (mcp.authorizeRequestsPerAddress)',
    );
    scope.res.setHeader('retry-after', String(counted.retryAfter));
    page(scope, errorPage('Too many sign-ins', `Too many sign-ins were started from your network. Wait ${Math.ceil(counted.retryAfter / 60)} minutes, then start again from the application.`, 429));
    return true;
  }
  const total = await p.store.countAuthorizeRequestTotal();
  if (total.count > p.requestsTotal) {
    p.logger.warn({ limit: p.requestsTotal, setting: 'mcp.authorizeRequestsTotal' }, 'agent sign-in: too many authorization requests from all addresses (mcp.authorizeRequestsTotal)');
    scope.res.setHeader('retry-after', String(total.retryAfter));
    page(scope, errorPage('Too many sign-ins', `Too many sign-ins are under way on this service. Wait ${Math.ceil(total.retryAfter / 60)} minutes, then start again from the application.`, 429));
    return true;
  }
  return false;
}

/** The consent page for what the user may give, and what Allow records (a code, redeemed later). */
function consentSteps(p: AuthorizeParts, { cookie, redirect, page, view }: AuthorizeUi) {
  async function consent(scope: RequestScope, requestId: string, r: PendingRequest, principal: Principal, problem?: string): Promise<void> {
    const fields = hiddenFields(requestId, r.csrf);
    const offer = await p.offerFor(principal);
    if (offer.kind === 'refused') return page(scope, refusedPage(view(r), fields, p.path, offer.message), r);
    if (offer.kind === 'token') return page(scope, tokenConsentPage(view(r), fields, p.path, { user: principal.id!, roles: offer.roles, withheld: offer.withheld, minutes: offer.minutes }), r);
    const { policy, activeKeys } = offer;
    if (activeKeys.length >= policy.maxKeysPerUser)
      return page(
        scope,
        keyLimitPage(
          view(r),
          fields,
          p.path,
          { user: principal.id!, limit: policy.maxKeysPerUser, keys: activeKeys.map((k) => ({ id: k.record._id, name: k.record.name, client: k.record.client, expiresAt: k.record.expiresAt })) },
          problem,
        ),
        r,
      );
    const requested = (r.scope ?? '').split(' ').filter((s) => policy.availableRoles.includes(s));
    const fallback = Math.min(90, policy.maxExpiresInDays);
    const k = {
      user: principal.id!,
      availableRoles: policy.availableRoles,
      preselected: requested.length ? requested : policy.availableRoles,
      lifetimes: lifetimeChoices(policy.maxExpiresInDays, fallback),
      defaultLifetime: fallback,
      manage: p.manageKeys,
    };
    return page(scope, { ...keyConsentPage(view(r), fields, p.path, k, problem), ...(problem ? { status: 400 } : {}) }, r);
  }

  async function allow(scope: RequestScope, requestId: string, r: PendingRequest, principal: Principal, form: URLSearchParams): Promise<void> {
    const offer = await p.offerFor(principal);
    if (offer.kind === 'refused') return consent(scope, requestId, r, principal);
    let grant: { kind: 'key' | 'token'; roles: string[]; lifetimeDays: number; maxKeys: number };
    if (offer.kind === 'token') grant = { kind: 'token', roles: [...offer.roles], lifetimeDays: 0, maxKeys: 0 };
    else {
      if (offer.activeKeys.length >= offer.policy.maxKeysPerUser) return consent(scope, requestId, r, principal);
      const roles = [...new Set(form.getAll('roles'))];
      const lifetimeText = form.get('lifetime');
      const lifetime = lifetimeText === null || lifetimeText === '' ? undefined : lifetimeText;
      try {
        checkRequestedRoles(offer.policy, roles);
        // Digits only: Number() would also take "1e3", " 7", "0x10" and "7.0".
        if (lifetime !== undefined && !/^[1-9][0-9]{0,4}$/.test(lifetime)) throw new OutriggerError(400, 'BAD_LIFETIME', 'the key lifetime must be a whole number of days, written in digits');
        grant = { kind: 'key', roles, lifetimeDays: keyLifetimeDays(offer.policy, lifetime === undefined ? undefined : Number(lifetime)), maxKeys: offer.policy.maxKeysPerUser };
      } catch (error) {
        if (error instanceof OutriggerError && error.status < 500) return consent(scope, requestId, r, principal, error.message);
        throw error;
      }
    }
    const code = random(32);
    await p.store.saveCode(code, {
      clientId: r.clientId,
      clientName: r.clientName,
      redirectUri: r.redirectUri,
      codeChallenge: r.codeChallenge,
      resource: r.resource,
      owner: principal.id!,
      ...grant,
    });
    await p.store.deleteRequest(requestId);
    p.logger.info({ owner: principal.id, client: r.clientName, kind: grant.kind, roles: grant.roles }, 'agent sign-in allowed');
    redirect(scope, r.redirectUri, { code, state: r.state }, 303, [cookie(requestId, '', 0)]);
  }

  return { consent, allow };
}

/** POST: the form checked against its request and browser, then deny, sign in, allow or revoke. */
function formHandler(p: AuthorizeParts, { cookieName, cookie, redirect, page, view }: AuthorizeUi, { consent, allow }: ReturnType<typeof consentSteps>) {
  return async function post(scope: RequestScope): Promise<void> {
    const form = await readForm(scope);
    const requestId = form.get('request') ?? '';
    const r = /^[A-Za-z0-9_-]{22}$/.test(requestId) ? await p.store.request(requestId) : null;
    if (!r) return page(scope, errorPage('Sign-in expired', 'This sign-in is unknown or older than 10 minutes. Start it again from the application.', 400));
    const sentCsrf = form.get('csrf') ?? '';
    const binding = readCookie(scope.req.headers.cookie, cookieName(requestId));
    if (!sameText(sentCsrf, r.csrf) || binding === null || !sameText(sha256(binding), r.browser))
      return page(
        scope,
        errorPage(
          'Form not accepted',
          'The form could not be verified (its CSRF token is missing or wrong, or it was sent from another browser). Nothing was allowed. Start the sign-in again from the application.',
          403,
        ),
      );
    const action = form.get('action');
    if (action === 'deny') {
      await p.store.deleteRequest(requestId);
      return redirect(scope, r.redirectUri, { error: 'access_denied', error_description: 'the user did not allow access', state: r.state }, 303, [cookie(requestId, '', 0)]);
    }
    if (action === 'sign-in') {
      const id = form.get('username') ?? '';
      const password = form.get('password') ?? '';
      const fields = hiddenFields(requestId, r.csrf);
      let principal: Principal;
      try {
        if (!id || !password || id.includes(':')) throw new OutriggerError(401, 'UNAUTHENTICATED', 'wrong user id or password');
        principal = await p.signIn(id, password, scope.clientIp);
      } catch (error) {
        if (error instanceof OutriggerError && (error.status === 401 || error.status === 429))
          return page(scope, { ...signInPage(view(r), fields, p.path, error.status === 401 ? 'Wrong user id or password.' : `${error.message}.`), status: error.status }, r);
        throw error;
      }
      r.user = { id: principal.id!, roles: [...principal.roles] };
      await p.store.updateRequest(requestId, r);
      return consent(scope, requestId, r, principal);
    }
    if (!r.user) return page(scope, signInPage(view(r), hiddenFields(requestId, r.csrf), p.path, 'Sign in first.'), r);
    const principal: Principal = { id: r.user.id, roles: r.user.roles, via: 'basic', verifiedLocally: true };
    if (action === 'allow') return allow(scope, requestId, r, principal, form);
    if (action === 'revoke') {
      const keyId = form.get('key') ?? '';
      const revoked = await p.issuer.revoke(keyId, { owner: principal.id!, actor: `${principal.id} (agent sign-in page)` });
      return consent(scope, requestId, r, principal, revoked ? undefined : 'That key is not one of yours, or it was already revoked.');
    }
    return consent(scope, requestId, r, principal, 'Choose Allow or Deny.');
  };
}

function redirectHost(uri: string): string {
  try {
    const url = new URL(uri);
    return url.host || url.protocol.replace(/:$/, '');
  } catch {
    return uri;
  }
}

/** CSP form-action sources: a form answered by a redirect to the callback must be allowed to go there. */
function formTargets(uri: string): string[] {
  try {
    const url = new URL(uri);
    return [url.protocol === 'http:' || url.protocol === 'https:' ? url.origin : url.protocol];
  } catch {
    return [];
  }
}

function readCookie(header: string | undefined, name: string): string | null {
  if (!header) return null;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq !== -1 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return null;
}

function sameText(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
