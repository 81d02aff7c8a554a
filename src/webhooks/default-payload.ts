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
import { incomingRequestSection, type IncomingRequestSection } from './log-entry.js';

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

/** The exact bytes to send (and sign). */
export function serializeDefaultPayload(event: CapturedEvent, webhook: WebhookRef): string {
  return JSON.stringify(buildDefaultPayload(event, webhook));
}
