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
import { ANONYMOUS, type Principal } from '../../principal/principal.js';
import type { Exchange, ExchangeUser } from '../../condition/index.js';
import type { CallerFacts, ReadDecision, ReadPolicy, RequestContext } from '../types.js';
import { collectionPathOf } from './collection-path.js';
import { authenticationTypeOf, userFacts } from '../../principal/access-facts.js';

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
  return ({ db, collection, aggregation, query }, ctx: RequestContext): ReadDecision => {
    const caller = ctx.caller;
    if (!caller) return { allow: false, message: `${DENIED} ${db}/${collection}` };
    const { principal } = caller;
    const collectionPath = collectionPathOf(o.collectionPath, db, collection);
    const path = aggregation === undefined ? collectionPath : `${collectionPath}/_aggrs/${encodeURIComponent(aggregation)}`;
    const decision = o.acl.decide(principal, new ReadExchange(caller, path, query ?? ''));
    if (!decision.allowed) {
      const rest = query ? `${path}?${query.length > 200 ? `${query.slice(0, 200)}…` : query}` : path;
      return { allow: false, message: `${DENIED} ${path} with this query (GET ${rest} would be refused too)` };
    }
    if (decision.admin) return { allow: true };
    const mongo = (decision.permission.doc as PermissionDocument).mongo;
    if (!mongo) return { allow: true };
    const filter = mongo.readFilter ? (interpolateUserVariables(mongo.readFilter, principal) as Record<string, unknown>) : undefined;
    const projection = mongo.projectResponse;
    const filtered = filter && Object.keys(filter).length > 0;
    return {
      allow: true,
      key: JSON.stringify([filtered ? filter : null, projection ?? null]),
      ...(filtered ? { filter } : {}),
      ...(projection ? { project: (doc: unknown) => projectResponse(doc, projection), hides: projectionHides(projection) } : {}),
    };
  };
}

/**
 * The equivalent REST read as the condition language sees it: `GET {path}?{query}` from the
 * caller (their headers, address, user, how they authenticated), read from the request's facts
 * when a predicate asks (issue 39: copying the headers into a map for every request was a third
 * of each decision's cost). No body: bson-request-* predicates are false for a GET.
 */
/** The equivalent REST GET of a backend read as the condition language sees it (the cache's rules decide on it too); no caller: a request with no headers and no user. */
export function readExchange(caller: CallerFacts | undefined, path: string, rawQuery: string): Exchange {
  return new ReadExchange(caller ?? NO_CALLER, path, rawQuery);
}

const NO_CALLER: CallerFacts = { principal: ANONYMOUS, headers: {}, clientIp: '', secure: false };

class ReadExchange implements Exchange {
  readonly method = 'GET';
  readonly localPort = 8080;
  readonly protocol = 'HTTP/1.1';
  /** The condition module's cache of this exchange's decoded path and query. */
  conditionView: unknown = undefined;

  constructor(
    private readonly caller: CallerFacts,
    readonly path: string,
    readonly rawQuery: string,
  ) {}

  requestHeader(name: string): string | undefined {
    const value = this.caller.headers[name];
    return Array.isArray(value) ? value[0] : value;
  }
  requestHeaderValues(name: string): readonly string[] | undefined {
    const value = this.caller.headers[name];
    return value === undefined ? undefined : Array.isArray(value) ? value : [value];
  }
  get secure(): boolean {
    return this.caller.secure;
  }
  get remoteIp(): string {
    return this.caller.clientIp;
  }
  get user(): ExchangeUser | undefined {
    return userFacts(this.caller.principal);
  }
  get authenticationType(): string | undefined {
    return authenticationTypeOf(this.caller.principal);
  }
}
