import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { ResponseHeaderFilter } from './headers.js';
import type { ForwardBody } from './request-body.js';

/** Sees a proxied response as it streams to the client (webhook capture); must never block or throw. */
export interface ResponseObserver {
  onResponseHead(statusCode: number, headers: OutgoingHttpHeaders): void;
  onResponseData(chunk: Buffer): void;
  /**
   * Asked once at the upstream's response head: a function that makes the client's answer wait.
   * The response is then kept whole, and sent once the promise the function returns (given the
   * body) settles (subscriptions read a written document before its writer is answered, SPEC §6.5).
   */
  beforeAnswer?(statusCode: number, headers: Record<string, string | string[] | undefined>): ((body: Buffer) => Promise<void>) | undefined;
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
  body?: ForwardBody;
  filterResponseHeader?: ResponseHeaderFilter;
  /**
   * When set, a response it accepts is buffered whole and rewritten (projectResponse) before it
   * is sent; every other response streams as usual.
   */
  rewrite?: { accepts(statusCode: number, headers: Record<string, string | string[] | undefined>): boolean; apply(body: Buffer): Buffer };
  observer?: ResponseObserver;
  /**
   * Set on the client's answer over the upstream's headers of the same (lowercase) names, in the
   * same head: the rate-limit headers (SPEC §10), without a setHeader per request.
   */
  responseHeaders?: Record<string, string>;
}

/** What the features may decide about a proxied request (access/proxy-policy.ts); the handler copies these fields, and only these. */
export type ProxyPlan = Partial<Pick<ForwardRequest, 'target' | 'removeRequestHeaders' | 'setRequestHeaders' | 'body' | 'filterResponseHeader' | 'rewrite'>>;

export interface ForwarderOptions {
  url: string;
  timeoutMs: number;
  connections: number;
  /** Upstream slots one client IP may hold (upstream.maxConnectionsPerClient). */
  maxConnectionsPerClient: number;
  /** How long a request may wait for a free upstream slot (upstream.queueTimeoutMs). */
  queueTimeoutMs: number;
  /** Requests one client IP may have waiting for a slot (upstream.maxQueuedPerClient). */
  maxQueuedPerClient: number;
  /** A streamed request body that sends nothing for this long is cut (listen.bodyIdleTimeoutMs). */
  bodyIdleTimeoutMs: number;
  /**
   * Request bodies up to this many bytes are read in full before the request asks for an upstream
   * slot (upstream.bufferBodyBytes; 0 streams every body). Optional for callers that predate it.
   */
  bufferBodyBytes?: number;
  /**
   * What all bodies being read for buffering may reserve together (upstream.bufferTotalBytes);
   * past it a body streams as if buffering were off, so memory stays bounded.
   */
  bufferTotalBytes?: number;
  /** What one client address's bodies may reserve of that (upstream.bufferBytesPerClient). */
  bufferBytesPerClient?: number;
  /**
   * A response the client stops reading is cut after this long without progress
   * (listen.sendTimeoutMs, as nginx's send_timeout), so it cannot hold its upstream slot.
   */
  sendTimeoutMs?: number;
}

/** listen.sendTimeoutMs's default, for callers that predate it. */
export const DEFAULT_SEND_TIMEOUT_MS = 60_000;
