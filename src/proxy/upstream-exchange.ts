/**
 * One proxied exchange's place and lifetime, apart from what it relays (response-relay.ts):
 * its connection's turn, its upstream slot, its request-buffering reservation, each given back
 * exactly once; and how it ends early (the client gone, a body that stalls, a client that stops
 * reading). One object per request with the relay (a subclass, not a second object: the
 * pass-through path allocates one handler), so undici, the slot queue, the turn queue and
 * request buffering all call the same instance.
 */
import type { Socket } from 'node:net';
import type { Dispatcher } from 'undici';
import { OutriggerError } from '../errors.js';
import type { ForwardRequest, ForwarderOptions } from './forward-request.js';
import type { Priority, SlotRequest, UpstreamSlots, Waiting } from './upstream-slots.js';
import type { BackendGuard } from './guard/backend-guard.js';
import { connectionTurns, type TurnTaker } from './connection-turns.js';
import { setContentLength, type BufferedBodyTarget } from './request-body.js';
import { clientAddressBucket } from '../net/client-address.js';

/** What an exchange asks of the forwarder that made it. */
export interface ExchangeHost {
  readonly slots: UpstreamSlots;
  readonly guard: BackendGuard;
  readonly options: ForwarderOptions;
  releaseBuffer(client: string, bytes: number): void;
  dispatch(options: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): void;
}

export abstract class UpstreamExchange implements Dispatcher.DispatchHandler, SlotRequest, BufferedBodyTarget, TurnTaker {
  protected controller: Dispatcher.DispatchController | null = null;
  /** The upstream exchange is over (or never began): nothing more to give back or cut. */
  protected settled = false;
  /** Set while the request waits for an upstream slot. */
  waiting: Waiting | null = null;
  /** Why the exchange was cancelled before undici handed us its controller (client gone, body stalled). */
  cancelled: Error | null = null;
  /** Between the slot's grant and the exchange's end; released exactly once. */
  private slotHeld = false;
  /** Between taking its connection's turn and giving it back (connection-turns.ts); given back exactly once. */
  private holdsTurn = false;
  /** Bytes this request reserved for request buffering; given back once, when it ends. */
  bufferReserved = 0;
  /** listen.sendTimeoutMs while the client does not drain; cleared when the exchange ends, so a gone client's handler is not kept. */
  private sendTimer: NodeJS.Timeout | null = null;
  private waitingForDrain = false;
  /** The connection, kept from the start: Node may detach `req.socket` once the answer is out. */
  readonly socket: Socket;

  /** The client's address as the per-address shares count it (an IPv6 /64: one subscriber holds all of it). */
  readonly client: string;
  /** The request body streams through undici (neither absent, nor bytes read already, nor buffered whole). */
  private streamsBody: boolean;
  /** When the request went to the backend (performance.now()), for the adaptive limit's latency. */
  private sentAt = 0;
  /** Sent again after its connection failed (SPEC §13's retry budget); at most once. */
  private retried = false;
  readonly priority: Priority | undefined;

  constructor(
    protected readonly f: ForwardRequest,
    protected readonly host: ExchangeHost,
    protected readonly failed: (error: OutriggerError) => void,
    private readonly dispatchOptions: Dispatcher.DispatchOptions,
  ) {
    this.socket = f.req.socket;
    this.client = f.clientIp.includes(':') ? clientAddressBucket(f.clientIp) : f.clientIp;
    this.streamsBody = dispatchOptions.body !== null && !Buffer.isBuffer(f.body);
    this.priority = f.priority;
  }

  /** This request's turn on its connection: now it asks the breaker, then for an upstream slot. */
  takeTurn(): void {
    this.holdsTurn = true;
    if (this.cancelled) return this.leaveTurn();
    if (!this.host.guard.breaker.allow()) return this.refuse(this.host.guard.breakerRefusal());
    this.waiting = this.host.slots.acquire(this.client, this);
  }

  /** Its connection closed while it waited for its turn. */
  connectionGone(): void {
    this.cancelled ??= new Error('client closed the connection');
    this.settled = true;
    this.releaseBuffer();
  }

  private leaveTurn(): void {
    if (!this.holdsTurn) return;
    this.holdsTurn = false;
    connectionTurns.leave(this.socket);
  }

  /**
   * Request buffering read the whole body: sent with its exact length, as one Buffer when it came
   * in one chunk, else as the chunks themselves (no copy into one Buffer: measured, a 1 MiB body
   * concatenated cost more CPU than the rest of its trip).
   */
  bodyBuffered(chunks: Buffer[], size: number): void {
    this.streamsBody = false;
    this.dispatchOptions.body = (chunks.length === 1 ? chunks[0]! : chunks) as Dispatcher.DispatchOptions['body'];
    setContentLength(this.dispatchOptions.headers as string[], size);
    connectionTurns.enter(this.socket, this);
  }

  /** A chunked body passed the buffering bound: it streams, what was read first included. */
  bodyStreamsOn(body: AsyncIterable<Buffer>): void {
    this.dispatchOptions.body = body as Dispatcher.DispatchOptions['body'];
    connectionTurns.enter(this.socket, this);
  }

  /** A slot is ours (at once, or after waiting in line). */
  start(): void {
    this.waiting = null;
    this.slotHeld = true;
    if (this.cancelled) {
      this.releaseBuffer();
      return this.releaseSlot();
    }
    if (this.streamsBody) this.watchBody();
    this.sentAt = performance.now();
    this.host.dispatch(this.dispatchOptions, this);
  }

