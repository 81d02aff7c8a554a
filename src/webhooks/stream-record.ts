/**
 * What travels from the observer (proxy) to the workers through the Redis stream, and what a
 * recording keeps.
 *
 * Version 2 (written since the tee was made cheaper on the request path) is built for the proxy
 * to write cheaply and for the worker to finish the job:
 * - field `m`: a small JSON (`StreamMeta`) with the event id and time, method, path, the raw
 *   query string, the already redacted header sets, the status, the ids of the matching
 *   webhooks and the due skipped entries;
 * - fields `q` and `r`: the request and response body bytes exactly as captured (cut at the
 *   capture cap), when there was a body. The worker turns them into CapturedBody values with
 *   `captureBody` (JSON parsing, UTF-8 checks, placeholders), the work the proxy used to do.
 *   Bodies whose capture needs a decision on the request path (redacted OAuth bodies, the
 *   issued key removed from a `POST /keys` answer, compressed bodies) travel already captured,
 *   inside `m`.
 * Nothing secret reaches Redis: headers are redacted and secret bodies handled before `m` is
 * built.
 *
 * Version 3 (written by the proxy now) is version 2 in one field, `e`: the meta JSON (`v: 3`, each
 * body whose bytes travel also giving `k`, how many were kept), a newline, then the kept request
 * body bytes and the kept response body bytes. One value per entry is what makes the tee cheap
 * to write: a batch of entries is one script argument each, which cost the proxy (ioredis) and
 * Redis (the script's arguments, the XADD's fields) measurably less than four.
 *
 * Version 4 (written by the proxy now for a batch of two or more events) holds several events in
 * one entry: a first `e` field whose value is `{"v":4,"n":<events>}`, then one `e` field per
 * event holding its version 3 value. Every stream entry costs Redis and the worker the same
 * bookkeeping whatever it holds (its id, its node, its read, its acknowledgement), so an entry
 * per batch instead of per event took most of Redis's work per teed event away
 * (bench/RESULTS.md). Fields, not one value framing them all: the values go to Redis as they
 * are, with no copy to join them. A worker that reads only versions 1 to 3 sees a newer version
 * in the first field and leaves the entry for an upgraded worker (`isNewerEntry`). A lone event
 * is still written as version 3.
 *
 * Versions 1 (one field, `d`, holding a StreamRecord as JSON), 2 and 3 are still read, so
 * entries written by an older proxy are delivered by a newer worker.
 */
import type { EpochDate } from '../util/epoch-date.js';
import { captureBody, queryObject, withCapturedBody, type CapturedBody, type CapturedBodyResult, type CapturedEvent, type CapturedHeaders, type GraphqlOrigin } from './event.js';

export interface MatchedWebhook {
  id: string;
  reason: string;
}

/** At most one `skipped` entry per webhook in this time: the observer gates per replica, the worker across replicas. */
export const SKIPPED_LOG_INTERVAL_MS = 10_000;

export interface SkippedWebhook {
  id: string;
  reason: string;
  /** Logged whatever the 10 s gate says (a recording was active). */
  always: boolean;
}

export interface StreamRecord {
  v: 1;
  event: CapturedEvent;
  /** Webhooks whose condition matched: each gets a delivery. */
  matched: MatchedWebhook[];
  /** Webhooks whose condition did not match and that get a `skipped` log entry. */
  skipped: SkippedWebhook[];
}

/** One request captured by a recording (SPEC §7.4). */
export interface RecordedRequest {
  eventId: string;
  timestamp: EpochDate;
  method: string;
  path: string;
  query: Record<string, string | string[]>;
  headers: CapturedEvent['request']['headers'];
  body: unknown;
  bodyTruncated?: true;
  response: { statusCode: number };
  /** False when the client went away before the response was complete (no webhook fires then). */
  completed: boolean;
  /** Each webhook's evaluation of this request. */
  webhooks: Array<{ id: string; name: string; enabled: boolean; matched: boolean }>;
  /** A backend write a GraphQL mutation made (SPEC §6.4). */
  via?: 'graphql';
  graphql?: GraphqlOrigin;
}

/** The field of a version 1 entry. */
export const STREAM_FIELD = 'd';
/** The fields of a version 2 entry. */
export const META_FIELD = 'm';
export const REQUEST_BODY_FIELD = 'q';
export const RESPONSE_BODY_FIELD = 'r';
/** The field of a version 3 entry. */
export const ENTRY_FIELD = 'e';
/** Ends the meta JSON in a version 3 value (JSON text never holds a raw newline). */
const NEWLINE = 0x0a;

