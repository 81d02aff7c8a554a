/**
 * One webhook POST on undici's dispatcher API (issue 14): the answer's status, headers and the
 * first `limit` bytes of its body, through handler callbacks, without the Readable stream, async
 * iterator and AbortSignal that `request()` builds for every call (a third of the worker's CPU
 * per delivery went there). One timer covers connecting, the headers and the body; once `limit`
 * bytes are kept and more arrive, the rest is not read.
 */
import type { Dispatcher } from 'undici';
import type { IncomingHttpHeaders } from 'undici/types/header.js';

export interface PostRequest {
  origin: string;
  path: string;
  /** An object, or name, value pairs. */
  headers: Record<string, string> | string[];
  body: string | Buffer;
  timeoutMs: number;
  /** Body bytes kept at most. */
  limit: number;
}

export type PostResult =
  { ok: true; statusCode: number; headers: IncomingHttpHeaders; kept: Buffer; total: number; bodyError: 'timeout' | 'broken' | null } | { ok: false; error: unknown; timedOut: boolean };

class EnoughRead extends Error {}

/**
 * One attempt's state and undici's handler in one object (its methods are the callbacks), so a
 * POST allocates this, a timer and a promise rather than a closure per callback.
 */
class PostAttempt implements Dispatcher.DispatchHandler {
  private settled = false;
  private timedOut = false;
  private controller: Dispatcher.DispatchController | null = null;
  private statusCode = 0;
  private headers: IncomingHttpHeaders | null = null;
  private readonly chunks: Buffer[] = [];
  private kept = 0;
  private total = 0;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly r: PostRequest,
    private readonly resolve: (result: PostResult) => void,
  ) {
    this.timer = setTimeout(() => this.timeout(), r.timeoutMs);
  }

  private finish(result: PostResult): void {
    if (this.settled) return;
    this.settled = true;
    clearTimeout(this.timer);
    this.resolve(result);
  }

  private answered(bodyError: 'timeout' | 'broken' | null): void {
    if (this.settled) return;
    this.finish({ ok: true, statusCode: this.statusCode, headers: this.headers!, kept: Buffer.concat(this.chunks, this.kept), total: this.total, bodyError });
  }

  private timeout(): void {
    this.timedOut = true;
    const error = Object.assign(new Error(`timed out after ${this.r.timeoutMs} ms`), { code: 'UND_ERR_ABORTED' });
    if (this.headers) this.answered('timeout');
    else this.finish({ ok: false, error, timedOut: true });
    this.controller?.abort(error);
  }

  failed(error: unknown): void {
    this.finish({ ok: false, error, timedOut: false });
  }

  onRequestStart(c: Dispatcher.DispatchController): void {
    this.controller = c;
    if (this.settled) c.abort(new Error('the attempt already timed out'));
  }

  onResponseStart(_c: Dispatcher.DispatchController, code: number, responseHeaders: IncomingHttpHeaders): void {
    this.statusCode = code;
    this.headers = responseHeaders;
  }

  onResponseData(c: Dispatcher.DispatchController, chunk: Buffer): void {
    const limit = this.r.limit;
    this.total += chunk.length;
    if (this.kept < limit) {
      const piece = chunk.length <= limit - this.kept ? chunk : chunk.subarray(0, limit - this.kept);
      this.chunks.push(piece);
      this.kept += piece.length;
    }
    if (this.kept >= limit && this.total > limit) {
      this.answered(null); // enough to show; the rest is not read
      c.abort(new EnoughRead());
    }
  }

  onResponseEnd(): void {
    this.answered(null);
  }

  onResponseError(_c: Dispatcher.DispatchController, error: Error): void {
    if (this.headers) this.answered(this.timedOut ? 'timeout' : 'broken');
    else this.finish({ ok: false, error, timedOut: this.timedOut });
  }
}

export function postOnce(dispatcher: Dispatcher, r: PostRequest): Promise<PostResult> {
  return new Promise((resolve) => {
    const attempt = new PostAttempt(r, resolve);
    try {
      dispatcher.dispatch({ origin: r.origin, path: r.path, method: 'POST', headers: r.headers, body: r.body, headersTimeout: r.timeoutMs, bodyTimeout: r.timeoutMs }, attempt);
    } catch (error) {
      attempt.failed(error);
    }
  });
}
