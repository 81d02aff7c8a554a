/**
 * RESTHeart's two security services a proxy meets: `/roles/{id}` (GetRoleService) and `/token`
 * (AuthTokenService + TokenInjector + authCookieSetter).
 */
import type { ServerResponse } from 'node:http';
import type { Authenticator, Identity } from './auth.js';
import { HttpProblem, sendEmpty, sendJson, type Headers } from './http.js';

/** RESTHeart's Basic challenge; sent with every 401 so clients know Basic is accepted. */
export const BASIC_CHALLENGE = { 'www-authenticate': 'Basic realm="RESTHeart Realm"' };

export function unauthenticated(message: string): HttpProblem {
  return new HttpProblem(401, message, BASIC_CHALLENGE);
}

function methodNotAllowed(method: string, allowed: string[]): HttpProblem {
  return new HttpProblem(405, `method ${method} is not allowed here; use ${allowed.join(', ')}`, { allow: allowed.join(', ') });
}

/**
 * GET /roles/{id}: the roles of the authenticated caller, allowed only when {id} is the caller's
 * own id. Unauthenticated → 401; authenticated as someone else → 403 (RESTHeart's veto).
 */
export function handleRoles(res: ServerResponse, method: string, segments: string[], identity: Identity): void {
  if (method === 'OPTIONS') return sendEmpty(res, 200, { allow: 'GET, OPTIONS' });
  if (identity.via !== 'basic' && identity.via !== 'jwt') {
    throw unauthenticated('authentication required: send the Basic credentials of the user whose roles you ask for');
  }
  const requested = segments.length === 2 ? segments[1] : undefined;
  if (requested !== identity.id) {
    throw new HttpProblem(403, `you may only read your own roles: GET /roles/${identity.id ?? ''}`);
  }
  if (method !== 'GET' && method !== 'HEAD') throw methodNotAllowed(method, ['GET', 'OPTIONS']);
  sendJson(res, 200, { authenticated: true, roles: identity.roles ?? [] });
}

/**
 * /token and /token/cookie. GET and POST /token answer the OAuth-style body with the Auth-Token
 * headers; POST /token/cookie sets the `rh_auth` cookie. Deliberate difference: the stand-in sets
 * the cookie on /token answers too (RESTHeart does only for /token/cookie or `?set-auth-cookie`),
 * so one call shows a proxy every credential-bearing response header it must strip.
 */
export async function handleToken(res: ServerResponse, method: string, path: string, identity: Identity, auth: Authenticator): Promise<void> {
  const isCookieEndpoint = path === '/token/cookie';
  if (method === 'OPTIONS') return sendEmpty(res, 200, { allow: isCookieEndpoint ? 'POST, OPTIONS' : 'GET, POST, DELETE, OPTIONS' });
  if (identity.via !== 'basic' && identity.via !== 'jwt') {
    throw unauthenticated('authentication required: /token issues tokens to authenticated users only');
  }
  const id = identity.id as string;
  const roles = identity.roles ?? [];

  if (method === 'DELETE' && !isCookieEndpoint) {
    auth.revokeTokens(id);
    return sendEmpty(res, 204);
  }
  const allowedHere = isCookieEndpoint ? method === 'POST' : method === 'GET' || method === 'HEAD' || method === 'POST';
  if (!allowedHere) throw methodNotAllowed(method, isCookieEndpoint ? ['POST'] : ['GET', 'POST', 'DELETE']);

  const issued = await auth.issueToken(id, roles);
  const maxAge = Math.max(0, Math.floor((issued.validUntil.getTime() - Date.now()) / 1000));
  const cookieValue = issued.type === 'Bearer' ? `Bearer_${issued.token}` : `Basic_${Buffer.from(`${id}:${issued.token}`).toString('base64')}`;
  const headers: Headers = {
    'auth-token': issued.token,
    'auth-token-valid-until': issued.validUntil.toISOString(),
    'auth-token-location': `/tokens/${encodeURIComponent(id)}`,
    'set-cookie': `rh_auth=${cookieValue}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${maxAge}`,
  };
  if (method === 'POST') Object.assign(headers, { 'cache-control': 'no-store', pragma: 'no-cache' });

  const body = isCookieEndpoint ? { authenticated: true, username: id, roles } : { access_token: issued.token, token_type: issued.type, expires_in: maxAge, username: id, roles };
  sendJson(res, 200, body, headers);
}