/**
 * A body in a version 2 or 3 entry: absent when there was none; `{n, ct}` when its bytes are in
 * the entry's body field (`n`: the body's full length, `ct`: its Content-Type; version 3 adds
 * `k`, how many bytes of it the value holds); `{b, tr}` when it was captured by the proxy.
 */
export type StreamBody = { n: number; ct?: string; k?: number } | { b: CapturedBody; tr?: 1 };

/** The `m` field of a version 2 entry, and the head of a version 3 one. */
export interface StreamMeta {
  v: 2 | 3;
  id: string;
  /** Epoch ms when the response completed. */
  t: number;
  s: string;
  m: string;
  p: string;
  /** The raw query string (parsed by the worker), or the parsed query. */
  q: string | Record<string, string | string[]>;
  /** Redacted request headers. */
  qh: CapturedHeaders;
  qb?: StreamBody;
  sc: number;
  /** Redacted response headers. */
  rh: CapturedHeaders;
  rb?: StreamBody;
  /** Ids of the webhooks whose condition matched. */
  ma: string[];
  sk?: SkippedWebhook[];
  /** The request's traceparent (SPEC §9); absent in entries of an older proxy (the deliveries then start a trace). */
  tp?: string;
  /**
   * `graphql` for a backend write a GraphQL mutation made, with `gq` its app and operation
   * (SPEC §6.4). Optional members: a worker from before them decodes the entry and leaves them out.
   */
  vi?: 'graphql';
  gq?: { a: string; o: string | null };
}

/** The field/value pairs of one stream entry, in XADD order. */
export type StreamFields = Array<string | Buffer>;

/** The reason logged for a matching webhook (built by the worker from the event). */
export function matchedReason(method: string, path: string, statusCode: number): string {
  return `the condition matched ${method} ${path} (response ${statusCode})`;
}

/** Version 1: one JSON field. No longer written by the proxy; kept so that tests and tools can write old entries. */
export function encodeStreamRecord(record: StreamRecord): string {
  return JSON.stringify(record);
}

/** A version 2 entry from a fully captured event (bodies travel captured, inside `m`). */
export function encodeCapturedEvent(event: CapturedEvent, matched: readonly string[], skipped: readonly SkippedWebhook[], rawQuery?: string): StreamFields {
  const { request, response } = event;
  const meta: StreamMeta = {
    v: 2,
    id: event.id,
    t: event.timestamp,
    s: event.serviceId,
    m: request.method,
    p: request.path,
    q: rawQuery ?? request.query,
    qh: request.headers,
    ...(request.body === null && !request.bodyTruncated ? {} : { qb: capturedBodyRef(request.body, request.bodyTruncated) }),
    sc: response.statusCode,
    rh: response.headers,
    ...(response.body === null && !response.bodyTruncated ? {} : { rb: capturedBodyRef(response.body, response.bodyTruncated) }),
    ma: [...matched],
    ...(skipped.length > 0 ? { sk: [...skipped] } : {}),
    ...(event.traceparent ? { tp: event.traceparent } : {}),
    ...(request.via === 'graphql' ? { vi: 'graphql' as const } : {}),
    ...(request.graphql ? { gq: { a: request.graphql.app, o: request.graphql.operation } } : {}),
  };
  return [META_FIELD, JSON.stringify(meta)];
}

/**
 * A version 3 entry's value: `meta` (a StreamMeta with `v: 3`, as JSON) and the kept bytes of
 * the bodies it says travel raw, request first, in one copy (a captured chunk may be a view
 * into a socket buffer, which a queued event must not pin).
 */
export function encodeEntry(meta: string, bodies: readonly Buffer[]): Buffer {
  const metaBytes = Buffer.byteLength(meta);
  let size = metaBytes + 1;
  for (const body of bodies) size += body.length;
  const entry = Buffer.allocUnsafe(size);
  entry.write(meta, 0, metaBytes, 'utf8');
  entry[metaBytes] = NEWLINE;
  let offset = metaBytes + 1;
  for (const body of bodies) offset += body.copy(entry, offset);
  return entry;
}

export function capturedBodyRef(body: CapturedBody, truncated: boolean): StreamBody {
  return truncated ? { b: body, tr: 1 } : { b: body };
}

/** The newest entry version this code reads. */
export const STREAM_VERSION = 4;

/**
 * Groups version 3 values into entries: runs of up to `maxEvents` values and about `maxBytes`
 * become one version 4 entry each; a run of one stays a version 3 entry.
 */
