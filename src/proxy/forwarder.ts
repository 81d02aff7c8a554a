import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { Pool, type Dispatcher } from 'undici';
import { OutriggerError } from '../errors.js';
import { clientResponseHeaders, upstreamRequestHeaders, type ResponseHeaderFilter } from './headers.js';

/** Sees a proxied response as it streams to the client (webhook capture); must never block or throw. */
export interface ResponseObserver {
  onResponseHead(statusCode: number, headers: OutgoingHttpHeaders): void;
  onResponseData(chunk: Buffer): void;
}

export interface ForwardRequest {
  req: IncomingMessage;
  res: ServerResponse;
  method: string;
  /** Path and query sent upstream, normally the client's raw target untouched. */
  target: string;
  /** Sent to the client as X-Request-Id, in the same head as the upstream's headers. */
  requestId: string;
  clientIp: string;
  peerTrusted: boolean;
  secure: boolean;
  removeRequestHeaders?: ReadonlySet<string>;
  setRequestHeaders?: Record<string, string>;
  /** The body, when a feature already had to read it; otherwise the request is streamed. */
  body?: Buffer | AsyncIterable<Buffer>;
  filterResponseHeader?: ResponseHeaderFilter;
  /**
   * When set, a response it accepts is buffered whole and rewritten (projectResponse) before it
   * is sent; every other response streams as usual.
   */
  rewrite?: { accepts(statusCode: number, headers: Record<string, string | string[] | undefined>): boolean; apply(body: Buffer): Buffer };
  observer?: ResponseObserver;
}

export interface ForwarderOptions {
  url: string;
  timeoutMs: number;
  connections: number;
}

/**
 * The pass-through path: node:http in, an undici Pool out through `dispatch` (the lowest-cost
 * undici API), bodies streamed both ways with backpressure, keep-alive to the upstream.
 */
export class Forwarder {
  private readonly pool: Pool;
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
  }

  private readonly basePath: string;

  /**
   * Starts the upstream exchange and returns a function that cancels it (the caller invokes it
   * when the client goes away: it already listens for that, and one listener per request is
   * cheaper than two). `failed` is called, at most once, with an OutriggerError when the request
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
    const handler = new ForwardHandler(f, this.options.timeoutMs, failed);
    this.pool.dispatch(
      {
        origin: this.origin,
        path: this.basePath + f.target,
        method: f.method as Dispatcher.HttpMethod,
        headers,
        body: (hasBody ? (f.body ?? f.req) : null) as Dispatcher.DispatchOptions['body'],
        // A request from a client that went away must not keep an upstream socket busy.
        idempotent: f.method === 'GET' || f.method === 'HEAD',
      },
      handler,
    );
    return handler.clientClosed;
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}

function hasRequestBody(req: IncomingMessage): boolean {
  const length = req.headers['content-length'];
  return (length !== undefined && length !== '0') || req.headers['transfer-encoding'] !== undefined;
}

function replaceContentLength(headers: string[], length: number): void {
  for (let i = 0; i < headers.length; i += 2) {
    if (headers[i]!.toLowerCase() === 'content-length') headers[i + 1] = String(length);
    if (headers[i]!.toLowerCase() === 'transfer-encoding') headers[i + 1] = '';
  }
}

class ForwardHandler implements Dispatcher.DispatchHandler {
  private controller: Dispatcher.DispatchController | null = null;
  private started = false;
  private settled = false;
  private buffered: Buffer[] | null = null;
  private bufferedHeaders: Record<string, string | string[] | undefined> = {};
  private bufferedStatus = 0;

  constructor(
    private readonly f: ForwardRequest,
    private readonly timeoutMs: number,
    private readonly failed: (error: OutriggerError) => void,
  ) {}

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
  }

  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, headers: Record<string, string | string[] | undefined>, statusMessage?: string): void {
    if (statusCode < 200) return; // 1xx informational: Node already answered Expect itself
    this.started = true;
    if (this.f.rewrite?.accepts(statusCode, headers)) {
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
      this.f.res.once('drain', () => {
        this.waitingForDrain = false;
        controller.resume();
      });
    }
  }

  onResponseEnd(): void {
    const res = this.f.res;
    if (this.buffered) {
      let body: Buffer;
      try {
        body = this.f.rewrite!.apply(Buffer.concat(this.buffered));
      } catch {
        this.settle();
        this.failed(new OutriggerError(502, 'UPSTREAM_BAD_BODY', 'the upstream answer could not be rewritten as this request requires (its body is not valid JSON)'));
        return;
      }
      const headers = clientResponseHeaders(this.bufferedHeaders, this.f.filterResponseHeader);
      delete headers['content-encoding'];
      headers['content-length'] = body.length;
      this.f.observer?.onResponseHead(this.bufferedStatus, headers);
      this.f.observer?.onResponseData(body);
      headers['x-request-id'] = this.f.requestId;
      res.writeHead(this.bufferedStatus, headers);
      res.end(body);
    } else {
      this.headPending = false;
      res.end();
    }
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
    this.failed(upstreamError(error, this.timeoutMs));
  }

  readonly clientClosed = (): void => {
    if (!this.settled && !this.f.res.writableFinished) this.controller?.abort(new Error('client closed the connection'));
  };

  private settle(): void {
    this.settled = true;
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
