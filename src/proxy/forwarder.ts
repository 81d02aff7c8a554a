import type { Socket } from 'node:net';
import { Pool, type Dispatcher } from 'undici';
import { OutriggerError } from '../errors.js';
import { clientResponseHeaders, upstreamRequestHeaders } from './headers.js';
import { sendBuffered } from './buffered-answer.js';
import { DEFAULT_SEND_TIMEOUT_MS, type ForwardRequest, type ForwarderOptions } from './forward-request.js';
import { UpstreamSlots, type SlotRequest, type Waiting } from './upstream-slots.js';
import { BufferReservations } from './buffer-reservations.js';
import { connectionTurns, type TurnTaker } from './connection-turns.js';
import { clientAddressBucket } from '../net/client-address.js';
import { bufferBody, hasRequestBody, replaceContentLength, setContentLength, type BufferedBodyTarget } from './request-body.js';

export type { ForwardRequest, ForwarderOptions, ProxyPlan, ResponseObserver } from './forward-request.js';

/**
 * The pass-through path: node:http in, an undici Pool out through `dispatch` (the lowest-cost
 * undici API), bodies streamed both ways with backpressure, keep-alive to the upstream.
 */
export class Forwarder {
  private readonly pool: Pool;
  readonly slots: UpstreamSlots;
  readonly origin: string;

  constructor(private readonly options: ForwarderOptions) {
    const url = new URL(options.url);
    this.origin = url.origin;
    this.pool = new Pool(url.origin, {
      connections: options.connections,
      pipelining: 1,
      keepAliveTimeout: 30_000,
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.timeoutMs,
      connectTimeout: Math.min(options.timeoutMs, 10_000),
    });
    this.basePath = url.pathname.replace(/\/$/, '');
    this.slots = new UpstreamSlots({
      total: options.connections,
      perClient: Math.min(options.maxConnectionsPerClient, options.connections),
      queueTimeoutMs: options.queueTimeoutMs,
      maxWaitingPerClient: options.maxQueuedPerClient,
    });
    this.buffers = new BufferReservations(options.bufferTotalBytes ?? Infinity, options.bufferBytesPerClient ?? Infinity);
  }

  private readonly basePath: string;

  /**
   * Starts the upstream exchange (at once, or when an upstream slot frees up) and returns a
   * function that cancels it wherever it is, waiting or in flight (the caller invokes it when the
   * client goes away: it already listens for that, and one listener per request is cheaper than
   * two). `failed` is called, at most once, with an OutriggerError when the request
   * fails before any byte of the answer was sent; after that a failure can only cut the client's
   * connection. A callback rather than a promise: the pass-through path allocates no promise and
   * schedules no microtask for a request that succeeds.
   */
  forward(f: ForwardRequest, failed: (error: OutriggerError) => void): () => void {
    const hasBody = f.body !== undefined || hasRequestBody(f.req);
    const headers = upstreamRequestHeaders(f.req.headers, f.req.rawHeaders, {
      clientIp: f.clientIp,
      peerTrusted: f.peerTrusted,
      proto: f.secure ? 'https' : 'http',
      remove: f.removeRequestHeaders,
      set: f.setRequestHeaders,
    });
    if (Buffer.isBuffer(f.body)) replaceContentLength(headers, f.body.length);
    const options: Dispatcher.DispatchOptions = {
      origin: this.origin,
      path: this.basePath + f.target,
      method: f.method as Dispatcher.HttpMethod,
      headers,
      body: (hasBody ? (f.body ?? f.req) : null) as Dispatcher.DispatchOptions['body'],
      // A request from a client that went away must not keep an upstream socket busy.
      idempotent: f.method === 'GET' || f.method === 'HEAD',
    };
    const streams = hasBody && !Buffer.isBuffer(f.body);
    // Every per-address share counts an IPv6 client by its /64 (one subscriber holds all of it).
    const client = f.clientIp.includes(':') ? clientAddressBucket(f.clientIp) : f.clientIp;
    const handler = new ForwardHandler(f, client, this.options, failed, this, options, streams);
    const bound = this.options.bufferBodyBytes ?? 0;
    if (streams && bound > 0 && !f.req.complete) {
      // Request buffering (SPEC §2): a trickling client holds a socket and this buffer, never a slot.
      // A chunked body reserves the whole bound; all reservations stay under bufferTotalBytes, one address's under bufferBytesPerClient.
      const declared = Number(f.req.headers['content-length'] ?? 0);
      const reserve = declared > 0 ? declared : bound;
      if (declared <= bound && this.buffers.reserve(client, reserve)) {
        handler.bufferReserved = reserve;
        bufferBody(f.req, f.body, bound, this.options.bodyIdleTimeoutMs, handler);
        return handler.clientClosed;
      }
    }
    connectionTurns.enter(f.req.socket, handler);
    return handler.clientClosed;
  }

