import { OAuthProtocolError, OutriggerError } from '../errors.js';
import type { FeatureStates } from '../features/feature-states.js';
import { sendJson } from '../http/respond.js';
import type { RequestScope } from '../http/scope.js';
import type { ApiKeyIssuer } from '../keys/issuer.js';
import { clientAddressBucket } from '../net/client-address.js';
import type { Logger } from '../observability/logger.js';
import type { OAuthEndpoints } from './endpoints.js';
import { readForm } from './form.js';
import { CORS_HEADERS } from './metadata.js';
import type { CodeGrant, OAuthStore } from './oauth-store.js';
import { pkceVerifierMatches } from './pkce.js';

/** Failed token requests from one address (10-minute window) before 429: codes are 256-bit, so this only bounds the load of guessing. */
export const MAX_TOKEN_FAILURES = 20;

export interface TokenParts {
  endpoints: OAuthEndpoints;
  store: OAuthStore;
  issuer: ApiKeyIssuer;
  features: FeatureStates;
  tokenTtlMinutes: number;
  logger: Logger;
}

const oauthError = (error: string, description: string, status = 400) =>
  new OAuthProtocolError(status, error, description, { ...CORS_HEADERS, ...(status === 401 ? { 'www-authenticate': 'Basic realm="token"' } : {}) });

/**
 * `/token` (SPEC §5.6): `grant_type=authorization_code` only. The code is single-use (read and
 * deleted in one step) and valid 60 s, bound to the client, the redirect URI, the PKCE S256
 * challenge and the resource. A replayed code revokes the key it gave (RFC 6749 §4.1.2). The
 * key or token is issued here, so an unredeemed code leaves nothing behind. Errors are RFC 6749
 * §5.2 bodies; no refresh token, ever.
 */
export function createTokenHandler(p: TokenParts) {
  async function fail(scope: RequestScope, error: OAuthProtocolError): Promise<never> {
    await p.store.recordTokenFailure(clientAddressBucket(scope.clientIp)).catch(() => {});
    throw error;
  }

  return async function handleToken(scope: RequestScope): Promise<void> {
    if (scope.method === 'OPTIONS') {
      scope.res.writeHead(204, CORS_HEADERS);
      scope.res.end();
      return;
    }
    if (scope.method !== 'POST') throw oauthError('invalid_request', 'use POST with an application/x-www-form-urlencoded body');
    const failures = await p.store.tokenFailures(clientAddressBucket(scope.clientIp));
    if (failures.count >= MAX_TOKEN_FAILURES)
      throw new OAuthProtocolError(429, 'invalid_request', `too many failed token requests from your address; try again in ${failures.retryAfter} s`, {
        ...CORS_HEADERS,
        'retry-after': String(failures.retryAfter),
      });

    const { code, verifier, redirectUri, clientId, resource } = await readTokenRequest(scope);
    if (resource !== null && resource !== p.endpoints.resource) return fail(scope, oauthError('invalid_target', `resource must be ${p.endpoints.resource}`));
    if (code.length > 512) return fail(scope, oauthError('invalid_grant', 'the code is not valid'));

    const grant = await p.store.takeCode(code);
    if (!grant) {
      const replayedKey = await p.store.keyOfUsedCode(code);
      if (replayedKey) {
        await p.issuer.revoke(replayedKey, { actor: 'replayed authorization code' });
        return fail(scope, oauthError('invalid_grant', 'this code was already used; the key it gave has been revoked. Sign in again'));
      }
      return fail(scope, oauthError('invalid_grant', 'the code is unknown, expired (codes live 60 s) or already used; sign in again'));
    }
    if (grant.clientId !== clientId) return fail(scope, oauthError('invalid_grant', 'the code was issued to another client'));
    if (grant.redirectUri !== redirectUri) return fail(scope, oauthError('invalid_grant', 'redirect_uri differs from the one of the authorization request'));
    if (!pkceVerifierMatches(verifier, grant.codeChallenge)) return fail(scope, oauthError('invalid_grant', 'code_verifier does not match the code_challenge (PKCE S256)'));
    if (grant.resource !== null && resource !== null && resource !== grant.resource) return fail(scope, oauthError('invalid_target', 'resource differs from the one of the authorization request'));
    if (!p.features.enabled('api-keys')) throw oauthError('invalid_grant', 'API keys are disabled on this service');

    const issued = await issueGrant(p, grant);
    await p.store.markCodeUsed(code, issued.record._id);
    const body: Record<string, unknown> = {
      access_token: issued.key,
      token_type: 'Bearer',
      expires_in: Math.max(0, Math.floor((issued.record.expiresAt - Date.now()) / 1000)),
    };
    if (issued.record.roles.length) body.scope = issued.record.roles.join(' ');
    sendJson(scope.res, 200, body, { ...CORS_HEADERS, pragma: 'no-cache' });
  };
}

/** The body of a token request, read and checked before any code is looked up (its failures are not counted: no code was tried). */
async function readTokenRequest(scope: RequestScope): Promise<{ code: string; verifier: string; redirectUri: string; clientId: string; resource: string | null }> {
  let form: URLSearchParams;
  try {
    form = await readForm(scope);
  } catch (error) {
    if (error instanceof OutriggerError) throw oauthError('invalid_request', error.message, error.status === 413 || error.status === 415 ? error.status : 400);
    throw error;
  }
  for (const [name] of form) if (form.getAll(name).length > 1) throw oauthError('invalid_request', `the parameter ${name} is repeated; send it once`);
  if (scope.req.headers.authorization || form.has('client_secret') || form.has('client_assertion'))
    throw oauthError('invalid_client', 'clients of this server are public (token_endpoint_auth_method "none"): send client_id in the body and no client credentials', 401);
  const grantType = form.get('grant_type');
  if (grantType === null) throw oauthError('invalid_request', 'grant_type is required');
  if (grantType !== 'authorization_code')
    throw oauthError(
      'unsupported_grant_type',
      grantType === 'refresh_token' ? 'there are no refresh tokens here: when a key expires, sign in again' : `grant_type ${JSON.stringify(grantType)} is not supported; use authorization_code`,
    );
  const code = form.get('code');
  const verifier = form.get('code_verifier');
  const redirectUri = form.get('redirect_uri');
  const clientId = form.get('client_id');
  const missing = [!code && 'code', !verifier && 'code_verifier', !redirectUri && 'redirect_uri', !clientId && 'client_id'].filter(Boolean);
  if (missing.length) throw oauthError('invalid_request', `missing: ${missing.join(', ')}`);
  return { code: code!, verifier: verifier!, redirectUri: redirectUri!, clientId: clientId!, resource: form.get('resource') };
}

/** The key or short-lived token an authorization code's grant allows; a key over the owner's limit is invalid_grant. */
async function issueGrant(p: TokenParts, grant: CodeGrant) {
  let issued;
  try {
    issued =
      grant.kind === 'token'
        ? await p.issuer.issueToken({ owner: grant.owner, roles: grant.roles, lifetimeMs: p.tokenTtlMinutes * 60_000, client: grant.clientName })
        : await p.issuer.issue({
            owner: grant.owner,
            name: `${grant.clientName} (agent sign-in)`.slice(0, 100),
            roles: grant.roles,
            lifetimeDays: grant.lifetimeDays,
            maxKeys: grant.maxKeys,
            via: 'oauth',
            client: grant.clientName,
          });
  } catch (error) {
    if (error instanceof OutriggerError && error.status === 409) throw oauthError('invalid_grant', error.message);
    throw error;
  }
  return issued;
}
