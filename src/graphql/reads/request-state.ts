/**
 * Everything one GraphQL request carries through execution, in its parts: the tally (reads
 * against the budget, writes, the flags the answer's status reads), the batching (joins,
 * aggregation calls, the prefetcher), the caller's access (read-access.ts: decisions and
 * projections, made only with a read policy), the record and replay of reads (read-recording.ts),
 * and which root document every object came from (for `rootDoc`).
 */
import { GraphQLError } from 'graphql';
import { OutriggerError } from '../../errors.js';
import { JoinBatcher } from './batch-joins.js';
import type { BackendReads, EngineSettings } from './backend-reads.js';
import type { Prefetcher } from './prefetch.js';
import { ReadAccess, refusalOf } from './read-access.js';
import { ReadRecording, recordingKey } from './read-recording.js';
import type { BackendRead, GraphqlLimits, ReadDecision, RequestContext } from '../types.js';
import type { AbortLike } from '../../util/request-abort.js';

export const BACKEND_ERROR_CODES = new Set(['BACKEND_UNAVAILABLE', 'BACKEND_ERROR']);

/**
 * Told of each read with the caller's decision on it, before it is sent (serve/answer-cache.ts
 * records what a whole answer depends on); a promise when it must wait before the read goes
 * (Redis's generations, `cache.consistency: strong`).
 */
export interface ReadWitness {
  saw(read: BackendRead, decision: ReadDecision | undefined): Promise<void> | undefined;
}

export class RequestState implements BackendReads {
  // The tally: what the answer's status and `verbose` read; a replay starts from it.
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
  /** A query's reads may be answered by the response cache (SPEC §12); never a mutation's or a subscription's. */
  cacheReads = false;
  /** A whole answer on its way into the response cache (SPEC §12 `descriptor.cache`): told of every read. */
  witness: ReadWitness | undefined;
  /** Each backend read with the documents it returned; kept only when the app is verbose. */
  readLog: Array<{ db: string; collection: string; page: number; pagesize: number; filter: boolean; documents: number }> | undefined;

  // The batching: equal reads of one execution share one backend read.
  /** Aggregation calls of this request by (name, avars): equal calls share one read. */
  readonly aggregationCalls = new Map<string, Promise<unknown[]>>();
  /** Join loads asked for, loads answered by an equal queued load, batches dispatched (for `verbose`). */
  readonly joinStats = { loads: 0, shared: 0, batches: 0 };
  readonly joins: JoinBatcher;
  /** Joins started ahead of graphql-js (prefetch.ts); made on first use. */
  prefetcher: Prefetcher<RequestState> | undefined;

  readonly ctx: RequestContext;
  /** The caller's decisions and projections (read-access.ts); made on first use, only with a read policy. */
  private access: ReadAccess | undefined;
  /** Every read's outcome in order per read key, while recording (`recordReads`). */
  private recorded: ReadRecording | undefined;
  /** Outcomes a replaying state answers from, in the order they were read, before reading anew. */
  private replaying: ReadRecording | undefined;
  private roots: WeakMap<object, unknown> | undefined;

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
    this.recorded ??= new ReadRecording();
  }

  /**
   * A new state for executing the same request again (graphql-js after a planned engine gave
   * up): its reads are answered, in order, with the outcomes this state recorded (documents,
   * refusals, failures), and count nothing more; the tally, the decisions and the projections
   * carry over, so the request's reads, budget and verbose log are those of one execution.
   */
  replay(): RequestState {
    const next = new RequestState(this.settings, this.ctx, this.signal);
    next.replaying = (this.recorded ?? new ReadRecording()).forReplay();
    next.reads = this.reads;
    next.writes = this.writes;
    next.operationName = this.operationName;
    next.budgetExceeded = this.budgetExceeded;
    next.timedOut = this.timedOut;
    next.cacheReads = this.cacheReads;
    next.witness = this.witness;
    next.readLog = this.readLog;
    next.access = this.access;
    return next;
  }

  /** One backend read, counted against the budget; failures become GraphQL field errors with a code. */
  read(read: BackendRead): Promise<unknown[]> {
    if (this.recorded === undefined && this.replaying === undefined) return this.readOnce(read);
    const key = recordingKey(read);
    const replayed = this.replaying?.next(key);
    if (replayed !== undefined) return replayed;
    const outcome = this.readOnce(read);
    this.recorded?.record(key, outcome);
    return outcome;
  }

  private async readOnce(read: BackendRead): Promise<unknown[]> {
    if (this.signal.aborted) throw this.abortedError();
    const decision = this.settings.readPolicy ? await this.decideRead(read) : undefined;
    const witnessed = this.witness?.saw(read, decision);
    if (witnessed !== undefined) await witnessed;
    const refusal = refusalOf(read, decision);
    if (refusal !== undefined) throw refusal;
    if (this.reads >= this.settings.limits.maxBackendReads) {
      this.budgetExceeded = true;
      throw budgetError(this.settings.limits.maxBackendReads);
    }
    this.reads++;
    const extra = decision?.allow ? decision.filter : undefined;
    const effective = extra && Object.keys(extra).length > 0 ? { ...read, filter: read.filter ? { $and: [read.filter, extra] } : extra } : read;
    try {
      const docs = await this.settings.reader.find(effective, this.ctx, this.cacheReads);
      const project = decision?.allow ? decision.project : undefined;
      if (project) (this.access as ReadAccess).projected(docs, project);
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
    const access = this.access;
    return access === undefined || !access.projects ? docs : docs.map((d) => access.presentOne(d));
  }

  /** One document as the client sees it (see `present`). */
  presentOne(doc: unknown): unknown {
    return this.access === undefined ? doc : this.access.presentOne(doc);
  }

  /** What the read policy says of `read` (decided once per distinct read); allowed when there is no policy. */
  decideRead(read: BackendRead): Promise<ReadDecision> {
    const policy = this.settings.readPolicy;
    if (!policy) return Promise.resolve({ allow: true });
    return (this.access ??= new ReadAccess(policy, this.ctx)).decide(read);
  }
}

export function budgetError(max: number): GraphQLError {
  return new GraphQLError(`this query needs more than ${max} backend reads (graphql.maxBackendReads); ask for fewer fields, aliases or nested joins per request`, {
    extensions: { code: 'TOO_MANY_BACKEND_READS' },
  });
}

export function timeoutError(ms: number): GraphQLError {
  return new GraphQLError(timeoutMessage(ms), { extensions: { code: 'TIMEOUT' } });
}

function timeoutMessage(ms: number): string {
  return `the query did not finish within ${ms} ms (graphql.timeoutMs); ask for less data per request`;
}
