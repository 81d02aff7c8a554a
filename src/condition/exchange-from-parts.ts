import type { Exchange } from './exchange.js';

export type HeaderInput = Readonly<Record<string, string | readonly string[]>> | ReadonlyArray<readonly [string, string]>;

/**
 * A request (and optionally its response) described with plain values. The facts an Exchange
 * holds as they are (caller, timing, sizes, TLS) are the Exchange's own members, optional here.
 */
export interface ExchangeParts extends Partial<Pick<Exchange, 'user' | 'authenticationType' | 'startTime' | 'responseTimeMs' | 'bytesSent' | 'bytesRead' | 'tls' | 'localIp' | 'host'>> {
  /** Default `GET`. */
  readonly method?: string;
  /** Default `/`. May carry a query string: `/c?a=1&b=2`. */
  readonly path?: string;
  /** The query string without `?`, or parameters to encode; joined after a query in `path`. */
  readonly query?: string | Readonly<Record<string, string | readonly string[]>>;
  /** Header names in any case; a name given twice (in different cases, or as pairs) keeps both values. */
  readonly headers?: HeaderInput;
  readonly status?: number;
  readonly statusMessage?: string;
  readonly responseHeaders?: HeaderInput;
  /** The parsed JSON request body. When the key is present, bson-request-* predicates can read it. */
  readonly body?: unknown;
  readonly secure?: boolean;
  /** Default `127.0.0.1`. */
  readonly remoteIp?: string;
  /** Default 8080. */
  readonly localPort?: number;
  /** Default `HTTP/1.1`. */
  readonly protocol?: string;
  readonly storedResponse?: string;
}

/**
 * Builds an Exchange from plain values: for tests, the `predicate test` CLI command and
 * webhook test sends, where no live request exists.
 */
export function exchangeFromParts(parts: ExchangeParts): Exchange {
  const rawPath = parts.path ?? '/';
  const questionMark = rawPath.indexOf('?');
  const path = questionMark === -1 ? rawPath : rawPath.slice(0, questionMark);
  const queries = [questionMark === -1 ? '' : rawPath.slice(questionMark + 1), encodeQuery(parts.query)].filter((q) => q.length > 0);
  const requestHeaders = headerMap(parts.headers);
  const responseHeaders = headerMap(parts.responseHeaders);
  const exchange: Exchange = {
    method: parts.method ?? 'GET',
    path: path.length === 0 ? '/' : path,
    rawQuery: queries.join('&'),
    requestHeader: (name) => requestHeaders.get(name)?.[0],
    requestHeaderValues: (name) => requestHeaders.get(name),
    secure: parts.secure ?? false,
    remoteIp: parts.remoteIp ?? '127.0.0.1',
    localPort: parts.localPort ?? 8080,
    protocol: parts.protocol ?? 'HTTP/1.1',
    ...(parts.localIp !== undefined && { localIp: parts.localIp }),
    ...(parts.host !== undefined && { host: parts.host }),
    ...(parts.status !== undefined && { statusCode: parts.status }),
    ...(parts.statusMessage !== undefined && { statusMessage: parts.statusMessage }),
    ...(parts.responseHeaders !== undefined && {
      responseHeader: (name: string) => responseHeaders.get(name)?.[0],
      responseHeaderValues: (name: string) => responseHeaders.get(name),
    }),
    ...('body' in parts && { requestBody: () => parts.body }),
    ...(parts.user !== undefined && { user: parts.user }),
    ...(parts.authenticationType !== undefined && { authenticationType: parts.authenticationType }),
    ...(parts.startTime !== undefined && { startTime: parts.startTime }),
    ...(parts.responseTimeMs !== undefined && { responseTimeMs: parts.responseTimeMs }),
    ...(parts.bytesSent !== undefined && { bytesSent: parts.bytesSent }),
    ...(parts.bytesRead !== undefined && { bytesRead: parts.bytesRead }),
    ...(parts.tls !== undefined && { tls: parts.tls }),
    ...(parts.storedResponse !== undefined && { storedResponse: () => parts.storedResponse }),
  };
  return exchange;
}

function headerMap(input: HeaderInput | undefined): ReadonlyMap<string, readonly string[]> {
  const map = new Map<string, string[]>();
  if (input === undefined) return map;
  const add = (name: string, value: string): void => {
    const key = name.toLowerCase();
    const values = map.get(key);
    if (values === undefined) map.set(key, [value]);
    else values.push(value);
  };
  if (Array.isArray(input)) {
    for (const [name, value] of input as ReadonlyArray<readonly [string, string]>) add(name, value);
  } else {
    for (const [name, value] of Object.entries(input as Readonly<Record<string, string | readonly string[]>>)) {
      if (typeof value === 'string') add(name, value);
      else for (const item of value) add(name, item);
    }
  }
  return map;
}

function encodeQuery(query: ExchangeParts['query']): string {
  if (query === undefined) return '';
  if (typeof query === 'string') return query.startsWith('?') ? query.slice(1) : query;
  const pairs: string[] = [];
  for (const [name, value] of Object.entries(query)) {
    for (const item of typeof value === 'string' ? [value] : value) pairs.push(`${encodeURIComponent(name)}=${encodeURIComponent(item)}`);
  }
  return pairs.join('&');
}
