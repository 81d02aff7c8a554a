import type { ServerResponse } from 'node:http';
import { STATUS_CODES } from 'node:http';
import { OutriggerError } from '../errors.js';
import type { Logger } from '../observability/logger.js';

/**
 * The single place where errors become HTTP answers: RESTHeart's error body shape
 * (`http status code`, `http status description`, `message`), never a stack trace. Unknown
 * errors are logged with the request id and answered 500 with nothing internal in the body.
 */
export function errorBody(status: number, message: string): string {
  return JSON.stringify({
    'http status code': status,
    'http status description': STATUS_CODES[status] ?? 'Error',
    message,
  });
}

export function sendError(res: ServerResponse, error: unknown, log?: Logger, requestId?: string): void {
  let status = 500;
  let message = 'internal error; the request id in the X-Request-Id header identifies it in the logs';
  let headers: Record<string, string> | undefined;
  if (error instanceof OutriggerError) {
    status = error.status;
    message = error.message;
    headers = error.headers;
  } else {
    log?.error({ err: error, requestId }, 'unexpected error while handling a request');
  }
  if (res.headersSent) {
    // Too late for an error body: cut the connection so the client sees a broken response, not a truncated success.
    res.destroy();
    return;
  }
  const body = errorBody(status, message);
  res.writeHead(status, {
    ...headers,
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    'cache-control': 'no-store',
  });
  res.end(body);
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
