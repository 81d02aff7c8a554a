/**
 * cors: browser pages on other origins call the proxied API and the GraphQL apps (SPEC §15;
 * docs/restheart.md#cors). Opens before the observe stage so a preflight is never seen by
 * webhooks or recordings, and runs before authentication so a preflight (which carries no
 * credentials) is answered 204 by Outrigger itself, not counted by rate limits, never forwarded.
 *
 * A request with an `Origin` on a CORS path gets its Access-Control-* headers by setHeader at the
 * open, so every answer carries them: the backend's (whose own Access-Control-* the forward stage
 * drops through `corsResponseFilter`), an own GraphQL app's, and a refusal of any stage (401, 403,
 * 429, 503, 502). Own routes other than `/graphql/<uri>` (console, /_admin, /keys, sign-in, /mcp)
 * keep their same-origin policy: nothing is added there. A request without `Origin` (server to
 * server) costs one header lookup.
 */
import { hasDotSegments } from '../../http/route-table.js';
import type { CorsConfig } from '../../config/cors-config.js';
import type { ResponseHeaderFilter } from '../../proxy/headers.js';
import type { ChainRequest } from '../request.js';
import { ANSWERED, type Stage } from '../stage.js';

export const CORS_ALLOW_METHODS = 'GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS';
export const CORS_ALLOW_HEADERS = 'Authorization, Content-Type, Idempotency-Key, Last-Event-ID, If-Match, If-None-Match, X-Requested-With, No-Auth-Challenge, traceparent, tracestate';
export const CORS_EXPOSE_HEADERS = 'Location, ETag, RateLimit, RateLimit-Policy, Retry-After, Cache-Status, Idempotent-Replayed, X-Request-Id';
/** Seconds a browser may reuse a preflight's answer (Chromium caps it at 7200). */
export const CORS_MAX_AGE = '7200';

/** A serialized origin as browsers send it; anything else (echo mode) gets no CORS answer. */
const ORIGIN_SHAPE = /^https?:\/\/[a-z0-9.\-[\]:]+$/;

/** What the stage decides from: `cors:` compiled once per config, never per request. */
interface CorsRules {
  readonly mode: CorsConfig['allowOrigins'];
  /** The Access-Control-Allow-Origin value for this Origin, or undefined: the browser refuses. */
  allowed(origin: string): string | undefined;
  /** Credentials only for a listed origin, never for the echo, nor for `null` even when listed. */
  credentials(origin: string): boolean;
}

function compileCors(config: CorsConfig): CorsRules {
  const mode = config.allowOrigins;
  // With `none` the stage still drops the backend's Access-Control-* on requests that carry an Origin.
  const listed = typeof mode === 'string' ? null : new Set(mode);
  return {
    mode,
    allowed(origin) {
      if (mode === 'none') return undefined;
      if (listed) return listed.has(origin) ? origin : undefined;
      // Echo: any page's origin, never `null` (sandboxed frames, file: pages: any site can make one).
      return ORIGIN_SHAPE.test(origin) ? origin : undefined;
    },
    credentials: (origin) => listed !== null && origin !== 'null',
  };
}

/**
 * The `cors:` the stage reads, swapped whole by a reload (SPEC §15; src/reload.ts registers it
 * for the path `cors`): a request reads `rules` once, a field read, and decides on that one set.
 */
export class CorsSettings {
  rules: CorsRules;

  constructor(config: CorsConfig) {
    this.rules = compileCors(config);
  }

  apply(config: CorsConfig): void {
    this.rules = compileCors(config);
  }
}

/**
 * `sameOrigin`: path prefixes that get no CORS even when proxied: the MCP endpoint (`mcp.path`),
 * whichever server answers it, since MCP's transport has servers refuse foreign origins (DNS
 * rebinding) and Outrigger's own /mcp does.
 */
