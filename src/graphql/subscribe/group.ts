/**
 * The subscribers of one collection on this replica whose re-reads the backend cannot tell apart
 * (the same backend headers, `readKey`): seen.ts makes one read for them where it may, else one
 * per identity (`identityKey`). Indexed so that a change costs work only for the subscribers it may match: a
 * subscriber whose find is top-level equalities on plain values (`{group: 3}`, the common shape;
 * `indexKey` from prepare.ts) is found through its first equality's field and value in the
 * document its identity sees; every other subscriber is a candidate for every change. The index
 * only narrows: each candidate's own `matches` still decides, so what is delivered is exactly what
 * looping over every subscriber delivered.
 */
import type { ExecutionResult } from 'graphql';
import type { RequestContext } from '../types.js';
import type { ChangeOp } from '../document/subscriptions.js';
import type { Change, FeedChange } from './change.js';
import type { Viewer } from './seen.js';
import type { EndReason, SubscriptionStream, Transport } from './subscription.js';

/** What a subscription follows: prepared once per request (prepare.ts), carried by the active one. */
export interface SubscriptionTarget {
  readonly db: string;
  readonly collection: string;
  readonly on: ReadonlySet<ChangeOp>;
  /** The field's find with the subscriber's arguments and `@user.*`, on a document the identity may see. */
  readonly matches: (doc: unknown) => boolean;
  /** The find binds nothing but `_id`: the only subscribers a delete without document may reach. */
  readonly onlyId: boolean;
  /** The find's first plain equality, when the find is only such equalities (the hub's index). */
  readonly indexKey: { readonly field: string; readonly value: string | number | boolean } | undefined;
}

export interface ActiveSubscription extends SubscriptionTarget {
  readonly stream: SubscriptionStream;
  /** Who the re-read is made as (headers and permission): equal keys share one re-read and one execution per operation. */
  readonly identityKey: string;
  /** The headers the backend sees on the subscriber's re-reads (the backend cannot tell equal ones apart). */
  readonly readKey: string;
  /** Whose limit it counts against (`maxPerPrincipal`). */
  readonly principalKey: string;
  readonly transport: Transport;
  readonly ctx: RequestContext;
  /** The subscriber's selection executed on one change value. */
  build(value: ChangeValue): Promise<ExecutionResult>;
  /** Equal for subscribers whose `build` gives the same result for the same identity (app version, query, variables). */
  readonly buildKey: string;
  /** Is it still allowed (credentials, the ACL, the app)? The reason to end it, or null. */
  check(): Promise<EndReason | null> | EndReason | null;
}

/** What a subscription field resolves from: the change (`id` is `_id` as a string, for an `ID` field). */
export interface ChangeValue {
  readonly op: ChangeOp;
  readonly _id: unknown;
  readonly id: string | null;
  readonly document: unknown;
}

type Plain = string | number | boolean;

/** A live change waiting for its group's next batch, with how many subscriptions were registered when it arrived (later ones do not get it). */
export interface PendingChange {
  readonly fc: FeedChange;
  readonly registeredBy: number;
}

export class SubscriberGroup {
  readonly members = new Set<ActiveSubscription>();
  /** Live changes waiting while the previous batch is re-read (hub.ts). */
  readonly pending: PendingChange[] = [];
  pumping = false;
  private readonly byIdentity = new Map<string, Set<ActiveSubscription>>();
  /** Field → value → the subscribers whose find requires `field` to equal (or hold) `value`. */
  private readonly byField = new Map<string, Map<Plain, Set<ActiveSubscription>>>();
  /** Subscribers without an equality to index: candidates for every change. */
  private readonly rest = new Set<ActiveSubscription>();
  private readonly following = new Map<ChangeOp, number>();
  private onlyIdDeletes = 0;

  constructor(readonly readKey: string) {}

  hasIdentity(identityKey: string): boolean {
    return this.byIdentity.has(identityKey);
  }

  get size(): number {
    return this.members.size;
  }

  add(sub: ActiveSubscription): void {
    if (this.members.has(sub)) return;
    this.members.add(sub);
    let same = this.byIdentity.get(sub.identityKey);
    if (!same) this.byIdentity.set(sub.identityKey, (same = new Set()));
    same.add(sub);
    for (const op of sub.on) this.following.set(op, (this.following.get(op) ?? 0) + 1);
    if (sub.onlyId && sub.on.has('delete')) this.onlyIdDeletes++;
    const k = sub.indexKey;
    if (!k) {
      this.rest.add(sub);
      return;
    }
    let byValue = this.byField.get(k.field);
    if (!byValue) this.byField.set(k.field, (byValue = new Map()));
    let subs = byValue.get(k.value);
    if (!subs) byValue.set(k.value, (subs = new Set()));
    subs.add(sub);
  }

  remove(sub: ActiveSubscription): void {
    if (!this.members.delete(sub)) return;
    const same = this.byIdentity.get(sub.identityKey);
    same?.delete(sub);
    if (same && same.size === 0) this.byIdentity.delete(sub.identityKey);
    for (const op of sub.on) {
      const n = (this.following.get(op) ?? 1) - 1;
      if (n <= 0) this.following.delete(op);
      else this.following.set(op, n);
    }
    if (sub.onlyId && sub.on.has('delete')) this.onlyIdDeletes--;
    const k = sub.indexKey;
    if (!k) {
      this.rest.delete(sub);
      return;
    }
    const byValue = this.byField.get(k.field);
    const subs = byValue?.get(k.value);
    subs?.delete(sub);
    if (subs && subs.size === 0) byValue!.delete(k.value);
    if (byValue && byValue.size === 0) this.byField.delete(k.field);
  }

  /** May some member receive this change (its op followed; a delete without document only by `_id`-only finds)? */
  wants(change: Change): boolean {
    if (change.op === 'delete' && change.document === undefined) return this.onlyIdDeletes > 0;
    return this.following.has(change.op);
  }

  /** Each identity with an open member, and that member's backend context (its re-reads are made with it). */
  viewers(): Viewer[] {
    const out: Viewer[] = [];
    for (const [key, subs] of this.byIdentity) {
      for (const sub of subs) {
        if (!sub.stream.open) continue;
        out.push({ key, ctx: sub.ctx });
        break;
      }
    }
    return out;
  }

  /** The members a document may match (a superset of those whose find matches it). */
  candidates(doc: unknown): ActiveSubscription[] {
    const out: ActiveSubscription[] = [];
    if (this.byField.size > 0 && doc !== null && typeof doc === 'object' && !Array.isArray(doc)) {
      for (const [field, byValue] of this.byField) {
        const value = (doc as Record<string, unknown>)[field];
        if (Array.isArray(value)) {
          // MongoDB: an equality matches an element of an array field; each subscriber once.
          const seen = new Set<unknown>();
          for (const element of value) {
            if (seen.has(element)) continue;
            seen.add(element);
            const subs = byValue.get(element as Plain);
            if (subs) for (const s of subs) out.push(s);
          }
        } else {
          const subs = byValue.get(value as Plain);
          if (subs) for (const s of subs) out.push(s);
        }
      }
    }
    for (const s of this.rest) out.push(s);
    return out;
  }
}
