/**
 * What one caller may read, for one request (SPEC §3.6, `graphql.backend.auth: caller`): the read
 * policy's decision per distinct read (asked once), the refusals it implies before a read is sent,
 * and the projection each returned document is shown under. Made only for requests with a read
 * policy: without one every read is allowed and every document shown as read.
 */
import { GraphQLError } from 'graphql';
import { readQueryString } from '../backend/http-reader.js';
import { hiddenReadKey } from './read-keys.js';
import type { BackendRead, ReadDecision, ReadPolicy, RequestContext } from '../types.js';

export class ReadAccess {
  /** Decisions per distinct read (collection, aggregation, query string): equal reads are decided once. */
  private readonly decisions = new Map<string, Promise<ReadDecision>>();
  /** Document read → the projection of the read it came from (only for reads that project). */
  private projections: WeakMap<object, (doc: unknown) => unknown> | undefined;

  constructor(
    private readonly policy: ReadPolicy,
    private readonly ctx: RequestContext,
  ) {}

  /** What the read policy says of `read` (decided once per distinct read). */
  decide(read: BackendRead): Promise<ReadDecision> {
    const query = readQueryString(read);
    const aggregation = read.aggregation?.name;
    const key = `${read.db}\u0000${read.collection}\u0000${aggregation ?? ''}\u0000${query}`;
    let pending = this.decisions.get(key);
    if (!pending) {
      const target = { db: read.db, collection: read.collection, query, ...(aggregation !== undefined ? { aggregation } : {}) };
      pending = Promise.resolve(this.policy(target, this.ctx));
      this.decisions.set(key, pending);
    }
    return pending;
  }

  /** Remembers that `docs` are shown under `project`. */
  projected(docs: readonly unknown[], project: (doc: unknown) => unknown): void {
    const projections = (this.projections ??= new WeakMap());
    for (const doc of docs) if (typeof doc === 'object' && doc !== null) projections.set(doc, project);
  }

  /** One document as the client sees it: under the projection of the read it came from. */
  presentOne(doc: unknown): unknown {
    const project = this.projections !== undefined && typeof doc === 'object' && doc !== null ? this.projections.get(doc) : undefined;
    return project ? project(doc) : doc;
  }

  /** Whether any read of this request projects (else documents are shown as read). */
  get projects(): boolean {
    return this.projections !== undefined;
  }
}

/** The refusal a decision implies for `read` before it is sent (a denial, a hidden key it touches, an aggregation under a filter or projection); undefined: send it. */
export function refusalOf(read: BackendRead, decision: ReadDecision | undefined): GraphQLError | undefined {
  if (decision && !decision.allow) {
    return new GraphQLError(decision.message ?? `you may not read ${read.db}/${read.collection}`, { extensions: { code: 'FORBIDDEN' } });
  }
  const hidden = decision?.allow && decision.hides ? hiddenReadKey(read, decision.hides) : undefined;
  if (hidden !== undefined) {
    // A filter, sort or join key on a field the caller may not see would reveal its values.
    return new GraphQLError(
      hidden.startsWith('$')
        ? `your permission hides fields of ${read.db}/${read.collection} (projectResponse), and ${hidden} could look at them; it is not run for you`
        : `your permission hides "${hidden}" of ${read.db}/${read.collection} (projectResponse), so this query may not filter, sort or join on it`,
      { extensions: { code: 'FORBIDDEN' } },
    );
  }
  if (read.aggregation && decision?.allow && (decision.filter || decision.project)) {
    // A declared aggregation's result is not documents of the collection: neither the caller's
    // readFilter nor projectResponse can be applied to it, so it is not run for them.
    return new GraphQLError(`your permission filters or projects reads of ${read.db}/${read.collection}, which an aggregation would bypass`, {
      extensions: { code: 'FORBIDDEN' },
    });
  }
  return undefined;
}
