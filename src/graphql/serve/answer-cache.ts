/**
 * Whole GraphQL answers in the response cache (SPEC §12, the app's `descriptor.cache:
 * {maxAgeSeconds}`): a query's serialized answer kept in the same byte-bounded LRU as the
 * backend reads, under a key of the app's version, the document, `operationName`, the coerced
 * variables and who the caller is (id, roles; the credential passed to the backend when
 * Outrigger does not speak for them).
 *
 * The caller's readFilter and projection per read are not known before execution, so the entry
 * records them: each distinct read's decision target and what the caller's permission said of it
 * (`ReadDecision.key`: the readFilter and projectResponse as text). A hit re-decides every one of
 * them for the caller at hand and serves only when each says the same; otherwise the query
 * executes (and its answer replaces the entry). By induction over the reads: equal decisions on
 * equal data make the same reads and the same answer, so two callers share an answer only where
 * execution would have given them the same one.
 *
 * Dropped by a write to any collection its reads touched, an aggregation's by any write to its
 * db: each read records its scope's generation before it is sent, and the answer is stored (and
 * later served) only while the sum of those generations is unchanged. Only queries, only `200`
 * answers without errors; never a `verbose` app's (its extensions count this execution's reads).
 */
import { createHash } from 'node:crypto';
import { forwardStatus, hitStatus } from '../../cache/cache-status.js';
import type { CacheScope } from '../../cache/cache-scope.js';
import { ENTRY_OVERHEAD, type AnswerEntry } from '../../cache/entries.js';
import type { RunningCache } from '../../cache/start.js';
import { readQueryString } from '../backend/http-reader.js';
import type { ReadWitness } from '../reads/request-state.js';
import type { BackendRead, ReadDecision, ReadPolicy, RequestContext } from '../types.js';

/** More distinct reads than this and the answer is not kept: a hit would re-decide them all. */
const MAX_DECISIONS = 64;

/** What identifies one request's answer (execute.ts hands it in once the operation and variables are known). */
export interface AnswerRequest {
  readonly app: { readonly uri: string; readonly version: string; readonly maxAgeSeconds: number; readonly readPolicy: ReadPolicy | undefined };
  readonly query: string;
  readonly operationName: string | undefined;
  readonly variables: Readonly<Record<string, unknown>>;
  readonly ctx: RequestContext;
}

export type AnswerLookup = { readonly kind: 'hit'; readonly body: string; readonly headers: Record<string, string> } | { readonly kind: 'miss'; readonly witness: AnswerWitness };

type Decided = AnswerEntry['decisions'][number];

export class GraphqlAnswers {
  constructor(private readonly running: RunningCache) {}

  /**
   * The cached answer for this caller, or a witness to record the execution and store its answer.
   * A miss while an identical query (same key) executes waits for it once and looks again: N
   * identical concurrent queries make one set of backend reads.
   */
  async lookup(request: AnswerRequest): Promise<AnswerLookup> {
    const { cache, answerFlights } = this.running;
    const rule = `graphql:${request.app.uri}`;
    const key = answerKey(request);
    const witness = new AnswerWitness(this.running, request, key, rule);
    for (let joined = false; ; joined = true) {
      const entry = cache.answer(key);
      const fresh = entry === undefined ? 0 : entry.lifetimeMs - (Date.now() - entry.storedAt);
      if (entry !== undefined && fresh > 0 && (await this.stillSame(entry, request, witness))) {
        cache.countLookup(rule, 'hit');
        const age = Math.max(0, Math.floor((Date.now() - entry.storedAt) / 1000));
        return { kind: 'hit', body: entry.body, headers: { 'cache-status': hitStatus(fresh / 1000), age: String(age) } };
      }
      const executing = joined || !witness.usable ? undefined : answerFlights.join(key, request.ctx.signal);
      if (executing === undefined) break;
      await executing;
    }
    cache.countLookup(rule, 'miss');
    witness.land = answerFlights.begin(key);
    return { kind: 'miss', witness };
  }

  /** Whether Redis's generations (strong) and the caller's decisions on every recorded read are what the entry was made under. */
  private async stillSame(entry: AnswerEntry, request: AnswerRequest, witness: AnswerWitness): Promise<boolean> {
    const strong = this.running.strong;
    if (strong !== null) {
      try {
        const now = await Promise.all(entry.scopes.map((scope) => strong.read(scope)));
        if (now.join('|') !== entry.strong) return false;
      } catch {
        // Redis did not say whether a write happened elsewhere: execute, keep nothing.
        witness.usable = false;
        return false;
      }
    }
    const policy = request.app.readPolicy;
    if (policy === undefined) return entry.decisions.length === 0;
    for (const d of entry.decisions) {
      const target = { db: d.db, collection: d.collection, query: d.query, ...(d.aggregation !== undefined ? { aggregation: d.aggregation } : {}) };
      if (fingerprint(await policy(target, request.ctx)) !== d.fingerprint) return false;
    }
    return true;
  }
}

