/**
 * Secrets never leave through webhooks, recordings or logs (SPEC §0): when a request or response
 * is captured, the values of `Authorization`, `Proxy-Authorization`, `Cookie`, `Set-Cookie` and
 * every configured secret header become `[redacted]`, and the `key` field of a `POST /keys`
 * answer is removed.
 */
import type { CapturedHeaders } from '../event.js';

export const REDACTED = '[redacted]';

/** Headers redacted whatever the configuration says (lower case). */
export const ALWAYS_REDACTED_HEADERS: readonly string[] = Object.freeze(['authorization', 'proxy-authorization', 'cookie', 'set-cookie']);

/** The lower-case names whose values are redacted: the four always, and the configured ones. */
function secretHeaderNames(extraSecretHeaders: readonly string[]): Set<string> {
  return new Set([...ALWAYS_REDACTED_HEADERS, ...extraSecretHeaders.map((h) => h.trim().toLowerCase())]);
}

type HeaderInput = Record<string, string | string[] | number | undefined | null>;

/**
 * Builds a redactor once (from the config) for use on every capture. The result has lower-case
 * names, drops undefined values, keeps arrays for repeated headers and replaces each secret
 * header's value by `[redacted]` (a repeated secret header becomes one `[redacted]`).
 */
export function createHeaderRedactor(extraSecretHeaders: readonly string[] = []): (headers: HeaderInput) => CapturedHeaders {
  const secret = secretHeaderNames(extraSecretHeaders);
  // On every teed request: a for-in over the object, no entry arrays, no copies of plain values.
  return (headers) => {
    const out: CapturedHeaders = {};
    for (const rawName in headers) {
      if (!Object.prototype.hasOwnProperty.call(headers, rawName)) continue;
      const value = headers[rawName];
      if (value === undefined || value === null) continue;
      const name = rawName.toLowerCase();
      if (name === '__proto__') continue;
      const text = secret.has(name) ? REDACTED : typeof value === 'string' ? value : Array.isArray(value) ? value.map(String) : String(value);
      const prev = out[name];
      if (prev === undefined) out[name] = text;
      // Two spellings of one name (possible in a plain object) are merged, not overwritten.
      else if (text !== REDACTED) out[name] = [...(Array.isArray(prev) ? prev : [prev]), ...(Array.isArray(text) ? text : [text])];
    }
    return out;
  };
}

/**
 * `JSON.stringify(createHeaderRedactor(extra)(headers))`, built as text: the tee writes it twice
 * for every teed request, and skipping the redacted copy and the serialisation of it cost about
 * a µs less per event. Names that are not plain lower-case tokens (to be merged, or escaped)
 * take the general path.
 */
export function createHeaderJsonRedactor(extraSecretHeaders: readonly string[] = []): (headers: HeaderInput) => string {
  const secret = secretHeaderNames(extraSecretHeaders);
  const redact = createHeaderRedactor(extraSecretHeaders);
  return (headers) => {
    let out = '';
    for (const name in headers) {
      if (!Object.prototype.hasOwnProperty.call(headers, name)) continue;
      const value = headers[name];
      if (value === undefined || value === null) continue;
      if (!PLAIN_NAME.test(name) || name === '__proto__') return JSON.stringify(redact(headers));
      out += `${out === '' ? '{"' : ',"'}${name}":${secret.has(name) ? REDACTED_JSON : jsonValue(value)}`;
    }
    return out === '' ? '{}' : `${out}}`;
  };
}

/** Lower-case token characters: nothing to fold, nothing JSON escapes. */
const PLAIN_NAME = /^[a-z0-9!#$%&'*+.^_`|~-]+$/;
const REDACTED_JSON = JSON.stringify(REDACTED);

function jsonValue(value: string | string[] | number): string {
  if (typeof value === 'string') return jsonString(value);
  if (Array.isArray(value)) return `[${value.map((v) => jsonString(String(v))).join(',')}]`;
  return jsonString(String(value));
}

/** What JSON.stringify escapes: quotes, backslashes, control characters, lone surrogates (any surrogate, to be simple). */
// eslint-disable-next-line no-control-regex -- control characters are exactly what JSON escapes
const NEEDS_ESCAPE = /["\\\u0000-\u001f\ud800-\udfff]/;

/** `JSON.stringify(text)`, without its work for the usual text that needs no escaping. */
export function jsonString(text: string): string {
  return NEEDS_ESCAPE.test(text) ? JSON.stringify(text) : `"${text}"`;
}

/** One-off form of `createHeaderRedactor(extra)(headers)`. */
export function redactHeaders(headers: HeaderInput, extraSecretHeaders: readonly string[] = []): CapturedHeaders {
  return createHeaderRedactor(extraSecretHeaders)(headers);
}

const KEY_FIELD_IN_TEXT = /("key"\s*:\s*)"(?:[^"\\]|\\.)*"/g;

/**
 * Removes the issued key from a captured `POST /keys` answer. A parsed object loses its `key`
 * field (a copy is returned; the input is not changed). Text (a body that was not parsed, e.g.
 * truncated) is parsed when possible, otherwise every `"key": "..."` value is replaced by
 * `"[redacted]"`. Anything else is returned as is.
 */
export function removeIssuedKey(body: unknown): unknown {
  if (body !== null && typeof body === 'object' && !Array.isArray(body)) {
    if (!Object.prototype.hasOwnProperty.call(body, 'key')) return body;
    const copy: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(body as Record<string, unknown>)) {
      if (k !== 'key') Object.defineProperty(copy, k, { value: v, enumerable: true, writable: true, configurable: true });
    }
    return copy;
  }
  if (typeof body === 'string') {
    try {
      const parsed = JSON.parse(body) as unknown;
      if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) return removeIssuedKey(parsed);
    } catch {
      // fall through to the textual scrub
    }
    return body.replace(KEY_FIELD_IN_TEXT, `$1"${REDACTED}"`).replace(/("key"\s*:\s*")[^"]*$/, `$1${REDACTED}`);
  }
  return body;
}
