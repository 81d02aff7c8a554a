/**
 * What permissions' conditions read about the caller: `@user.id`, `@user._id`, `@user.roles`
 * and the exchange's authentication type. Written once here because every place that builds an
 * exchange for an access decision (the request's own, a GraphQL write's, an MCP tool's, agent
 * sign-in's, a captured backend write's) must give a condition the same facts, or a permission
 * decides one way on a REST request and another on the same caller's GraphQL or MCP call. The
 * identity the backend is told (`identityFacts`) is written here for the same reason.
 */
import type { Principal } from './principal.js';

/** `@user` of the condition language; a type alias so it fits the condition's open `ExchangeUser`. */
export type UserFacts = { readonly id: string; readonly _id: string; readonly roles: readonly string[] };

export type AuthenticationType = 'BASIC' | 'API_KEY';

const AUTHENTICATION_TYPES = { basic: 'BASIC', apikey: 'API_KEY', anonymous: undefined } as const;

/** The caller as `@user`; undefined for a caller with no id (anonymous). */
export function userFacts(principal: Principal): UserFacts | undefined {
  return principal.id === null ? undefined : { id: principal.id, _id: principal.id, roles: principal.roles };
}

/** Undertow's names for how the caller signed in; undefined for anonymous. */
export function authenticationTypeOf(principal: Principal): AuthenticationType | undefined {
  return AUTHENTICATION_TYPES[principal.via];
}

/** Both facts as optional members, to spread into an exchange's parts (absent, not undefined, when unknown). */
export function accessFacts(principal: Principal): { user?: UserFacts; authenticationType?: AuthenticationType } {
  const user = userFacts(principal);
  const authenticationType = authenticationTypeOf(principal);
  return { ...(user ? { user } : {}), ...(authenticationType ? { authenticationType } : {}) };
}

/** The caller as the backend is told it (a minted JWT or identity headers, graphql's RequestContext); undefined for anonymous. */
export type IdentityFacts = { readonly id: string; readonly roles: readonly string[]; readonly via: Principal['via']; readonly keyId?: string };

export function identityFacts(principal: Principal): IdentityFacts | undefined {
  if (principal.id === null) return undefined;
  const { id, roles, via, keyId } = principal;
  return keyId ? { id, roles, via, keyId } : { id, roles, via };
}
