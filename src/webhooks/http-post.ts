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
  headers: Record<string, string>;
  body: string;
  timeoutMs: number;
  /** Body bytes kept at most. */
  limit: number;
}

export type PostResult =
  | { ok: true; statusCode: number; headers: IncomingHttpHeaders; kept: Buffer; total: number; bodyError: 'timeout' | 'broken' | null }
  | { ok: false; error: unknown; timedOut: boolean };

class EnoughRead extends Error {}

export function postOnce(dispatcher: Dispatcher, r: PostRequest): Promise<PostResult> {
  return new Promise((resolve) => {
    let settled = false;
    let timedOut = false;
    let controller: Dispatcher.DispatchController | null = null;
    let statusCode = 0;
    let headers: IncomingHttpHeaders | null = null;
    const chunks: Buffer[] = [];
    let kept = 0;
    let total = 0;
    const finish = (result: PostResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(result);
    };
    const answered = (bodyError: 'timeout' | 'broken' | null) =>
      finish({ ok: true, statusCode, headers: headers!, kept: Buffer.concat(chunks, kept), total, bodyError });
    const timer = setTimeout(() => {
      timedOut = true;
      const error = Object.assign(new Error(`timed out after ${r.timeoutMs} ms`), { code: 'UND_ERR_ABORTED' });
      if (headers) answered('timeout');
      else finish({ ok: false, error, timedOut: true });
      controller?.abort(error);
    }, r.timeoutMs);
    try {
      dispatcher.dispatch(
        { origin: r.origin, path: r.path, method: 'POST', headers: r.headers, body: r.body, headersTimeout: r.timeoutMs, bodyTimeout: r.timeoutMs },
        {
          onRequestStart(c) {
            controller = c;
            if (settled) c.abort(new Error('the attempt already timed out'));
          },
          onResponseStart(_c, code, responseHeaders) {
            statusCode = code;
            headers = responseHeaders;
          },
          onResponseData(c, chunk) {
            total += chunk.length;
            if (kept < r.limit) {
              const piece = chunk.length <= r.limit - kept ? chunk : chunk.subarray(0, r.limit - kept);
              chunks.push(piece);
              kept += piece.length;
            }
            if (kept >= r.limit && total > r.limit) {
              answered(null); // enough to show; the rest is not read
              c.abort(new EnoughRead());
            }
          },
          onResponseEnd() {
            answered(null);
          },
          onResponseError(_c, error) {
            if (headers) answered(timedOut ? 'timeout' : 'broken');
            else finish({ ok: false, error, timedOut });
          },
        },
      );
    } catch (error) {
      finish({ ok: false, error, timedOut: false });
    }
  });
}
