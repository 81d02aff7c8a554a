import { forbidden } from '../errors.js';
import { readBody } from '../http/body.js';
import type { AuthorizeProxy, PlanProxy } from './chain-hooks.js';
import type { RequestScope } from '../http/scope.js';
import type { ProxyPlan } from '../proxy/forwarder.js';
import { withoutBackendCredentials, type IdentityPlan } from './identity/identity-propagation.js';
import { createShapeClassifier, interpolateUserVariables, projectResponse } from './mongo-rules.js';
import type { AccessControl } from './permissions/access-control.js';
import type { Principal } from '../principal/principal.js';
import { isUnverifiedScheme } from './authenticate.js';

const BODY_LIMIT_FOR_PREDICATES = 1024 * 1024;
const JSON_TYPE = /^application\/([a-z.+-]*\+)?json/i;

export interface ProxyPolicyOptions<X> {
  mode: 'enforce' | 'own-routes';
  acl: AccessControl<X>;
  exchangeFor(scope: RequestScope): X;
  planIdentity(principal: Principal): IdentityPlan;
  collectionPath: string;
  /** The backend's own token endpoint, when Outrigger does not serve that path itself: refused to keys, with all below it. */
  backendTokenPath: string | null;
}

/**
 * What the access layer decides about a proxied request: whether it may pass (SPEC §3.5, in
 * enforce mode), and what changes on the way (identity §3.4, readFilter and projectResponse §3.6).
 */
export function createProxyPolicy<X>(o: ProxyPolicyOptions<X>): { authorizeProxy: AuthorizeProxy; planProxy: PlanProxy; authorizeOwnRoute(scope: RequestScope): void } {
  const classify = createShapeClassifier(o.collectionPath);

  function authorizeOwnRoute(scope: RequestScope): void {
    // The ACL decision's span (SPEC §9), only on a recorded trace.
    const span = scope.trace?.recording ? scope.trace.child('authorize', 'internal') : undefined;
    const decision = o.acl.decide(scope.principal, o.exchangeFor(scope));
    if (!decision.allowed) {
      span?.set('outrigger.acl.allowed', false);
      span?.end();
      throw o.acl.denial(scope.principal);
    }
    scope.permission = decision.permission?.doc;
    if (span) {
      span.set('outrigger.acl.allowed', true);
      span.set('outrigger.acl.permission', decision.admin ? '(admin role)' : String((decision.permission?.doc as { _id?: unknown } | undefined)?._id ?? ''));
      span.end();
    }
  }

  /** Synchronous unless a permission's predicate needs the request body read first. */
  function authorizeProxy(scope: RequestScope): Promise<void> | void {
    const { principal } = scope;
    if (principal.via === 'apikey' && o.backendTokenPath && isUnder(scope.path, o.backendTokenPath)) throw forbidden('an API key cannot be exchanged for a backend token; use the key itself');
    if (o.mode === 'own-routes') return;
    if (o.acl.needsRequestBody(principal) && scope.method !== 'GET' && scope.method !== 'HEAD')
      return readBody(scope, BODY_LIMIT_FOR_PREDICATES).then((body) => {
        scope.bufferedBody = body;
        authorizeOwnRoute(scope);
      });
    authorizeOwnRoute(scope);
  }

  function planProxy(scope: RequestScope): ProxyPlan {
    const identity = o.planIdentity(scope.principal);
    const plan: ProxyPlan = {
      removeRequestHeaders: identity.removeRequestHeaders,
      setRequestHeaders: identity.setRequestHeaders,
      body: scope.bufferedBody,
    };
    if (scope.principal.via === 'apikey') plan.filterResponseHeader = withoutBackendCredentials;
    else if (scope.principal.via === 'anonymous' && isUnverifiedScheme(scope.req.headers.authorization)) plan.removeRequestHeaders = new Set([...(plan.removeRequestHeaders ?? []), 'authorization']);

    const mongo = scope.permission?.mongo;
    if (!mongo) return plan;
    if (mongo.readFilter) {
      const shape = classify(scope.path);
      if (shape) {
        const reading = (scope.method === 'GET' || scope.method === 'HEAD') && shape !== 'other';
        if (!reading) throw forbidden('your roles read this collection through a filter; counts, aggregations and writes under it are not allowed');
        const filter = JSON.stringify(interpolateUserVariables(mongo.readFilter, scope.principal));
        plan.target = `${scope.rawUrl}${scope.rawQuery || scope.rawUrl.endsWith('?') ? '&' : '?'}filter=${encodeURIComponent(filter)}`;
      }
    }
    if (mongo.projectResponse) {
      const projection = mongo.projectResponse;
      // The body must be rewritten, so ask for it uncompressed.
      plan.setRequestHeaders = { ...plan.setRequestHeaders, 'accept-encoding': 'identity' };
      plan.rewrite = {
        accepts: (status, headers) => status >= 200 && status < 300 && JSON_TYPE.test(String(headers['content-type'] ?? '')) && !headers['content-encoding'],
        // Throws on a body that is not JSON after all: the forwarder answers 502 rather than leak unprojected data.
        apply: (body) => Buffer.from(JSON.stringify(projectResponse(JSON.parse(body.toString('utf8')), projection))),
      };
    }
    return plan;
  }

  return { authorizeProxy, planProxy, authorizeOwnRoute };
}

/**
 * `path` is `prefix` or below it, on whole segments (`/token`, `/token/`, `/token/cookie`; not
 * `/tokens`). `path` is the canonical path (http/canonical-path.ts), so encodings, `;parameters`
 * and repeated slashes are already gone: RESTHeart serves its token endpoint at `/token` and
 * what is under it (`/token/cookie`), and none of it may answer a key.
 */
function isUnder(path: string, prefix: string): boolean {
  return path.startsWith(prefix) && (path.length === prefix.length || path.charCodeAt(prefix.length) === 47);
}
