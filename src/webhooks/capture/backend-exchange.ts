/**
 * A backend request Outrigger made for a client (a GraphQL mutation's write, SPEC §6.4) as an
 * exchange the webhook conditions read: method, the path and query a client of Outrigger would
 * use, the JSON body (for `bson-request-*`), the backend's answer, the caller.
 */
import { exchangeFromParts, type Exchange } from '../../condition/index.js';
import type { GraphqlOrigin } from '../event.js';

/**
 * A request Outrigger made to the backend on a client's behalf (a GraphQL mutation's write, SPEC
 * §6.4), described with plain values: an exchange for the webhooks and recordings as if the
 * client had sent it through the proxy, with `via` saying where it came from.
 */
export interface BackendExchangeParts {
  method: string;
  /** The path as a client of Outrigger would address it. */
  path: string;
  /** The raw query string. */
  query: string;
  /** The client's request headers (redacted here) with the write's Content-Type. */
  requestHeaders: Record<string, string | string[] | undefined>;
  /** The JSON body sent, or undefined. */
  requestBody: unknown;
  /** 0 when the backend did not answer. */
  status: number;
  responseHeaders: Record<string, string>;
  responseBody: string;
  user?: { id: string; roles: readonly string[] };
  authenticationType?: string;
  remoteIp: string;
  secure: boolean;
  via: 'graphql';
  graphql: GraphqlOrigin;
  /** The originating request's traceparent (SPEC §9). */
  traceparent?: string;
}

/** The exchange conditions are evaluated on; `requestText` is the body as sent. */
export function backendExchange(x: BackendExchangeParts, requestText: string): Exchange {
  return exchangeFromParts({
    method: x.method,
    path: x.path,
    query: x.query,
    headers: Object.fromEntries(Object.entries(x.requestHeaders).filter((e): e is [string, string | string[]] => e[1] !== undefined)),
    ...(x.requestBody !== undefined ? { body: x.requestBody } : {}),
    status: x.status,
    responseHeaders: x.responseHeaders,
    storedResponse: x.responseBody,
    remoteIp: x.remoteIp,
    secure: x.secure,
    ...(x.user ? { user: { id: x.user.id, _id: x.user.id, roles: [...x.user.roles] } } : {}),
    ...(x.authenticationType ? { authenticationType: x.authenticationType } : {}),
    bytesRead: Buffer.byteLength(requestText),
    bytesSent: Buffer.byteLength(x.responseBody),
  });
}
