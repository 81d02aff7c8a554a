import { unauthorized } from '../errors.js';
import type { RequestScope } from '../http/scope.js';
import type { BasicAuthenticator } from './basic-authenticator.js';
import { ANONYMOUS, type Principal } from '../principal/principal.js';

/** Verifies `Authorization: Bearer <prefix>_...` keys (the API keys feature); throws 401/503. */
export interface ApiKeyAuthenticator {
  authenticate(token: string, scope: RequestScope): Promise<Principal> | Principal;
}

/**
 * An Authorization header of a scheme Outrigger neither verifies nor passes by rule (SPEC §3.3
 * passes foreign Bearer tokens): `Digest`, `Negotiate`, `Basic` without its space… The request is
 * anonymous to Outrigger, so the header is removed before forwarding (issue 34 item 7): a backend
 * that accepts the scheme would check credentials Outrigger never decided on or counted.
 */
export function isUnverifiedScheme(header: string | undefined): boolean {
  if (!header) return false;
  const scheme = header.slice(0, 7).toLowerCase();
  return !scheme.startsWith('basic ') && scheme !== 'bearer ';
}

/**
 * SPEC §3.1-3.3, in order: Basic → verified (wrong credentials are 401 in every mode, never
 * anonymous); Bearer with the key prefix → an API key; any other Bearer token → passed to the
 * backend untouched, anonymous to Outrigger's ACL; nothing → anonymous.
 */
export function createAuthenticator(options: { basic: BasicAuthenticator; apiKeys: () => ApiKeyAuthenticator | null; keyPrefix: string }) {
  const bearerKeyPrefix = `${options.keyPrefix}_`;
  return function authenticate(scope: RequestScope): Promise<Principal> | Principal {
    const header = scope.req.headers.authorization;
    if (!header) return ANONYMOUS;
    const scheme = header.slice(0, 7).toLowerCase();
    if (scheme.startsWith('basic ')) return options.basic.authenticate(header, scope.clientIp, scope.trace);
    if (scheme === 'bearer ') {
      const token = header.slice(7).trim();
      if (!token.startsWith(bearerKeyPrefix)) return ANONYMOUS;
      const keys = options.apiKeys();
      if (!keys) throw unauthorized('API keys are disabled on this service', { 'www-authenticate': 'Bearer error="invalid_token", error_description="API keys are disabled"' });
      return keys.authenticate(token, scope);
    }
    return ANONYMOUS;
  };
}
