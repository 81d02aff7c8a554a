/**
 * One webhook log entry (SPEC §7.3): one per delivery attempt, plus `skipped` entries for
 * evaluations that did not match. Everything in it is already redacted (captured headers and
 * bodies come from the observer's redaction; outgoing and target-response headers are
 * redacted when the entry is built).
 */
import { randomBytes } from 'node:crypto';
import { bodyJsonText, defineJsonBody, type CapturedBody, type CapturedEvent, type CapturedHeaders, type CapturedRequest } from './event.js';
import type { EpochDate } from '../util/epoch-date.js';

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
  /** The originating request's traceparent (SPEC §9): resend and recover deliver in that trace. */
  traceparent?: string;
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

const PROCESS_TAG = randomBytes(4).toString('hex');
let logCounter = 0;

/**
 * Sortable by time (base36 ms, fixed width), then 16 hex digits unique per process (a random tag
 * drawn once and a counter), so no random draw per entry.
 */
export function newLogId(now = Date.now()): string {
  logCounter = (logCounter + 1) % 0x100000000;
  return `${now.toString(36).padStart(9, '0')}-${PROCESS_TAG}${logCounter.toString(16).padStart(8, '0')}`;
}

/**
 * One section object per event: every delivery of the event shares it, and its JSON (below).
 * Both are kept on the objects under non-enumerable symbols (which JSON, spreads and
 * comparisons leave out), not in WeakMaps: a worker made several entries per delivery, and
 * every WeakMap entry is an ephemeron the GC has to trace.
 */
const SECTION = Symbol('incomingRequestSection');
const SECTION_TEXT = Symbol('incomingRequestText');
type WithSection = CapturedEvent & { [SECTION]?: IncomingRequestSection };
type WithText = IncomingRequestSection & { [SECTION_TEXT]?: string };

export function incomingRequestSection(event: CapturedEvent): IncomingRequestSection {
  const cached = (event as WithSection)[SECTION];
  if (cached) return cached;
  const { request } = event;
  const json = bodyJsonText(request);
  let section: IncomingRequestSection;
  if (json !== undefined) {
    // A complete JSON body kept as its text: never truncated nor too deep, so `body` is the last member.
    section = { method: request.method, path: request.path, query: request.query, headers: request.headers, ...originOf(request) } as IncomingRequestSection;
    defineJsonBody(section, json);
    Object.defineProperty(event, SECTION, { value: section });
    return section;
  }
  section = {
    method: request.method,
    path: request.path,
    query: request.query,
    headers: request.headers,
    ...originOf(request),
    body: request.body === undefined ? null : request.body,
    ...(request.bodyTruncated ? { bodyTruncated: true as const } : {}),
    ...(request.bodyTooDeep ? { bodyTooDeep: true as const } : {}),
  };
  Object.defineProperty(event, SECTION, { value: section });
  return section;
}

/** `via` and `graphql` when the request was a backend write of a GraphQL mutation (SPEC §6.4). */
function originOf(request: Pick<IncomingRequestSection, 'via' | 'graphql'>): Pick<IncomingRequestSection, 'via' | 'graphql'> {
  return request.via === undefined ? {} : { via: request.via, ...(request.graphql ? { graphql: request.graphql } : {}) };
}

/** The section as JSON, serialized once per event however many payloads and log entries embed it. */
export function incomingRequestText(section: IncomingRequestSection): string {
  let text = (section as WithText)[SECTION_TEXT];
  if (text === undefined) {
    const json = bodyJsonText(section);
    text =
      json === undefined
        ? JSON.stringify(section)
        : `${JSON.stringify({ method: section.method, path: section.path, query: section.query, headers: section.headers, ...originOf(section) }).slice(0, -1)},"body":${json}}`;
    Object.defineProperty(section, SECTION_TEXT, { value: text });
  }
  return text;
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
  return unsentLogEntry(event, webhook, now, {
    status: 'skipped',
    attempt: 0,
    request: event.request,
    error: null,
    detail: { incomingRequest: incomingRequestSection(event), condition: { matched: false, reason } },
  });
}

/** An entry for a delivery that sent nothing (skipped, or failed before any attempt): no duration, no status code. */
export function unsentLogEntry(
  event: CapturedEvent,
  webhook: { _id: string; type: 'http'; url: string } | { _id: string; type: 'email'; email: { to: string[]; cc?: string[] } },
  now: number,
  e: { status: 'skipped' | 'failed'; attempt: number; request: { method: string; path: string }; error: string | null; detail: WebhookLogEntry['detail'] },
): WebhookLogEntry {
  return {
    _id: newLogId(now),
    webhookId: webhook._id,
    eventId: event.id,
    timestamp: { $date: now },
    status: e.status,
    attempt: e.attempt,
    durationMs: 0,
    summary: { method: e.request.method, path: e.request.path, target: webhookTarget(webhook), statusCode: null, error: e.error },
    detail: e.detail,
  };
}