export function corsStage(config: CorsConfig | CorsSettings, sameOrigin: readonly string[] = []): Stage {
  const settings = config instanceof CorsSettings ? config : new CorsSettings(config);
  const excluded = (path: string): boolean => sameOrigin.some((prefix) => path === prefix || (path.startsWith(prefix) && path.charCodeAt(prefix.length) === 47));

  return {
    name: 'cors',
    open(request) {
      const origin = request.req.headers.origin;
      if (origin === undefined) return;
      const route = request.route;
      if (route !== undefined && route.kind !== 'graphql') return;
      // From here the backend's Access-Control-* are dropped (the forward stage's filter).
      request.crossOrigin = true;
      if (route === undefined && excluded(request.path)) return;
      const rules = settings.rules;
      if (request.method === 'OPTIONS' && rules.mode !== 'none' && isPreflight(request)) {
        request.preflight = true;
        return;
      }
      if (rules.mode === 'none') return;
      const res = request.res;
      res.setHeader('vary', 'Origin');
      const allow = rules.allowed(origin);
      if (allow === undefined) return;
      res.setHeader('access-control-allow-origin', allow);
      if (rules.credentials(origin)) res.setHeader('access-control-allow-credentials', 'true');
      res.setHeader('access-control-expose-headers', CORS_EXPOSE_HEADERS);
    },
    when: (request) => request.preflight,
    run(request) {
      // A path the head stage refuses is refused there (400), preflight or not.
      if (request.pathProblem !== undefined || hasDotSegments(request.rawPath)) return;
      const origin = request.req.headers.origin!;
      // Read again: a reload between the open and here is answered with what is now configured.
      const rules = settings.rules;
      const allow = rules.allowed(origin);
      // Always 204: the browser's console then names the reason (no Allow-Origin, or the method
      // or header missing from the lists), which a 403 would hide behind "not an ok status".
      const headers: Record<string, string> = { vary: 'Origin' };
      if (allow !== undefined) {
        headers['access-control-allow-origin'] = allow;
        if (rules.credentials(origin)) headers['access-control-allow-credentials'] = 'true';
        headers['access-control-allow-methods'] = CORS_ALLOW_METHODS;
        headers['access-control-allow-headers'] = CORS_ALLOW_HEADERS;
        headers['access-control-max-age'] = CORS_MAX_AGE;
      }
      request.res.writeHead(204, headers);
      request.res.end();
      return ANSWERED;
    },
  };
}

/** A browser's preflight: OPTIONS with Access-Control-Request-Method and no body (a preflight never has one). */
function isPreflight(request: ChainRequest): boolean {
  const headers = request.req.headers;
  return headers['access-control-request-method'] !== undefined && headers['content-length'] === undefined && headers['transfer-encoding'] === undefined;
}

/** The backend's Access-Control-* go; its Vary keeps ours (`Origin`), which its own would replace in the head. */
function dropBackendCors(name: string, value: string | string[]): string | string[] | undefined {
  if (name.startsWith('access-control-')) return undefined;
  if (name === 'vary') {
    const text = Array.isArray(value) ? value.join(', ') : value;
    return text.trim() === '*' || /(^|,)\s*origin\s*(,|$)/i.test(text) ? text : `${text}, Origin`;
  }
  return value;
}

// One composed filter per plan filter (there are a handful, each made once): nothing per request.
const composed = new WeakMap<ResponseHeaderFilter, ResponseHeaderFilter>();

/** The response filter of a cross-origin request: the plan's, after the backend's Access-Control-* are dropped. */
export function corsResponseFilter(planFilter: ResponseHeaderFilter | undefined): ResponseHeaderFilter {
  if (planFilter === undefined) return dropBackendCors;
  let filter = composed.get(planFilter);
  if (filter === undefined) {
    filter = (name, value) => {
      const kept = dropBackendCors(name, value);
      return kept === undefined ? undefined : planFilter(name, kept);
    };
    composed.set(planFilter, filter);
  }
  return filter;
}
