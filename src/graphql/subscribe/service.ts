/**
 * GraphQL subscriptions on one replica, wired (SPEC §6.5): the feed (publish and read), the hub,
 * the mappings of each app version, the two ways writes become changes (proxied REST writes, the
 * writes of mutations), the transports' shared start (`open`), and the shutdown hint.
 */
import type { Redis } from 'ioredis';
import type { Principal } from '../../principal/principal.js';
import type { RequestObserver } from '../../chain/observer.js';
import type { ChangeBus } from '../../store/change-bus.js';
import type { SubscriptionsConfig } from '../../config/subscriptions-config.js';
import { clientAddressBucket } from '../../net/client-address.js';
import { type GraphqlApp } from '../app-document.js';
import { isPlainObject } from '../../util/objects.js';
import { appVersion, type CompiledApp } from '../compile/compile-app.js';
import type { BackendReader, BeforeWrite, ReadPolicy, RequestContext, WriteObserver } from '../types.js';
import type { RequestScope } from '../../http/scope.js';
import { redisRefusal } from '../../store/redis-errors.js';
import { captureStates, carriable, changesOf, collectionPathMatcher, documentWritten, readBefore, readsShared, withBefore, type Change, type CollectionTarget, type FeedChange } from './change.js';
import { ChangeFeed } from './feed/feed.js';
import type { FeedGap } from './feed/publisher.js';
import { SubscriptionHub, type ActiveSubscription } from './hub.js';
import { prepareSubscription, type Prepared, type SubscriptionMapping, type SubscriptionParams } from './prepare.js';
import { restWritesObserver } from './rest-writes.js';
import { resume } from './resume.js';
import { SubscriptionStream, type EndReason, type Transport } from './subscription.js';

export interface SubscriptionServiceOptions {
  readonly redis: Redis;
  readonly blocking: Redis;
  /** Claims are announced on it: a hint for which writes to read back (Redis decides publication). */
  readonly bus?: ChangeBus;
  readonly feedKey: string;
  readonly claimsKey: string;
  readonly batchKey: (token: string) => string;
  /** `graphql.defaultDb`: the db of a Subscription mapping without one. */
  readonly defaultDb: string;
  readonly settings: SubscriptionsConfig;
  /** redis.waitForReplicas: replicas that must hold a batch of changes before the writer lets it go. */
  readonly waitForReplicas?: number;
  /** With waitForReplicas: the publisher's own connection (its WAITs hold up what follows them). */
  readonly publishing?: Redis;
  readonly collectionPath: string;
  readonly reader: BackendReader;
  readonly readPolicy: ReadPolicy | undefined;
  readonly onError: (error: unknown, what: string) => void;
  readonly counted: (outcome: 'delivered' | 'dropped') => void;
  /** The backend identity of a proxied write's writer, as a GraphQL read of theirs would carry it: a change's state is read back with it. */
  readonly writerContext?: (scope: RequestScope) => RequestContext;
  /** The response cache's local drop of a collection (SPEC §12): before its change is handed to the hub. */
  readonly dropCached?: (db: string, collection: string) => void;
}

/** What a transport hands in to open one subscription. */
export interface OpenRequest {
  readonly app: CompiledApp;
  readonly params: SubscriptionParams;
  readonly principal: Principal;
  readonly clientIp: string;
  readonly transport: Transport;
  /** The backend identity of the subscriber's re-reads and joins (rebuilt by `check`). */
  ctx(): RequestContext;
  /** The transport's own checks every second (credentials, the ACL); the app is checked here. */
  check(): Promise<EndReason | null> | EndReason | null;
  /** SSE: the position to resume after (`Last-Event-ID`). */
  readonly resumeAfter?: string;
  /** The reconnect hint on shutdown (SSE `retry:`, WebSocket 1001). */
  shutdown(retryAfterMs: number): void;
  /** Told of each result's position, in order (SSE `id:`). */
  onYield?(position: string | null): void;
  /** Bytes the transport holds unsent (a resume's next page waits for them to go). */
  unsent?(): number;
  /** Charges one delivered event its estimated documents (SPEC §10 `units: cost`); a reason ends the subscription. */
  chargeEvent?(documents: number): Promise<EndReason | null> | EndReason | null;
  /** Told once when the subscription ends, with the reason when it was ended early. */
  onEnded?(reason: EndReason | null): void;
  /** Looks the app up again (changed, disabled or deleted apps end their subscriptions). */
  currentApp(): CompiledApp | undefined;
}

