/**
 * response cache (SPEC §12): a proxied GET a cache rule covers is answered from memory when a
 * fresh entry holds what the backend would answer this caller; a miss is captured as it streams
 * and stored; a write drops the reads of its collection when the upstream's head arrives, before
 * the writer's answer is sent. After authenticate, limit, authorize and plan (every hit is
 * decided and counted as any request), before the forward. Absent while the cache does not run
 * (start.ts: no rules, not `strong`, no app's `descriptor.cache` yet).
 */
import { hitStatus, forwardStatus, type Forward } from '../../cache/cache-status.js';
import { primaryKey, type UpstreamHeader } from '../../cache/cache-key.js';
import type { CacheScope } from '../../cache/cache-scope.js';
import { clientDirective, type ClientDirective } from '../../cache/freshness.js';
import type { StrongGenerations } from '../../cache/invalidation-bus.js';
import { refreshEntry, type CacheRule, type Fill, type Found, type LookupResult, type ResponseCache } from '../../cache/response-cache.js';
import { composeCaptures, type ProxyPlan, type ResponseCapture } from '../../proxy/forward-request.js';
import { exchangeForScope } from '../exchange.js';
import type { ChainRequest } from '../request.js';
import { ANSWERED, type Stage, type Step } from '../stage.js';
import { serveEntry } from './cache-answer.js';

export interface ResponseCacheParts {
  readonly cache: ResponseCache;
  /** `cache.consistency: strong`: the generations in Redis. */
  readonly strong: StrongGenerations | null;
  /** False while the cache does not run (no stage); absent: it runs. */
  readonly armed?: boolean;
  /** Told when the cache starts running after the chain was built (request-chain.ts adds the stage then). */
  onArmed?(listener: () => void): void;
}

interface Read {
  readonly primary: string;
  readonly scope: CacheScope;
  readonly rule: CacheRule;
  readonly header: UpstreamHeader;
}

export function responseCacheStage(parts: ResponseCacheParts | undefined): Stage | null {
  if (parts === undefined || parts.armed === false) return null;
  const { cache, strong } = parts;
  const count = (rule: CacheRule, result: LookupResult) => cache.countLookup(rule.name, result);

  function read(request: ChainRequest): Step {
    const rule = cache.ruleFor(exchangeForScope(request));
    if (rule === undefined) return;
    const plan = request.plan!;
    const directive = request.header('range') !== undefined ? 'bypass' : clientDirective(request.header('cache-control'), request.header('pragma'));
    if (directive === 'bypass') {
      count(rule, 'bypass');
      withStatus(request, plan, forwardStatus('bypass', false));
      return;
    }
    const header = upstreamHeaderOf(request, plan);
    const r: Read = { primary: primaryKey(plan.target ?? request.rawUrl, identityOf(request), header), scope: cache.scopeOf(request.path), rule, header };
    if (strong === null) return decide(request, r, directive, null);
    return strong.read(r.scope).then(
      (generations) => decide(request, r, directive, generations),
      () => {
        // Redis did not say whether a write happened: ask the backend, keep nothing.
        count(rule, 'miss');
        withStatus(request, plan, forwardStatus('miss', false));
      },
    );
  }

  function decide(request: ChainRequest, r: Read, directive: ClientDirective, generations: string | null, joined = false): Step {
    if (directive === 'use') {
      const found = cache.lookup(r.primary, r.header);
      if (found !== undefined && (generations === null || found.entry.strong === generations)) {
        const fresh = cache.freshFor(found.entry);
        if (fresh > 0) {
          count(r.rule, 'hit');
          return serveEntry(request, found.entry, hitStatus(fresh / 1000));
        }
        if (found.entry.etag !== undefined && request.method === 'GET') return fill(request, r, 'stale', generations, found);
      }
      const waiting = joined ? undefined : cache.joinable(r.primary);
      if (waiting !== undefined) return waiting.then(() => (request.res.destroyed ? ANSWERED : decide(request, r, directive, generations, true)));
    }
    // A HEAD is answered from a GET's entry, never stored: its answer has no body.
    if (request.method === 'HEAD') return void withStatus(request, request.plan!, forwardStatus('miss', false));
    return fill(request, r, directive === 'revalidate' ? 'request' : 'miss', generations, undefined);
  }

  function fill(request: ChainRequest, r: Read, fwd: Forward, generations: string | null, stale: Found | undefined): void {
    count(r.rule, stale ? 'revalidated' : 'miss');
    const plan = request.plan!;
    const f = cache.begin(r.primary, r.scope, r.rule, r.header, generations);
    request.cacheExchange = { fill: f };
    const headers = withStatus(request, plan, forwardStatus(fwd, false));
    // An expired entry with an ETag: the backend is asked whether it changed (RFC 9111 §4.3.1).
    if (stale) plan.setRequestHeaders = { ...plan.setRequestHeaders, 'if-none-match': stale.entry.etag! };
    plan.capture = fillCapture(request, f, fwd, headers, stale && { ...stale, rule: r.rule });
  }

  return {
    name: 'response cache',
    when: (request) => request.route === undefined,
    run(request) {
      const method = request.method;
      if (method === 'GET' || method === 'HEAD') return read(request);
      if (method !== 'OPTIONS') write(parts, request);
    },
    failed: (request) => settle(parts, request),
    close: (request) => settle(parts, request),
  };
}

