/**
 * One open subscription as the transports see it: an async iterator of GraphQL results, in feed
 * order, each with its feed position (the SSE `id:`). Changes arrive as promises (the re-read and
 * the execution run concurrently, per identity), and are handed out in the order they were
 * pushed. The queue is bounded (`subscriptions.maxBufferedEvents`): a subscriber that does not
 * read is ended with an error naming why, and nothing it holds slows anyone else, because nothing
 * here waits for the client.
 *
 * While a resume reads the missed changes (`Last-Event-ID`), live changes are held and released
 * after them; a position at or before the last one pushed is dropped, so nothing comes twice. A
 * resume is paced (service.ts hands the missed changes over a page at a time, each once the
 * previous one was read), so its results are not held against the 1 MiB; the held live ones are
 * bounded by `maxBufferedEvents` (the oldest go: the resume reads on up to the feed's position,
 * which covers them).
 */
import { GraphQLError, type ExecutionResult } from 'graphql';
import { comparePositions } from './feed/positions.js';

export type Transport = 'sse' | 'ws';

interface Pending {
  readonly position: string | null;
  readonly value: Promise<ExecutionResult | null>;
  /** Its size once built, while it waits behind others (counted toward `MAX_WAITING_BYTES`). */
  bytes?: number;
}

/** Built results waiting for a subscriber that does not read (SPEC §6.5: 1 MiB). */
export const MAX_WAITING_BYTES = 1024 * 1024;
/** Below this many waiting results their size is not measured (a reader that keeps up pays nothing). */
const MEASURE_FROM = 4;

/** Why a subscription ended early, said to the client (SSE: `next` with errors then `complete`; WebSocket: `error`). */
export interface EndReason {
  readonly message: string;
  readonly code: string;
}

export class SubscriptionStream implements AsyncIterableIterator<ExecutionResult> {
  private readonly pending: Pending[] = [];
  private held: Pending[] | null = null;
  private lastPushed: string | null = null;
  /** The feed went back under its reader (read-keys.ts): positions no longer only grow, so they are not compared. */
  private rebased = false;
  private wake: (() => void) | null = null;
  private ended: EndReason | null = null;
  private endSaid = false;
  private closed = false;
  private waitingBytes = 0;
  /** Told when the queue is empty (a resume's next page waits for it). */
  private emptied: Array<() => void> = [];
  /** The position of the result last handed out (`null` for a notice that has none). */
  lastPosition: string | null = null;
  /**
   * Charges one change's result as it is handed out (SPEC §6.5: each delivered event, a resume's
   * replayed ones included, counts its estimated cost under `units: cost`); a refusal ends the
   * subscription with it, so nothing is delivered unpaid.
   */
  charge: (() => Promise<EndReason | null> | EndReason | null) | undefined = undefined;

  constructor(
    private readonly transport: Transport,
    private readonly maxBuffered: number,
    /** Told once, when the subscription is over for any reason (the hub releases it). */
    private readonly onClosed: (reason: EndReason | null) => void,
    /** Told of each result's position as it is handed out, in order (the SSE writer's `id:`). */
    readonly onYield?: (position: string | null) => void,
  ) {}

  get open(): boolean {
    return !this.closed && this.ended === null;
  }

  /** Queues one live change's result (null: not for this subscriber). Ends a subscriber that does not read. */
  push(position: string | null, value: Promise<ExecutionResult | null>): void {
    if (!this.open) return;
    // Settled rejections must not be unhandled while they wait in the queue.
    value.catch(() => {});
    if (this.held) {
      this.hold1({ position, value });
      return;
    }
    if (!this.advance(position)) return;
    this.enqueue(this.pending, { position, value });
  }

  /** Queues one missed change's result while a resume reads them (live ones are held meanwhile). */
  pushMissed(position: string, value: Promise<ExecutionResult | null>): void {
    if (!this.open) return;
    value.catch(() => {});
    if (this.advance(position)) this.enqueue(this.pending, { position, value }, false);
  }

  /** A notice without a position (a resume's error; `live`: a gap found while reading the feed, held behind a resume). */
  notice(errors: EndReason, live = false): void {
    if (!this.open) return;
    const result: ExecutionResult = { errors: [new GraphQLError(errors.message, { extensions: { code: errors.code } })] };
    const p = { position: null, value: Promise.resolve(result) };
    if (live && this.held) return this.hold1(p);
    this.pending.push(p);
    this.wake?.();
  }

  /** Resolves once every queued result was handed out (or the subscription is over). */
  whenEmpty(): Promise<void> {
    if (this.pending.length === 0 || !this.open) return Promise.resolve();
    return new Promise((resolve) => this.emptied.push(resolve));
  }

