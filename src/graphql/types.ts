/**
 * Types shared by the GraphQL engine: the per-request context the server hands in, the shape of
 * one backend read, and the reader contract the engine reads collections through.
 */

import type { IncomingHttpHeaders } from 'node:http';
import type { GraphqlLimitsConfig } from '../config/graphql-limits.js';
import type { RequestTrace } from '../observability/tracing/tracing.js';
import type { Principal } from '../principal/principal.js';
import { GRAPHQL_LIMIT_DEFAULTS } from '../config/graphql-limits.js';
import type { AbortLike } from '../util/request-abort.js';
import type { Priority } from '../proxy/upstream-slots.js';

/**
 * What the server knows about the request being served. The engine never looks inside except for
 * `signal`; it passes the context on to `BackendReader.find`, so the reader (through its
 * `headersFor`) can send the caller's identity to the backend (SPEC §3.4, `graphql.backend.auth`).
 */
export interface RequestContext {
  /** The authenticated principal, if the server wants `headersFor` to mint identity from it. */
  readonly principal?: { readonly id: string; readonly roles: readonly string[]; readonly via?: string; readonly keyId?: string };
  /** Headers to send with every backend read of this request (e.g. `Authorization: Bearer <jwt>`). */
  readonly backendHeaders?: Readonly<Record<string, string>>;
  /**
   * Aborted when the request times out or the client goes away; readers must honour it. A
   * RequestAbort belongs to this one execution, which aborts it itself at its time limit; any
   * other signal gets a RequestAbort of the execution's own tied to it.
   */
  readonly signal?: AbortLike;
  /** Correlation id for logs. */
  readonly requestId?: string;
  /** Rate limits counting GraphQL cost (SPEC §10): charges the estimate's documents; throws 429. */
  readonly chargeCost?: (documents: number) => Promise<void> | void;
  /** The live request as the caller's read and write policies see it (`graphql.backend.auth: caller`). */
  readonly caller?: CallerFacts;
  /** The request's trace (SPEC §9): backend reads and writes are its client spans, a write's webhooks carry its traceparent. */
  readonly trace?: RequestTrace;
  /** Its class when the backend is at its limit (SPEC §13; 0 critical, 1 default, 2 sheddable). */
  readonly priority?: Priority;
  /**
   * Runs `fn` once this request's answer was handed to the client, or the client left (the HTTP
   * route sets it). A mutation's subscription changes are published then, so every subscription
   * acknowledged before the answer was claimed in Redis before its change arrives (SPEC §6.5,
   * issue 53 item 7). Without it, `fn` runs at once.
   */
  readonly afterAnswer?: (fn: () => void) => void;
}

/** What the read and write policies need to know about the live request (carried in `RequestContext.caller`). */
export interface CallerFacts {
  readonly principal: Principal;
  readonly headers: IncomingHttpHeaders;
  readonly clientIp: string;
  readonly secure: boolean;
}

/** One `GET {backend}{collectionPath}?filter=&sort=&page=&pagesize=` read. */
export interface BackendRead {
  readonly db: string;
  readonly collection: string;
  /** Mongo query document; absent when there is nothing to filter on (never `{}`). */
  readonly filter?: Record<string, unknown>;
  /** Mongo sort document. */
  readonly sort?: Record<string, unknown>;
  /** 1-based page. */
  readonly page: number;
  /** Documents per page, 1..1000. */
  readonly pagesize: number;
  /**
   * Run the collection's declared aggregation of this name instead of a find
   * (`GET {collectionPath}/_aggrs/{name}?avars=`); filter and sort are then not sent.
   */
  readonly aggregation?: { readonly name: string; readonly avars: Record<string, unknown> };
  /**
   * The fields the query's answer needs (RESTHeart's `keys`, a MongoDB projection), added by
   * direct execution (compile/engines/direct-plan.ts). It only narrows what comes back, so it is no part of
   * the read as the read policy decides it or as a replay finds it (`readQueryString` leaves it out).
   */
  readonly projection?: ReadProjection;
}

/** A read's projection: `keys` as sent, and `id`, the same as a string (batching keys groups by it). */
export interface ReadProjection {
  readonly keys: Readonly<Record<string, 0 | 1>>;
  readonly id: string;
}

export interface BackendReader {
  /**
   * Reads one page. Rejects with an `OutriggerError` coded `BACKEND_UNAVAILABLE` or `BACKEND_ERROR`.
   * `cached`: a query's read, which the response cache may answer (SPEC §12); subscription
   * re-reads and a mutation's reads never pass it.
   */
  find(read: BackendRead, ctx: RequestContext, cached?: boolean): Promise<unknown[]>;
}

/**
 * Engine limits (SPEC §1 `graphql.*`): the config's own (config/graphql-limits.ts), taken whole;
 * the defaults are the config's.
 */
export type GraphqlLimits = Readonly<Omit<GraphqlLimitsConfig, 'maxCost'>> & { readonly maxCost: Readonly<GraphqlLimitsConfig['maxCost']> };

export const DEFAULT_LIMITS: GraphqlLimits = GRAPHQL_LIMIT_DEFAULTS;

/** The limits among `options` (the ones set), the defaults for the rest. */
export function limitsOf(options: Partial<GraphqlLimits>): GraphqlLimits {
  const limits: Record<string, unknown> = {};
  for (const [key, fallback] of Object.entries(DEFAULT_LIMITS)) limits[key] = options[key as keyof GraphqlLimits] ?? fallback;
  return limits as unknown as GraphqlLimits;
}