export type Opened =
  | { ok: true; stream: SubscriptionStream; prepared: Extract<Prepared, { ok: true }>['sub'] }
  | { ok: false; status: number; errors: Array<{ message: string; extensions?: Record<string, unknown> }>; retryAfterSeconds?: number };

/** How often a subscription's backend identity (headers, a minted JWT) is built again: well within the shortest JWT lifetime (`upstream.identity.jwt.ttlSeconds` ≥ 10). */
const CTX_RENEW_MS = 4000;

export class SubscriptionService {
  readonly feed: ChangeFeed;
  readonly hub: SubscriptionHub;
  private readonly mappings = new Map<string, GraphqlApp['mappings']>();
  private readonly match: ReturnType<typeof collectionPathMatcher>;
  readonly observer: RequestObserver;
  readonly shutdowns = new Map<ActiveSubscription, (retryAfterMs: number) => void>();
  /** Other readers of each read's changes, after the hub (MCP's per-URI notifications, SPEC §11.1; watch.ts). */
  readonly taps = new Set<(changes: readonly FeedChange[]) => void>();
  /** Other readers of the feed's gaps (watch.ts): told after the hub, in the feed's order. */
  readonly gapTaps = new Set<(gap: FeedGap) => void>();

  constructor(private readonly o: SubscriptionServiceOptions) {
    this.feed = new ChangeFeed({
      redis: o.redis,
      blocking: o.blocking,
      ...(o.bus ? { bus: o.bus } : {}),
      feedKey: o.feedKey,
      claimsKey: o.claimsKey,
      batchKey: o.batchKey,
      retention: o.settings.retention,
      ...(o.waitForReplicas ? { waitForReplicas: o.waitForReplicas, publishing: o.publishing ?? o.redis } : {}),
      onError: o.onError,
    });
    this.hub = new SubscriptionHub({
      feed: this.feed,
      reader: o.reader,
      readPolicy: o.readPolicy,
      maxPerPrincipal: o.settings.maxPerPrincipal,
      maxPerProcess: o.settings.maxPerProcess,
      onError: o.onError,
      counted: o.counted,
    });
    this.match = collectionPathMatcher(o.collectionPath);
    const writerContext = o.writerContext;
    this.observer = restWritesObserver(
      this.match,
      (db, c) => this.feed.wants(db, c),
      this.feed,
      writerContext
        ? {
            anyWanted: () => this.feed.anyWanted,
            capture: (scope, changes) => (this.worthCapturing(changes) ? captureStates(o.reader, writerContext(scope), changes, o.onError) : Promise.resolve(changes)),
            readBefore: (scope, target) => this.stateBefore(target, scope.method, scope.rawQuery, () => writerContext(scope)),
          }
        : { anyWanted: () => this.feed.anyWanted },
    );
  }

  /**
   * The state before a single-document write (SPEC §11.1: who could read it before is told), read
   * as the writer's backend identity, the identity its state after is read with; only when some
   * replica is known to want it (feed.ts `StateBefore`: an MCP collection listener, or for a
   * delete a GraphQL subscriber to deletes). Undefined: nothing read.
   */
  private stateBefore(target: CollectionTarget, method: string, query: string, ctxOf: () => RequestContext): Promise<{ doc: unknown; shared: boolean } | undefined> | undefined {
    const doc = documentWritten(target, method, query);
    if (!doc || !(this.feed.likelyClaimed(doc.db, doc.collection, 'before') || (method === 'DELETE' && this.feed.likelyClaimed(doc.db, doc.collection, 'deletes')))) return undefined;
    const ctx = ctxOf();
    return readBefore(this.o.reader, ctx, doc, this.o.onError).then((found) => (found === undefined ? undefined : { doc: found, shared: readsShared(ctx) }));
  }

  /** A mutation's single-document update or delete: its state before, read as `stateBefore` reads a REST write's. */
  readonly readBefore: BeforeWrite = (w, ctx) => {
    if (!this.feed.anyWanted) return undefined;
    const target = this.match(w.path);
    if (!target || !this.feed.wants(target.db, target.collection)) return undefined;
    return this.stateBefore(target, w.method, w.query, () => ctx)?.then((found) => found?.doc);
  };