/**
 * What the forwarder hands a fill: the answer copied into it when it may be stored (Cache-Status
 * then says `stored`), or, for a revalidation the backend answered 304, the entry refreshed and
 * served in place of the upstream's answer.
 */
function fillCapture(request: ChainRequest, f: Fill, fwd: Forward, headers: Record<string, string>, stale: (Found & { rule: CacheRule }) | undefined): ResponseCapture {
  let replaced = false;
  return {
    head(status, upstream) {
      if (stale && status === 304) {
        replaced = true;
        refreshEntry(stale.entry, upstream, stale.rule.maxAgeSeconds);
        return 'replace';
      }
      const storing = f.head(status, upstream);
      if (storing) headers['cache-status'] = forwardStatus(fwd, true);
      return storing ? 'copy' : 'none';
    },
    data: (chunk) => f.data(chunk),
    end() {
      if (!replaced) return void f.end();
      f.abandon();
      try {
        serveEntry(request, stale!.entry, forwardStatus('stale', false, 304));
      } catch (error) {
        request.fail(error);
      }
    },
  };
}

/** A write: its collection's reads (and those its answer's Location names) drop at the upstream's head, unless it was refused with a 4xx. */
function write({ cache, strong }: ResponseCacheParts, request: ChainRequest): void {
  const state = { write: cache.scopeOf(request.path), decided: false };
  request.cacheExchange = state;
  const capture: ResponseCapture = {
    head(status, headers) {
      state.decided = true;
      if (status >= 400 && status < 500) return 'none';
      const scopes = [state.write, ...locations(cache, headers)];
      for (const scope of scopes) cache.invalidate(scope);
      if (strong === null) return 'none';
      // strong: the writer is answered once Redis counted the write (or failed to: then reads forward anyway).
      return () =>
        Promise.all(scopes.map((scope) => strong.bump(scope))).then(
          () => undefined,
          () => undefined,
        );
    },
    data() {},
    end() {},
  };
  // An idempotent write's record (stages/idempotency.ts) captures the same answer.
  const plan = request.plan!;
  plan.capture = plan.capture === undefined ? capture : composeCaptures(plan.capture, capture);
}

function locations(cache: ResponseCache, headers: Record<string, string | string[] | undefined>): CacheScope[] {
  const out: CacheScope[] = [];
  for (const name of ['location', 'content-location']) {
    const value = headers[name];
    if (typeof value !== 'string') continue;
    try {
      out.push(cache.scopeOf(new URL(value, 'http://backend').pathname));
    } catch {
      // Not a URI: names nothing to drop.
    }
  }
  return out;
}

/** The write may have happened (a 5xx before a head, a timeout, a broken connection, the client gone): drop. */
function settle({ cache, strong }: ResponseCacheParts, request: ChainRequest): void {
  const state = request.cacheExchange;
  if (state === undefined) return;
  request.cacheExchange = undefined;
  if ('fill' in state) state.fill.abandon();
  else if (!state.decided) {
    cache.invalidate(state.write);
    if (strong !== null) void strong.bump(state.write).catch(() => {});
  }
}

/** The answer's Cache-Status rides with the rate-limit headers, in the forwarder's one head (returned to be updated at the head). */
function withStatus(request: ChainRequest, plan: ProxyPlan, status: string): Record<string, string> {
  const headers = { ...request.rateLimitHeaders, 'cache-status': status };
  plan.responseHeaders = headers;
  return headers;
}

/**
 * Who the backend is told the caller is, by what it says: when Outrigger verified the caller it
 * speaks for them (a minted JWT of their id and roles, or the identity headers), so the key holds
 * their id and roles, never the token's bytes. Otherwise the caller's own credentials go upstream
 * and the key holds them (hashed, with the rest of the key).
 */
function identityOf(request: ChainRequest): string {
  const p = request.principal;
  return p.verifiedLocally ? `${p.id ?? ''}\u0000${p.roles.join('\u0000')}` : '';
}

/** A request header as the backend receives it: set by the plan, removed by it, or the client's own. */
function upstreamHeaderOf(request: ChainRequest, plan: ProxyPlan): UpstreamHeader {
  const set = plan.setRequestHeaders;
  const removed = plan.removeRequestHeaders;
  const speaksFor = request.principal.verifiedLocally;
  const headers = request.req.headers;
  return (name) => {
    if (set !== undefined && name in set) return name === 'authorization' && speaksFor ? '\u0002identity' : set[name];
    if (removed?.has(name)) return undefined;
    const value = headers[name];
    return Array.isArray(value) ? value.join(', ') : value;
  };
}
