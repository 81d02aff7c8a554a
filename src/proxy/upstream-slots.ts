import { OutriggerError, tooManyRequests } from '../errors.js';
import { LinkedSet, type LinkedSetNode } from '../util/linked-set.js';

export interface UpstreamSlotOptions {
  /** Requests in flight to the upstream at once (the undici Pool's connections). */
  total: number;
  /** Of those, how many one client IP may hold; its further requests wait for one of its own. */
  perClient: number;
  /** How long a request may wait for a slot before it is answered 503. */
  queueTimeoutMs: number;
  /** Requests one client IP may have waiting; more are answered 429 at once. */
  maxWaitingPerClient: number;
  /** Sheddable requests start only while fewer than this fraction of the limit are in flight (SPEC §13). */
  sheddableFraction?: number;
}

/** SPEC §13's classes, in the order they are served: critical first, sheddable refused first. */
export const CRITICAL = 0;
export const DEFAULT = 1;
export const SHEDDABLE = 2;
export type Priority = typeof CRITICAL | typeof DEFAULT | typeof SHEDDABLE;

/** What asks for a slot: started when it has one, or refused. */
export interface SlotRequest {
  start(): void;
  refuse(error: OutriggerError): void;
  /** Its class when shedding; absent is DEFAULT. */
  readonly priority?: Priority;
}

/** A request waiting for a slot; `cancel()` takes it out of the line (its client went away). */
export interface Waiting {
  cancel(): void;
}

interface Waiter extends Waiting {
  client: ClientSlots;
  request: SlotRequest;
  timer: NodeJS.Timeout;
  /** Its place in its client's line; null in the critical line. */
  node: LinkedSetNode<Waiter> | null;
}

interface ClientSlots {
  ip: string;
  active: number;
  /** Created when the client first has to wait (most never do). */
  waiting: LinkedSet<Waiter> | null;
}

/**
 * Idle clients (nothing in flight or waiting) are kept until there are this many entries, then
 * swept all at once: deleting each as it went idle would churn the Map on every request at low
 * load, and V8's rehashed tables then keep finished requests' garbage alive (util/linked-set.ts).
 * The next sweep waits until the Map has doubled again, so a Map full of clients that are not
 * idle (many addresses waiting) is not walked on every new arrival.
 */
const IDLE_CLIENTS_KEPT = 1024;

/**
 * After the line refused a request at its deadline, it is served newest first for this long
 * (adaptive LIFO; the class comment says why a refusal, not a standing line, is the sign).
 */
const NEWEST_FIRST_MS = 1000;

/**
 * Admission in front of the undici Pool. undici queues a request it cannot start yet with no way
 * to cancel it and no deadline, so a burst of clients that leave keeps the upstream busy with work
 * nobody waits for. Here at most `total` requests are ever handed to the Pool (each starts at
 * once), and the rest wait in this line, where a client that leaves removes its request and a
 * deadline answers 503. Waiting clients are served in turn (round robin by client IP), and one
 * IP never holds more than `perClient` slots, so a few slow or hostile clients cannot starve
 * the others. A request that finds a free slot costs one Map lookup and two counters.
 *
 * Each client's line is served oldest first, except for a second after the line refused a request
 * at its deadline while the adaptive limit binds: then newest first (adaptive LIFO, as
 * concurrency-limits' LifoBlockingLimiter and Facebook's servers do). Under sustained overload a
 * line served in order only admits requests that already waited nearly all of `queueTimeoutMs`,
 * and each then pays the backend's whole time on top (bench/lib/protection-section.mjs: ~100 ms of
 * a 200 ms backend's admitted p99); newest first admits fresh ones and leaves the stale to the
 * deadline, which refuses as many either way. The sign is a refusal, not a line that stands: a
 * healthy backend's brief dips of the limit (a busy host) make lines that stand for a moment yet
 * all start within the deadline in order, and newest first then refused their oldest (tried and
 * measured: 347 of 5,000 writes in bench:subscriptions, none in order; docs/protection.md).
 */
