/**
 * The request body on its way to the upstream: whether there is one, its Content-Length, and
 * request buffering (SPEC §2, upstream.bufferBodyBytes): a body up to the bound is read in full
 * before the request asks for an upstream slot.
 */
import type { IncomingMessage } from 'node:http';
import { OutriggerError } from '../errors.js';

/** What the forwarder was handed as the body: none (the request itself streams), bytes read already, or a tapped stream. */
export type ForwardBody = Buffer | AsyncIterable<Buffer> | undefined;

/** The request a body is read for (the forwarder's handler). */
export interface BufferedBodyTarget {
  /** Set when the client left (or the body failed) meanwhile: take no slot. */
  readonly cancelled: Error | null;
  /** The whole body, read within the bound. */
  bodyBuffered(chunks: Buffer[], size: number): void;
  /** Past the bound: what was read first, then the rest, streamed. */
  bodyStreamsOn(body: AsyncIterable<Buffer>): void;
  /** The body could not be read (stalled, broken). */
  refuse(error: OutriggerError): void;
}

export function hasRequestBody(req: IncomingMessage): boolean {
  const length = req.headers['content-length'];
  return (length !== undefined && length !== '0') || req.headers['transfer-encoding'] !== undefined;
}

export function replaceContentLength(headers: string[], length: number): void {
  for (let i = 0; i < headers.length; i += 2) {
    if (headers[i]!.toLowerCase() === 'content-length') headers[i + 1] = String(length);
    if (headers[i]!.toLowerCase() === 'transfer-encoding') headers[i + 1] = '';
  }
}

/**
 * Reads a body announced (or, chunked, found) to be at most `bound` bytes before the request asks
 * for an upstream slot, then hands it over as one Buffer. A chunked body that passes the bound
 * streams on: what was read first, then the rest. While it is read, the same body idle timer as
 * the streaming path bounds it (408), and listen.requestTimeoutMs (node:http's own timer) still
 * ends the whole request. A client that leaves meanwhile costs nothing more: the handler is
 * cancelled (`clientClosed`) and no slot was ever taken.
 */
export function bufferBody(req: IncomingMessage, body: ForwardBody, bound: number, idleMs: number, handler: BufferedBodyTarget): void {
  const chunks: Buffer[] = [];
  let size = 0;
  let done = false;
  const finish = () => {
    done = true;
    req.setTimeout(0);
    req.off('data', onData).off('end', onEnd).off('error', failed);
  };
  const ready = (rest: AsyncIterator<Buffer> | null) => {
    finish();
    if (handler.cancelled) return;
    if (rest === null) handler.bodyBuffered(chunks, size);
    else handler.bodyStreamsOn(resume(chunks, rest));
  };
  const stalled = () => {
    if (done) return;
    finish();
    // Answered with Connection: close; whatever the client still sends is read and dropped.
    req.resume();
    handler.refuse(new OutriggerError(408, 'REQUEST_BODY_TIMEOUT', `the request body stalled: nothing arrived for ${idleMs} ms (listen.bodyIdleTimeoutMs)`, { connection: 'close' }));
  };
  function failed(error: unknown): void {
    if (done) return;
    finish();
    handler.refuse(new OutriggerError(400, 'BAD_REQUEST', `the request body could not be read (${(error as Error).message})`, { connection: 'close' }));
  }
  // The plain case, kept free of promises: one 'data' listener and one 'end'.
  function onData(chunk: Buffer): void {
    chunks.push(chunk);
    size += chunk.length;
    if (size > bound) {
      req.off('data', onData).pause();
      ready((req as AsyncIterable<Buffer>)[Symbol.asyncIterator]());
    }
  }
  function onEnd(): void {
    if (!done) ready(null);
  }
  // A client that leaves meanwhile is seen by the handler (clientClosed, from the response's
  // 'close'); `ready` then finds it cancelled and takes no slot.
  req.setTimeout(idleMs, stalled);
  if (body === undefined) {
    req.on('data', onData).once('end', onEnd).once('error', failed);
    return;
  }
  // Already wrapped (an observer taps the chunks): read through the wrapper.
  const iterator = (body as AsyncIterable<Buffer>)[Symbol.asyncIterator]();
  const next = (): void => {
    iterator.next().then((step) => {
      if (done) return;
      if (step.done) return ready(null);
      chunks.push(step.value);
      size += step.value.length;
      if (size > bound) return ready(iterator);
      next();
    }, failed);
  };
  next();
}

async function* resume(first: Buffer[], rest: AsyncIterator<Buffer>): AsyncIterable<Buffer> {
  yield* first;
  for (let step = await rest.next(); !step.done; step = await rest.next()) yield step.value;
}

/** The exact length of a body read in full (a chunked request had none; Transfer-Encoding is already stripped). */
export function setContentLength(headers: string[], length: number): void {
  for (let i = 0; i < headers.length; i += 2) {
    if (headers[i]!.toLowerCase() === 'content-length') {
      headers[i + 1] = String(length);
      return;
    }
  }
  headers.push('content-length', String(length));
}
