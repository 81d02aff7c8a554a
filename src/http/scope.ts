import type { IncomingMessage, ServerResponse } from 'node:http';
import { randomBytes } from 'node:crypto';
import { ANONYMOUS, type Principal } from '../principal/principal.js';
import { canonicalPath, RAW_HASH } from './canonical-path.js';

/**
 * Request ids: a random per-process prefix and a counter. Unique across replicas in practice,
 * ordered within a process, and far cheaper than a UUID per request.
 */
const ID_PREFIX = randomBytes(6).toString('hex');
let idCounter = 0;
function nextRequestId(): string {
  return `${ID_PREFIX}-${(++idCounter).toString(36)}`;
}

/**
 * The request-body memory every door's buffered bodies count against (proxy/buffer-reservations.ts:
 * upstream.bufferTotalBytes for the process, upstream.bufferBytesPerClient per address or IPv6
 * /64). Which bound refused: `client` or `total`.
 */
export interface BodyReservations {
  tryReserve(client: string, bytes: number): 'ok' | 'client' | 'total';
  release(client: string, bytes: number): void;
}

export type RouteKind = 'proxy' | 'keys' | 'graphql' | 'graphql-apps' | 'admin' | 'oauth' | 'mcp' | 'health' | 'metrics';

/**
 * Everything known about one request while it is handled. Built once per request with plain
 * string slicing (no URL parsing on the pass-through path); the request chain's stages add what
 * they decide (the principal here; their own slots, typed where each stage declares them) so
 * later stages, own routes and the webhook observer can read it.
 */
export class RequestScope {
  readonly id: string;
  readonly startedAt = performance.now();
  readonly method: string;
  /** The request target exactly as received: path plus raw query. */
  readonly rawUrl: string;
  /** Path part of the target, still percent-encoded as received: what is forwarded (in rawUrl) and logged. */
  readonly rawPath: string;
  /**
   * The canonical path (http/canonical-path.ts): the path as the backend will read it, in one
   * encoding. Every decision is taken on it (route table, guards, ACL, webhook conditions, own
   * routes' ids); it is the raw path itself on the fast path. When the path has no canonical
   * form, this is the raw path and `pathProblem` says why: the handler answers 400 before any
   * decision.
   */
  readonly path: string;
  /** Why the path cannot be decided on (the 400's message), or undefined. */
  readonly pathProblem: string | undefined;
  /** `;parameters` cut from the last segment (`;x=1`), '' when none: the condition language reads them (`%{p,x}`). */
  readonly pathParameters: string;
  /** Query string without '?', '' when absent, untouched. */
  readonly rawQuery: string;
  principal: Principal = ANONYMOUS;
  routeKind: RouteKind = 'proxy';
  /** `RateLimit-Policy` and `RateLimit` for the answer (SPEC §10): in the forwarder's head, or set by the handler on own routes. */
  rateLimitHeaders: Record<string, string> | undefined = undefined;
  /** What this request's buffered body counts against (set by the handler; http/body.ts reserves). */
  bodyReservations: BodyReservations | undefined = undefined;
  /** Bytes of request body this request holds in `bodyReservations`, given back when its response closes. */
  heldBodyBytes = 0;
  /** The request body, when a feature had to read it whole (bson-request-* predicates); forwarded as is. */
  bufferedBody: Buffer | undefined = undefined;
  /**
   * The answer is the idempotency record's (SPEC §14): a replay, or the 409, 422 or 503 of a claim
   * that may not run. The request ran nothing, so the observers (webhooks, recordings) are not
   * told of it (chain/stages/observe.ts).
   */
  idempotencyAnswered = false;
  private parsedQuery: URLSearchParams | undefined;

  constructor(
    readonly req: IncomingMessage,
    readonly res: ServerResponse,
    readonly clientIp: string,
    readonly secure: boolean,
  ) {
    const incomingId = req.headers['x-request-id'];
    this.id = typeof incomingId === 'string' && /^[A-Za-z0-9._-]{1,128}$/.test(incomingId) ? incomingId : nextRequestId();
    this.method = req.method ?? 'GET';
    this.rawUrl = req.url ?? '/';
    const q = this.rawUrl.indexOf('?');
    const rawPath = (this.rawPath = q === -1 ? this.rawUrl : this.rawUrl.slice(0, q));
    const canonical = canonicalPath(rawPath);
    this.path = typeof canonical === 'string' ? canonical : rawPath;
    // A raw `#` in the query is refused as in the path: a readFilter appended to it would land in a fragment.
    this.pathProblem = typeof canonical !== 'string' ? canonical.message : q !== -1 && this.rawUrl.includes('#', q) ? RAW_HASH : undefined;
    const semicolon = canonical === rawPath ? -1 : rawPath.indexOf(';');
    this.pathParameters = semicolon === -1 ? '' : rawPath.slice(semicolon);
    this.rawQuery = q === -1 ? '' : this.rawUrl.slice(q + 1);
    // The slots of the request chain's stages (src/chain/), each declared and typed by the stage
    // that owns it, as an augmentation of this class: the transport knows none of their types.
    // Set here so every scope has one shape from its start (hidden classes stay monomorphic).
    this.trace = undefined; // chain/stages/trace.ts: the request's trace (SPEC §9)
    this.permission = undefined; // access/chain-hooks.ts: the permission that allowed the request
    this.rateLimits = undefined; // limits/limiter.ts: what covered the request (its GraphQL cost is charged later)
    this.ratePriority = undefined; // limits/limiter.ts: the highest priority class of the policies that covered it (SPEC §13)
    this.exchange = undefined; // chain/exchange.ts: the condition language's view, built on first use
  }

  get query(): URLSearchParams {
    return (this.parsedQuery ??= new URLSearchParams(this.rawQuery));
  }

  header(name: string): string | undefined {
    const value = this.req.headers[name];
    return Array.isArray(value) ? value[0] : value;
  }

  elapsedSeconds(): number {
    return (performance.now() - this.startedAt) / 1000;
  }
}
