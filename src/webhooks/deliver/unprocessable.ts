/**
 * The way out for an event the worker cannot process (a body its serializers cannot handle, a
 * bug): instead of a write retried while holding a delivery slot, the delivery ends as a
 * `failed` log entry naming the reason, and the stream entry is acknowledged like any other.
 * The entry built here is safe by construction: bodies that would not serialize are replaced
 * by a placeholder and flagged, so writing it cannot fail the same way again.
 */
import { MAX_JSON_DEPTH } from '../../input-limits/limits.js';
import { valueNestingDepth } from '../../input-limits/json-depth.js';
import type { CapturedEvent } from '../event.js';
import { incomingRequestSection, unsentLogEntry, type IncomingRequestSection, type WebhookLogEntry } from '../log-entry.js';
import type { WebhookDocument } from '../webhook.js';
import type { Delivery } from './delivery.js';

/** Thrown when building a write failed (not Redis): retrying cannot help, the event is finalized. */
export class UnprocessableEvent extends Error {
  constructor(readonly reason: unknown) {
    super(`the worker could not process this event: ${reason instanceof Error ? reason.message : String(reason)}`);
    this.name = 'UnprocessableEvent';
  }
}

export function unprocessableReason(error: unknown): string {
  if (error instanceof UnprocessableEvent) return error.message;
  return `the worker could not process this event: ${error instanceof Error ? error.message : String(error)}`;
}

/** The request section without anything that could make the entry fail to serialize again. */
function safeIncomingRequest(event: CapturedEvent): IncomingRequestSection {
  const section = incomingRequestSection(event);
  const body = section.body;
  let safe = valueNestingDepth(body, MAX_JSON_DEPTH) <= MAX_JSON_DEPTH;
  if (safe) {
    try {
      JSON.stringify(section);
    } catch {
      safe = false;
    }
  }
  if (safe) return section;
  return { ...section, body: `[body not kept: nested more than ${MAX_JSON_DEPTH} levels deep or not serializable]`, bodyTooDeep: true };
}

export function unprocessableLogEntry({ event, condition, attempt }: Pick<Delivery, 'event' | 'condition' | 'attempt'>, webhook: WebhookDocument, error: unknown, now = Date.now()): WebhookLogEntry {
  const reason = unprocessableReason(error);
  // The event may be malformed (that is why it is here): its method and path as text, whatever they are.
  const request = { method: String(event.request?.method), path: String(event.request?.path) };
  return unsentLogEntry(event, webhook, now, { status: 'failed', attempt, request, error: reason, detail: { incomingRequest: safeIncomingRequest(event), condition, error: reason } });
}
