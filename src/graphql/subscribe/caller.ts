/**
 * Who a subscription runs as, for both transports (SPEC §6.5: "credentials as for queries"): the
 * principal the request authenticated as, the ACL as for a `POST` to `/graphql/<uri>`, and the
 * backend identity of its re-reads (SPEC §3.4, as `graphql.backend.auth` says). Checked again
 * every second with the same credentials, so a revoked or expired key, a lost permission or a
 * disabled, deleted or changed app ends the subscription within about a second (SPEC: 1 s goal).
 */
import type { AppContext } from '../../app-context.js';
import type { Principal } from '../../principal/principal.js';
import { OutriggerError } from '../../errors.js';
import type { RequestScope } from '../../http/scope.js';
import { backendHeadersFor } from '../backend/caller-identity.js';
import type { CompiledApp } from '../compile/compile-app.js';
import type { GraphqlAppRegistry } from '../compile/registry.js';
import type { CallerFacts, RequestContext } from '../types.js';
import type { SseOpen } from './sse.js';
import type { EndReason } from './subscription.js';
import { identityFacts } from '../../principal/access-facts.js';

export type Authenticate = (scope: RequestScope) => Promise<Principal> | Principal;

export interface CallerParts {
  readonly context: AppContext;
  readonly registry: GraphqlAppRegistry;
  /** The proxy's authenticator (set when the server is attached; app.ts). */
  authenticate(): Authenticate | undefined;
}

/** A refused event (429 naming the policy and when to retry, or 503) as the end of the subscription. */
function chargedEvent(refused: Promise<OutriggerError | null> | OutriggerError | null): Promise<EndReason | null> | EndReason | null {
  const asEnd = (e: OutriggerError | null): EndReason | null =>
    e === null ? null : { message: `${e.message}; this subscription ended: each event it delivers is charged its estimated cost`, code: e.code };
  return refused instanceof Promise ? refused.then(asEnd) : asEnd(refused);
}

/** Re-authentications share one answer per credentials for this long (one per check round). */
const REAUTH_MS = 900;

export function createCallers(parts: CallerParts) {
  const { context, registry } = parts;
  const serviceAuth = context.config.graphql.backend.auth === 'service';
  const recent = new Map<string, { at: number; principal: Promise<Principal> }>();
  /** The ACL's answer per credentials, address and path, shared by the subscriptions checked in one round. */
  const allowed = new Map<string, { at: number; reason: EndReason | null }>();

  const reauthenticate = (scope: RequestScope): Promise<Principal> => {
    const header = scope.req.headers.authorization ?? '';
    const now = Date.now();
    const hit = recent.get(header);
    if (hit && now - hit.at < REAUTH_MS) return hit.principal;
    if (recent.size > 10_000) recent.clear();
    const authenticate = parts.authenticate();
    const principal = authenticate ? Promise.resolve().then(() => authenticate(scope)) : Promise.resolve(scope.principal);
    principal.catch(() => {});
    recent.set(header, { at: now, principal });
    return principal;
  };

  /** The subscription's caller parts for a request already authenticated and allowed (`scope.principal`). */
  return function callerOf(scope: RequestScope, app: CompiledApp, appPath: string): SseOpen {
    const original = scope.principal;
    const ctxFor = (principal: Principal): RequestContext => {
      const caller: CallerFacts = { principal, headers: scope.req.headers, clientIp: scope.clientIp, secure: scope.secure };
      return {
        principal: identityFacts(principal),
        backendHeaders: serviceAuth ? {} : backendHeadersFor(context.planIdentity(principal), principal, scope.req.headers),
        requestId: scope.id,
        caller,
      };
    };
    const limits = context.limits;
    return {
      app,
      principal: original,
      clientIp: scope.clientIp,
      // A `units: cost` policy covered the start (the request chain, or a WebSocket subscribe): events are charged.
      ...(limits && scope.rateLimits ? { chargeEvent: (documents: number) => chargedEvent(limits.chargeEvent(scope, documents)) } : {}),
      ctx: () => ctxFor(scope.principal),
      currentApp: () => {
        const found = registry.lookup(appPath);
        return found.found && found.app.uri === app.uri ? found.app : undefined;
      },
      check: async (): Promise<EndReason | null> => {
        let principal: Principal;
        try {
          principal = await reauthenticate(scope);
        } catch (error) {
          const message = error instanceof OutriggerError ? error.message : 'the credentials could not be checked';
          return { message: `your credentials no longer authenticate (${message}); the subscription ended`, code: 'UNAUTHENTICATED' };
        }
        if (principal.id !== original.id || (principal.keyId ?? null) !== (original.keyId ?? null)) {
          return { message: 'your credentials now name another caller; the subscription ended', code: 'UNAUTHENTICATED' };
        }
        scope.principal = principal;
        const key = `${scope.req.headers.authorization ?? ''}\u0000${scope.clientIp}\u0000${scope.method}\u0000${scope.path}`;
        const now = Date.now();
        const hit = allowed.get(key);
        if (hit && now - hit.at < REAUTH_MS) return hit.reason;
        let reason: EndReason | null = null;
        try {
          context.authorizeOwnRoute(scope);
        } catch (error) {
          const message = error instanceof OutriggerError ? error.message : 'not allowed';
          reason = { message: `you may no longer use this app (${message}); the subscription ended`, code: 'FORBIDDEN' };
        }
        if (allowed.size > 10_000) allowed.clear();
        allowed.set(key, { at: now, reason });
        return reason;
      },
    };
  };
}
