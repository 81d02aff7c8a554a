import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { errorBody } from './respond.js';

export interface ServerTimeouts {
  headersTimeoutMs: number;
  requestTimeoutMs: number;
}

/**
 * What node:http reports before (or instead of) a request reaching the handler: a parse error,
 * headers too large, or a client too slow for the server's timeouts. Answered in the same error
 * body as everything else (Node's default is a bare status line), then the connection is closed.
 */
export function answerClientError(timeouts: ServerTimeouts) {
  return (error: Error & { code?: string }, socket: Duplex): void => {
    const response = (socket as { _httpMessage?: { headersSent?: boolean } })._httpMessage;
    if (error.code === 'ECONNRESET' || !socket.writable || response?.headersSent) {
      socket.destroy();
      return;
    }
    const [status, message] = describe(error, timeouts);
    const body = errorBody(status, message);
    socket.end(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nconnection: close\r\ncontent-type: application/json; charset=utf-8\r\n` +
        `cache-control: no-store\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
    // A client that does not read its answer must not keep the socket.
    setTimeout(() => socket.destroy(), 1000).unref();
  };
}

function describe(error: Error & { code?: string }, t: ServerTimeouts): [number, string] {
  switch (error.code) {
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return [
        408,
        `the request did not arrive in time: its headers must arrive within ${t.headersTimeoutMs} ms (listen.headersTimeoutMs) and the whole request within ${t.requestTimeoutMs} ms (listen.requestTimeoutMs)`,
      ];
    case 'HPE_HEADER_OVERFLOW':
      return [431, 'the request headers are too large'];
    default:
      return [400, `the request is not valid HTTP/1.1 (${error.code ?? 'parse error'})`];
  }
}
