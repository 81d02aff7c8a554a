/**
 * Everything one GraphQL request carries through execution: the read budget, the abort signal,
 * the join batcher, and which root document every object came from (for `rootDoc`).
 */
import { GraphQLError } from 'graphql';
import { OutriggerError } from '../../errors.js';
import { readQueryString } from '../backend/http-reader.js';
import { JoinBatcher } from './batch-joins.js';
import type { BackendReads, EngineSettings } from './backend-reads.js';
import { hiddenReadKey } from './read-keys.js';
import type { Prefetcher } from './prefetch.js';
import type { BackendRead, GraphqlLimits, ReadDecision, ReadPolicy, RequestContext } from '../types.js';
import type { AbortLike } from '../../util/request-abort.js';

export const BACKEND_ERROR_CODES = new Set(['BACKEND_UNAVAILABLE', 'BACKEND_ERROR']);

export class RequestState implements BackendReads {
  /** Backend reads made so far. */
  reads = 0;
  /** Backend writes made so far (mutations, writes/). */
  writes = 0;
  /** The operation's name, for the exchanges a mutation's writes are (webhooks). */
  operationName: string | null = null;
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
  prefetcher: Prefetcher<RequestState> | undefined;
  private roots: WeakMap<object, unknown> | undefined;
  readonly ctx: RequestContext;
  /** Decisions per distinct read (collection, aggregation, query string): equal reads are decided once. */
  private decisions = new Map<string, Promise<ReadDecision>>();
  /** Every read's outcome in order per read key, while recording (`recordReads`, compile/engines/compiled.ts). */
  private recorded: Map<string, Array<Promise<unknown[]>>> | undefined;
  /** Outcomes a replaying state answers from, in the order they were read, before reading anew. */
  private replaying: Map<string, Array<Promise<unknown[]>>> | undefined;
  /** Document read → the projection of the read it came from (only for reads that project). */
  private projections: WeakMap<object, (doc: unknown) => unknown> | undefined;

  constructor(
    readonly settings: EngineSettings,
    ctx: RequestContext,
    readonly signal: AbortLike,
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

  /**
   * What every read fails with once the request is aborted (time limit, or the client left): one
   * error per request, located (`path: []`) so that graphql-js does not wrap it anew at each of
   * the fields waiting on the read (issue 39: a cut-off 100-order query built 100 errors with
   * stack traces). Nobody sees it: an aborted request answers 504 or 499 (serve/execute.ts).
   */
  private aborted: GraphQLError | undefined;
  private abortedError(): GraphQLError {
    return (this.aborted ??= new GraphQLError(timeoutMessage(this.settings.limits.timeoutMs), { path: [], extensions: { code: 'TIMEOUT' } }));
  }

  /** Keeps every read's outcome, so that `replay` can execute the request again without reading twice. */
  recordReads(): void {
    this.recorded ??= new Map();
  }

  /**
   * A new state for executing the same request again (graphql-js after a compiled run that
   * reported errors): its reads are answered, in order, with the outcomes this state recorded
   * (documents, refusals, failures), and count nothing more; what was read, decided and projected
   * carries over, so the request's reads, budget and verbose log are those of one execution.
   */
  replay(): RequestState {
    const next = new RequestState(this.settings, this.ctx, this.signal);
    next.replaying = new Map(Array.from(this.recorded ?? [], ([key, outcomes]) => [key, [...outcomes]]));
    next.reads = this.reads;
    next.writes = this.writes;
    next.operationName = this.operationName;
    next.budgetExceeded = this.budgetExceeded;
    next.timedOut = this.timedOut;
    next.readLog = this.readLog;
    next.decisions = this.decisions;
    next.projections = this.projections;
    return next;
  }

  /** One backend read, counted against the budget; failures become GraphQL field errors with a code. */
  read(read: BackendRead): Promise<unknown[]> {
    if (this.recorded === undefined && this.replaying === undefined) return this.readOnce(read);
    const key = `${read.db}\u0000${read.collection}\u0000${read.aggregation?.name ?? ''}\u0000${readQueryString(read)}`;
    const replayed = this.replaying?.get(key)?.shift();
    if (replayed !== undefined) return replayed;
    const outcome = this.readOnce(read);
    if (this.recorded !== undefined) {
      const list = this.recorded.get(key);
      if (list === undefined) this.recorded.set(key, [outcome]);
      else list.push(outcome);
    }
    return outcome;
  }

  private async readOnce(read: BackendRead): Promise<unknown[]> {
    if (this.signal.aborted) throw this.abortedError();
    const decision = this.settings.readPolicy ? await this.decideRead(read) : undefined;
    if (decision && !decision.allow) {
      throw new GraphQLError(decision.message ?? `you may not read ${read.db}/${read.collection}`, { extensions: { code: 'FORBIDDEN' } });
    }
    const hidden = decision?.allow && decision.hides ? hiddenReadKey(read, decision.hides) : undefined;
    if (hidden !== undefined) {
      // A filter, sort or join key on a field the caller may not see would reveal its values.
      throw new GraphQLError(
        hidden.startsWith('$')
          ? `your permission hides fields of ${read.db}/${read.collection} (projectResponse), and ${hidden} could look at them; it is not run for you`
          : `your permission hides "${hidden}" of ${read.db}/${read.collection} (projectResponse), so this query may not filter, sort or join on it`,
        { extensions: { code: 'FORBIDDEN' } },
      );
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
      const project = decision?.allow ? decision.project : undefined;
      if (project) {
        const projections = (this.projections ??= new WeakMap());
        for (const doc of docs) if (typeof doc === 'object' && doc !== null) projections.set(doc, project);
      }
      this.readLog?.push({ db: read.db, collection: read.collection, page: read.page, pagesize: read.pagesize, filter: effective.filter !== undefined, documents: docs.length });
      return docs;
    } catch (error) {
      if (this.signal.aborted) throw this.abortedError();
      if (error instanceof OutriggerError) {
        throw new GraphQLError(error.message, { originalError: error, extensions: { code: error.code } });
      }
      throw error;
    }
  }

  /**
   * What the client sees of documents `read` returned: each under the projection of the read it
   * came from (a read's permission may differ from another's of the same collection), applied
   * after joins were split.
   */
  present(docs: unknown[]): unknown[] {
    return this.projections === undefined ? docs : docs.map((d) => this.presentOne(d));
  }

  /** One document as the client sees it (see `present`). */
  presentOne(doc: unknown): unknown {
    const project = this.projections !== undefined && typeof doc === 'object' && doc !== null ? this.projections.get(doc) : undefined;
    return project ? project(doc) : doc;
  }

  /** What the read policy says of `read` (decided once per distinct read); allowed when there is no policy. */
  decideRead(read: BackendRead): Promise<ReadDecision> {
    if (!this.settings.readPolicy) return Promise.resolve({ allow: true });
    const query = readQueryString(read);
    const aggregation = read.aggregation?.name;
    const key = `${read.db}\u0000${read.collection}\u0000${aggregation ?? ''}\u0000${query}`;
    let pending = this.decisions.get(key);
    if (!pending) {
      const policy = this.settings.readPolicy as ReadPolicy;
      const target = { db: read.db, collection: read.collection, query, ...(aggregation !== undefined ? { aggregation } : {}) };
      pending = Promise.resolve(policy(target, this.ctx));
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
  return new GraphQLError(timeoutMessage(ms), { extensions: { code: 'TIMEOUT' } });
}

function timeoutMessage(ms: number): string {
  return `the query did not finish within ${ms} ms (graphql.timeoutMs); ask for less data per request`;
}
