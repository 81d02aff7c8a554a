/**
 * The body an HTTP webhook sends when its transform is off (SPEC §7.2.3):
 * `{"id", "timestamp", "service": {"id"}, "webhook": {"id", "name"},
 *   "request": {"method", "path", "query", "headers", "body"},
 *   "response": {"statusCode", "headers", "body"}}`.
 * `id` is the event id and `timestamp` the event time in ISO 8601 (UTC). Decision: when a
 * captured body was cut at the capture cap, `bodyTruncated: true` is added next to that body
 * (absent otherwise), so a receiver never mistakes a partial body for the whole one.
 */
import { bodyJsonText, type CapturedEvent, type CapturedHeaders, type CapturedBody } from '../../event.js';
import { incomingRequestSection, incomingRequestText, type IncomingRequestSection } from '../../log-entry.js';
import type { PayloadParts } from '../../logs/stored-log-entry.js';
import type { WebhookRef } from '../../webhook.js';

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
  return {
    id: event.id,
    timestamp: new Date(event.timestamp).toISOString(),
    service: { id: event.serviceId },
    webhook: { id: webhook.id, name: webhook.name },
    request: incomingRequestSection(event),
    response: responseSection(event),
  };
}

function responseSection({ response }: CapturedEvent): DefaultPayload['response'] {
  return {
    statusCode: response.statusCode,
    headers: response.headers,
    body: response.body === undefined ? null : response.body,
    ...(response.bodyTruncated ? { bodyTruncated: true as const } : {}),
  };
}

/** What every webhook's payload of one event shares, as JSON text (kept on the event under a non-enumerable symbol). */
interface EventPayloadTexts {
  /** `{"id":…,"timestamp":…,"service":{…},"webhook":` */
  head: string;
  /** `,"response":{…}}` */
  tail: string;
}
const EVENT_TEXTS = Symbol('defaultPayloadTexts');
type WithTexts = CapturedEvent & { [EVENT_TEXTS]?: EventPayloadTexts };

function eventPayloadTexts(event: CapturedEvent): EventPayloadTexts {
  const cached = (event as WithTexts)[EVENT_TEXTS];
  if (cached) return cached;
  const { response } = event;
  const json = bodyJsonText(response);
  const texts = {
    head: `{"id":${JSON.stringify(event.id)},"timestamp":${JSON.stringify(new Date(event.timestamp).toISOString())},"service":${JSON.stringify({ id: event.serviceId })},"webhook":`,
    // A body kept as its JSON text is complete (no `bodyTruncated`), and the text is what serializing its value would give.
    tail:
      json === undefined
        ? `,"response":${JSON.stringify(responseSection(event))}}`
        : `,"response":{"statusCode":${JSON.stringify(response.statusCode)},"headers":${JSON.stringify(response.headers)},"body":${json}}}`,
  };
  Object.defineProperty(event, EVENT_TEXTS, { value: texts });
  return texts;
}

/**
 * The payload's JSON around its request section, which is serialized once per event
 * (`incomingRequestText`): the body is `head + requestJson + tail`, and a log entry stores the
 * payload without repeating the section (logs/stored-log-entry.ts). Built member by member, in
 * `buildDefaultPayload`'s order, so the text is exactly `JSON.stringify(buildDefaultPayload(...))`;
 * only the webhook member differs between the webhooks of one event, so the rest is serialized
 * once per event.
 */
export function defaultPayloadParts(event: CapturedEvent, webhook: WebhookRef): PayloadParts {
  const texts = eventPayloadTexts(event);
  return {
    section: incomingRequestSection(event),
    head: `${texts.head}${JSON.stringify({ id: webhook.id, name: webhook.name })},"request":`,
    tail: texts.tail,
  };
}

/** The exact bytes to send (and sign): `JSON.stringify(buildDefaultPayload(...))`, the request part from the per-event cache. */
export function serializeDefaultPayload(event: CapturedEvent, webhook: WebhookRef): string {
  return payloadText(defaultPayloadParts(event, webhook));
}

export function payloadText(parts: PayloadParts): string {
  return `${parts.head}${incomingRequestText(parts.section)}${parts.tail}`;
}

/** `payloadText(parts)` as UTF-8 bytes: what is signed and sent (HMAC and socket then take the bytes as they are, no conversion each). */
export function payloadBytes(parts: PayloadParts): Buffer {
  // A new text each call, flattened and dropped here: `body` (the same text, for the log entry) stays unflattened.
  return Buffer.from(payloadText(parts), 'utf8');
}