export function packEntries(values: ReadonlyArray<string | Buffer>, maxEvents: number, maxBytes: number): StreamFields[] {
  if (maxEvents <= 1 || values.length <= 1) return values.map((value) => [ENTRY_FIELD, value]);
  const entries: StreamFields[] = [];
  let from = 0;
  let bytes = 0;
  for (let i = 0; i < values.length; i++) {
    const value = values[i]!;
    const size = typeof value === 'string' ? Buffer.byteLength(value) : value.length;
    if (i > from && (i - from >= maxEvents || bytes + size > maxBytes)) {
      entries.push(batchFields(values, from, i));
      from = i;
      bytes = 0;
    }
    bytes += size;
  }
  entries.push(batchFields(values, from, values.length));
  return entries;
}

function batchFields(values: ReadonlyArray<string | Buffer>, from: number, to: number): StreamFields {
  if (to - from === 1) return [ENTRY_FIELD, values[from]!];
  const fields: StreamFields = [ENTRY_FIELD, `{"v":4,"n":${to - from}}`];
  for (let i = from; i < to; i++) fields.push(ENTRY_FIELD, values[i]!);
  return fields;
}

/** How many events an entry's fields hold (1 for any entry that is not version 4): for tools and tests that count events. */
export function eventsInEntry(fields: ReadonlyArray<string | Buffer> | null | undefined): number {
  return batchValues(fields)?.length ?? 1;
}

/**
 * The events of one entry: one record for versions 1 to 3, one per event field for version 4
 * (values that do not decode are left out); null for anything that is not an entry of ours.
 */
export function decodeStreamEntry(fields: ReadonlyArray<string | Buffer> | null | undefined): StreamRecord[] | null {
  const values = batchValues(fields);
  if (values === undefined) {
    const record = decodeStreamRecord(fields);
    return record === null ? null : [record];
  }
  if (values === null) return null;
  const records: StreamRecord[] = [];
  for (const value of values) {
    const record = decodeVersion3(value);
    if (record) records.push(record);
  }
  return records;
}

const BATCH_HEAD = /^\{"v":4,"n":(\d{1,6})\}$/;

/** The event values of a version 4 entry; undefined when it is not one, null when it is a broken one. */
function batchValues(fields: ReadonlyArray<string | Buffer> | null | undefined): Array<string | Buffer> | null | undefined {
  if (!fields || fields.length < 4 || String(fields[0]) !== ENTRY_FIELD) return undefined;
  const head = fields[1]!;
  if (head.length > 32) return undefined;
  const count = BATCH_HEAD.exec(String(head))?.[1];
  if (count === undefined) return String(head).startsWith('{"v":4,') ? null : undefined;
  if (fields.length !== 2 + 2 * Number(count)) return null;
  const values: Array<string | Buffer> = [];
  for (let i = 2; i < fields.length; i += 2) {
    if (String(fields[i]) !== ENTRY_FIELD) return null;
    values.push(fields[i + 1]!);
  }
  return values;
}

/**
 * True when an entry that `decodeStreamRecord` did not read is a proxy's, of a version newer
 * than this code knows (a rolling upgrade that reached a proxy before this worker). Such an
 * entry is left pending for a worker that reads it, not acknowledged as not ours.
 */
export function isNewerEntry(fields: ReadonlyArray<string | Buffer> | null | undefined): boolean {
  if (!fields) return false;
  for (let i = 0; i + 1 < fields.length; i += 2) {
    const name = String(fields[i]);
    if (name !== ENTRY_FIELD && name !== META_FIELD) continue;
    const value = fields[i + 1]!;
    const text = typeof value === 'string' ? value : value.toString('utf8', 0, Math.min(value.length, 64));
    const version = /^\{"v":(\d+)[,}]/.exec(text)?.[1];
    return version !== undefined && Number(version) > STREAM_VERSION;
  }
  return false;
}

/**
 * Null for anything that is not a record of ours (a hand-written entry, a trimmed one). Values
 * may be Buffers (the worker reads entries as bytes, so a binary body reaches `captureBody`
 * unchanged) or strings.
 */
