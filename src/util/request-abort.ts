import { EventEmitter } from 'node:events';

/**
 * What a request's work listens on to stop: an AbortSignal, or a RequestAbort.
 * undici takes either as a request's `signal` (an EventTarget or an EventEmitter).
 */
export type AbortLike = AbortSignal | RequestAbort;

/**
 * An abort signal and its controller in one EventEmitter, for the work of one GraphQL request
 * (the client leaving, the time limit): Node's AbortController builds an EventTarget with its
 * own listener bookkeeping, about a tenth of a small GraphQL request's CPU on Node 20, and each
 * read adds and removes an EventTarget listener (issue 39). Emits `abort` once.
 */
export class RequestAbort extends EventEmitter {
  aborted = false;
  reason: unknown = undefined;

  constructor() {
    super();
    // Every backend read in flight listens; graphql.maxBackendReads bounds how many there are.
    this.setMaxListeners(0);
  }

  abort(reason: unknown = Object.assign(new Error('This operation was aborted'), { name: 'AbortError', code: 20 })): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    this.emit('abort');
  }
}

/** Calls `listener` once when `signal` aborts (at once when it has); returns what stops listening. */
export function onAbort(signal: AbortLike, listener: () => void): () => void {
  if (signal.aborted) {
    listener();
    return () => undefined;
  }
  if (signal instanceof RequestAbort) {
    signal.once('abort', listener);
    return () => signal.off('abort', listener);
  }
  signal.addEventListener('abort', listener, { once: true });
  return () => signal.removeEventListener('abort', listener);
}
