/**
 * The response cache (SPEC §12): backend answers kept in memory under the key of what the
 * backend received, dropped by generation the moment a write to their collection is seen. The
 * API is transport-free so that any backend reader uses it (README.md): `ruleFor`, `lookup`,
 * `joinable` (coalescing), `begin` → `Fill` (head, data, end), `invalidate`, `purge`.
 *
 * Invalidation is by generation, not by walking entries: a write bumps its collection's counter,
 * and an entry (or a fill in flight) whose recorded generation is no longer current is a miss,
 * deleted when next met. Stale entries cost bytes until then, inside the same byte budget.
 */
import { parseCondition, type Condition, type Exchange } from '../condition/index.js';
import type { CacheConfig } from '../config/cache-config.js';
import type { Metrics } from '../observability/metrics.js';
import { ByteLru } from './byte-lru.js';
import { variantKey, type UpstreamHeader } from './cache-key.js';
import { ALL, Generations, scopeClassifier, type CacheScope } from './cache-scope.js';
import { storability } from './freshness.js';
import { RuleCounters, type LookupResult, type RuleStats } from './rule-stats.js';
import { ENTRY_OVERHEAD, headerBytes, type AnswerEntry, type CacheEntry, type Headers, type VaryMarker } from './entries.js';

export type { AnswerEntry, CacheEntry } from './entries.js';
export { refreshEntry } from './entries.js';
export type { LookupResult, RuleStats } from './rule-stats.js';

export interface CacheRule {
  readonly name: string;
  readonly condition: Condition;
  readonly maxAgeSeconds: number;
}

export interface Found {
  readonly entry: CacheEntry;
  readonly key: string;
}

/** Where a drop came from, for the metric: a write seen here, another replica's, the subscription feed's change, an operator, Redis lost. */
export type InvalidationSource = 'write' | 'replica' | 'feed' | 'purge' | 'redis-lost';

interface Flight {
  readonly scope: CacheScope;
  readonly generation: number;
  readonly done: Promise<void>;
  readonly settle: () => void;
}

export interface ResponseCacheOptions {
  readonly config: CacheConfig;
  /** `graphql.backend.collectionPath`: where a path names a collection. */
  readonly collectionPath: string;
  readonly metrics?: Metrics;
}

function compileRules(rules: CacheConfig['rules']): CacheRule[] {
  return rules.map((r) => ({ name: r.name, condition: parseCondition(r.when), maxAgeSeconds: r.maxAgeSeconds }));
}

function ruleText(rule: CacheConfig['rules'][number]): string {
  return `${rule.when}\u0000${rule.maxAgeSeconds}`;
}

export class ResponseCache {
  private currentRules: readonly CacheRule[];
  readonly scopeOf: (path: string) => CacheScope;
  readonly maxEntryBytes: number;
  private readonly lru: ByteLru<CacheEntry | VaryMarker | AnswerEntry>;
  /** Each rule's definition as configured, to tell an unchanged rule on reload. */
  private configOf: Map<string, string>;
  private readonly generations = new Generations();
  private readonly flights = new Map<string, Flight>();
  private readonly bytesByRule = new Map<string, number>();
  /** This process's lookups, stores and evictions by rule, for the console (`GET <admin>/cache`); the metrics count the same. */
  private readonly stats = new RuleCounters();
  private readonly written = new Set<(scope: CacheScope) => void>();
  readonly metrics: Metrics | undefined;
  /** Redis is away: nothing is stored until it is back (another replica's writes would go unheard). */
  private redisAway = false;

  constructor(o: ResponseCacheOptions) {
    this.currentRules = compileRules(o.config.rules);
    this.configOf = new Map(o.config.rules.map((r) => [r.name, ruleText(r)]));
    this.scopeOf = scopeClassifier(o.collectionPath);
    this.maxEntryBytes = o.config.maxEntryBytes;
    this.metrics = o.metrics;
    this.lru = new ByteLru(o.config.maxBytes, (value, evicted) => {
      this.bytesByRule.set(value.rule, (this.bytesByRule.get(value.rule) ?? 0) - value.size);
      if (!evicted) return;
      this.metrics?.cacheEvictions.inc({ rule: value.rule });
      this.stats.evicted(value.rule);
    });
    for (const rule of this.currentRules) this.trackBytes(rule.name);
  }