export function decodeStreamRecord(fields: ReadonlyArray<string | Buffer> | null | undefined): StreamRecord | null {
  if (!fields) return null;
  let meta: string | Buffer | undefined;
  let requestBody: string | Buffer | undefined;
  let responseBody: string | Buffer | undefined;
  for (let i = 0; i + 1 < fields.length; i += 2) {
    const name = String(fields[i]);
    const value = fields[i + 1]!;
    if (name === STREAM_FIELD) return decodeVersion1(value);
    if (name === ENTRY_FIELD) return decodeVersion3(value);
    if (name === META_FIELD) meta = value;
    else if (name === REQUEST_BODY_FIELD) requestBody = value;
    else if (name === RESPONSE_BODY_FIELD) responseBody = value;
  }
  if (meta === undefined) return null;
  let parsed: StreamMeta;
  try {
    parsed = JSON.parse(String(meta)) as StreamMeta;
  } catch {
    return null;
  }
  if (!parsed || parsed.v !== 2) return null;
  return recordFromMeta(parsed, requestBody, responseBody);
}

function decodeVersion3(value: string | Buffer): StreamRecord | null {
  const entry = typeof value === 'string' ? Buffer.from(value, 'utf8') : value;
  const end = entry.indexOf(NEWLINE);
  if (end < 0) return null;
  let parsed: StreamMeta;
  try {
    parsed = JSON.parse(entry.toString('utf8', 0, end)) as StreamMeta;
  } catch {
    return null;
  }
  if (!parsed || parsed.v !== 3) return null;
  let offset = end + 1;
  const kept = (ref: StreamBody | undefined): Buffer | undefined | null => {
    if (!ref || typeof ref !== 'object' || !('n' in ref)) return undefined;
    const k = ref.k ?? 0;
    if (!Number.isSafeInteger(k) || k < 0 || offset + k > entry.length) return null;
    offset += k;
    return entry.subarray(offset - k, offset);
  };
  const requestBody = kept(parsed.qb);
  const responseBody = kept(parsed.rb);
  if (requestBody === null || responseBody === null) return null;
  return recordFromMeta(parsed, requestBody, responseBody);
}

function recordFromMeta(parsed: StreamMeta, requestBody: string | Buffer | undefined, responseBody: string | Buffer | undefined): StreamRecord | null {
  if (typeof parsed.id !== 'string' || !Array.isArray(parsed.ma)) return null;
  const request = streamBody(parsed.qb, requestBody);
  const response = streamBody(parsed.rb, responseBody);
  const query = typeof parsed.q === 'string' ? queryObject(parsed.q) : (parsed.q ?? {});
  return {
    v: 1,
    event: {
      id: parsed.id,
      timestamp: parsed.t,
      serviceId: parsed.s,
      ...(typeof parsed.tp === 'string' ? { traceparent: parsed.tp } : {}),
      request: withCapturedBody({ method: parsed.m, path: parsed.p, query, headers: parsed.qh ?? {}, ...origin(parsed) }, request),
      response: withCapturedBody({ statusCode: parsed.sc, headers: parsed.rh ?? {} }, response),
    },
    matched: parsed.ma.map((id) => ({ id, reason: matchedReason(parsed.m, parsed.p, parsed.sc) })),
    skipped: Array.isArray(parsed.sk) ? parsed.sk : [],
  };
}

/** `via` and `graphql` of a backend write a GraphQL mutation made; nothing for any other event. */
function origin(parsed: StreamMeta): { via?: 'graphql'; graphql?: GraphqlOrigin } {
  if (parsed.vi !== 'graphql') return {};
  const gq = parsed.gq;
  const graphql = gq && typeof gq.a === 'string' ? { app: gq.a, operation: typeof gq.o === 'string' ? gq.o : null } : undefined;
  return { via: 'graphql', ...(graphql ? { graphql } : {}) };
}

function decodeVersion1(value: string | Buffer): StreamRecord | null {
  try {
    const parsed = JSON.parse(String(value)) as StreamRecord;
    if (parsed && parsed.v === 1 && parsed.event && Array.isArray(parsed.matched) && Array.isArray(parsed.skipped)) return parsed;
  } catch {
    // not ours
  }
  return null;
}

function streamBody(ref: StreamBody | undefined, bytes: string | Buffer | undefined): CapturedBodyResult {
  if (ref === undefined || ref === null) return { body: null, truncated: false };
  if (!('n' in ref) || typeof ref.n !== 'number') return { body: 'b' in ref && ref.b !== undefined ? ref.b : null, truncated: 'tr' in ref && ref.tr === 1 };
  const kept = bytes === undefined ? Buffer.alloc(0) : typeof bytes === 'string' ? Buffer.from(bytes, 'utf8') : bytes;
  // The proxy kept at most the capture cap: the body was cut when it was longer than what was kept.
  return captureBody(kept, { contentType: ref.ct, limit: kept.length, totalBytes: ref.n, keepJsonText: true });
}