export class UpstreamSlots {
  private active = 0;
  /**
   * Requests in flight at most: `total`, or less while the adaptive limit (guard/adaptive-limit.ts)
   * has seen the backend queue. Below `total`, sheddable requests never wait: refused at once.
   * (Refusing default ones at once past `limit` waiting was tried: on a busy machine a fast
   * backend's limit dips for a moment, and a saturating benchmark then got 2 % of 503s that a
   * 100 ms wait absorbs.)
   */
  private limit: number;
  /**
   * Critical requests waiting, served before the round robin and never refused for its length;
   * one still waiting at the deadline starts over the limit while upstream.connections allow.
   */
  private readonly criticalLine = new Set<Waiter>();
  private readonly clients = new Map<string, ClientSlots>();
  /** The Map size at which idle clients are swept next. */
  private sweepAt = IDLE_CLIENTS_KEPT;
  /** Clients with a request waiting and a slot of their own free, in serving order. */
  private readonly ready = new Set<ClientSlots>();
  private pumpScheduled = false;
  /** Requests waiting, in either line. */
  private waiting = 0;
  /** When the line last refused a default request at its deadline (performance.now()). */
  private refusedAt = -Infinity;

  constructor(private readonly o: UpstreamSlotOptions) {
    this.limit = o.total;
  }

  /** The adaptive limit moved; a limit that grew starts waiting requests. */
  setLimit(limit: number): void {
    const grew = limit > this.limit;
    this.limit = Math.min(limit, this.o.total);
    if (grew) this.schedulePump();
  }

  get currentLimit(): number {
    return this.limit;
  }

  /**
   * Starts `request` now when a slot is free (and answers null), or later when one frees up (and
   * answers the waiting request). It is refused instead when its client has too many requests
   * waiting (429) or the deadline passes (503). Every started request must be followed by exactly
   * one `release(ip)`.
   */
  acquire(ip: string, request: SlotRequest): Waiting | null {
    let client = this.clients.get(ip);
    const priority = request.priority ?? DEFAULT;
    const room = priority === SHEDDABLE ? Math.floor(this.limit * (this.o.sheddableFraction ?? 1)) : this.limit;
    if (this.active < room && (client === undefined || client.active < this.o.perClient || priority === CRITICAL)) {
      client ??= this.remember({ ip, active: 0, waiting: null });
      client.active++;
      this.active++;
      request.start();
      return null;
    }
    if (priority === SHEDDABLE && this.limit < this.o.total) {
      request.refuse(overloaded(this.limit, priority));
      return null;
    }
    client ??= { ip, active: 0, waiting: null };
    const waiting = (client.waiting ??= new LinkedSet());
    if (waiting.size >= this.o.maxWaitingPerClient && priority !== CRITICAL) {
      request.refuse(
        tooManyRequests(
          `too many requests from your address are waiting for the upstream (${client.active} in flight, ${waiting.size} waiting; upstream.maxConnectionsPerClient, upstream.maxQueuedPerClient)`,
          1,
        ),
      );
      return null;
    }
    if (!this.clients.has(ip)) this.remember(client);
    const waiter: Waiter = {
      client,
      request,
      timer: setTimeout(() => {
        this.remove(waiter);
        // Critical traffic is answered throughout (SPEC §13): past its wait it goes over the adaptive
        // limit, never over upstream.connections (docs/decisions.md).
        if (priority === CRITICAL && this.active < this.o.total) return this.admit(waiter);
        this.refusedAt = performance.now();
        request.refuse(
          this.limit < this.o.total
            ? overloaded(this.limit, priority, this.o.queueTimeoutMs)
            : new OutriggerError(503, 'UPSTREAM_BUSY', `no upstream connection became free within ${this.o.queueTimeoutMs} ms (upstream.connections, upstream.queueTimeoutMs); retry shortly`, {
                'retry-after': '1',
              }),
        );
      }, this.o.queueTimeoutMs),
      cancel: () => this.remove(waiter),
      node: null,
    };
    this.waiting++;
    if (priority === CRITICAL) {
      this.criticalLine.add(waiter);
      return waiter;
    }
    waiter.node = waiting.add(waiter);
    if (client.active < this.o.perClient) this.ready.add(client);
    return waiter;
  }