  async start(): Promise<void> {
    await this.feed.start({
      changes: (changes) => {
        // Invalidations and changes in one order (SPEC §12): a subscriber re-reading on a change never reads this replica's cached state from before it.
        if (this.o.dropCached) for (const { change } of changes) this.o.dropCached(change.db, change.collection);
        void this.hub.dispatch(changes);
        for (const tap of this.taps) tap(changes);
      },
      gap: (gap) => {
        this.hub.tell(gap);
        for (const tap of this.gapTaps) tap(gap);
      },
      wentBack: () => this.hub.rebase(),
    });
  }

  async stop(): Promise<void> {
    this.hub.stop();
    await this.feed.stop();
  }

  /** The apps' Subscription mappings, by app version (compiled apps carry the version). */
  updateApps(apps: Iterable<GraphqlApp>): void {
    this.mappings.clear();
    const collections: Array<[string, string]> = [];
    for (const app of apps) {
      this.mappings.set(appVersion(app), app.mappings);
      collections.push(...subscribedCollectionsOf(app, this.o.defaultDb));
    }
    // Only these collections' writes go to Redis: the script there publishes those claimed.
    this.feed.setSubscribable(collections);
  }

  private mappingsOf(app: CompiledApp): Record<string, SubscriptionMapping> | undefined {
    const typeName = app.schema.getSubscriptionType()?.name;
    const byField = typeName ? this.mappings.get(app.version)?.[typeName] : undefined;
    return isPlainObject(byField) ? (byField as Record<string, SubscriptionMapping>) : undefined;
  }

  /**
   * The writes of GraphQL mutations as changes (`onWrite` of the engine). An insert's or update's
   * answer waits while its document is read back (SPEC §6.5: each change carries its own state);
   * the changes go to the feed once the answer left.
   */
  readonly observeWrite: WriteObserver = (w, ctx) => {
    if (!w.response) return;
    if (!this.feed.anyWanted) return;
    const target = this.match(w.path);
    if (!target || !this.feed.wants(target.db, target.collection)) return;
    const body = w.body;
    const changes = changesOf(target, {
      method: w.method,
      path: w.path,
      query: w.query,
      status: w.response.status,
      location: w.response.headers.location,
      bulk: Array.isArray(body),
      responseText: () => w.response?.body,
    });
    // Published ahead of the mutation's answer (which waits: the feed's order is the order writers
    // were answered), and what was not appended again once the answer left (ctx.afterAnswer): a
    // subscription acknowledged on any replica before the answer is claimed by then (issue 53 item 7).
    const publish = async (out: Change[]): Promise<void> => {
      const after = await this.feed.publishAround(out);
      if (ctx.afterAnswer) ctx.afterAnswer(after);
      else after();
    };
    if (changes.length === 0) return;
    // A GraphQL delete read its document first (SPEC §6.4), or `readBefore` did: the change
    // carries it unprojected (the writer's projectResponse not applied), an update's as `before`;
    // each subscriber's own readFilter and projectResponse decide on it (seen.ts).
    const before = w.before !== undefined && carriable(w.before) ? w.before : undefined;
    const stated = withBefore(changes, before, readsShared(ctx));
    if (w.method === 'DELETE' || !this.worthCapturing(stated)) return publish(stated);
    return captureStates(this.o.reader, ctx, stated, this.o.onError).then(publish);
  };

  /**
   * Is a write's state worth reading back before its answer? Only for a collection known to be
   * subscribed (Redis decides whether it is published): a mapped collection nobody follows costs
   * no backend read. A change published without its state is re-read at delivery.
   */
  private worthCapturing(changes: readonly Change[]): boolean {
    const first = changes[0];
    return first !== undefined && this.feed.likelyClaimed(first.db, first.collection);
  }

