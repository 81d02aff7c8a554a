/**
 * Reads collections from a RESTHeart-style backend over HTTP:
 * `GET {baseUrl}{collectionPath}?filter=&sort=&page=&pagesize=` through an undici keep-alive pool.
 * Failures become `OutriggerError`s with stable codes: `BACKEND_UNAVAILABLE` (no connection, reset,
 * timeout) and `BACKEND_ERROR` (a non-2xx answer; the message names the status, never the body).
 */
import { STATUS_CODES } from 'node:http';
import { Pool, type Dispatcher } from 'undici';
import { OutriggerError } from '../../errors.js';
import type { BackendGuard } from '../../proxy/guard/backend-guard.js';
import { guardedCall } from '../../proxy/guard/guarded-call.js';
import { readCapped } from '../../util/read-capped.js';
import { collectionPathOf } from './collection-path.js';
import type { BackendRead, BackendReader, RequestContext } from '../types.js';
import type { BackendReadCache, RawAnswer } from './read-cache.js';

export interface HttpBackendReaderOptions {
  /** Backend origin with an optional path prefix, e.g. `http://127.0.0.1:8081` or `http://rh:8080/api`. */
  readonly baseUrl: string;
  /** Where a collection lives under baseUrl; `{db}` and `{collection}` are substituted (default `/{db}/{collection}`). */
  readonly collectionPath?: string;
  /** An undici dispatcher to share (e.g. the proxy's Agent); by default the reader makes its own keep-alive Pool. */
  readonly dispatcher?: Dispatcher;
  /**
   * Headers for the backend per request, e.g. the caller's identity (SPEC §3.4) or service
   * credentials. Default: `ctx.backendHeaders`.
   */
  readonly headersFor?: (ctx: RequestContext) => Record<string, string>;
  /** Connections of the reader's own pool (default 32). */
  readonly connections?: number;
  /** Largest response body accepted (default 32 MiB). */
  readonly maxResponseBytes?: number;
  /**
   * A 404 on a collection read means "no such collection yet" and reads as empty, as MongoDB (and
   * RESTHeart's GraphQL) treat a missing collection (default true).
   */
  readonly notFoundAsEmpty?: boolean;
  /** The response cache (SPEC §12): a query's reads a `cache.rules` rule covers are answered from it (read-cache.ts). */
  readonly cache?: BackendReadCache;
  /** The backend origin's guard (SPEC §13): reads wait in the pass-through's line and count for its breaker. */
  readonly guard?: BackendGuard;
}

export interface HttpBackendReader extends BackendReader {
  /** Closes the reader's own pool (a dispatcher passed in is left open). */
  close(): Promise<void>;
}

/**
 * URL-encodes a query parameter value, leaving the characters a query may carry literally
 * (`: , $ @ /`) readable and short: batched filters stay well under URL length limits.
 */
export function encodeQueryComponent(value: string): string {
  // ASCII (filters almost always are) escaped from a table: a quarter of the time of
  // encodeURIComponent with its escapes put back (issue 39); anything else the long way.
  let out = '';
  let start = 0;
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c >= 0x80) return encodeURIComponent(value).replace(/%(3A|2C|24|40|2F)/g, (m) => KEPT_ESCAPES[m] as string);
    if (KEPT[c]) continue;
    out += value.slice(start, i) + (ESCAPED[c] as string);
    start = i + 1;
  }
  return start === 0 ? value : out + value.slice(start);
}

const KEPT_ESCAPES: Readonly<Record<string, string>> = { '%3A': ':', '%2C': ',', '%24': '$', '%40': '@', '%2F': '/' };
/** `%XX` of each ASCII character. */
const ESCAPED: string[] = Array.from({ length: 128 }, (_, c) => `%${c.toString(16).toUpperCase().padStart(2, '0')}`);

/** Length of `encodeQueryComponent(value)` without building it (batches size their filters with it). */
export function encodedQueryLength(value: string): number {
  let n = 0;
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c < 0x80) n += KEPT[c] ? 1 : 3;
    else if (c < 0x800) n += 6;
    else if (c >= 0xd800 && c <= 0xdbff) {
      n += 12; // a surrogate pair: 4 UTF-8 bytes
      i++;
    } else n += 9;
  }
  return n;
}

