/**
 * GraphQL's backend reads through the response cache (SPEC §12: "one cache of backend reads"):
 * a query's read that a `cache.rules` rule covers, judged as the equivalent REST GET from the same
 * caller, is answered from the entry a REST client's identical request would use, or fills it.
 * The key is what the backend receives (cache/cache-key.ts): the read's path and query string
 * (after the caller's readFilter was added), who the backend is told the caller is, and the
 * headers it may answer by. Subscription re-reads and mutations never come here (RequestState
 * asks only for a query's reads).
 *
 * An expired entry is read again whole (no `If-None-Match` here: a GraphQL read has no client to
 * hand a 304 on to, and the body has to be parsed either way).
 */
import { primaryKey, type UpstreamHeader } from '../../cache/cache-key.js';
import type { CacheRule, ResponseCache } from '../../cache/response-cache.js';
import type { RunningCache } from '../../cache/start.js';
import type { RequestContext } from '../types.js';
import { readExchange } from './caller-identity.js';

/** One backend answer as the reader needs it: the status, the headers (for storability) and the body. */
export interface RawAnswer {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: Buffer;
}

/** One read as the cache sees it. */
export interface CachedRead {
  /** The collection's path as a REST client would send it (the rule and the scope decide on it). */
  readonly restPath: string;
  /** The read's query string, as the read policy decides on it. */
  readonly query: string;
  /** Path and query exactly as sent upstream (the key). */
  readonly target: string;
  /** Exactly what the read sends upstream. */
  readonly headers: Readonly<Record<string, string>>;
}

export interface BackendReadCache {
  /**
   * The answer to the read, from the cache when a rule covers it and a fresh entry holds it,
   * else from `fetch` (stored when it may be).
   */
  read(read: CachedRead, ctx: RequestContext, fetch: () => Promise<RawAnswer>): Promise<RawAnswer>;
}

export function backendReadCache(running: RunningCache): BackendReadCache {
  const { cache, strong } = running;
  const count = (rule: CacheRule, result: 'hit' | 'miss') => cache.countLookup(rule.name, result);

  return {
    async read({ restPath, query, target, headers }, ctx, fetch) {
      // No rule (a cache started for whole answers only): nothing to judge, nothing built.
      if (cache.rules.length === 0) return fetch();
      const rule = cache.ruleFor(readExchange(ctx.caller, restPath, query));
      if (rule === undefined) return fetch();
      const scope = cache.scopeOf(restPath);
      const principal = ctx.caller?.principal;
      const speaksFor = principal?.verifiedLocally === true;
      const header = upstreamHeader(headers, speaksFor);
      const key = primaryKey(target, speaksFor ? `${principal!.id ?? ''}\u0000${principal!.roles.join('\u0000')}` : '', header);
      let generations: string | null = null;
      if (strong !== null) {
        try {
          generations = await strong.read(scope);
        } catch {
          // Redis did not say whether a write happened elsewhere: ask the backend, keep nothing.
          count(rule, 'miss');
          return fetch();
        }
      }
      const found = await settledEntry(cache, key, header);
      if (found !== undefined && (generations === null || found.strong === generations) && cache.freshFor(found) > 0) {
        count(rule, 'hit');
        return { status: found.status, headers: found.headers, body: found.body };
      }
      count(rule, 'miss');
      const fill = cache.begin(key, scope, rule, header, generations);
      try {
        const answer = await fetch();
        if (fill.head(answer.status, answer.headers)) fill.data(answer.body);
        fill.end();
        return answer;
      } finally {
        fill.abandon();
      }
    },
  };
}

/** The entry for `key`, after waiting once for a fill of it already on its way (request coalescing). */
async function settledEntry(cache: ResponseCache, key: string, header: UpstreamHeader) {
  const found = cache.lookup(key, header);
  if (found !== undefined && cache.freshFor(found.entry) > 0) return found.entry;
  const waiting = cache.joinable(key);
  if (waiting === undefined) return found?.entry;
  await waiting;
  return cache.lookup(key, header)?.entry;
}

/**
 * A header as the backend receives it on this read. A credential Outrigger minted for the caller
 * (it speaks for them) is keyed by the identity it carries, never its bytes, as the REST stage does.
 */
function upstreamHeader(headers: Readonly<Record<string, string>>, speaksFor: boolean): UpstreamHeader {
  return (name) => (name === 'authorization' && speaksFor && headers.authorization !== undefined ? '\u0002identity' : headers[name]);
}
