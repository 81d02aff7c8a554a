import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { ResponseHeaderFilter } from './headers.js';
import type { ForwardBody } from './request-body.js';
import type { OutriggerConfig } from '../config/types.js';
import type { Priority } from './upstream-slots.js';

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

/** Holds a proxied answer until the promise it returns settles (given the whole body). */
export type AnswerHold = (body: Buffer) => Promise<void>;

/**
 * The response cache's view of the upstream's answer, raw, before any rewrite (src/cache/).
 * `head` decides: `none` (the answer is relayed as usual), `copy` (also hand the chunks and the
 * end to the capture), `replace` (the capture answers the client itself at `end`: a 304 that
 * revalidated a cached answer), or a hold (the answer waits for it: a write's drop in Redis).
 */
export interface ResponseCapture {
  head(statusCode: number, headers: Record<string, string | string[] | undefined>): 'none' | 'copy' | 'replace' | AnswerHold;
  data(chunk: Buffer): void;
  /** The upstream's answer ended (before the client's ends); not called when the exchange failed. */
  end(): void;
}

/**
 * Two captures of one answer as one (an idempotent write's record and the response cache's drop):
 * each head decides alone. A hold makes the answer wait for every hold; a capture that asked for a
 * copy then gets the whole body at once. Only for captures that never `replace` the answer.
 */
export function composeCaptures(first: ResponseCapture, second: ResponseCapture): ResponseCapture {
  let copying: ResponseCapture[] = [];
  return {
    head(statusCode, headers) {
      const holds: AnswerHold[] = [];
      copying = [];
      for (const capture of [first, second]) {
        const mode = capture.head(statusCode, headers);
        if (mode === 'replace') throw new Error('composeCaptures: a capture that replaces the answer cannot be composed');
        if (mode === 'copy') copying.push(capture);
        else if (mode !== 'none') holds.push(mode);
      }
      if (holds.length === 0) return copying.length > 0 ? 'copy' : 'none';
      return (body) => {
        for (const capture of copying.splice(0)) {
          capture.data(body);
          capture.end();
        }
        return Promise.all(holds.map((hold) => hold(body))).then(() => undefined);
      };
    },
    data(chunk) {
      for (const capture of copying) capture.data(chunk);
    },
    end() {
      for (const capture of copying) capture.end();
    },
  };
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
  /** The response cache's capture of the answer; absent (one field check) for everything it does not cover. */
  capture?: ResponseCapture;
  /** Its class when the backend is at its limit (SPEC §13); absent is default. */
  priority?: Priority;
}

/** What the features may decide about a proxied request (access/proxy-policy.ts); the handler copies these fields, and only these. */
export type ProxyPlan = Partial<Pick<ForwardRequest, 'target' | 'removeRequestHeaders' | 'setRequestHeaders' | 'body' | 'filterResponseHeader' | 'rewrite' | 'capture' | 'responseHeaders'>>;

/** The upstream's settings as the config declares them (upstream.*; the identity block is access/'s). */
export type UpstreamSettings = Omit<OutriggerConfig['upstream'], 'identity'>;

/**
 * What the forwarder reads of the config, passed whole: upstream.* (pool, slots, request
 * buffering, timeout) and the two listen.* bounds that cut a stalled body or a client that stops
 * reading (listen.bodyIdleTimeoutMs, listen.sendTimeoutMs, as nginx's send_timeout).
 */
export interface ForwarderOptions {
  upstream: UpstreamSettings;
  listen: Pick<OutriggerConfig['listen'], 'bodyIdleTimeoutMs' | 'sendTimeoutMs'>;
}