  release(ip: string): void {
    const client = this.clients.get(ip);
    this.active--;
    if (client === undefined) return;
    client.active--;
    if (client.waiting !== null && client.waiting.size > 0 && client.active < this.o.perClient) this.ready.add(client);
    this.schedulePump();
  }

  private schedulePump(): void {
    if ((this.ready.size > 0 || this.criticalLine.size > 0) && !this.pumpScheduled) {
      // Not from inside undici's callback that released the slot: the next dispatch runs after it.
      this.pumpScheduled = true;
      queueMicrotask(() => this.pump());
    }
  }

  /** Requests waiting for a slot, for metrics and tests. */
  get waitingCount(): number {
    return this.waiting;
  }

  get activeCount(): number {
    return this.active;
  }

  private pump(): void {
    this.pumpScheduled = false;
    for (const waiter of this.criticalLine) {
      if (this.active >= this.limit) return;
      this.remove(waiter);
      this.admit(waiter);
    }
    const newestFirst = this.ready.size > 0 && this.limit < this.o.total && performance.now() - this.refusedAt < NEWEST_FIRST_MS;
    while (this.active < this.limit && this.ready.size > 0) {
      const client = this.ready.values().next().value!;
      this.ready.delete(client);
      const waiting = client.waiting!;
      const node = newestFirst ? waiting.newest! : waiting.oldest!;
      const waiter = node.value;
      waiting.remove(node);
      this.waiting--;
      clearTimeout(waiter.timer);
      client.active++;
      this.active++;
      // Round robin: a client with more waiting goes to the back of the line.
      if (waiting.size > 0 && client.active < this.o.perClient) this.ready.add(client);
      waiter.request.start();
    }
  }

  /** Starts a critical waiter taken out of its line. */
  private admit(waiter: Waiter): void {
    // Its entry may have been swept while it waited outside the round robin: count on the kept one.
    const client = this.clients.get(waiter.client.ip) ?? this.remember(waiter.client);
    client.active++;
    this.active++;
    waiter.request.start();
  }

  private remove(waiter: Waiter): void {
    const { client } = waiter;
    if (this.criticalLine.delete(waiter)) {
      this.waiting--;
      clearTimeout(waiter.timer);
      return;
    }
    if (waiter.node === null || !client.waiting?.remove(waiter.node)) return;
    this.waiting--;
    clearTimeout(waiter.timer);
    if (client.waiting.size === 0) this.ready.delete(client);
  }

  /** Adds a client's entry, first forgetting the idle ones when the Map has grown to `sweepAt`. */
  private remember(client: ClientSlots): ClientSlots {
    if (this.clients.size >= this.sweepAt) {
      for (const [ip, c] of this.clients) if (c.active === 0 && (c.waiting === null || c.waiting.size === 0)) this.clients.delete(ip);
      this.sweepAt = Math.max(IDLE_CLIENTS_KEPT, 2 * this.clients.size);
    }
    this.clients.set(client.ip, client);
    return client;
  }

  /** Client entries held (idle ones included, up to IDLE_CLIENTS_KEPT), for tests. */
  get clientCount(): number {
    return this.clients.size;
  }
}

const CLASS_NAMES = ['critical', 'default', 'sheddable'] as const;

/** The refusal while the adaptive limit binds: at once, or after the wait (SPEC §13). */
function overloaded(limit: number, priority: Priority, waitedMs?: number): OutriggerError {
  const why =
    waitedMs !== undefined
      ? `no place under the backend's concurrency limit (${limit}, learned from its latency) became free within ${waitedMs} ms (upstream.queueTimeoutMs)`
      : priority === SHEDDABLE
        ? `the backend is near its concurrency limit (${limit}, learned from its latency) and this request's priority is sheddable`
        : `the backend is at its concurrency limit (${limit}, learned from its latency)`;
  return new OutriggerError(503, 'UPSTREAM_OVERLOADED', `${why} (upstream.adaptiveConcurrency, priority ${CLASS_NAMES[priority]}); retry shortly`, { 'retry-after': '1' });
}
