/**
 * The change feed for readers other than GraphQL subscriptions (SPEC §11.1: MCP's per-URI
 * notifications, src/mcp/listen/). Such a reader claims a collection as a subscriber does (the
 * feed's claim, ordered with writes in Redis, so a write answered after the claim reaches it from
 * any replica), is handed each read's changes after the hub, and asks who may see them through the
 * same decision the hub makes for a subscriber (seen.ts: the identity's own readFilter on the
 * change's unprojected state, gated by its own re-read where the backend may decide otherwise),
 * never a second copy of it.
 */
import type { RequestScope } from '../../http/scope.js';
import type { RequestContext } from '../types.js';
import { readsShared, type Change, type FeedChange } from './change.js';
import type { StateBefore } from './feed/feed.js';
import type { FeedGap } from './feed/publisher.js';
import { DELETE_SEEN, seeAll, seenBefore, type SeenOptions } from './seen.js';
import type { SubscriptionService } from './service.js';

export { DELETE_SEEN };
export type { FeedGap };

export interface ChangeWatch {
  /** Claims the collection's changes (resolves once Redis holds the claim; throws when it cannot); `also`: its writes' states before them too. */
  claim(db: string, collection: string, also?: StateBefore): Promise<void>;
  release(db: string, collection: string, also?: StateBefore): void;
  /** Each read's changes, in feed order; returns the unsubscribe. */
  onChanges(sink: (changes: readonly FeedChange[]) => void): () => void;
  /**
   * Changes this replica's readers will never get (a writer's gap entry, a lapsed claim, the feed
   * trimmed past the reader after a Redis fault: GraphQL subscribers' CHANGES_LOST), in feed order
   * with the changes; `db`/`collection` null: any collection. Returns the unsubscribe.
   */
  onGap(sink: (gap: FeedGap) => void): () => void;
  /** Which other collections' writes may be claimed (sent to Redis, which appends them only when claimed). */
  alsoWanted(wanted: (db: string, collection: string) => boolean): void;
  /** Per change of one collection, in order: what this identity may see of it (a document, `DELETE_SEEN`), or null. */
  see(changes: readonly Change[], ctx: RequestContext): Promise<unknown[]>;
  /** Per change of one collection, in order: whether this identity could read the state an update carries from before it (`before`). */
  seeBefore(changes: readonly Change[], ctx: RequestContext): Promise<boolean[]>;
  /** The backend identity a caller's reads carry, as a GraphQL subscriber's. */
  contextOf(scope: RequestScope): RequestContext;
}

export function createChangeWatch(service: SubscriptionService, seen: SeenOptions, contextOf: (scope: RequestScope) => RequestContext): ChangeWatch {
  return {
    claim: (db, collection, also) => service.feed.claim(db, collection, also),
    release: (db, collection, also) => service.feed.release(db, collection, also),
    onChanges(sink) {
      service.taps.add(sink);
      return () => void service.taps.delete(sink);
    },
    onGap(sink) {
      service.gapTaps.add(sink);
      return () => void service.gapTaps.delete(sink);
    },
    alsoWanted(wanted) {
      service.feed.alsoWanted = wanted;
    },
    async see(changes, ctx) {
      const views = await seeAll(seen, changes, [{ key: 'one', ctx }], readsShared(ctx));
      return views.get('one') ?? changes.map(() => null);
    },
    seeBefore: (changes, ctx) => seenBefore(seen, changes, ctx, readsShared(ctx)),
    contextOf,
  };
}
