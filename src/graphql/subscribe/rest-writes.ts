/**
 * Proxied REST writes as changes (SPEC §6.5): a `RequestObserver` beside the webhooks' one. Its
 * `begin` is the whole cost on the pass-through for a collection nobody subscribes to: a method
 * check, a match of the path against `graphql.backend.collectionPath` for writes, and one Set
 * lookup. Only for a subscribed collection does it hold a single-document `PUT`/`PATCH`/`DELETE`
 * while the document's state before it is read (`beforeForward`, SPEC §11.1), and hold a 2xx
 * answer: an insert's or update's documents are read back (`capture`, SPEC §6.5: each change
 * carries its own state), so the writer's next write cannot be read in its place, and
 * the changes go to the feed before the writer is answered (publisher.ts `publishAround`: the
 * feed's order is the order clients saw their writes answered, whichever replica each went
 * through); what Redis took while its collection was unclaimed goes again once the answer left
 * (`finish`): a subscription acknowledged before the answer is then claimed (issue 53 item 7).
 */
import type { ObservedRequest, RequestObserver } from '../../chain/observer.js';
import type { RequestScope } from '../../http/scope.js';
import { changesOf, isWriteMethod, withBefore, type Change, type CollectionTarget } from './change.js';

/** Bulk insert answers kept up to this size for their links; a larger one publishes nothing. */
const BULK_ANSWER_BYTES = 1024 * 1024;

/** The feed as a write sees it (feed.ts). */
export interface ChangeSink {
  /** Ahead of the answer (resolves when the answer may go), with what to run once it left. */
  publishAround(changes: Change[]): Promise<() => void>;
}

/** What a watched write may do besides publishing: read states back, before and after. */
export interface RestWriteReads {
  /** Does any replica subscribe to anything? When not, a write costs a method check and this. */
  readonly anyWanted?: () => boolean;
  /** The changes with their documents read back as the writer's backend identity (change.ts `captureStates`); never rejects. */
  readonly capture?: (scope: RequestScope, changes: Change[]) => Promise<Change[]>;
  /**
   * The state of the one document a `PUT`, `PATCH` or `DELETE` addresses, read before it is
   * forwarded (change.ts `readBefore`), and whether it was read without identity headers; undefined
   * when it is not worth reading (nobody listens) or was not found. Never rejects.
   */
  readonly readBefore?: (scope: RequestScope, target: CollectionTarget) => Promise<{ doc: unknown; shared: boolean } | undefined> | undefined;
}

export function restWritesObserver(
  match: (path: string) => CollectionTarget | undefined,
  wants: (db: string, collection: string) => boolean,
  feed: ChangeSink,
  reads: RestWriteReads = {},
): RequestObserver {
  const anyWanted = reads.anyWanted ?? (() => true);
  return {
    begin(scope: RequestScope): ObservedRequest | null {
      if (!isWriteMethod(scope.method) || scope.routeKind !== 'proxy' || !anyWanted()) return null;
      const target = match(scope.path);
      if (!target || !wants(target.db, target.collection)) return null;
      return new ObservedWrite(scope, target, feed, reads);
    },
  };
}

class ObservedWrite implements ObservedRequest {
  private bulk: boolean | undefined;
  /** Set before the answer (`beforeAnswer`): what `finish` runs once the answer left. */
  private held: Promise<() => void> | undefined;
  /** The document's state before the write (`beforeForward`), once read. */
  private before: Promise<{ doc: unknown; shared: boolean } | undefined> | undefined;

  constructor(
    private readonly scope: RequestScope,
    private readonly target: CollectionTarget,
    private readonly feed: ChangeSink,
    private readonly reads: RestWriteReads,
  ) {}

  /** The write waits while the document's state before it is read (only when someone listens to its collection). */
  beforeForward(): Promise<void> | undefined {
    const before = this.reads.readBefore?.(this.scope, this.target);
    if (!before) return undefined;
    this.before = before;
    return before.then(() => undefined);
  }

  beforeAnswer(statusCode: number, headers: Record<string, string | string[] | undefined>): ((body: Buffer) => Promise<void>) | undefined {
    if (statusCode < 200 || statusCode > 299) return undefined;
    const location = typeof headers.location === 'string' ? headers.location : undefined;
    return async (body) => {
      let changes: Change[];
      const scope = this.scope;
      try {
        changes = this.changes(scope, statusCode, location, () => (body.length > BULK_ANSWER_BYTES ? undefined : body.toString('utf8')));
      } catch {
        return; // observing never breaks serving: a write whose changes cannot be read publishes nothing
      }
      const capture = scope.method === 'DELETE' ? undefined : this.reads.capture;
      const before = await this.before;
      if (before) changes = withBefore(changes, before.doc, before.shared);
      const held = (changes.length === 0 || !capture ? Promise.resolve(changes) : capture(scope, changes).catch(() => changes)).then((out) => this.feed.publishAround(out));
      this.held = held;
      await held;
    };
  }

  private changes(scope: RequestScope, status: number, location: string | undefined, responseText: () => string | undefined): Change[] {
    return changesOf(this.target, {
      method: scope.method,
      path: scope.path,
      query: scope.rawQuery,
      status,
      location,
      bulk: this.bulk === true,
      responseText,
    });
  }

  onRequestData(chunk: Buffer): void {
    if (this.bulk !== undefined) return;
    for (const byte of chunk) {
      if (byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09) continue;
      this.bulk = byte === 0x5b; // '['
      return;
    }
  }

  /** The head and body reach `beforeAnswer` whole (every 2xx answer of an observed write is held): nothing to keep here. */
  onResponseHead(): void {}

  onResponseData(): void {}

  /**
   * The answer left (or the client did): what was published ahead and not appended goes again
   * (`publishAround`). Changes held for the answer go even when the client left: the backend wrote
   * them. A write with no hold was not a 2xx (or its changes could not be read from it): nothing.
   */
  finish(): void {
    if (this.held) void this.held.then((after) => after());
  }
}