  /**
   * Opens one subscription: prepared, bounded, registered (its collection claimed across replicas)
   * before the transport answers; with `resumeAfter`, the missed changes first.
   */
  async open(req: OpenRequest): Promise<Opened> {
    const prepared = prepareSubscription(req.app, this.mappingsOf(req.app), req.params, req.principal);
    if (!prepared.ok) return prepared;
    // Anonymous subscribers count per address as every per-address bound does: one IPv6 client holds a whole /64.
    const principalKey = req.principal.id !== null ? `user:${req.principal.id}` : `address:${clientAddressBucket(req.clientIp)}`;
    const refused = this.hub.refusal(principalKey);
    if (refused) return { ok: false, status: 429, errors: [{ message: refused.message, extensions: { code: refused.code } }] };
    const sub = prepared.sub;
    const stream = new SubscriptionStream(
      req.transport,
      this.o.settings.maxBufferedEvents,
      (reason) => {
        // Called only once the subscription is running, after `active` below is set.
        this.hub.remove(active, reason);
        this.shutdowns.delete(active);
        req.onEnded?.(reason);
      },
      req.onYield,
    );
    if (req.chargeEvent) stream.charge = req.chargeEvent.bind(req, sub.eventDocuments);
    let ctx = req.ctx();
    let ctxAt = Date.now();
    const principal = req.principal;
    const identityKey = JSON.stringify([principal.id, principal.roles, principal.via, principal.keyId ?? null, principal.verifiedLocally ? null : (ctx.backendHeaders ?? null)]);
    const version = req.app.version;
    const active: ActiveSubscription = {
      stream,
      db: sub.db,
      collection: sub.collection,
      on: sub.on,
      matches: sub.matches,
      onlyId: sub.onlyId,
      indexKey: sub.indexKey,
      identityKey,
      readKey: JSON.stringify(ctx.backendHeaders ?? {}),
      principalKey,
      transport: req.transport,
      get ctx() {
        return ctx;
      },
      build: (value) => sub.build(value, ctx),
      buildKey: JSON.stringify([req.app.version, req.params.query, req.params.variables ?? null, req.params.operationName ?? null]),
      check: async () => {
        const app = req.currentApp();
        if (!app) return { message: 'the app of this subscription was disabled or deleted', code: 'APP_GONE' };
        if (app.version !== version) {
          const again = prepareSubscription(app, this.mappingsOf(app), req.params, req.principal);
          if (!again.ok) return { message: `the app of this subscription changed and the subscription no longer applies: ${again.errors[0]?.message ?? ''}`, code: 'APP_CHANGED' };
        }
        const reason = await req.check();
        // The backend identity (a minted JWT has a lifetime) is renewed now and then, not every second.
        if (!reason && Date.now() - ctxAt > CTX_RENEW_MS) {
          ctx = req.ctx();
          ctxAt = Date.now();
        }
        return reason;
      },
    };
    if (req.resumeAfter !== undefined) stream.hold();
    let added: EndReason | null;
    try {
      added = await this.hub.add(active);
    } catch (error) {
      // Nothing of it stays counted (hub.add): the same caller may start again once Redis answers.
      this.o.onError(error, 'starting a subscription');
      const refusal = redisRefusal(error);
      const message = `the subscription could not be registered: ${refusal?.message ?? "Outrigger's store (Redis) failed; retry shortly"}`;
      return { ok: false, status: 503, errors: [{ message, extensions: { code: 'SUBSCRIPTIONS_UNAVAILABLE' } }], retryAfterSeconds: refusal?.retryAfterSeconds ?? 5 };
    }
    if (added) return { ok: false, status: 429, errors: [{ message: added.message, extensions: { code: added.code } }] };
    this.shutdowns.set(active, req.shutdown);
    if (req.resumeAfter !== undefined) {
      // Paced, after the answer: the missed changes a page at a time as the subscriber reads them.
      void resume({ feed: this.feed, hub: this.hub, maxBufferedEvents: this.o.settings.maxBufferedEvents }, active, req.resumeAfter, req.unsent).catch((error: unknown) => {
        this.o.onError(error, 'reading missed changes');
        stream.end({ message: 'the missed changes could not be read (Redis failed); reconnect with the Last-Event-ID of the last event received to go on from there', code: 'RESUME_FAILED' });
      });
    }
    return { ok: true, stream, prepared: sub };
  }

  /** Shutdown (SPEC §2, §6.5): every open subscription gets its reconnect hint and ends. */
  closeAll(retryAfterMs: number): void {
    this.hub.closeAll((sub) => {
      const shutdown = this.shutdowns.get(sub);
      this.shutdowns.delete(sub);
      try {
        shutdown?.(retryAfterMs);
      } finally {
        void sub.stream.return();
      }
    });
  }
}

/** The `[db, collection]` pairs an app's Subscription fields map (any mapping with `on`: a query's has none). */
function subscribedCollectionsOf(app: GraphqlApp, defaultDb: string): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (const fields of Object.values(app.mappings ?? {})) {
    if (!isPlainObject(fields)) continue;
    for (const m of Object.values(fields)) {
      if (!isPlainObject(m) || !Array.isArray(m.on) || typeof m.collection !== 'string') continue;
      out.push([typeof m.db === 'string' ? m.db : defaultDb, m.collection]);
    }
  }
  return out;
}
