/**
 * One backend GET on undici's dispatcher API (issue 39): the status and, for a 2xx answer, the
 * whole body as text, through handler callbacks, without the Readable stream and async iterator
 * that `request()` builds for every call (as webhooks/deliver/attempt/http-post.ts does for
 * deliveries). A body over `maxBytes` is not read further; the signal aborts the exchange.
 */
import type { Dispatcher } from 'undici';

export interface GetRequest {
  readonly origin: string;
  readonly path: string;
  readonly headers: Record<string, string>;
  readonly signal: AbortSignal | undefined;
  /** Body bytes read at most; past it the read fails with `tooLarge`. */
  readonly maxBytes: number;
}

/** The status, and the body's text for a 2xx status (other bodies are not kept). */
export interface GetAnswer {
  readonly statusCode: number;
  readonly text: string | undefined;
}

/** Why a GET failed: before an answer came (`connect`), while its body came (`body`), or the body passed maxBytes. */
export class GetFailure extends Error {
  constructor(
    readonly phase: 'connect' | 'body' | 'tooLarge',
    readonly error: unknown,
    /** The answer's status, when one came. */
    readonly statusCode: number,
  ) {
    super(`backend GET failed (${phase})`);
  }
}

/** The exchange's state and undici's handler in one object (its methods are the callbacks). */
class GetExchange implements Dispatcher.DispatchHandler {
  private settled = false;
  private statusCode = 0;
  private chunks: Buffer[] = [];
  private size = 0;
  private controller: Dispatcher.DispatchController | null = null;
  private readonly onAbort: (() => void) | undefined;

  constructor(
    private readonly r: GetRequest,
    private readonly resolve: (answer: GetAnswer) => void,
    private readonly reject: (failure: GetFailure) => void,
  ) {
    const signal = r.signal;
    if (signal) {
      this.onAbort = () => this.controller?.abort(signal.reason);
      signal.addEventListener('abort', this.onAbort, { once: true });
    }
  }

  private settle(): boolean {
    if (this.settled) return false;
    this.settled = true;
    if (this.onAbort) this.r.signal?.removeEventListener('abort', this.onAbort);
    return true;
  }

  fail(failure: GetFailure): void {
    if (this.settle()) this.reject(failure);
  }

  onRequestStart(c: Dispatcher.DispatchController): void {
    this.controller = c;
    if (this.r.signal?.aborted) c.abort(this.r.signal.reason);
  }

  onResponseStart(_c: Dispatcher.DispatchController, statusCode: number): void {
    this.statusCode = statusCode;
    // Another status: its body is not kept (what `body.dump()` did), the caller decides now.
    if ((statusCode < 200 || statusCode > 299) && this.settle()) this.resolve({ statusCode, text: undefined });
  }

  onResponseData(c: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.settled) return;
    this.size += chunk.length;
    if (this.size > this.r.maxBytes) {
      const error = new Error(`more than ${this.r.maxBytes} bytes`);
      this.fail(new GetFailure('tooLarge', error, this.statusCode));
      c.abort(error);
      return;
    }
    this.chunks.push(chunk);
  }

  onResponseEnd(): void {
    if (!this.settle()) return;
    const chunks = this.chunks;
    const body = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, this.size);
    this.chunks = [];
    this.resolve({ statusCode: this.statusCode, text: body.toString('utf8') });
  }

  onResponseError(_c: Dispatcher.DispatchController, error: Error): void {
    this.fail(new GetFailure(this.statusCode === 0 ? 'connect' : 'body', error, this.statusCode));
  }
}

export function getBody(dispatcher: Dispatcher, r: GetRequest): Promise<GetAnswer> {
  return new Promise((resolve, reject) => {
    const exchange = new GetExchange(r, resolve, reject);
    try {
      dispatcher.dispatch({ origin: r.origin, path: r.path, method: 'GET', headers: r.headers }, exchange);
    } catch (error) {
      exchange.fail(new GetFailure('connect', error, 0));
    }
  });
}
