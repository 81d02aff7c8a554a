/**
 * One webhook log entry (SPEC §7.3): one per delivery attempt, plus `skipped` entries for
 * evaluations that did not match. Everything in it is already redacted (captured headers and
 * bodies come from the observer's redaction; outgoing and target-response headers are
 * redacted when the entry is built).
 */
import { randomBytes } from 'node:crypto';
import type { CapturedBody, CapturedEvent, CapturedHeaders, CapturedRequest } from './event.js';
import type { EpochDate } from './webhook-document.js';

export type LogStatus = 'success' | 'failed' | 'skipped';
export const LOG_STATUSES: readonly LogStatus[] = ['success', 'failed', 'skipped'];

/** The captured request as logs and default payloads show it: `bodyTruncated` only when true. */
export type IncomingRequestSection = Omit<CapturedRequest, 'bodyTruncated'> & { bodyTruncated?: true };

export interface TransformationSection {
  /** The variables the template was rendered with. */
  input: unknown;
  /** The rendered text (for e-mail: `{subject, body}`), null when rendering failed. */
  output: unknown;
  error: string | null;
}

export interface OutgoingRequestSection {
  method: string;
  url: string;
  headers: Record<string, string | string[]>;
  body: string;
}

export interface TargetResponseSection {
  statusCode: number;
  headers: CapturedHeaders;
  body: CapturedBody;
  bodyTruncated?: true;
}

export interface WebhookLogEntry {
  _id: string;
  webhookId: string;
  eventId: string;
  timestamp: EpochDate;
  status: LogStatus;
  /** 1 for the first delivery attempt; 0 for skipped entries. */
  attempt: number;
  /** When the next attempt is due (set when a retry was scheduled). */
  nextAttemptAt?: EpochDate;
  durationMs: number;
  /** Set on the answer of a test send (which is never stored). */
  test?: true;
  summary: {
    method: string;
    path: string;
    /** The URL, or `mailto:` with the recipients. */
    target: string;
    statusCode: number | null;
    error: string | null;
  };
  detail: {
    incomingRequest: IncomingRequestSection;
    condition: { matched: boolean; reason: string };
    transformation?: TransformationSection;
    outgoingRequest?: OutgoingRequestSection;
    response?: TargetResponseSection;
    error?: string;
  };
}

/** Sortable by time (base36 ms, fixed width), unique by 8 random bytes. */
export function newLogId(now = Date.now()): string {
  return `${now.toString(36).padStart(9, '0')}-${randomBytes(8).toString('hex')}`;
}

export function incomingRequestSection(event: CapturedEvent): IncomingRequestSection {
  const { request } = event;
  return {
    method: request.method,
    path: request.path,
    query: request.query,
    headers: request.headers,
    body: request.body === undefined ? null : request.body,
    ...(request.bodyTruncated ? { bodyTruncated: true as const } : {}),
  };
}

/** The target a webhook sends to, as shown in log summaries. */
export function webhookTarget(webhook: { type: 'http'; url: string } | { type: 'email'; email: { to: string[]; cc?: string[] } }): string {
  if (webhook.type === 'http') return webhook.url;
  return `mailto:${[...webhook.email.to, ...(webhook.email.cc ?? [])].join(',')}`;
}

/** A `skipped` entry: the condition did not match this request. */
export function skippedLogEntry(
  event: CapturedEvent,
  webhook: { _id: string; type: 'http'; url: string } | { _id: string; type: 'email'; email: { to: string[]; cc?: string[] } },
  reason: string,
  now = Date.now(),
): WebhookLogEntry {
  return {
    _id: newLogId(now),
    webhookId: webhook._id,
    eventId: event.id,
    timestamp: { $date: now },
    status: 'skipped',
    attempt: 0,
    durationMs: 0,
    summary: { method: event.request.method, path: event.request.path, target: webhookTarget(webhook), statusCode: null, error: null },
    detail: { incomingRequest: incomingRequestSection(event), condition: { matched: false, reason } },
  };
}