  get rules(): readonly CacheRule[] {
    return this.currentRules;
  }

  private trackBytes(rule: string): void {
    if (this.bytesByRule.has(rule)) return;
    this.bytesByRule.set(rule, 0);
    this.metrics?.cacheBytes.track(() => this.bytesByRule.get(rule) ?? 0, { rule });
  }

  /**
   * `cache.rules` reloaded (SPEC §15): the new rules decide from the next request; entries stored
   * under a rule that is gone, or whose condition or maxAgeSeconds changed, are dropped (they were
   * kept by what the operator no longer says); entries of an unchanged rule stay.
   */
  applyRules(rules: CacheConfig['rules']): void {
    const next = compileRules(rules);
    const unchanged = new Set(rules.filter((r) => this.configOf.get(r.name) === ruleText(r)).map((r) => r.name));
    this.currentRules = next;
    this.configOf = new Map(rules.map((r) => [r.name, ruleText(r)]));
    for (const rule of next) this.trackBytes(rule.name);
    // Whole GraphQL answers are kept by their app's descriptor, not by the rules.
    this.lru.deleteWhere((value) => value.kind !== 'answer' && !unchanged.has(value.rule));
  }

  get bytes(): number {
    return this.lru.bytes;
  }

  /** `cache.maxBytes`. */
  get maxBytes(): number {
    return this.lru.maxBytes;
  }

  get entries(): number {
    return this.lru.count;
  }

  /** Nothing is stored while this is true (Redis away). */
  get storing(): boolean {
    return !this.redisAway;
  }

  /** The first rule whose condition holds for the request, or undefined: not cached. */
  ruleFor(exchange: Exchange): CacheRule | undefined {
    for (const rule of this.rules) if (rule.condition.evaluate(exchange)) return rule;
    return undefined;
  }

  /** The entry for this key (and the request's variant of it), whatever its freshness; undefined once dropped. */
  lookup(primary: string, header: UpstreamHeader): Found | undefined {
    const stored = this.lru.get(primary);
    if (stored === undefined || stored.kind === 'answer') return undefined;
    if (stored.generation !== this.generations.of(stored.scope)) {
      this.lru.delete(primary);
      return undefined;
    }
    if (stored.kind === 'entry') return { entry: stored, key: primary };
    const key = variantKey(primary, stored.vary, header);
    const entry = this.lru.get(key);
    if (entry?.kind !== 'entry') return undefined;
    if (entry.generation !== this.generations.of(entry.scope)) {
      this.lru.delete(key);
      return undefined;
    }
    return { entry, key };
  }

  /** Milliseconds of freshness left (≤ 0: stale, or to be revalidated at every use). */
  freshFor(entry: CacheEntry, now = Date.now()): number {
    return entry.revalidateEachUse ? 0 : entry.lifetimeMs - (now - entry.storedAt);
  }

  /** A fill of this key still current, to wait for instead of asking the backend again. */
  joinable(primary: string): Promise<void> | undefined {
    const flight = this.flights.get(primary);
    return flight !== undefined && flight.generation === this.generations.of(flight.scope) ? flight.done : undefined;
  }

  /** Starts filling `primary` (the caller asks the backend and hands the answer to the fill). */
  begin(primary: string, scope: CacheScope, rule: CacheRule, header: UpstreamHeader, strong: string | null = null): Fill {
    let settle!: () => void;
    const done = new Promise<void>((resolve) => (settle = resolve));
    const flight: Flight = { scope, generation: this.generations.of(scope), done, settle };
    this.flights.set(primary, flight);
    return new Fill(this, { primary, scope, rule, header, strong, flight });
  }

