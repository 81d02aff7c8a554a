/**
 * Everything one GraphQL request carries through execution: the read budget, the abort signal,
 * the join batcher, and which root document every object came from (for `rootDoc`).
 */
import { GraphQLError } from 'graphql';
import { OutriggerError } from '../errors.js';
import { JoinBatcher } from './batch-joins.js';
import type { Prefetcher } from './prefetch.js';
import type { BackendRead, BackendReader, GraphqlLimits, ReadDecision, ReadPolicy, RequestContext } from './types.js';

export const BACKEND_ERROR_CODES = new Set(['BACKEND_UNAVAILABLE', 'BACKEND_ERROR']);

export interface EngineSettings {
  readonly limits: GraphqlLimits;
  readonly reader: BackendReader;
  /** Largest URL-encoded `filter` a batched read may send before it is split (default 6144). */
  readonly maxFilterBytes: number;
  /** The caller's readFilter/projectResponse per collection; absent = read as the backend allows. */
  readonly readPolicy?: ReadPolicy | undefined;
}

export class RequestState {
  /** Backend reads made so far. */
  reads = 0;
  /** Set when the request needed more reads than `maxBackendReads`: the whole request fails with 400. */
  budgetExceeded = false;
  /** Set when the time limit passed. */
  timedOut = false;
  /** Aggregation calls of this request by (name, avars): equal calls share one read. */
  readonly aggregationCalls = new Map<string, Promise<unknown[]>>();
  /** Join loads asked for, loads answered by an equal queued load, batches dispatched (for `verbose`). */
  readonly joinStats = { loads: 0, shared: 0, batches: 0 };
  /** Each backend read with the documents it returned; kept only when the app is verbose. */
  readLog: Array<{ db: string; collection: string; page: number; pagesize: number; filter: boolean; documents: number }> | undefined;
  readonly joins: JoinBatcher;
  /** Joins started ahead of graphql-js (prefetch.ts); made on first use. */
  prefetcher: Prefetcher | undefined;
  private roots: WeakMap<object, unknown> | undefined;
  readonly ctx: RequestContext;
  private readonly decisions = new Map<string, Promise<ReadDecision>>();
  private readonly settled = new Map<string, ReadDecision>();

  constructor(
    readonly settings: EngineSettings,
    ctx: RequestContext,
    readonly signal: AbortSignal,
  ) {
    this.ctx = { ...ctx, signal };
    this.joins = new JoinBatcher(this);
  }

  get limits(): GraphqlLimits {
    return this.settings.limits;
  }

  /** object → the document a root field returned above it (only used when the app uses rootDoc). */
  get rootOf(): WeakMap<object, unknown> {
    return (this.roots ??= new WeakMap());
  }

  /** One backend read, counted against the budget; failures become GraphQL field errors with a code. */
  async read(read: BackendRead): Promise<unknown[]> {
    if (this.signal.aborted) throw timeoutError(this.settings.limits.timeoutMs);
    const decision = this.settings.readPolicy ? await this.decide(read.db, read.collection) : undefined;
    if (decision && !decision.allow) {
      throw new GraphQLError(decision.message ?? `you may not read ${read.db}/${read.collection}`, { extensions: { code: 'FORBIDDEN' } });
    }
    if (read.aggregation && decision?.allow && (decision.filter || decision.project)) {
      // A declared aggregation's result is not documents of the collection: neither the caller's
      // readFilter nor projectResponse can be applied to it, so it is not run for them.
      throw new GraphQLError(`your permission filters or projects reads of ${read.db}/${read.collection}, which an aggregation would bypass`, {
        extensions: { code: 'FORBIDDEN' },
      });
    }
    if (this.reads >= this.settings.limits.maxBackendReads) {
      this.budgetExceeded = true;
      throw budgetError(this.settings.limits.maxBackendReads);
    }
    this.reads++;
    const extra = decision?.allow ? decision.filter : undefined;
    const effective = extra && Object.keys(extra).length > 0 ? { ...read, filter: read.filter ? { $and: [read.filter, extra] } : extra } : read;
    try {
      const docs = await this.settings.reader.find(effective, this.ctx);
      this.readLog?.push({ db: read.db, collection: read.collection, page: read.page, pagesize: read.pagesize, filter: effective.filter !== undefined, documents: docs.length });
      return docs;
    } catch (error) {
      if (this.signal.aborted) throw timeoutError(this.settings.limits.timeoutMs);
      if (error instanceof OutriggerError) {
        throw new GraphQLError(error.message, { originalError: error, extensions: { code: error.code } });
      }
      throw error;
    }
  }

  /**
   * What the client sees of documents read from a collection: the policy's projection, applied
   * after joins were split. Only called with documents `read` returned, so the decision is known.
   */
  present(db: string, collection: string, docs: unknown[]): unknown[] {
    const project = this.projection(db, collection);
    return project ? docs.map((d) => project(d)) : docs;
  }

  /** The policy's projection of documents read from a collection (see `present`); undefined when none applies. */
  projection(db: string, collection: string): ((doc: unknown) => unknown) | undefined {
    if (!this.settings.readPolicy) return undefined;
    const decision = this.settled.get(`${db}\u0000${collection}`);
    return decision?.allow ? decision.project : undefined;
  }

  private decide(db: string, collection: string): Promise<ReadDecision> {
    const key = `${db}\u0000${collection}`;
    let pending = this.decisions.get(key);
    if (!pending) {
      const policy = this.settings.readPolicy as ReadPolicy;
      pending = Promise.resolve(policy({ db, collection }, this.ctx)).then((d) => {
        this.settled.set(key, d);
        return d;
      });
      this.decisions.set(key, pending);
    }
    return pending;
  }
}

export function budgetError(max: number): GraphQLError {
  return new GraphQLError(
    `this query needs more than ${max} backend reads (graphql.maxBackendReads); ask for fewer fields, aliases or nested joins per request`,
    { extensions: { code: 'TOO_MANY_BACKEND_READS' } },
  );
}

export function timeoutError(ms: number): GraphQLError {
  return new GraphQLError(`the query did not finish within ${ms} ms (graphql.timeoutMs); ask for less data per request`, {
    extensions: { code: 'TIMEOUT' },
  });
}
