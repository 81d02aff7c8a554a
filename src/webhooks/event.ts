/**
 * The captured request/response pair a webhook fires on (what the worker delivers, rebuilt from
 * the stream entry the proxy observer wrote: see stream-record.ts). Captured headers and bodies
 * are already redacted (`redaction.ts`) and capped (`captureBody`).
 */

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
 * - valid UTF-8 → the text (cut at the cap, never mid-character);
 * - anything else → a placeholder string naming the size and content type.
 */
export function captureBody(
  bytes: Uint8Array,
  options: { contentType?: string; contentEncoding?: string; limit?: number; totalBytes?: number } = {},
): { body: CapturedBody; truncated: boolean; tooDeep?: true } {
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
    const parsed = parseBoundedJson(text);
    if (parsed.ok) return { body: parsed.value, truncated: false };
    return parsed.tooDeep ? { body: text, truncated: false, tooDeep: true } : { body: text, truncated: false };
  }
  return { body: text, truncated };
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
