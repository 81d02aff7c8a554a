/**
 * The captured request/response pair a webhook fires on (what the worker delivers, rebuilt from
 * the stream entry the proxy observer wrote: see stream-record.ts). Captured headers and bodies
 * are already redacted (`capture/redaction.ts`) and capped (`captureBody`).
 */

import { randomBytes } from 'node:crypto';
import { isCanonicalJson } from '../input-limits/canonical-json.js';
import { parseBoundedJson } from '../input-limits/json-depth.js';

/** Header values by lower-case name; repeated headers (Set-Cookie) keep every value. */
export type CapturedHeaders = Record<string, string | string[]>;

/**
 * A captured body: the parsed JSON value when the body was complete JSON, otherwise the text
 * (possibly cut at the cap), a placeholder for binary or compressed data, or null when there
 * was no body.
 */
export type CapturedBody = unknown;

export interface CapturedRequest {
  method: string;
  /** The path without the query string. */
  path: string;
  /** Query parameters by name (a repeated parameter keeps every value, in order). */
  query: Record<string, string | string[]>;
  headers: CapturedHeaders;
  body: CapturedBody;
  bodyTruncated: boolean;
  /** The body was JSON nested past the bound (input-limits): kept as its text, not parsed. */
  bodyTooDeep?: true;
  /** Set on a backend write a GraphQL mutation made (SPEC §6.4); other events have neither. */
  via?: 'graphql';
  /** The app (its uri) and the operation name of that mutation. */
  graphql?: GraphqlOrigin;
}

/** Where a backend write a GraphQL mutation made came from (SPEC §6.4). */
export interface GraphqlOrigin {
  app: string;
  operation: string | null;
}

export interface CapturedResponse {
  statusCode: number;
  headers: CapturedHeaders;
  body: CapturedBody;
  bodyTruncated: boolean;
  bodyTooDeep?: true;
}

export interface CapturedEvent {
  id: string;
  /** Epoch milliseconds when the response completed. */
  timestamp: number;
  serviceId: string;
  request: CapturedRequest;
  response: CapturedResponse;
  /** The originating request's trace context, a W3C traceparent (SPEC §9): each delivery attempt is a span in that trace. */
  traceparent?: string;
}

/** The default cap on each captured body (SPEC §7.2.6). */
export const DEFAULT_BODY_CAPTURE_BYTES = 64 * 1024;

const WHOLE_UTF8 = new TextDecoder('utf-8', { fatal: true });

function isJsonContentType(contentType: string | undefined): boolean {
  if (!contentType) return false;
  const type = contentType.split(';', 1)[0]!.trim().toLowerCase();
  return type === 'application/json' || type.endsWith('+json');
}

/**
 * Turns the first bytes of a body into a CapturedBody. `totalBytes` is the full body length
 * when known (the observer may stop buffering at the cap); `bytes` beyond `limit` are cut.
 * - no bytes → null;
 * - compressed (a Content-Encoding other than identity) → a placeholder string;
 * - complete JSON (by Content-Type) → the parsed value (a JSON body that does not parse stays text;
 *   one nested past MAX_JSON_DEPTH stays text with `tooDeep`, so nothing downstream recurses into it);
 *   with `keepJsonText` (the worker), a text already in JSON.stringify's form is returned as `json`
 *   instead, unparsed (`withCapturedBody`);
 * - valid UTF-8 → the text (cut at the cap, never mid-character);
 * - anything else → a placeholder string naming the size and content type.
 */
export function captureBody(bytes: Uint8Array, options: { contentType?: string; contentEncoding?: string; limit?: number; totalBytes?: number; keepJsonText?: boolean } = {}): CapturedBodyResult {
  const limit = options.limit ?? DEFAULT_BODY_CAPTURE_BYTES;
  const total = Math.max(options.totalBytes ?? bytes.length, bytes.length);
  if (total === 0) return { body: null, truncated: false };
  const truncated = total > limit;
  const encoding = options.contentEncoding?.trim().toLowerCase();
  if (encoding && encoding !== 'identity') {
    return { body: `[${total} bytes, content-encoding ${encoding}]`, truncated: false };
  }
  const kept = truncated ? bytes.subarray(0, Math.min(limit, bytes.length)) : bytes;
  let text: string;
  try {
    // `stream: true` leaves out a character cut in half by the cap instead of failing on it.
    // A whole body goes through one shared decoder (it keeps no state between whole decodes); a cut one needs its own.
    text = truncated ? new TextDecoder('utf-8', { fatal: true }).decode(kept, { stream: true }) : WHOLE_UTF8.decode(kept);
  } catch {
    return { body: `[${total} bytes of binary data${options.contentType ? `, ${options.contentType}` : ''}]`, truncated: false };
  }
  if (!truncated && isJsonContentType(options.contentType)) {
    if (options.keepJsonText && isCanonicalJson(text)) return { body: undefined, json: text, truncated: false };
    const parsed = parseBoundedJson(text);
    if (parsed.ok) return { body: parsed.value, truncated: false };
    return parsed.tooDeep ? { body: text, truncated: false, tooDeep: true } : { body: text, truncated: false };
  }
  return { body: text, truncated };
}