/** Largest `pagesize` a RESTHeart backend accepts. */
export const BACKEND_MAX_PAGESIZE = 1000;
/** Largest GraphQL query text (SPEC §6.3): 100 KiB. */
export const MAX_QUERY_BYTES = 100 * 1024;
/** Largest request body the handler accepts (query + variables + extensions). The server may stop reading beyond it. */
export const MAX_BODY_BYTES = 1024 * 1024;

/**
 * What the caller may read from one collection, decided by the server's ACL (SPEC §3.6): the
 * permission that applies to the equivalent `GET {collectionPath}` for the caller. `filter` is the
 * interpolated `readFilter` (ANDed with every read of that collection); `project` applies
 * `projectResponse` to each document before the client sees it (after joins are split; a filter,
 * sort or join key on a field it hides is refused, so joins match only on fields the caller sees).
 */
export type ReadDecision =
  | {
      readonly allow: true;
      readonly filter?: Record<string, unknown>;
      readonly project?: (doc: unknown) => unknown;
      /** True for a field path `project` hides: filters and sorts on it are refused (issue 25). */
      readonly hides?: (path: string) => boolean;
      /**
       * What `filter` and `project` are, as text (the readFilter and projectResponse): a whole cached
       * answer (SPEC §12 `descriptor.cache`) is served only to callers whose decisions say the same.
       * A decision with a filter or projection and no key keeps the answer out of the cache.
       */
      readonly key?: string;
    }
  | { readonly allow: false; readonly message?: string };

/**
 * Asked per distinct read of a request, before it is made, with what the equivalent REST GET
 * would carry: `query` is the read's query string (`filter=&sort=&page=&pagesize=`, or `avars=`
 * for the declared aggregation `aggregation`), so permissions that look at it decide as for REST.
 */
export type ReadPolicy = (
  target: { readonly db: string; readonly collection: string; readonly aggregation?: string; readonly query?: string },
  ctx: RequestContext,
) => ReadDecision | Promise<ReadDecision>;

/**
 * One backend write a mutation makes (SPEC §6.4): the REST request a client of Outrigger would
 * send. `id` is the document's path segment (with `idType` when RESTHeart needs `?id_type=`),
 * `'*'` for a bulk write; `filter` goes in the query string.
 */
export interface BackendWrite {
  readonly method: 'POST' | 'PATCH' | 'DELETE';
  readonly db: string;
  readonly collection: string;
  /** Absent: the collection itself (POST); `*`: bulk PATCH/DELETE. */
  readonly id?: string;
  /** RESTHeart's `id_type` for an id segment that is not read as STRING_OID would read it. */
  readonly idType?: 'STRING' | 'NUMBER';
  readonly filter?: Record<string, unknown>;
  readonly body?: unknown;
}

/** What the backend answered to a write (the body as text, for the webhooks too). */
export interface BackendWriteResponse {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

export interface BackendWriter {
  /** The path (as a client of Outrigger addresses it) and query string of a write. */
  target(write: BackendWrite): { path: string; query: string };
  /** Sends one write; rejects with an `OutriggerError` coded `BACKEND_UNAVAILABLE` when no answer came. */
  send(write: BackendWrite, ctx: RequestContext): Promise<BackendWriteResponse>;
}

/** The ACL's answer for the equivalent REST write (SPEC §6.4, §3.5, §3.6). */
export type WriteDecision = { readonly allow: true } | { readonly allow: false; readonly message: string };

/** Asked once per backend write, before it is sent, with the REST request it is. */
export type WritePolicy = (target: { readonly method: string; readonly path: string; readonly query: string; readonly body: unknown }, ctx: RequestContext) => WriteDecision;

/**
 * Reads the document a single-document update or delete addresses before it is sent, when its
 * state matters to someone (subscriptions: a listener's readFilter the write takes it out of).
 * Undefined when nothing is read; the promise never rejects and gives undefined when not found.
 */
export type BeforeWrite = (write: { readonly method: string; readonly path: string; readonly query: string }, ctx: RequestContext) => Promise<unknown> | undefined;

/** Told of every backend write a mutation made, with what the backend answered (webhooks, recording). */
export type WriteObserver = (
  write: {
    readonly method: string;
    readonly path: string;
    readonly query: string;
    readonly body: unknown;
    readonly response: BackendWriteResponse | undefined;
    readonly operationName: string | null;
    /** The app's uri. */
    readonly app: string;
    /**
     * A single-document write's document as read before it was sent, unprojected: a delete's
     * whose field returns it (the caller's readFilter applied), else what `BeforeWrite` read.
     */
    readonly before?: unknown;
  },
  ctx: RequestContext,
) => void | Promise<void>;

/**
 * A mutation's backend write as the webhooks and recordings see it (SPEC §6.4): the REST
 * exchange a client would have made through the proxy, with where it came from. The wiring
 * (feature-list.ts) hands these to the webhooks' observer.
 */
export interface WriteExchange {
  readonly method: string;
  readonly path: string;
  readonly query: string;
  readonly requestHeaders: Record<string, string | string[] | undefined>;
  readonly requestBody: unknown;
  readonly status: number;
  readonly responseHeaders: Record<string, string>;
  readonly responseBody: string;
  readonly user?: { readonly id: string; readonly roles: readonly string[] };
  readonly authenticationType?: string;
  readonly remoteIp: string;
  readonly secure: boolean;
  readonly via: 'graphql';
  readonly graphql: { readonly app: string; readonly operation: string | null };
  /** The GraphQL request's traceparent (SPEC §9): the deliveries this write causes are spans in its trace. */
  readonly traceparent?: string;
}
