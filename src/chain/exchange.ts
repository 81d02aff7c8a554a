import type { Exchange, ExchangeUser } from '../condition/index.js';
import type { RequestScope } from '../http/scope.js';
import { authenticationTypeOf, userFacts } from '../principal/access-facts.js';

declare module '../http/scope.js' {
  interface RequestScope {
    /**
     * The condition language's view of this request, built on first use by whichever stage asks
     * first (authorize, limit, observe). A field rather than a WeakMap: per-request weak entries
     * cost the garbage collector on every request.
     */
    exchange: ScopeExchange | undefined;
  }
}

/**
 * The condition language's view of a request, read straight from the scope: nothing is copied
 * or parsed until a predicate asks for it, and one object serves every permission evaluated
 * for the request (the condition module caches decoded values per object).
 */
class ScopeExchange implements Exchange {
  conditionView: unknown = undefined;
  private parsedBody: unknown = undefined;
  private bodyParsed = false;

  constructor(private readonly scope: RequestScope) {}

  get method() {
    return this.scope.method;
  }
  /** The canonical path (with the last segment's `;parameters`, which `%{p,name}` reads): predicates decide as the route table does. */
  get path() {
    const { path, pathParameters } = this.scope;
    return pathParameters === '' ? path : path + pathParameters;
  }
  get rawQuery() {
    return this.scope.rawQuery;
  }
  requestHeader(name: string): string | undefined {
    return this.scope.header(name);
  }
  requestHeaderValues(name: string): readonly string[] | undefined {
    const value = this.scope.req.headers[name];
    return value === undefined ? undefined : Array.isArray(value) ? value : [value];
  }
  get secure() {
    return this.scope.secure;
  }
  get remoteIp() {
    return this.scope.clientIp;
  }
  get localIp() {
    return this.scope.req.socket.localAddress;
  }
  get localPort() {
    return this.scope.req.socket.localPort ?? 0;
  }
  get host() {
    return this.scope.req.headers.host;
  }
  get protocol() {
    return `HTTP/${this.scope.req.httpVersion}`;
  }
  get startTime() {
    return performance.timeOrigin + this.scope.startedAt;
  }
  get authenticationType() {
    return authenticationTypeOf(this.scope.principal);
  }
  /** Read per access: the principal is set after authentication, possibly after this object was made. */
  get user(): ExchangeUser | undefined {
    return userFacts(this.scope.principal);
  }
  requestBody(): unknown {
    if (!this.bodyParsed) {
      this.bodyParsed = true;
      const body = this.scope.bufferedBody;
      if (body && body.length) {
        try {
          this.parsedBody = JSON.parse(body.toString('utf8'));
        } catch {
          this.parsedBody = undefined;
        }
      }
    }
    return this.parsedBody;
  }
}

export function exchangeForScope(scope: RequestScope): Exchange {
  return (scope.exchange ??= new ScopeExchange(scope));
}
