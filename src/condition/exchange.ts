/** The caller a request runs as, for `@user.<field>` variables in ACL conditions. */
export interface ExchangeUser {
  readonly id: string;
  readonly roles: readonly string[];
  readonly [field: string]: unknown;
}

/** TLS facts of the client connection, when Outrigger terminates TLS itself. */
export interface ExchangeTls {
  readonly cipher?: string;
  readonly protocol?: string;
  readonly sessionId?: string;
  /** The client certificate, PEM or base64 DER, when one was presented. */
  readonly clientCertificate?: string;
}

/**
 * What a condition reads from a request (and, for webhook conditions, its response). It is an
 * interface rather than a class so the proxy can build one per request from what it already
 * holds, without copying headers or parsing bodies up front.
 *
 * Contract for implementers:
 * - header lookups receive the name in lower case (node's `req.headers` keys can be used as is);
 * - values derived from the request (decoded path, query parameters, cookies) are computed once
 *   per Exchange object and cached, so build a new object per request and do not mutate its
 *   request side afterwards;
 * - optional members that are absent read as "not there" (null attributes, false predicates).
 */
export interface Exchange {
  /** The method as received, e.g. `GET`. */
  readonly method: string;
  /** The request path as received (still percent-encoded), without the query string. */
  readonly path: string;
  /** The query string as received, without the `?`; `''` when there is none. */
  readonly rawQuery: string;
  /** First value of a request header, or undefined. `name` is lower case. */
  requestHeader(name: string): string | undefined;
  /** Every value of a request header in arrival order, when the implementation keeps them. */
  requestHeaderValues?(name: string): readonly string[] | undefined;
  /** True when the client connection is TLS (to Outrigger, or to a trusted proxy in front). */
  readonly secure: boolean;
  /** The client IP (see SPEC §0 "Client IP"). */
  readonly remoteIp: string;
  readonly localIp?: string;
  readonly localPort: number;
  /** The Host header as received (`host[:port]`); defaults to the `host` request header. */
  readonly host?: string;
  /** e.g. `HTTP/1.1`, `HTTP/2.0`. */
  readonly protocol: string;
  /** Response status, once the response is known (webhook conditions). */
  readonly statusCode?: number;
  readonly statusMessage?: string;
  responseHeader?(name: string): string | undefined;
  responseHeaderValues?(name: string): readonly string[] | undefined;
  /**
   * The request body parsed as JSON, computed lazily and cached by the implementer: undefined
   * when the request has no JSON body. Leave the member out entirely when bodies are not
   * available at all, and bson-request-* predicates are then false (RESTHeart's behaviour for a
   * request that is not a BSON request).
   */
  requestBody?(): unknown;
  /** The authenticated caller; undefined for anonymous requests. */
  readonly user?: ExchangeUser;
  /** How the caller authenticated, e.g. `BASIC`, `API_KEY` (`%{AUTHENTICATION_TYPE}`). */
  readonly authenticationType?: string;
  /** When the request arrived, epoch milliseconds (`%t`). */
  readonly startTime?: number;
  /** Time to answer, milliseconds, once the response is complete (`%D`, `%T`). */
  readonly responseTimeMs?: number;
  readonly bytesSent?: number;
  readonly bytesRead?: number;
  readonly tls?: ExchangeTls;
  /** The response body as text, when it was captured (`%{STORED_RESPONSE}`). */
  storedResponse?(): string | undefined;
  /**
   * Where the condition module caches what it derived from this exchange (decoded path, query).
   * Implementers declare it (`conditionView: unknown = undefined`) so the object keeps its shape.
   */
  conditionView?: unknown;
}
