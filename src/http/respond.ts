import type { IncomingMessage, ServerResponse } from 'node:http';
import { STATUS_CODES } from 'node:http';
import { OAuthProtocolError, OutriggerError } from '../errors.js';
import type { Logger } from 'pino';
import { redisRefusal } from '../store/redis-errors.js';
import { afterUnreadBody, discardUnread, LINGER_AFTER_ANSWER_BYTES } from './linger.js';

/**
 * The single place where errors become HTTP answers: status, message, code and headers are
 * decided here, once; the body is RESTHeart's error shape (`http status code`,
 * `http status description`, `message`) unless the route names another `ErrorFormat` (GraphQL's
 * `{"errors": [...]}` on `/graphql/<uri>`, SPEC §15), never a stack trace. Redis being
 * unreachable is 503 from any route; other unknown errors are logged with the request id and
 * answered 500 with nothing internal in the body.
 */
export function errorBody(status: number, message: string): string {
  return JSON.stringify({
    'http status code': status,
    'http status description': STATUS_CODES[status] ?? 'Error',
    message,
  });
}

/** An error as decided above, for a route's own body shape. */
export interface ErrorAnswer {
  readonly status: number;
  /** The OutriggerError's code; `SERVICE_UNAVAILABLE` for a Redis refusal, `INTERNAL_SERVER_ERROR` for an unknown error. */
  readonly code: string;
  readonly message: string;
}

/**
 * A route's error body (OwnRoute.errorFormat): the body and its Content-Type, chosen from the
 * request (its Accept). Only the body differs: status and headers are sendError's.
 */
export type ErrorFormat = (answer: ErrorAnswer, req: IncomingMessage | undefined) => FormattedError;

export interface FormattedError {
  readonly body: string;
  readonly contentType: string;
}

/** Where the error happened: the request's ids (for the log line of an unknown error) and its route's body shape. */
export interface ErrorContext {
  readonly requestId?: string;
  readonly traceId?: string | undefined;
  readonly format?: ErrorFormat | undefined;
}

const JSON_UTF8 = 'application/json; charset=utf-8';

export function sendError(res: ServerResponse, error: unknown, log?: Logger, context?: ErrorContext): void {
  let status = 500;
  let message = 'internal error; the request id in the X-Request-Id header identifies it in the logs';
  let code = 'INTERNAL_SERVER_ERROR';
  let headers: Record<string, string> | undefined;
  if (error instanceof OutriggerError) {
    status = error.status;
    message = error.message;
    code = error.code;
    headers = error.headers;
  } else {
    // Whatever route needed Redis: the client can retry; nothing is wrong with its request.
    const refusal = redisRefusal(error);
    if (refusal !== null) {
      status = 503;
      message = refusal.message;
      code = 'SERVICE_UNAVAILABLE';
      headers = { 'retry-after': String(refusal.retryAfterSeconds) };
    } else {
      log?.error({ err: error, requestId: context?.requestId, ...(context?.traceId ? { trace_id: context.traceId } : {}) }, 'unexpected error while handling a request');
    }
  }
  if (res.headersSent) {
    // Too late for an error body: cut the connection so the client sees a broken response, not a truncated success.
    res.destroy();
    return;
  }
  const format = context?.format;
  const body: FormattedError =
    error instanceof OAuthProtocolError
      ? { body: JSON.stringify({ error: error.oauthError, error_description: message }), contentType: JSON_UTF8 }
      : format !== undefined
        ? format({ status, code, message }, res.req)
        : { body: errorBody(status, message), contentType: JSON_UTF8 };
  // Too slow: the client is cut off at once (a refusal of the body itself).
  if (status === 408) writeError(res, status, headers, body);
  else if (status === 413) answerThenDiscard(res, headers, body);
  else afterUnreadBody(res.req, () => writeError(res, status, headers, body));
}

/**
 * A 413 is sent at once, whole, and the connection is closed only after the rest of the upload
 * is read and thrown away (bounded: linger.ts), as nginx's lingering close does. Closed with the
 * upload unread, the kernel answers the client's next bytes with a reset, and a reset also
 * discards the 413 the client has not read yet: it would see EPIPE instead of the reason.
 */
function answerThenDiscard(res: ServerResponse, headers: Record<string, string> | undefined, body: FormattedError): void {
  const req = res.req;
  if (!req || req.complete) return writeError(res, 413, headers, body);
  writeError(res, 413, headers, body, false);
  discardUnread(req, LINGER_AFTER_ANSWER_BYTES, () => res.end());
}

function writeError(res: ServerResponse, status: number, headers: Record<string, string> | undefined, { body, contentType }: FormattedError, end = true): void {
  if (res.destroyed || res.headersSent) return; // the client left while its body was read
  res.writeHead(status, {
    // Still unread (past the linger bounds): Node would keep the connection to read the rest,
    // which a slow or hostile client could trickle forever.
    ...(res.req && !res.req.complete ? { connection: 'close' } : undefined),
    ...headers,
    'content-type': contentType,
    'content-length': Buffer.byteLength(body),
    'cache-control': 'no-store',
  });
  if (end) res.end(body);
  else res.write(body);
}

export function sendJson(res: ServerResponse, status: number, value: unknown, headers: Record<string, string | number> = {}): void {
  const body = value === undefined ? '' : JSON.stringify(value);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    'cache-control': 'no-store',
    ...headers,
  });
  res.end(body);
}

export function sendNoContent(res: ServerResponse): void {
  res.writeHead(204, { 'cache-control': 'no-store' });
  res.end();
}

/**
 * An own route's answer the client stops reading is cut after `sendTimeoutMs` (listen.sendTimeoutMs)
 * without progress, as the forwarder cuts a proxied one (issue 53): a 9 MB GraphQL answer or an
 * /mcp one held by a client that never reads otherwise stays in memory until the client leaves.
 * The handler calls the returned function once per own-route request: the one place every own
 * route passes.
 *
 * The socket's idle timer does the watching. Node refreshes it on every read and write, so it
 * costs nothing while bytes move, and before it reports a timeout it checks libuv's write queue:
 * a large write the kernel is still taking, slowly, counts as progress (net.js `_onTimeout`), so
 * a slow reader that keeps reading is not cut. Idle with nothing to send (a route still working, a
 * quiet subscription) is left alone; idle with bytes waiting is a client that stopped reading.
 */
export function sendWatch(sendTimeoutMs: number): (res: ServerResponse) => void {
  function check(this: ServerResponse): void {
    const socket = this.socket;
    if (!socket || socket.destroyed) return;
    // The whole connection: an answer queued behind this one (pipelining) has no socket of its own.
    if (this.writableLength > 0) socket.destroy();
    // Nothing to send yet: watch on. A timer that has fired is not brought back by later writes.
    else if (!this.writableEnded) socket.setTimeout(sendTimeoutMs);
  }
  return (res) => {
    res.setTimeout(sendTimeoutMs, check);
  };
}
