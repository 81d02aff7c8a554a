import type { OutriggerConfig } from '../config/types.js';

/** Every URL agent sign-in publishes, built once from `service.publicUrl` (never from Host). */
export interface OAuthEndpoints {
  issuer: string;
  /** The protected resource: publicUrl + mcp.path. */
  resource: string;
  resourceMetadata: string;
  authorize: string;
  token: string;
  register: string;
  /** Path prefix of the issuer URL ('' at the origin's root), for the path-suffixed well-known URLs. */
  issuerPath: string;
}

export function oauthEndpoints(config: OutriggerConfig): OAuthEndpoints {
  const issuer = config.service.publicUrl;
  const origin = new URL(issuer).origin;
  const issuerPath = new URL(issuer).pathname.replace(/\/$/, '');
  return {
    issuer,
    resource: `${issuer}${config.mcp.path}`,
    resourceMetadata: `${origin}/.well-known/oauth-protected-resource${issuerPath}${config.mcp.path}`,
    authorize: `${issuer}${config.routes.oauth.authorize}`,
    token: `${issuer}${config.routes.oauth.token}`,
    register: `${issuer}${config.routes.oauth.register}`,
    issuerPath,
  };
}