  /** For a Fill: stores the finished answer unless a drop happened since the fill began. */
  store(primary: string, flight: Flight, header: UpstreamHeader, make: (generation: number) => CacheEntry, vary: readonly string[]): boolean {
    if (this.redisAway || flight.generation !== this.generations.of(flight.scope)) return false;
    const entry = make(flight.generation);
    let key = primary;
    if (vary.length > 0) {
      const marker: VaryMarker = { kind: 'vary', vary, rule: entry.rule, scope: entry.scope, generation: entry.generation, size: ENTRY_OVERHEAD + vary.join().length };
      if (!this.add(primary, marker)) return false;
      key = variantKey(primary, vary, header);
    }
    if (!this.add(key, entry)) return false;
    this.metrics?.cacheStores.inc({ rule: entry.rule });
    this.stats.stored(entry.rule);
    return true;
  }

  /** One lookup of a read (or a whole answer) a rule covered: the metric and this process's counts. */
  countLookup(rule: string, result: LookupResult): void {
    this.metrics?.cacheLookups.inc({ rule, result });
    this.stats.count(rule, result);
  }

  /** Per rule (the configured ones first, then whole GraphQL answers' `graphql:<uri>`): counts, hit ratio, bytes held. */
  ruleStats(): RuleStats[] {
    return this.stats.list(
      this.currentRules.map((r) => r.name),
      (rule) => this.bytesByRule.get(rule) ?? 0,
    );
  }

  /** The generation of `scope` now: it changes exactly when a write that can change its reads was seen. */
  generationOf(scope: CacheScope): number {
    return this.generations.of(scope);
  }

  /** A whole GraphQL answer (graphql/serve/answer-cache.ts); undefined once dropped (a write to a scope it touched). */
  answer(key: string): AnswerEntry | undefined {
    const stored = this.lru.get(key);
    if (stored?.kind !== 'answer') return undefined;
    if (stored.generation === sumOfGenerations(this.generations, stored.scopes)) return stored;
    this.lru.delete(key);
    return undefined;
  }

  /** Stores a whole GraphQL answer unless Redis is away, it is over `maxEntryBytes`, or a write was seen since its reads began. */
  storeAnswer(key: string, entry: AnswerEntry): boolean {
    if (this.redisAway || entry.size > this.maxEntryBytes || entry.generation !== sumOfGenerations(this.generations, entry.scopes)) return false;
    this.trackBytes(entry.rule);
    if (!this.add(key, entry)) return false;
    this.metrics?.cacheStores.inc({ rule: entry.rule });
    this.stats.stored(entry.rule);
    return true;
  }

  private add(key: string, value: CacheEntry | VaryMarker | AnswerEntry): boolean {
    if (!this.lru.set(key, value)) return false;
    this.bytesByRule.set(value.rule, (this.bytesByRule.get(value.rule) ?? 0) + value.size);
    return true;
  }

  /** For a Fill: the flight is over; later readers look up or fill again. */
  land(primary: string, flight: Flight): void {
    if (this.flights.get(primary) === flight) this.flights.delete(primary);
    flight.settle();
  }

  /**
   * A write to `scope` happened (or may have: a 5xx, a timeout, a broken connection): every read
   * it can have changed is dropped here at once. A write seen here is announced to the other
   * replicas (`onWrite` listeners, invalidation-bus.ts); a drop heard from them is not re-announced.
   */
  invalidate(scope: CacheScope, source: InvalidationSource = 'write'): void {
    this.generations.bump(scope);
    this.metrics?.cacheInvalidations.inc({ source });
    if (source === 'write') for (const listener of this.written) listener(scope);
  }

  /** `invalidate` for a collection, as the GraphQL writer and the feed name it. */
  invalidateCollection(db: string, collection: string, source: InvalidationSource = 'write'): void {
    this.invalidate({ level: 'collection', db, collection }, source);
  }

  /** Listens for writes seen here (the bus publishes them); returns the unsubscribe. */
  onWrite(listener: (scope: CacheScope) => void): () => void {
    this.written.add(listener);
    return () => this.written.delete(listener);
  }

