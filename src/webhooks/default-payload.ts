/**
 * The body an HTTP webhook sends when its transform is off (SPEC §7.2.3):
 * `{"id", "timestamp", "service": {"id"}, "webhook": {"id", "name"},
 *   "request": {"method", "path", "query", "headers", "body"},
 *   "response": {"statusCode", "headers", "body"}}`.
 * `id` is the event id and `timestamp` the event time in ISO 8601 (UTC). Decision: when a
 * captured body was cut at the capture cap, `bodyTruncated: true` is added next to that body
 * (absent otherwise), so a receiver never mistakes a partial body for the whole one.
 */
import type { CapturedEvent, CapturedHeaders, CapturedBody } from './event.js';
import { incomingRequestSection, incomingRequestText, type IncomingRequestSection } from './log-entry.js';
import type { PayloadParts } from './stored-log-entry.js';

export interface WebhookRef {
  readonly id: string;
  readonly name: string;
}

export interface DefaultPayload {
  id: string;
  timestamp: string;
  service: { id: string };
  webhook: { id: string; name: string };
  /** The same shape as a log entry's incomingRequest section. */
  request: IncomingRequestSection;
  response: { statusCode: number; headers: CapturedHeaders; body: CapturedBody; bodyTruncated?: true };
}

export function buildDefaultPayload(event: CapturedEvent, webhook: WebhookRef): DefaultPayload {
  const { response } = event;
  return {
    id: event.id,
    timestamp: new Date(event.timestamp).toISOString(),
    service: { id: event.serviceId },
    webhook: { id: webhook.id, name: webhook.name },
    request: incomingRequestSection(event),
    response: {
      statusCode: response.statusCode,
      headers: response.headers,
      body: response.body === undefined ? null : response.body,
      ...(response.bodyTruncated ? { bodyTruncated: true as const } : {}),
    },
  };
}

const REQUEST_SLOT = ',"request":0,"response":';

/**
 * The payload's JSON around its request section, which is serialized once per event
 * (`incomingRequestText`): the body is `head + requestJson + tail`, and a log entry stores the
 * payload without repeating the section (stored-log-entry.ts).
 */
export function defaultPayloadParts(event: CapturedEvent, webhook: WebhookRef): PayloadParts {
  const payload = buildDefaultPayload(event, webhook);
  const text = JSON.stringify({ ...payload, request: 0 });
  // The slot's text cannot occur inside a JSON string (quotes are escaped there), and the members before it hold only strings.
  const at = text.indexOf(REQUEST_SLOT);
  if (at < 0) throw new Error('the default payload has no request slot');
  const from = at + ',"request":'.length;
  return { section: payload.request, head: text.slice(0, from), tail: text.slice(from + 1) };
}

/** The exact bytes to send (and sign): `JSON.stringify(buildDefaultPayload(...))`, the request part from the per-event cache. */
export function serializeDefaultPayload(event: CapturedEvent, webhook: WebhookRef): string {
  return payloadText(defaultPayloadParts(event, webhook));
}

export function payloadText(parts: PayloadParts): string {
  return `${parts.head}${incomingRequestText(parts.section)}${parts.tail}`;
}
