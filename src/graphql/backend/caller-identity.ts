/**
 * `graphql.backend.auth: caller` (SPEC §6.3): backend reads carry the caller's identity exactly as
 * a proxied request would (SPEC §3.4), and each read is made under what the caller's applying
 * permission says for the equivalent REST read, `GET {collectionPath}?filter=&sort=&page=&pagesize=`
 * with the query string the backend read carries (SPEC §3.6: readFilter with `@user.*`
 * interpolated, projectResponse) — so GraphQL is no side door around the ACL, and a permission
 * that looks at the query string (`qparams-*`) decides as it would for REST (issue 25).
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { IdentityPlan } from '../../access/identity/identity-propagation.js';
import { interpolateUserVariables, projectionHides, projectResponse } from '../../access/mongo-rules.js';
import type { AccessControl } from '../../access/permissions/access-control.js';
import type { PermissionDocument } from '../../access/permissions/permission-document.js';
import type { Principal } from '../../access/principal.js';
import { exchangeFromParts, type Exchange } from '../../condition/index.js';
import type { ReadDecision, ReadPolicy, RequestContext } from '../types.js';

/** What the read policy needs to know about the live request (carried in `RequestContext.caller`). */
export interface CallerFacts {
  readonly principal: Principal;
  readonly headers: IncomingHttpHeaders;
  readonly clientIp: string;
  readonly secure: boolean;
}

/**
 * The headers every backend read of one request carries: the identity plan's headers (a minted
 * JWT, or X-Forwarded-User/-Roles) for callers Outrigger verified itself; for callers it did not
 * (anonymous, a foreign Bearer token, Basic users verified by the backend) their own
 * `Authorization` and `Cookie` headers pass through, as they would on a proxied request.
 */
export function backendHeadersFor(plan: IdentityPlan, principal: Principal, headers: IncomingHttpHeaders): Record<string, string> {
  if (plan.setRequestHeaders) return { ...plan.setRequestHeaders };
  if (principal.verifiedLocally) return {};
  const out: Record<string, string> = {};
  if (typeof headers.authorization === 'string') out.authorization = headers.authorization;
  if (typeof headers.cookie === 'string') out.cookie = headers.cookie;
  return out;
}

export interface CallerReadPolicyOptions {
  acl: AccessControl<Exchange>;
  /** `graphql.backend.collectionPath`, e.g. `/{db}/{collection}`. */
  collectionPath: string;
  /** `enforce`: a collection no permission lets the caller GET is refused, as the proxy would. */
  mode: 'enforce' | 'own-routes';
}

const DENIED = 'no permission lets your roles read';

/**
 * The read policy of `auth: caller`. In `own-routes` mode the proxy applies no permission to
 * backend requests (no filter, no projection, no refusal), so GraphQL reads get none either; the
 * backend's own ACL still sees the caller's identity.
 */
export function createCallerReadPolicy(o: CallerReadPolicyOptions): ReadPolicy | undefined {
  if (o.mode === 'own-routes') return undefined;
  // What every read of one request shares (its headers, address, user): built once per request,
  // never shared between requests, so never between identities (issue 39: the header map was a
  // third of each decision's cost).
  const bases = new WeakMap<CallerFacts, Exchange>();
  const baseOf = (caller: CallerFacts): Exchange => {
    let base = bases.get(caller);
    if (base === undefined) {
      const { principal } = caller;
      base = exchangeFromParts({
        method: 'GET',
        headers: plainHeaders(caller.headers),
        remoteIp: caller.clientIp,
        secure: caller.secure,
        ...(principal.id !== null ? { user: { id: principal.id, _id: principal.id, roles: principal.roles } } : {}),
        ...(principal.via === 'basic' ? { authenticationType: 'BASIC' } : principal.via === 'apikey' ? { authenticationType: 'API_KEY' } : {}),
      });
      bases.set(caller, base);
    }
    return base;
  };
  return ({ db, collection, aggregation, query }, ctx: RequestContext): ReadDecision => {
    const caller = ctx.caller as CallerFacts | undefined;
    if (!caller) return { allow: false, message: `${DENIED} ${db}/${collection}` };
    const { principal } = caller;
    const collectionPath = o.collectionPath.replaceAll('{db}', encodeURIComponent(db)).replaceAll('{collection}', encodeURIComponent(collection));
    const path = aggregation === undefined ? collectionPath : `${collectionPath}/_aggrs/${encodeURIComponent(aggregation)}`;
    // A copy per read: conditions may cache their view of the path and query on the exchange.
    const exchange: Exchange = { ...baseOf(caller), path, rawQuery: query ?? '', conditionView: undefined };
    const decision = o.acl.decide(principal, exchange);
    if (!decision.allowed) {
      const rest = query ? `${path}?${query.length > 200 ? `${query.slice(0, 200)}…` : query}` : path;
      return { allow: false, message: `${DENIED} ${path} with this query (GET ${rest} would be refused too)` };
    }
    if (decision.admin) return { allow: true };
    const mongo = (decision.permission.doc as PermissionDocument).mongo;
    if (!mongo) return { allow: true };
    const filter = mongo.readFilter ? (interpolateUserVariables(mongo.readFilter, principal) as Record<string, unknown>) : undefined;
    const projection = mongo.projectResponse;
    return {
      allow: true,
      ...(filter && Object.keys(filter).length > 0 ? { filter } : {}),
      ...(projection ? { project: (doc: unknown) => projectResponse(doc, projection), hides: projectionHides(projection) } : {}),
    };
  };
}

/** The request's headers without the entries node leaves undefined, for the condition language. */
function plainHeaders(headers: IncomingHttpHeaders): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) if (value !== undefined) out[name] = value;
  return out;
}
