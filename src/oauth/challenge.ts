import { OutriggerError, unauthorized } from '../errors.js';
import type { Authenticate, AuthorizeProxy } from '../access/chain-hooks.js';
import type { RequestScope } from '../http/scope.js';

/**
 * The 401 challenge on the protected resource (SPEC §5.6, RFC 9728 §5.1): a request to
 * `mcp.path` without a valid key is answered `WWW-Authenticate: Bearer resource_metadata="…"`
 * (with `error="invalid_token"` when a token was sent) so an MCP client can find where to sign
 * in. The Bearer challenge is the only one: the SDK reads parameters only from a header that
 * starts with `Bearer `. Other paths are untouched; the only added cost is a prefix test.
 * The test reads `scope.path`, the canonical path (http/canonical-path.ts): `/%6dcp`, `/mcp;x`
 * and `//mcp` are `/mcp` to the backend, so they meet the challenge too (issue 25).
 */
export function withMcpChallenge(parts: { authenticate: Authenticate; authorizeProxy: AuthorizeProxy }, mcpPath: string, resourceMetadataUrl: string) {
  const isMcp = (path: string) => path.startsWith(mcpPath) && (path.length === mcpPath.length || path.charCodeAt(mcpPath.length) === 47);
  const challenge = (scope: RequestScope, error: boolean) => `Bearer resource_metadata="${resourceMetadataUrl}"${error || hasBearer(scope) ? ', error="invalid_token"' : ''}`;

  const rechallenge =
    (scope: RequestScope) =>
    (error: unknown): never => {
      if (error instanceof OutriggerError && error.status === 401) throw new OutriggerError(401, error.code, error.message, { ...error.headers, 'www-authenticate': challenge(scope, true) });
      throw error;
    };

  const authenticate: Authenticate = (scope) => {
    if (!isMcp(scope.path)) return parts.authenticate(scope);
    try {
      const result = parts.authenticate(scope);
      return result instanceof Promise ? result.catch(rechallenge(scope)) : result;
    } catch (error) {
      return rechallenge(scope)(error);
    }
  };

  const authorizeProxy: AuthorizeProxy = (scope) => {
    // Any bearer token Outrigger did not issue counts as none here: no token passthrough to the MCP server.
    if (scope.principal.via === 'anonymous' && isMcp(scope.path)) throw mcpSignInRequired(scope, resourceMetadataUrl);
    return parts.authorizeProxy(scope);
  };

  return { authenticate, authorizeProxy };
}

/**
 * The 401 an anonymous request to the MCP server gets, for the proxied `/mcp` above and for
 * Outrigger's own MCP server (SPEC §11), which is an own route and so never reaches authorizeProxy.
 */
export function mcpSignInRequired(scope: RequestScope, resourceMetadataUrl: string): OutriggerError {
  const bearer = hasBearer(scope);
  return unauthorized(
    bearer ? 'this bearer token was not issued by this service; sign in again to get a key' : `sign in to use the MCP server: an MCP client finds how in ${resourceMetadataUrl}`,
    { 'www-authenticate': `Bearer resource_metadata="${resourceMetadataUrl}"${bearer ? ', error="invalid_token"' : ''}` },
    'MCP_SIGN_IN_REQUIRED',
  );
}

function hasBearer(scope: RequestScope): boolean {
  return /^bearer\s/i.test(scope.req.headers.authorization ?? '');
}
