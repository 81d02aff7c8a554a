import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { tapRequestBody } from '../http/body.js';
import type { RequestScope } from '../http/scope.js';

/**
 * Watches requests end to end (webhooks, recordings). `begin` runs on the hot path: return null
 * when nothing wants this request, and keep every callback non-blocking.
 */
export interface RequestObserver {
  begin(scope: RequestScope): ObservedRequest | null;
}

/** Per-request capture: sees body chunks as they pass (by reference, never delaying them). */
export interface ObservedRequest {
  onRequestData(chunk: Buffer): void;
  onResponseHead(statusCode: number, headers: OutgoingHttpHeaders): void;
  onResponseData(chunk: Buffer): void;
  /**
   * Proxied requests only: something to read before the request goes upstream (subscriptions:
   * the written document's state before the write). The request waits for the promise; undefined
   * (the usual answer) costs nothing.
   */
  beforeForward?(): Promise<void> | undefined;
  /** Proxied responses only: see `ResponseObserver.beforeAnswer` (the answer waits for it). */
  beforeAnswer?(statusCode: number, headers: Record<string, string | string[] | undefined>): ((body: Buffer) => Promise<void>) | undefined;
  /** Once, when the response finished or the connection closed. */
  finish(scope: RequestScope, completed: boolean): void;
}

/*
 * Proxied requests are observed by the proxy itself (the forward stage passes the observer to
 * the forwarder and wraps the request body), which costs nothing beyond the callbacks. Own routes
 * (keys, GraphQL) write their answers through `res` and read bodies through `readBody`, so for
 * them the response methods are wrapped and a body tap is registered with http/body.ts. Wrapping
 * is kept off the pass-through path: replacing methods on every proxied response measurably slowed it.
 */
/** The request body as an async iterable that reports each chunk to the observer on its way upstream. */
export async function* tappedBody(req: IncomingMessage, observed: ObservedRequest): AsyncIterable<Buffer> {
  for await (const chunk of req as AsyncIterable<Buffer>) {
    observed.onRequestData(chunk);
    yield chunk;
  }
}

/** Hooks an observer into an own route's request: a body tap, and wrappers on writeHead/write/end. */
export function observeOwnRoute(scope: RequestScope, observed: ObservedRequest): void {
  const { req, res } = scope;
  tapRequestBody(req, (chunk) => observed.onRequestData(chunk));

  const writeHead = res.writeHead;
  const write = res.write;
  const end = res.end;
  let headSeen = false;
  const seeHead = () => {
    if (headSeen) return;
    headSeen = true;
    observed.onResponseHead(res.statusCode, res.getHeaders());
  };
  res.writeHead = function (this: ServerResponse, statusCode: number, ...rest: unknown[]) {
    headSeen = true;
    const headers = rest.find((r) => r && typeof r === 'object') as OutgoingHttpHeaders | string[] | undefined;
    const merged: OutgoingHttpHeaders = { ...res.getHeaders() };
    if (Array.isArray(headers)) for (let i = 0; i < headers.length; i += 2) merged[String(headers[i]).toLowerCase()] = headers[i + 1];
    else if (headers) for (const [k, v] of Object.entries(headers)) merged[k.toLowerCase()] = v;
    observed.onResponseHead(statusCode, merged);
    return (writeHead as (...a: unknown[]) => ServerResponse).call(this, statusCode, ...rest);
  } as ServerResponse['writeHead'];
  res.write = function (this: ServerResponse, chunk: unknown, ...rest: unknown[]) {
    seeHead();
    if (chunk) observed.onResponseData(typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer));
    return (write as (...a: unknown[]) => boolean).call(this, chunk, ...rest);
  } as ServerResponse['write'];
  res.end = function (this: ServerResponse, chunk?: unknown, ...rest: unknown[]) {
    seeHead();
    if (chunk && typeof chunk !== 'function') observed.onResponseData(typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer));
    return (end as (...a: unknown[]) => ServerResponse).call(this, chunk, ...rest);
  } as ServerResponse['end'];
}

/** Several observers as one (webhooks, subscriptions): each `begin` decides alone; none costs more than its own. */
export function combineObservers(observers: readonly RequestObserver[]): RequestObserver | null {
  if (observers.length <= 1) return observers[0] ?? null;
  return {
    begin(scope) {
      let one: ObservedRequest | null = null;
      let many: ObservedRequest[] | null = null;
      for (const observer of observers) {
        const observed = observer.begin(scope);
        if (!observed) continue;
        if (!one) one = observed;
        else (many ??= [one]).push(observed);
      }
      if (!many) return one;
      const all = many;
      return {
        onRequestData: (chunk) => all.forEach((o) => o.onRequestData(chunk)),
        onResponseHead: (status, headers) => all.forEach((o) => o.onResponseHead(status, headers)),
        onResponseData: (chunk) => all.forEach((o) => o.onResponseData(chunk)),
        beforeForward: () => {
          const waits = all.map((o) => o.beforeForward?.()).filter((w) => w !== undefined);
          return waits.length === 0 ? undefined : Promise.all(waits).then(() => undefined);
        },
        beforeAnswer: (status, headers) => {
          const waits = all.map((o) => o.beforeAnswer?.(status, headers)).filter((w) => w !== undefined);
          if (waits.length === 0) return undefined;
          return (body) => Promise.all(waits.map((w) => w(body))).then(() => undefined);
        },
        finish: (s, completed) => all.forEach((o) => o.finish(s, completed)),
      };
    },
  };
}
