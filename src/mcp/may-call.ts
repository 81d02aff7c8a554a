/**
 * Whether a tool is offered to a caller (`tools/list`) and may be called (`tools/call` asks the
 * same before the real request): decided as the inner `POST /graphql/<uri>` would be, and for a
 * mutation tool also as the GraphQL write policy would decide each backend write its operation
 * makes (src/graphql/backend/write-policy.ts): the REST request the write is (`POST
 * {collectionPath}`, `PATCH|DELETE {collectionPath}/<id>`, the bulk `.../*`) from this caller,
 * refused when no permission allows it or when the one that does reads through a `readFilter`;
 * an update or delete that answers the document needs the read (`GET {collectionPath}`) too.
 * Without this a `reader` was offered `place_order` and every call of it was FORBIDDEN (issue 53).
 *
 * Listing knows the operation but not the arguments: a write is decided with no body and a
 * stand-in document id, so a permission that looks at the body (`bson-request-*`) or names one
 * document decides the listing as it would decide a request with no body to that stand-in id.
 * The real request still decides each call.
 */
import type { AccessControl } from '../access/permissions/access-control.js';
import type { PermissionDocument } from '../access/permissions/permission-document.js';
import { exchangeFromParts, type Exchange } from '../condition/index.js';
import { collectionPathOf } from '../graphql/backend/collection-path.js';
import type { RequestScope } from '../http/scope.js';
import type { CatalogueTool, ToolWrite } from './catalogue.js';
import { accessFacts } from '../principal/access-facts.js';

/** The id a single-document write is decided on while listing (a well-formed ObjectId no write names). */
const STAND_IN_ID = '000000000000000000000000';

export interface MayCallOptions {
  readonly acl: AccessControl<Exchange>;
  /** `routes.graphql`. */
  readonly graphqlPrefix: string;
  /** `graphql.backend.collectionPath`, as the writer addresses a collection. */
  readonly collectionPath: string;
  /** False when no write policy runs (`graphql.backend.auth: service`, or `acl.mode: own-routes`): the ACL decides no backend write. */
  readonly writesDecided: boolean;
}

export type MayCall = (scope: RequestScope, tool: CatalogueTool) => boolean;

export function createMayCall(o: MayCallOptions): MayCall {
  const { acl } = o;
  const decide = (scope: RequestScope, method: string, path: string, body?: unknown) => acl.decide(scope.principal, innerExchange(scope, method, path, body));
  /** The write policy's answer for this write (allowed, and not under a readFilter), and the read an answered document needs. */
  const writeAllowed = (scope: RequestScope, write: ToolWrite): boolean => {
    const collection = collectionPathOf(o.collectionPath, write.db, write.collection);
    const path = write.target === 'collection' ? collection : `${collection}/${write.target === 'bulk' ? '*' : STAND_IN_ID}`;
    const decision = decide(scope, write.method, path);
    if (!decision.allowed) return false;
    if (!decision.admin && (decision.permission.doc as PermissionDocument).mongo?.readFilter) return false;
    return !write.readsDocument || decide(scope, 'GET', collection).allowed;
  };
  return (scope, tool) => {
    if (acl.isAdmin(scope.principal)) return true;
    if (!decide(scope, 'POST', `${o.graphqlPrefix}/${tool.app.uri}`, { query: tool.query, operationName: tool.operationName }).allowed) return false;
    return !o.writesDecided || tool.writes.every((write) => writeAllowed(scope, write));
  };
}

/**
 * The condition language's view of a request the agent's call makes (the inner `POST
 * /graphql/<uri>`, or a backend write it leads to), as listing decides it: this caller, its
 * headers and address, the given method, path and body.
 */
export function innerExchange(scope: RequestScope, method: string, path: string, body?: unknown): Exchange {
  const { principal } = scope;
  return exchangeFromParts({
    method,
    path,
    headers: Object.entries(scope.req.headers).flatMap(([k, v]) => (v === undefined ? [] : [v].flat().map((one) => [k, one] as const))),
    ...(body !== undefined ? { body } : {}),
    remoteIp: scope.clientIp,
    secure: scope.secure,
    ...accessFacts(principal),
  });
}
