import { Pool, type Dispatcher } from 'undici';
import type { OutriggerError } from '../errors.js';
import type { ForwardRequest, ForwarderOptions } from './forward-request.js';
import type { UpstreamSlots } from './upstream-slots.js';
import { BackendGuards, type BackendGuard } from './guard/backend-guard.js';
import { BufferReservations } from './buffer-reservations.js';
import { connectionTurns } from './connection-turns.js';
import { bufferBody, hasRequestBody } from './request-body.js';
import { upstreamRequest } from './request-writer.js';
import { ForwardHandler } from './response-relay.js';
import type { ExchangeHost } from './upstream-exchange.js';

export type { ForwardRequest, ForwarderOptions, ProxyPlan, ResponseObserver, UpstreamSettings } from './forward-request.js';
export { upstreamError } from './response-relay.js';

/**
 * The pass-through path: node:http in, an undici Pool out through `dispatch` (the lowest-cost
 * undici API), bodies streamed both ways with backpressure, keep-alive to the upstream. One
 * handler per request plays every part of the exchange: request-writer.ts builds what goes up,
 * upstream-exchange.ts holds its turn, slot and buffer and cuts it short, response-relay.ts
 * relays the answer.
 */
export class Forwarder implements ExchangeHost {
  private readonly pool: Pool;
  readonly slots: UpstreamSlots;
  /** The line, adaptive limit, breaker and retry budget of the upstream's origin (SPEC §13). */
  readonly guard: BackendGuard;
  readonly origin: string;
  private readonly basePath: string;
  /** The request-body memory bounds, shared with own routes' bodies (http/body.ts): one bound for every door. */
  readonly buffers: BufferReservations;

  /** `guards`: the per-origin protection shared with GraphQL's backend calls; by default the forwarder's own. */
  constructor(
    readonly options: ForwarderOptions,
    guards: BackendGuards = new BackendGuards(options.upstream),
  ) {
    const upstream = options.upstream;
    const url = new URL(upstream.url);
    this.origin = url.origin;
    this.pool = new Pool(url.origin, {
      connections: upstream.connections,
      pipelining: 1,
      keepAliveTimeout: 30_000,
      headersTimeout: upstream.timeoutMs,
      bodyTimeout: upstream.timeoutMs,
      connectTimeout: Math.min(upstream.timeoutMs, 10_000),
    });
    this.basePath = url.pathname.replace(/\/$/, '');
    this.guard = guards.for(url.origin);
    this.slots = this.guard.slots;
    this.buffers = new BufferReservations(upstream.bufferTotalBytes, upstream.bufferBytesPerClient);
  }

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
    const handler = new ForwardHandler(f, this, failed, upstreamRequest(f, this.origin, this.basePath, hasBody));
    const bound = this.options.upstream.bufferBodyBytes;
    if (hasBody && !Buffer.isBuffer(f.body) && bound > 0 && !f.req.complete) {
      // Request buffering (SPEC §2): a trickling client holds a socket and this buffer, never a slot.
      // A chunked body reserves the whole bound; all reservations stay under bufferTotalBytes, one address's under bufferBytesPerClient.
      const declared = Number(f.req.headers['content-length'] ?? 0);
      const reserve = declared > 0 ? declared : bound;
      if (declared <= bound && this.buffers.reserve(handler.client, reserve)) {
        handler.bufferReserved = reserve;
        bufferBody(f.req, f.body, bound, this.options.listen.bodyIdleTimeoutMs, handler);
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

  /** For an exchange, when its buffered body is sent or given up. */
  releaseBuffer(client: string, bytes: number): void {
    this.buffers.release(client, bytes);
  }

  /** For an exchange, once it holds a slot. */
  dispatch(options: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): void {
    this.pool.dispatch(options, handler);
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}