/**
 * One execution's reads as a whole answer depends on them: each scope with its generation when
 * its first read began (and Redis's, for `strong`), each distinct read's decision. `store` keeps
 * the serialized answer unless something made it unfit (a read no decision key describes, too
 * many reads, Redis away) or a write was seen since.
 */
export class AnswerWitness implements ReadWitness {
  usable = true;
  /** Lets the identical queries waiting for this execution look again (answer-flights.ts); called once it stored or will not. */
  land: () => void = () => undefined;
  private readonly scopes = new Map<string, { scope: CacheScope; generation: number; strong: string }>();
  private readonly decisions = new Map<string, Decided>();

  constructor(
    private readonly running: RunningCache,
    private readonly request: AnswerRequest,
    private readonly key: string,
    private readonly rule: string,
  ) {}

  saw(read: BackendRead, decision: ReadDecision | undefined): Promise<void> | undefined {
    if (!this.usable) return undefined;
    if (this.request.app.readPolicy !== undefined) this.decided(read, decision);
    const aggregation = read.aggregation?.name;
    const name = aggregation === undefined ? `c\u0000${read.db}\u0000${read.collection}` : `d\u0000${read.db}`;
    if (this.scopes.has(name)) return undefined;
    // An aggregation may read any collection of its db ($lookup, $unionWith): any write to the db drops it.
    const scope: CacheScope = aggregation === undefined ? { level: 'collection', db: read.db, collection: read.collection } : { level: 'db', db: read.db };
    const seen = { scope, generation: this.running.cache.generationOf(scope), strong: '' };
    this.scopes.set(name, seen);
    const strong = this.running.strong;
    if (strong === null) return undefined;
    return strong.read(scope).then(
      (generations) => void (seen.strong = generations),
      () => void (this.usable = false),
    );
  }

  private decided(read: BackendRead, decision: ReadDecision | undefined): void {
    const query = readQueryString(read);
    const aggregation = read.aggregation?.name;
    const id = `${read.db}\u0000${read.collection}\u0000${aggregation ?? ''}\u0000${query}`;
    if (this.decisions.has(id)) return;
    const print = fingerprint(decision);
    if (print === null || this.decisions.size >= MAX_DECISIONS) {
      this.usable = false;
      return;
    }
    this.decisions.set(id, { db: read.db, collection: read.collection, query, ...(aggregation !== undefined ? { aggregation } : {}), fingerprint: print });
  }

  /** Stores the serialized answer (undefined: it was not sent, nothing to keep); true when stored (Cache-Status then says `stored`). Lands the flight either way. */
  store(body: string | undefined): boolean {
    try {
      return body !== undefined && this.keep(body);
    } finally {
      this.land();
    }
  }

  private keep(body: string): boolean {
    if (!this.usable) return false;
    const seen = [...this.scopes.values()];
    const entry: AnswerEntry = {
      kind: 'answer',
      body,
      storedAt: Date.now(),
      lifetimeMs: this.request.app.maxAgeSeconds * 1000,
      rule: this.rule,
      scopes: seen.map((s) => s.scope),
      generation: seen.reduce((sum, s) => sum + s.generation, 0),
      strong: this.running.strong === null ? null : seen.map((s) => s.strong).join('|'),
      decisions: [...this.decisions.values()],
      size: ENTRY_OVERHEAD + this.key.length + Buffer.byteLength(body) + this.decisions.size * 64,
    };
    return this.running.cache.storeAnswer(this.key, entry);
  }

  /** `Cache-Status` of an executed answer. */
  static status(stored: boolean): string {
    return forwardStatus('miss', stored);
  }
}

/** What a decision says that changes what the caller reads or sees; null when it filters or projects without saying how (not cacheable). */
function fingerprint(decision: ReadDecision | undefined): string | null {
  if (decision === undefined) return '';
  if (!decision.allow) return `deny\u0000${decision.message ?? ''}`;
  if (decision.key !== undefined) return decision.key;
  return decision.filter !== undefined || decision.project !== undefined ? null : '-';
}

/**
 * SHA-256 of the app's version, the document, `operationName`, the coerced variables (in their
 * definitions' order, so equal values are equal text) and the caller: id and roles, and the
 * credentials that go to the backend when Outrigger does not speak for the caller (a minted JWT
 * changes at every mint and says only the id and roles).
 */
function answerKey({ app, query, operationName, variables, ctx }: AnswerRequest): string {
  const principal = ctx.caller?.principal;
  const hash = createHash('sha256').update('graphql-answer\0').update(app.uri).update('\0').update(app.version).update('\0').update(query);
  hash
    .update('\0')
    .update(operationName ?? '\u0001')
    .update('\0')
    .update(JSON.stringify(variables));
  hash
    .update('\0')
    .update(principal?.id ?? ctx.principal?.id ?? '\u0001')
    .update('\0')
    .update((principal?.roles ?? ctx.principal?.roles ?? []).join('\u0000'));
  if (principal?.verifiedLocally !== true) {
    const sent = ctx.backendHeaders ?? {};
    hash
      .update('\0')
      .update(sent.authorization ?? '\u0001')
      .update('\0')
      .update(sent.cookie ?? '\u0001');
  }
  return hash.digest('base64url');
}
