/**
 * How a log entry is stored in Redis, and read back (issue 14). What the log API answers is the
 * entry of SPEC §7.3 exactly; what Redis holds is smaller:
 *
 * - The incoming-request section is serialized once per event and spliced in (../log-entry.ts).
 * - An HTTP delivery with the default payload sends a body that embeds that same section. Stored
 *   verbatim, `outgoingRequest.body` would hold it a second time, as a JSON string (every quote
 *   escaped): about half of a typical entry's bytes. Instead the stored outgoing section has a
 *   `payload` member in place of `body`: the payload itself as JSON (not a string), with
 *   `"request":0` where the request section was. Reading puts the entry's `incomingRequest` back
 *   in and serializes the payload again. The bytes are exactly those sent: the payload was
 *   `JSON.stringify` output, and parsing and serializing such text again gives the same text.
 *
 * Entries stored before this (with `body`) are read unchanged.
 */
import { incomingRequestText, type IncomingRequestSection, type OutgoingRequestSection, type WebhookLogEntry } from '../log-entry.js';

/** The default payload's JSON around its request section: `head + requestJson + tail` is the body sent. */
export interface PayloadParts {
  readonly section: IncomingRequestSection;
  readonly head: string;
  readonly tail: string;
}

/** On an outgoing section whose body is a default payload: that payload's parts (a non-enumerable symbol, so JSON and copies leave it out). */
const PAYLOAD_PARTS = Symbol('payloadParts');
type WithParts = OutgoingRequestSection & { [PAYLOAD_PARTS]?: PayloadParts };

/** Marks `outgoing.body` as the default payload built from `parts` (so it is stored without repeating the request). */
export function notePayloadParts(outgoing: OutgoingRequestSection, parts: PayloadParts): void {
  Object.defineProperty(outgoing, PAYLOAD_PARTS, { value: parts });
}

/**
 * The text stored for `entry`: `JSON.stringify(entry)`, except for the default payload as
 * described above, built member by member so that no search through the text is needed.
 */
export function serializeLogEntry(entry: WebhookLogEntry): string {
  const { detail } = entry;
  if (!detail?.incomingRequest) return JSON.stringify(entry);
  return logEntryPieces(entry).join('');
}

/**
 * The same text as UTF-8 bytes: the worker hands these to Redis. As a string, ioredis would join
 * it into the command text, and its pipeline would join every command of a commit into one more
 * string, copies that live on the JS heap until the whole commit is written; bytes live outside
 * it, so the collector neither copies nor counts them.
 */
export function serializeLogEntryBytes(entry: WebhookLogEntry): Buffer {
  // Joined, then encoded in one call: one Buffer.write per piece costs more in call overhead than the short-lived joined string.
  return Buffer.from(serializeLogEntry(entry), 'utf8');
}

function logEntryPieces(entry: WebhookLogEntry): string[] {
  const out: string[] = ['{'];
  for (const key of Object.keys(entry) as Array<keyof WebhookLogEntry>) {
    if (key === 'detail') {
      out.push(out.length > 1 ? ',"detail":' : '"detail":');
      detailPieces(entry.detail, out);
      continue;
    }
    const value = JSON.stringify(entry[key]);
    if (value === undefined) continue;
    out.push(`${out.length > 1 ? ',' : ''}${JSON.stringify(key)}:${value}`);
  }
  out.push('}');
  return out;
}

function detailPieces(detail: WebhookLogEntry['detail'], out: string[]): void {
  out.push('{');
  let first = true;
  for (const key of Object.keys(detail) as Array<keyof WebhookLogEntry['detail']>) {
    const name = `${first ? '' : ','}${JSON.stringify(key)}:`;
    if (key === 'incomingRequest') {
      out.push(name, incomingRequestText(detail.incomingRequest));
    } else if (key === 'outgoingRequest') {
      const before = out.length;
      out.push(name);
      if (!outgoingPieces(detail.outgoingRequest!, detail.incomingRequest, out)) out.length = before;
    } else {
      const value = JSON.stringify(detail[key]);
      if (value === undefined) continue;
      out.push(name, value);
    }
    first = false;
  }
  out.push('}');
}

/** Appends the outgoing section's text; false (nothing appended) when it serializes to nothing. */
function outgoingPieces(outgoing: OutgoingRequestSection, incoming: IncomingRequestSection, out: string[]): boolean {
  const parts = (outgoing as WithParts)[PAYLOAD_PARTS];
  // Only when the body is still the payload of this entry's own request section (nobody replaced either).
  if (!parts || parts.section !== incoming || outgoing.body.length !== parts.head.length + incomingRequestText(incoming).length + parts.tail.length) {
    const text = JSON.stringify(outgoing);
    if (text === undefined) return false;
    out.push(text);
    return true;
  }
  const text = JSON.stringify({ method: outgoing.method, url: outgoing.url, headers: outgoing.headers });
  // `{...}` of at least method, url and headers: the payload goes last, before the closing brace.
  out.push(text.slice(0, -1), ',"payload":', parts.head, '0', parts.tail, '}');
  return true;
}

/** An entry as stored (either form) to the entry of SPEC §7.3. Throws on text that is not JSON. */
export function parseStoredLogEntry(text: string): WebhookLogEntry {
  const entry = JSON.parse(text) as WebhookLogEntry;
  const outgoing = entry?.detail?.outgoingRequest as (OutgoingRequestSection & { payload?: Record<string, unknown> }) | undefined;
  if (outgoing && outgoing.body === undefined && typeof outgoing.payload === 'object' && outgoing.payload !== null) {
    const { payload } = outgoing;
    payload.request = entry.detail.incomingRequest;
    outgoing.body = JSON.stringify(payload);
    delete outgoing.payload;
  }
  return entry;
}