  /** The operator's drop (`DELETE /_admin/cache`): everything, or one scope; told to every replica. */
  purge(scope: CacheScope = ALL): void {
    if (scope.level === 'all') this.lru.clear();
    this.invalidate(scope, 'purge');
    for (const listener of this.written) listener(scope);
  }

  /** Redis lost (the other replicas' writes may go unheard) or back (what was missed is unknown): drop everything. */
  setRedisAway(away: boolean): void {
    this.redisAway = away;
    this.lru.clear();
    this.generations.bump(ALL);
    this.metrics?.cacheInvalidations.inc({ source: 'redis-lost' });
  }
}

/** The generation of several scopes at once: counters only grow, so the sum changes exactly when one of them did. */
function sumOfGenerations(generations: Generations, scopes: readonly CacheScope[]): number {
  let sum = 0;
  for (const scope of scopes) sum += generations.of(scope);
  return sum;
}

/** The request chain's slot for the cache stage (ChainRequest.cacheExchange): a read's fill, or a write's scope until its drop is decided. */
export type CacheExchange = { readonly fill: Fill } | { readonly write: CacheScope; decided: boolean };

interface FillParts {
  readonly primary: string;
  readonly scope: CacheScope;
  readonly rule: CacheRule;
  readonly header: UpstreamHeader;
  readonly strong: string | null;
  readonly flight: Flight;
}

/**
 * One backend answer on its way into the cache: `head` decides whether it may be stored (and so
 * whether its chunks are copied), `data` copies them up to `cache.maxEntryBytes`, `end` stores it
 * unless a write was seen meanwhile; `abandon` when the exchange failed. Waiting readers are let
 * go either way, exactly once.
 */
export class Fill {
  private chunks: Buffer[] | null = null;
  private bytes = 0;
  private status = 0;
  private headers: Headers = {};
  private verdict: ReturnType<typeof storability> | null = null;
  private landed = false;

  constructor(
    private readonly cache: ResponseCache,
    private readonly p: FillParts,
  ) {}

  /** The backend's head: true when the answer may be stored (its chunks should follow). */
  head(status: number, headers: Headers): boolean {
    this.status = status;
    this.headers = headers;
    const verdict = (this.verdict = storability(status, headers, this.p.rule.maxAgeSeconds, this.p.scope.level === 'collection' && this.p.scope.document !== undefined));
    const declared = Number(headers['content-length'] ?? 0);
    if (!verdict.store || declared > this.cache.maxEntryBytes || !this.cache.storing) return false;
    this.chunks = [];
    return true;
  }

  /** Whether `head` said it may be stored (for the `stored` of Cache-Status). */
  get storable(): boolean {
    return this.chunks !== null;
  }

  data(chunk: Buffer): void {
    if (this.chunks === null) return;
    this.bytes += chunk.length;
    if (this.bytes > this.cache.maxEntryBytes) this.chunks = null;
    else this.chunks.push(chunk);
  }

  /** The answer ended: stored when it may be and nothing dropped it meanwhile. */
  end(): boolean {
    const verdict = this.verdict;
    const chunks = this.chunks;
    let stored = false;
    if (chunks !== null && verdict?.store) {
      const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
      const headers = this.headers;
      const etag = typeof headers.etag === 'string' ? headers.etag : undefined;
      const p = this.p;
      stored = this.cache.store(
        p.primary,
        p.flight,
        p.header,
        (generation) => ({
          kind: 'entry',
          status: this.status,
          headers,
          body,
          storedAt: Date.now(),
          lifetimeMs: verdict.lifetimeMs,
          revalidateEachUse: verdict.revalidateEachUse,
          etag,
          rule: p.rule.name,
          scope: p.scope,
          generation,
          strong: p.strong,
          size: ENTRY_OVERHEAD + p.primary.length + body.length + headerBytes(headers),
        }),
        verdict.vary,
      );
    }
    this.abandon();
    return stored;
  }

  /** The exchange is over without an answer to store (failed, cut, or not storable). Idempotent. */
  abandon(): void {
    if (this.landed) return;
    this.landed = true;
    this.chunks = null;
    this.cache.land(this.p.primary, this.p.flight);
  }
}
