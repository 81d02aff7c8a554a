/**
 * What the request chain (src/chain/) asks of access, as the chain's authenticate, authorize and
 * plan stages call it: who is calling, may they make this proxied request, and what changes on
 * the way. Declared here, below the chain, so access implements them without importing it.
 */
import type { RequestScope } from '../http/scope.js';
import type { Principal } from '../principal/principal.js';
import type { ProxyPlan } from '../proxy/forwarder.js';
import type { PermissionDocument } from './permissions/permission-document.js';

/** Who the caller is; throws an OutriggerError for 401/429/503. */
export type Authenticate = (scope: RequestScope) => Promise<Principal> | Principal;
/** May the principal make this proxied request? Throws 401/403; sets scope.permission. */
export type AuthorizeProxy = (scope: RequestScope) => Promise<void> | void;
/** What the features change about a proxied request (identity headers, readFilter, projection). Synchronous. */
export type PlanProxy = (scope: RequestScope) => ProxyPlan;

declare module '../http/scope.js' {
  interface RequestScope {
    /** The authorize stage's slot: the permission that allowed the request (its readFilter, projectResponse), when one did. */
    permission: PermissionDocument | undefined;
  }
}