  /** Bytes reserved by request bodies being read or held for buffering (a gauge). */
  get bufferedBytes(): number {
    return this.buffers.bytes;
  }

  /** The request-body memory bounds, shared with own routes' bodies (http/body.ts): one bound for every door. */
  readonly buffers: BufferReservations;

  /** For ForwardHandler, when its buffered body is sent or given up. */
  releaseBuffer(client: string, bytes: number): void {
    this.buffers.release(client, bytes);
  }

  /** For ForwardHandler, once its body is read (or found to be larger than the bound): its connection's turn, then a slot. */
  acquireSlot(handler: ForwardHandler): void {
    connectionTurns.enter(handler.socket, handler);
  }

  /** For ForwardHandler, once it holds a slot. */
  dispatch(options: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): void {
    this.pool.dispatch(options, handler);
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}

class ForwardHandler implements Dispatcher.DispatchHandler, SlotRequest, BufferedBodyTarget, TurnTaker {
  private controller: Dispatcher.DispatchController | null = null;
  private started = false;
  private settled = false;
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
  private buffered: Buffer[] | null = null;
  /** The buffered answer is rewritten (projectResponse) before it is sent. */
  private rewriting = false;
  /** The observer's wait before the answer is sent (ResponseObserver.beforeAnswer). */
  private held: ((body: Buffer) => Promise<void>) | undefined;
  private bufferedHeaders: Record<string, string | string[] | undefined> = {};
  private bufferedStatus = 0;

  constructor(
    private readonly f: ForwardRequest,
    /** The client's address as the per-address shares count it (an IPv6 /64). */
    readonly client: string,
    private readonly options: ForwarderOptions,
    private readonly failed: (error: OutriggerError) => void,
    private readonly forwarder: Forwarder,
    private readonly dispatchOptions: Dispatcher.DispatchOptions,
    private streamsBody: boolean,
  ) {
    this.socket = f.req.socket;
  }

  /** The connection, kept from the start: Node may detach `req.socket` once the answer is out. */
  readonly socket: Socket;

  /** This request's turn on its connection: now it asks for an upstream slot. */
  takeTurn(): void {
    this.holdsTurn = true;
    if (this.cancelled) return this.leaveTurn();
    this.waiting = this.forwarder.slots.acquire(this.client, this);
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
    this.forwarder.acquireSlot(this);
  }

  /** A chunked body passed the buffering bound: it streams, what was read first included. */
  bodyStreamsOn(body: AsyncIterable<Buffer>): void {
    this.dispatchOptions.body = body as Dispatcher.DispatchOptions['body'];
    this.forwarder.acquireSlot(this);
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
    this.forwarder.dispatch(this.dispatchOptions, this);
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

  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, headers: Record<string, string | string[] | undefined>, statusMessage?: string): void {
    if (statusCode < 200) return; // 1xx informational: Node already answered Expect itself
    this.started = true;
    this.rewriting = this.f.rewrite?.accepts(statusCode, headers) === true;
    this.held = this.f.observer?.beforeAnswer?.(statusCode, headers);
    if (this.rewriting || this.held) {
      this.buffered = [];
      this.bufferedStatus = statusCode;
      this.bufferedHeaders = headers;
      return;
    }
    const res = this.f.res;
    const clientHeaders = clientResponseHeaders(headers, this.f.filterResponseHeader);
    this.f.observer?.onResponseHead(statusCode, clientHeaders);
    // In the object, not by setHeader beforehand: a response with no headers set yet takes
    // writeHead's fast path, which does not validate and copy every header again.
    clientHeaders['x-request-id'] = this.f.requestId;
    if (this.f.responseHeaders) Object.assign(clientHeaders, this.f.responseHeaders);
    res.writeHead(statusCode, statusMessage, clientHeaders);
    this.headPending = true;
    // A response whose body is already in the parser's buffer goes out in one write with its
    // head (Node sends the head with the first chunk). Only a head whose body is not there by
    // the end of this parsing pass is flushed alone, so a slow or streaming response still
    // shows its status and headers at once.
    queueMicrotask(() => {
      if (this.headPending && !res.destroyed) res.flushHeaders();
    });
  }

