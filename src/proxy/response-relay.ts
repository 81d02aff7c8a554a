/**
 * The response relay: the upstream's answer to the client as undici hands it over, head and
 * chunks streamed with backpressure; an answer that must be rewritten or held for an observer is
 * kept whole instead (buffered-answer.ts sends it). Where the exchange stands and how it ends
 * early is upstream-exchange.ts's.
 */
import type { Dispatcher } from 'undici';
import { OutriggerError } from '../errors.js';
import type { AnswerHold, ResponseCapture } from './forward-request.js';
import { clientResponseHeaders } from './headers.js';
import { sendBuffered, type BufferedAnswer } from './buffered-answer.js';
import { UpstreamExchange } from './upstream-exchange.js';

type UpstreamHeaders = Record<string, string | string[] | undefined>;

export class ForwardHandler extends UpstreamExchange {
  /** A final (non-1xx) head came back: past this point a failure can only cut the connection. */
  private started = false;
  /** The head is written and waits for the body's first chunk to go out with it. */
  private headPending = false;
  /** Set when the answer is kept whole (rewritten, or held for an observer); null while it streams. */
  private buffered: (BufferedAnswer & { chunks: Buffer[] }) | null = null;
  /** The response cache's copy of the answer (ForwardRequest.capture), when its head asked for one. */
  private capturing: ResponseCapture | undefined = undefined;
  /** The capture answers the client itself: nothing of the upstream's answer is relayed. */
  private replaced = false;

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number, headers: UpstreamHeaders, statusMessage?: string): void {
    if (statusCode < 200) return; // 1xx informational: Node already answered Expect itself
    this.started = true;
    this.upstreamAnswered(statusCode);
    const f = this.f;
    let hold: AnswerHold | undefined;
    if (f.capture !== undefined) {
      const mode = f.capture.head(statusCode, headers);
      if (mode === 'replace') {
        this.capturing = f.capture;
        this.replaced = true;
        return;
      }
      if (mode === 'copy') this.capturing = f.capture;
      else if (mode !== 'none') hold = mode;
    }
    const rewriting = f.rewrite?.accepts(statusCode, headers) === true;
    const held = bothHolds(f.observer?.beforeAnswer?.(statusCode, headers), hold);
    if (rewriting || held) {
      this.buffered = { status: statusCode, headers, chunks: [], rewriting, held };
      return;
    }
    const res = f.res;
    const clientHeaders = clientResponseHeaders(headers, f.filterResponseHeader);
    f.observer?.onResponseHead(statusCode, clientHeaders);
    // In the object, not by setHeader beforehand: a response with no headers set yet takes
    // writeHead's fast path, which does not validate and copy every header again.
    clientHeaders['x-request-id'] = f.requestId;
    if (f.responseHeaders) Object.assign(clientHeaders, f.responseHeaders);
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

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.capturing !== undefined) {
      this.capturing.data(chunk);
      if (this.replaced) return;
    }
    if (this.buffered) {
      this.buffered.chunks.push(chunk);
      return;
    }
    this.f.observer?.onResponseData(chunk);
    this.headPending = false;
    if (!this.f.res.write(chunk)) this.pauseUntilDrain(controller);
  }

  onResponseEnd(): void {
    if (this.capturing !== undefined) {
      if (this.replaced) {
        this.settle();
        this.capturing.end();
        return;
      }
      // Before the client's answer ends: a reader waiting for this fill finds the entry stored.
      this.capturing.end();
    }
    if (this.buffered) {
      // The upstream exchange is over (its slot goes now), whether or not the answer waits for an observer.
      this.settle();
      const failure = sendBuffered(this.f, this.buffered);
      if (failure) this.failed(failure);
      return;
    }
    this.headPending = false;
    this.f.res.end();
    this.settle();
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    if (this.settled) return;
    if (this.started && !this.buffered && !this.replaced) {
      this.settle();
      // Headers are out: the only honest signal left is a broken connection.
      this.f.res.destroy(error);
      return;
    }
    const answer = this.cancelled instanceof OutriggerError ? this.cancelled : upstreamError(error, this.host.options.upstream.timeoutMs);
    // Before any byte of an answer: the breaker counts it, and an idempotent request may be sent again.
    if (!this.started && this.upstreamFailed(answer.status)) return;
    this.settle();
    this.failed(answer);
  }
}

function bothHolds(a: AnswerHold | undefined, b: AnswerHold | undefined): AnswerHold | undefined {
  if (a === undefined || b === undefined) return a ?? b;
  return (body) => Promise.all([a(body), b(body)]).then(() => undefined);
}

/** Maps undici's stable error codes to the answers SPEC §2 names. */
export function upstreamError(error: Error, timeoutMs: number): OutriggerError {
  const code = (error as { code?: string }).code ?? '';
  if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT')
    return new OutriggerError(504, 'UPSTREAM_TIMEOUT', `the upstream did not answer within ${timeoutMs} ms (upstream.timeoutMs)`);
  if (code === 'UND_ERR_ABORTED' || error.message === 'client closed the connection') return new OutriggerError(499, 'CLIENT_CLOSED', 'the client closed the connection');
  return new OutriggerError(502, 'UPSTREAM_UNREACHABLE', `the upstream could not be reached (${code || error.message}); check upstream.url and that the backend is running`);
}