  /** Holds a live result behind a resume; past the bound the oldest change goes (the resume's pages cover it), never a notice. */
  private hold1(p: Pending): void {
    const held = this.held!;
    if (held.length >= this.maxBuffered) {
      const oldest = held.findIndex((h) => h.position !== null);
      held.splice(oldest >= 0 ? oldest : 0, 1);
    }
    held.push(p);
  }

  /** From now on live changes wait until `release` (a resume reads the missed ones first). */
  hold(): void {
    this.held ??= [];
  }

  /** The missed changes were queued: the live ones held meanwhile follow, without any already queued. */
  release(): void {
    const held = this.held;
    this.held = null;
    if (!held || !this.open) return;
    for (const p of held) if (this.advance(p.position)) this.enqueue(this.pending, p);
  }

  /** The feed now hands out positions before those it handed out (a failover lost entries; each copy was skipped by key). */
  rebase(): void {
    this.rebased = true;
    this.lastPushed = null;
  }

  /** Records a position as queued; false when it (or a later one) already was. */
  private advance(position: string | null): boolean {
    if (position === null || this.rebased) return true;
    if (this.lastPushed !== null && comparePositions(position, this.lastPushed) <= 0) return false;
    this.lastPushed = position;
    return true;
  }

  private enqueue(queue: Pending[], p: Pending, measured = true): void {
    if (queue.length >= this.maxBuffered) {
      this.end({ message: `this subscriber did not read: more than ${this.maxBuffered} events were waiting (subscriptions.maxBufferedEvents); reconnect and read faster`, code: 'SLOW_SUBSCRIBER' });
      return;
    }
    queue.push(p);
    if (measured && queue.length > MEASURE_FROM) this.measure(queue, p);
    this.wake?.();
  }

  /** Counts a waiting result's size once built; past 1 MiB waiting the subscriber is ended. */
  private measure(queue: Pending[], p: Pending): void {
    void p.value.then(
      (result) => {
        if (!result || !queue.includes(p) || p.bytes !== undefined) return;
        p.bytes = JSON.stringify(result).length;
        this.waitingBytes += p.bytes;
        if (this.waitingBytes > MAX_WAITING_BYTES) {
          this.end({ message: `this subscriber did not read: more than ${MAX_WAITING_BYTES / 1024 / 1024} MiB of events were waiting; reconnect and read faster`, code: 'SLOW_SUBSCRIBER' });
        }
      },
      () => {},
    );
  }

  /** Ends the subscription with an error the client is told (revocation, a slow reader, a changed app). */
  end(reason: EndReason): void {
    if (this.closed || this.ended) return;
    this.ended = reason;
    this.pending.length = 0;
    this.waitingBytes = 0;
    this.held = null;
    this.onClosed(reason);
    this.wake?.();
    this.tellEmptied();
  }

  private tellEmptied(): void {
    const waiting = this.emptied;
    this.emptied = [];
    for (const resolve of waiting) resolve();
  }

  async next(): Promise<IteratorResult<ExecutionResult>> {
    for (;;) {
      if (this.closed) return { done: true, value: undefined };
      if (this.ended) {
        if (this.endSaid) return this.finish();
        this.endSaid = true;
        const error = new GraphQLError(this.ended.message, { extensions: { code: this.ended.code } });
        if (this.transport === 'ws') {
          this.finish();
          throw error; // graphql-ws sends it as an `error` message
        }
        return { done: false, value: { errors: [error] } };
      }
      const head = this.pending[0];
      if (!head) {
        await new Promise<void>((resolve) => (this.wake = resolve));
        this.wake = null;
        continue;
      }
      let result: ExecutionResult | null;
      try {
        result = await head.value;
      } catch (error) {
        result = { errors: [new GraphQLError('internal error while building this event', { extensions: { code: 'INTERNAL_SERVER_ERROR' } })] };
        void error;
      }
      if (this.pending[0] !== head) continue; // ended or closed meanwhile
      if (result !== null && head.position !== null && this.charge !== undefined) {
        let refused = this.charge();
        if (refused instanceof Promise) {
          refused = await refused;
          if (this.pending[0] !== head) continue;
        }
        if (refused !== null) {
          this.end(refused);
          continue;
        }
      }
      this.pending.shift();
      if (head.bytes !== undefined) this.waitingBytes -= head.bytes;
      if (this.pending.length === 0) this.tellEmptied();
      if (result === null) continue;
      this.lastPosition = head.position;
      this.onYield?.(head.position);
      return { done: false, value: result };
    }
  }

  async return(): Promise<IteratorResult<ExecutionResult>> {
    return this.finish();
  }

  async throw(): Promise<IteratorResult<ExecutionResult>> {
    return this.finish();
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  private finish(): IteratorResult<ExecutionResult> {
    if (!this.closed) {
      this.closed = true;
      this.pending.length = 0;
      this.held = null;
      if (!this.ended) this.onClosed(null);
      this.wake?.();
      this.tellEmptied();
    }
    return { done: true, value: undefined };
  }
}