  private headPending = false;
  private waitingForDrain = false;
  /** listen.sendTimeoutMs while the client does not drain; cleared when the exchange ends, so a gone client's handler is not kept. */
  private sendTimer: NodeJS.Timeout | null = null;

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.buffered) {
      this.buffered.push(chunk);
      return;
    }
    this.f.observer?.onResponseData(chunk);
    this.headPending = false;
    if (!this.f.res.write(chunk) && !this.waitingForDrain) {
      controller.pause();
      this.waitingForDrain = true;
      // A client that stops reading must not hold the upstream: cut after listen.sendTimeoutMs without a drain.
      const timer = (this.sendTimer = setTimeout(this.sendStalled, this.options.sendTimeoutMs ?? DEFAULT_SEND_TIMEOUT_MS));
      this.f.res.once('drain', () => {
        clearTimeout(timer);
        this.waitingForDrain = false;
        controller.resume();
      });
    }
  }

  private readonly sendStalled = (): void => {
    if (this.settled) return;
    // The whole connection: an answer queued behind others (pipelining) has no socket of its own yet.
    this.socket.destroy();
    this.cancel(new Error('client closed the connection'));
  };

  onResponseEnd(): void {
    if (this.buffered) {
      // The upstream exchange is over (its slot goes now), whether or not the answer waits for an observer.
      this.settle();
      const failure = sendBuffered(this.f, { status: this.bufferedStatus, headers: this.bufferedHeaders, chunks: this.buffered, rewriting: this.rewriting, held: this.held });
      if (failure) this.failed(failure);
      return;
    }
    this.headPending = false;
    this.f.res.end();
    this.settle();
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    if (this.settled) return;
    this.settle();
    if (this.started && !this.buffered) {
      // Headers are out: the only honest signal left is a broken connection.
      this.f.res.destroy(error);
      return;
    }
    this.failed(this.cancelled instanceof OutriggerError ? this.cancelled : upstreamError(error, this.options.timeoutMs));
  }

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
    req.setTimeout(this.options.bodyIdleTimeoutMs, this.bodyStalled);
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
    this.cancel(
      new OutriggerError(408, 'REQUEST_BODY_TIMEOUT', `the request body stalled: nothing arrived for ${this.options.bodyIdleTimeoutMs} ms (listen.bodyIdleTimeoutMs)`, {
        connection: 'close',
      }),
    );
  };

  private releaseSlot(): void {
    if (!this.slotHeld) return;
    this.slotHeld = false;
    this.forwarder.slots.release(this.client);
    this.leaveTurn();
  }

  private settle(): void {
    this.settled = true;
    if (this.sendTimer !== null) clearTimeout(this.sendTimer);
    this.releaseSlot();
    this.releaseBuffer();
  }

  private releaseBuffer(): void {
    if (this.bufferReserved === 0) return;
    this.forwarder.releaseBuffer(this.client, this.bufferReserved);
    this.bufferReserved = 0;
  }
}

/** Maps undici's stable error codes to the answers SPEC §2 names. */
export function upstreamError(error: Error, timeoutMs: number): OutriggerError {
  const code = (error as { code?: string }).code ?? '';
  if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT')
    return new OutriggerError(504, 'UPSTREAM_TIMEOUT', `the upstream did not answer within ${timeoutMs} ms (upstream.timeoutMs)`);
  if (code === 'UND_ERR_ABORTED' || error.message === 'client closed the connection')
    return new OutriggerError(499, 'CLIENT_CLOSED', 'the client closed the connection');
  return new OutriggerError(502, 'UPSTREAM_UNREACHABLE', `the upstream could not be reached (${code || error.message}); check upstream.url and that the backend is running`);
}
