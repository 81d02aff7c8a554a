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
  return logEntryText(entry);
}

/**
 * The same text as UTF-8 bytes: the worker hands these to Redis. As a string, ioredis would join
 * it into the command text, and its pipeline would join every command of a commit into one more
 * string, copies that live on the JS heap until the whole commit is written; bytes live outside
 * it, so the collector neither copies nor counts them.
 */
export function serializeLogEntryBytes(entry: WebhookLogEntry): Buffer {
  // Built as one string (a rope), then encoded in one call: one Buffer.write per piece costs more in call overhead than the short-lived string.
  return Buffer.from(serializeLogEntry(entry), 'utf8');
}

/** `"name":` for each member name met (a handful: the entry's own), so the names are not serialized per entry. */
const MEMBER_PREFIX = new Map<string, string>();

function memberPrefix(name: string): string {
  let prefix = MEMBER_PREFIX.get(name);
  if (prefix === undefined) {
    prefix = `${JSON.stringify(name)}:`;
    if (MEMBER_PREFIX.size < 256) MEMBER_PREFIX.set(name, prefix);
  }
  return prefix;
}

/** Members in the entry's own order (as JSON.stringify), each value serialized alone; the detail section by `detailText`. */
function logEntryText(entry: WebhookLogEntry): string {
  let out = '';
  for (const key of Object.keys(entry) as Array<keyof WebhookLogEntry>) {
    const value = key === 'detail' ? detailText(entry.detail) : JSON.stringify(entry[key]);
    if (value === undefined) continue;
    out = `${out}${out === '' ? '{' : ','}${memberPrefix(key)}${value}`;
  }
  return out === '' ? '{}' : `${out}}`;
}

function detailText(detail: WebhookLogEntry['detail']): string {
  let out = '';
  for (const key of Object.keys(detail) as Array<keyof WebhookLogEntry['detail']>) {
    let value: string | undefined;
    if (key === 'incomingRequest') value = incomingRequestText(detail.incomingRequest);
    else if (key === 'outgoingRequest') value = outgoingText(detail.outgoingRequest!, detail.incomingRequest);
    else value = JSON.stringify(detail[key]);
    if (value === undefined) continue;
    out = `${out}${out === '' ? '{' : ','}${memberPrefix(key)}${value}`;
  }
  return out === '' ? '{}' : `${out}}`;
}

/** The outgoing section's text (undefined when it serializes to nothing). */
function outgoingText(outgoing: OutgoingRequestSection, incoming: IncomingRequestSection): string | undefined {
  const parts = (outgoing as WithParts)[PAYLOAD_PARTS];
  // Only when the body is still the payload of this entry's own request section (nobody replaced either).
  if (!parts || parts.section !== incoming || outgoing.body.length !== parts.head.length + incomingRequestText(incoming).length + parts.tail.length) {
    return JSON.stringify(outgoing);
  }
  const text = JSON.stringify({ method: outgoing.method, url: outgoing.url, headers: outgoing.headers });
  // `{...}` of at least method, url and headers: the payload goes last, before the closing brace.
  return `${text.slice(0, -1)},"payload":${parts.head}0${parts.tail}}`;
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
