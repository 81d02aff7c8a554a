import { methodNotAllowed, notFound } from '../errors.js';
import { sendJson } from '../http/respond.js';
import type { OwnRoute } from '../http/route-table.js';
import type { RequestScope } from '../http/scope.js';
import type { OAuthEndpoints } from './endpoints.js';

/** Browser-based MCP clients read metadata, register and redeem codes cross-origin (the SDK's own server helpers do the same). */
export const CORS_HEADERS = {
  'access-control-allow-origin': '*',
  'access-control-allow-methods': 'GET, POST, OPTIONS',
  'access-control-allow-headers': 'authorization, content-type, mcp-protocol-version',
  'access-control-max-age': '86400',
};

/** RFC 9728 protected-resource metadata for `mcp.path`. */
export function protectedResourceMetadata(e: OAuthEndpoints) {
  return {
    resource: e.resource,
    authorization_servers: [e.issuer],
    bearer_methods_supported: ['header'],
    resource_name: 'MCP server behind Outrigger',
  };
}

/** RFC 8414 authorization-server metadata (also served at the OpenID discovery path). */
export function authorizationServerMetadata(e: OAuthEndpoints, dynamicRegistration: boolean) {
  return {
    issuer: e.issuer,
    authorization_endpoint: e.authorize,
    token_endpoint: e.token,
    ...(dynamicRegistration ? { registration_endpoint: e.register } : {}),
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: ['authorization_code'],
    code_challenge_methods_supported: ['S256'],
    token_endpoint_auth_methods_supported: ['none'],
    client_id_metadata_document_supported: true,
    authorization_response_iss_parameter_supported: true,
  };
}

/** Answers a metadata document: GET/HEAD, CORS preflight, 404 for unknown sub-paths. */
function documentRoute(prefix: string, subPaths: readonly string[], document: () => unknown, disabled: () => boolean): OwnRoute {
  return {
    kind: 'oauth',
    prefix,
    public: true,
    handle(scope: RequestScope) {
      if (disabled()) throw notFound('agent sign-in is off on this service (mcp.signIn: off)');
      if (!subPaths.includes(scope.path.slice(prefix.length))) throw notFound(`no metadata document at ${scope.path}`);
      if (scope.method === 'OPTIONS') {
        scope.res.writeHead(204, CORS_HEADERS);
        scope.res.end();
        return;
      }
      if (scope.method !== 'GET' && scope.method !== 'HEAD') throw methodNotAllowed(['GET']);
      sendJson(scope.res, 200, document(), { ...CORS_HEADERS, 'cache-control': 'public, max-age=300' });
    },
  };
}

/**
 * The well-known documents: protected-resource metadata at the path-aware URI and the root one
 * (RFC 9728 §3.1, MCP 2025-11-25 discovery order), authorization-server metadata at RFC 8414's
 * URI and OpenID discovery's (clients try both).
 */
export function metadataRoutes(e: OAuthEndpoints, mcpPath: string, off: () => boolean): OwnRoute[] {
  const resourceSubPaths = ['', `${e.issuerPath}${mcpPath}`, mcpPath];
  const issuerSubPaths = e.issuerPath ? ['', e.issuerPath] : [''];
  const as = () => authorizationServerMetadata(e, true);
  return [
    documentRoute('/.well-known/oauth-protected-resource', resourceSubPaths, () => protectedResourceMetadata(e), off),
    documentRoute('/.well-known/oauth-authorization-server', issuerSubPaths, as, off),
    documentRoute('/.well-known/openid-configuration', issuerSubPaths, as, off),
  ];
}