export interface CapturedBodyResult {
  body: CapturedBody;
  truncated: boolean;
  tooDeep?: true;
  /**
   * With `keepJsonText`, for a complete JSON body in JSON.stringify's own form: its text, which
   * stands in for the parsed value (then `body` is undefined): see `withCapturedBody`.
   */
  json?: string;
}

/**
 * The members a section (CapturedRequest, CapturedResponse) gets from a captured body. A body
 * captured as JSON text is parsed only when something reads `body` (a template, a test): a
 * default payload and a log entry embed the text as it is (`bodyJsonText`), since parsing and
 * serializing it again would give the same text. Most events are delivered that way, and a
 * parsed body is many small objects for the collector to move. Reading or assigning `body`
 * drops the text, so that a value changed in place is never shadowed by the text it came from.
 */
export function withCapturedBody<T extends object>(fields: T, captured: CapturedBodyResult): T & { body: CapturedBody; bodyTruncated: boolean; bodyTooDeep?: true } {
  const section = fields as T & { body: CapturedBody; bodyTruncated: boolean; bodyTooDeep?: true };
  if (captured.json === undefined) {
    section.body = captured.body;
    section.bodyTruncated = captured.truncated;
    if (captured.tooDeep) section.bodyTooDeep = true;
  } else {
    defineJsonBody(section, captured.json);
    section.bodyTruncated = false;
  }
  return section;
}

const BODY_JSON = Symbol('bodyJsonText');

/** Gives `section` a `body` member parsed from `json` on first read (the text kept until then). */
export function defineJsonBody(section: object, json: string): void {
  Object.defineProperty(section, BODY_JSON, { value: json, writable: true, configurable: true });
  Object.defineProperty(section, 'body', {
    enumerable: true,
    configurable: true,
    get(this: Record<string | symbol, unknown>) {
      const value = JSON.parse(json) as unknown;
      settle(this, value);
      return value;
    },
    set(this: Record<string | symbol, unknown>, value: unknown) {
      settle(this, value);
    },
  });
}

function settle(section: Record<string | symbol, unknown>, value: unknown): void {
  section[BODY_JSON] = undefined;
  Object.defineProperty(section, 'body', { value, writable: true, enumerable: true, configurable: true });
}

/** The JSON text of `section.body` while it is still kept as text (see `withCapturedBody`); undefined otherwise. */
export function bodyJsonText(section: object): string | undefined {
  return (section as { [BODY_JSON]?: string })[BODY_JSON];
}

/** A raw query string as names with one value or a list (a repeated parameter keeps every value, in order). */
export function queryObject(rawQuery: string): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  if (rawQuery === '') return out;
  for (const [name, value] of new URLSearchParams(rawQuery)) {
    if (name === '__proto__') continue;
    const prev = out[name];
    out[name] = prev === undefined ? value : Array.isArray(prev) ? [...prev, value] : [prev, value];
  }
  return out;
}

const PROCESS_TAG = randomBytes(6).toString('hex');
let counter = 0;

/**
 * A unique event id without a random draw per request: time (base36 ms), a per-process random
 * tag and a counter, e.g. `evt_mh3k2a1b-4f0c1e2d3a4b-1f`. Never contains `.` or `:` (it is
 * part of Standard Webhooks ids and of Redis key names).
 */
export function newEventId(now = Date.now()): string {
  counter = (counter + 1) % 0x7fffffff;
  // Thousands of events share a millisecond's prefix: built once per millisecond.
  if (now !== prefixTime) {
    prefixTime = now;
    prefix = `evt_${now.toString(36)}-${PROCESS_TAG}-`;
  }
  return prefix + counter.toString(36);
}
let prefixTime = -1;
let prefix = '';
