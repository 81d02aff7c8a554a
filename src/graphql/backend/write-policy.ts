/**
 * `graphql.backend.auth: caller` for mutations (SPEC §6.4): each backend write is decided by the
 * ACL as the same REST request from the same caller would be, its method, the collection path as
 * the proxy exposes it, its query (`filter`, `id_type`) and its JSON body (for `bson-request-*`
 * predicates), with the caller's roles (a Bearer key's roles for a key). A write under a
 * permission with a `readFilter` is refused as the proxy refuses it (SPEC §3.6). The decision is
 * taken once, just before the write, and the write is sent under it: a permission change after
 * that applies to the next write.
 */
import type { PermissionDocument } from '../../access/permissions/permission-document.js';
import type { AccessControl } from '../../access/permissions/access-control.js';
import { exchangeFromParts, type Exchange } from '../../condition/index.js';

import type { RequestContext, WriteDecision, WritePolicy } from '../types.js';
import { accessFacts } from '../../principal/access-facts.js';

export interface CallerWritePolicyOptions {
  acl: AccessControl<Exchange>;
  /** `own-routes`: the proxy applies no permission to backend requests, so GraphQL writes get none either. */
  mode: 'enforce' | 'own-routes';
}

export function createCallerWritePolicy(o: CallerWritePolicyOptions): WritePolicy | undefined {
  if (o.mode === 'own-routes') return undefined;
  return ({ method, path, query, body }, ctx: RequestContext): WriteDecision => {
    const rest = `${method} ${path}${query ? `?${query.length > 200 ? `${query.slice(0, 200)}…` : query}` : ''}`;
    const caller = ctx.caller;
    if (!caller) return { allow: false, message: `no permission lets your roles send ${rest}` };
    const { principal } = caller;
    const headers: Record<string, string | string[]> = {};
    for (const [name, value] of Object.entries(caller.headers)) if (value !== undefined) headers[name] = value;
    headers['content-type'] = 'application/json';
    const exchange = exchangeFromParts({
      method,
      path,
      ...(query ? { query } : {}),
      headers,
      body,
      remoteIp: caller.clientIp,
      secure: caller.secure,
      ...accessFacts(principal),
    });
    const decision = o.acl.decide(principal, exchange);
    if (!decision.allowed) return { allow: false, message: `no permission lets your roles send ${rest}, so this mutation may not either` };
    if (decision.admin) return { allow: true };
    const mongo = (decision.permission.doc as PermissionDocument).mongo;
    if (mongo?.readFilter) {
      return { allow: false, message: `your roles read ${path} through a filter (readFilter); writes under it are not allowed (${rest} would be refused too)` };
    }
    return { allow: true };
  };
}