  /** The backend's final head came back: the breaker counts it, the adaptive limit takes its latency. */
  protected upstreamAnswered(status: number): void {
    const guard = this.host.guard;
    guard.breaker.answered(status);
    if (guard.limit !== null) {
      const now = performance.now();
      guard.limit.sample(now - this.sentAt, now, guard.slots.activeCount);
    }
  }

  /**
   * No answer came back (`status` is what it maps to, upstreamError): the breaker counts it, a timeout is a latency
   * sample, and a GET or HEAD (or a write with an Idempotency-Key, SPEC §14) whose connection
   * failed is sent once more on another connection when the retry budget allows. True when it
   * was: the exchange goes on.
   */
  protected upstreamFailed(status: number): boolean {
    if (this.cancelled || (status !== 502 && status !== 504)) return false;
    const guard = this.host.guard;
    if (status === 504) {
      guard.breaker.failed('timeout');
      const now = performance.now();
      guard.limit?.sample(now - this.sentAt, now, guard.slots.activeCount);
      return false;
    }
    guard.breaker.failed('unreachable');
    if (this.retried || this.streamsBody || !this.idempotent() || !guard.breaker.allow() || !guard.takeRetry()) return false;
    this.retried = true;
    this.controller = null;
    // Not from inside undici's error callback for the failed attempt: the next dispatch runs after it.
    queueMicrotask(() => {
      if (this.cancelled) {
        this.settle();
        return this.failed(this.cancelled instanceof OutriggerError ? this.cancelled : new OutriggerError(499, 'CLIENT_CLOSED', 'the client closed the connection'));
      }
      this.sentAt = performance.now();
      this.host.dispatch(this.dispatchOptions, this);
    });
    return true;
  }

  private idempotent(): boolean {
    const method = this.f.method;
    return method === 'GET' || method === 'HEAD' || this.f.req.headers['idempotency-key'] !== undefined;
  }

  /** No slot: too many waiting from this client, or the wait passed upstream.queueTimeoutMs. */
  refuse(error: OutriggerError): void {
    this.waiting = null;
    this.releaseBuffer();
    this.leaveTurn();
    if (!this.cancelled) this.failed(error);
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    // undici offers no cancel before this point (the request may have waited for a connection).
    if (this.cancelled) controller.abort(this.cancelled);
  }

  /** The client's socket is full: the upstream waits for it to drain, for listen.sendTimeoutMs at most. */
  protected pauseUntilDrain(controller: Dispatcher.DispatchController): void {
    if (this.waitingForDrain) return;
    controller.pause();
    this.waitingForDrain = true;
    // A client that stops reading must not hold the upstream: cut after listen.sendTimeoutMs without a drain.
    const timer = (this.sendTimer = setTimeout(this.sendStalled, this.host.options.listen.sendTimeoutMs));
    this.f.res.once('drain', () => {
      clearTimeout(timer);
      this.waitingForDrain = false;
      controller.resume();
    });
  }

  private readonly sendStalled = (): void => {
    if (this.settled) return;
    // The whole connection: an answer queued behind others (pipelining) has no socket of its own yet.
    this.socket.destroy();
    this.cancel(new Error('client closed the connection'));
  };

  readonly clientClosed = (): void => {
    if (this.settled || this.f.res.writableFinished) return;
    this.cancel(new Error('client closed the connection'));
  };

  private cancel(reason: Error): void {
    if (this.cancelled) return;
    this.cancelled = reason;
    this.releaseBuffer();
    if (this.waiting) {
      this.waiting.cancel();
      this.waiting = null;
      this.settled = true;
      this.leaveTurn();
    } else if (!this.holdsTurn && !this.slotHeld) {
      // Still reading its body, or waiting for its connection's turn (which then passes it by).
      this.settled = true;
    } else {
      this.controller?.abort(reason);
    }
  }

  /**
   * A body that stops arriving must not hold an upstream slot: the socket's idle timer runs while
   * the client sends the body (the server's own timers bound headers and the whole request).
   */
  private watchBody(): void {
    const req = this.f.req;
    if (req.complete) return;
    req.setTimeout(this.host.options.listen.bodyIdleTimeoutMs, this.bodyStalled);
    req.once('end', () => {
      if (!this.f.res.writableFinished) req.setTimeout(0);
    });
  }

  private readonly bodyStalled = (): void => {
    if (this.settled) {
      // The answer is out and the client still trickles a body nobody reads.
      this.f.req.destroy();
      return;
    }
    // Answered (408) from onResponseError once undici has let go of the upstream request.
    const ms = this.host.options.listen.bodyIdleTimeoutMs;
    this.cancel(new OutriggerError(408, 'REQUEST_BODY_TIMEOUT', `the request body stalled: nothing arrived for ${ms} ms (listen.bodyIdleTimeoutMs)`, { connection: 'close' }));
  };

  private releaseSlot(): void {
    if (!this.slotHeld) return;
    this.slotHeld = false;
    this.host.slots.release(this.client);
    this.leaveTurn();
  }

  /** The upstream exchange is over: its slot, its turn and its buffer go back, its send timer stops. */
  protected settle(): void {
    if (this.retried && !this.settled) this.host.guard.retryDone();
    this.settled = true;
    if (this.sendTimer !== null) clearTimeout(this.sendTimer);
    this.releaseSlot();
    this.releaseBuffer();
  }

  private releaseBuffer(): void {
    if (this.bufferReserved === 0) return;
    this.host.releaseBuffer(this.client, this.bufferReserved);
    this.bufferReserved = 0;
  }
}