/** ASCII characters encodeQueryComponent leaves as they are. */
const KEPT: boolean[] = Array.from({ length: 128 }, (_, c) => /[A-Za-z0-9\-_.!~*'():,$@/]/.test(String.fromCharCode(c)));

/**
 * The query string of a read, as the reader sends it: `filter=&sort=&page=&pagesize=`, or
 * `avars=&page=&pagesize=` for a declared aggregation. The read policy decides on the same string.
 */
export function readQueryString(read: BackendRead): string {
  // Asked up to three times per read (the ACL decision, the replay key, the request); a read is
  // never changed once made (a read with the caller's filter added is a new object).
  let text = queryStrings.get(read);
  if (text === undefined) {
    text = buildQueryString(read);
    queryStrings.set(read, text);
  }
  return text;
}

const queryStrings = new WeakMap<BackendRead, string>();

function buildQueryString(read: BackendRead): string {
  const params: string[] = [];
  const aggregation = read.aggregation;
  if (aggregation) params.push(`avars=${encodeQueryComponent(JSON.stringify(aggregation.avars))}`);
  else if (read.filter && Object.keys(read.filter).length > 0) params.push(`filter=${encodeQueryComponent(JSON.stringify(read.filter))}`);
  if (!aggregation && read.sort && Object.keys(read.sort).length > 0) params.push(`sort=${encodeQueryComponent(JSON.stringify(read.sort))}`);
  params.push(`page=${read.page}`, `pagesize=${read.pagesize}`);
  return params.join('&');
}

export function createHttpBackendReader(opts: HttpBackendReaderOptions): HttpBackendReader {
  const base = new URL(opts.baseUrl);
  if (base.protocol !== 'http:' && base.protocol !== 'https:') {
    throw new Error(`graphql backend url must be http(s), got ${opts.baseUrl}`);
  }
  const origin = base.origin;
  const prefix = base.pathname.replace(/\/+$/, '');
  const template = opts.collectionPath ?? '/{db}/{collection}';
  const maxBytes = opts.maxResponseBytes ?? 32 * 1024 * 1024;
  const notFoundAsEmpty = opts.notFoundAsEmpty ?? true;
  const ownPool = opts.dispatcher ? undefined : new Pool(origin, { connections: opts.connections ?? 32 });
  const dispatcher: Dispatcher = opts.dispatcher ?? (ownPool as Pool);
  const headersFor = opts.headersFor ?? ((ctx: RequestContext) => ({ ...(ctx.backendHeaders ?? {}) }));

  /** One read's answer from the backend (the status, its headers, the body read whole within maxResponseBytes). */
  async function fetchAnswer(read: BackendRead, path: string, headers: Record<string, string>, ctx: RequestContext, what: string): Promise<RawAnswer> {
    // SPEC §9: each read carries the request's trace, in a client span of its own when recorded
    // (the query string stays out of the span: filters are the caller's data).
    const aggregation = read.aggregation;
    const span = ctx.trace?.child(`GET ${read.db}/${read.collection}`, 'client', () => ({
      'http.request.method': 'GET',
      'server.address': base.hostname,
      'url.full': origin + path.slice(0, path.indexOf('?')),
      ...(aggregation ? { 'outrigger.graphql.aggregation': aggregation.name } : {}),
    }));
    const sent = span ? { ...headers, traceparent: span.traceparent } : headers;
    let response: Dispatcher.ResponseData;
    try {
      const send = () => dispatcher.request({ origin, path, method: 'GET', headers: sent, signal: ctx.signal });
      response = opts.guard ? await guardedCall(opts.guard, send, { signal: ctx.signal, priority: ctx.priority }) : await send();
      span?.end(response.statusCode);
    } catch (error) {
      span?.fail((error as { code?: string }).code ?? 'error');
      span?.end();
      if (ctx.signal?.aborted || error instanceof OutriggerError) throw error;
      throw withCause(new OutriggerError(502, 'BACKEND_UNAVAILABLE', `the backend could not be reached to read ${what}; try again later`), error);
    }
    const status = response.statusCode;
    if (status < 200 || status > 299) {
      await response.body.dump().catch(() => undefined);
      return { status, headers: response.headers, body: EMPTY };
    }
    try {
      return { status, headers: response.headers, body: await readBytes(response.body, maxBytes) };
    } catch (error) {
      if (ctx.signal?.aborted) throw error;
      if (error instanceof OutriggerError) throw error;
      throw withCause(new OutriggerError(502, 'BACKEND_UNAVAILABLE', `the backend connection failed while reading ${what}`), error);
    }
  }

  return {
    async find(read: BackendRead, ctx: RequestContext, cached = false): Promise<unknown[]> {
      const restPath = collectionPathOf(template, read.db, read.collection);
      const aggregation = read.aggregation;
      const headers: Record<string, string> = { accept: 'application/json', ...headersFor(ctx) };
      const what = aggregation ? `the aggregation ${aggregation.name} of ${read.db}/${read.collection}` : `${read.db}/${read.collection}`;
      const collectionTarget = aggregation ? `${restPath}/_aggrs/${encodeURIComponent(aggregation.name)}` : restPath;
      const query = readQueryString(read);
      // The projection is sent, but is no part of the read's query string (readQueryString: what the policy decides on).
      const path = `${prefix}${collectionTarget}?${query}${read.projection === undefined ? '' : `&keys=${encodeQueryComponent(read.projection.id)}`}`;
      const fetch = () => fetchAnswer(read, path, headers, ctx, what);
      const answer = cached && opts.cache ? await opts.cache.read({ restPath: collectionTarget, query, target: path, headers }, ctx, fetch) : await fetch();
      return documentsOf(answer, what, notFoundAsEmpty && aggregation === undefined);
    },
    async close(): Promise<void> {
      await ownPool?.close();
    },
  };
}

const EMPTY = Buffer.alloc(0);

/**
 * The documents of a read's answer: a JSON array, or a HAL body's `_embedded`. A 404 reads as no
 * documents when `notFoundAsEmpty` (never for a declared aggregation: a missing one means the
 * app's save did not reach the backend); any other non-2xx is a BACKEND_ERROR naming the status.
 */
function documentsOf(answer: RawAnswer, what: string, notFoundAsEmpty: boolean): unknown[] {
  const status = answer.status;
  if (status < 200 || status > 299) {
    if (status === 404 && notFoundAsEmpty) return [];
    throw new OutriggerError(502, 'BACKEND_ERROR', `the backend answered ${status} ${STATUS_CODES[status] ?? ''} to a read of ${what}`.trimEnd());
  }
  let body: unknown;
  try {
    body = JSON.parse(answer.body.toString('utf8'));
  } catch {
    throw new OutriggerError(502, 'BACKEND_ERROR', `the backend answered a read of ${what} with a body that is not JSON`);
  }
  if (Array.isArray(body)) return body;
  // HAL representation (rep=hal): documents under _embedded.
  if (body && typeof body === 'object' && '_embedded' in body) {
    const embedded = (body as { _embedded: unknown })._embedded;
    if (Array.isArray(embedded)) return embedded;
    const docs = embedded && typeof embedded === 'object' ? (embedded as Record<string, unknown>)['rh:doc'] : undefined;
    return Array.isArray(docs) ? docs : [];
  }
  throw new OutriggerError(502, 'BACKEND_ERROR', `the backend answered a read of ${what} with JSON that is not an array of documents`);
}

async function readBytes(body: Dispatcher.ResponseData['body'], maxBytes: number): Promise<Buffer> {
  const read = await readCapped(body, maxBytes);
  if (read.ok) return read.bytes;
  body.destroy();
  throw new OutriggerError(502, 'BACKEND_ERROR', `the backend answered with more than ${maxBytes} bytes for one page`);
}

function withCause(error: OutriggerError, cause: unknown): OutriggerError {
  Object.defineProperty(error, 'cause', { value: cause, enumerable: false, configurable: true });
  return error;
}
