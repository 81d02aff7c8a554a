/**
 * What travels from the observer (proxy) to the workers through the Redis stream, and what a
 * recording keeps. One stream entry has one field, `d`, holding a StreamRecord as JSON.
 */
import type { CapturedEvent } from './event.js';

export interface MatchedWebhook {
  id: string;
  reason: string;
}

export interface SkippedWebhook {
  id: string;
  reason: string;
  /** Logged whatever the 10 s gate says (a recording was active). */
  always: boolean;
}

export interface StreamRecord {
  v: 1;
  event: CapturedEvent;
  /** Webhooks whose condition matched: each gets a delivery. */
  matched: MatchedWebhook[];
  /** Webhooks whose condition did not match and that get a `skipped` log entry. */
  skipped: SkippedWebhook[];
}

/** One request captured by a recording (SPEC §7.4). */
export interface RecordedRequest {
  eventId: string;
  timestamp: { $date: number };
  method: string;
  path: string;
  query: Record<string, string | string[]>;
  headers: CapturedEvent['request']['headers'];
  body: unknown;
  bodyTruncated?: true;
  response: { statusCode: number };
  /** False when the client went away before the response was complete (no webhook fires then). */
  completed: boolean;
  /** Each webhook's evaluation of this request. */
  webhooks: Array<{ id: string; name: string; enabled: boolean; matched: boolean }>;
}

export const STREAM_FIELD = 'd';

export function encodeStreamRecord(record: StreamRecord): string {
  return JSON.stringify(record);
}

/** Null for anything that is not a record of ours (a hand-written entry, a trimmed one). */
export function decodeStreamRecord(fields: readonly string[] | null | undefined): StreamRecord | null {
  if (!fields) return null;
  for (let i = 0; i + 1 < fields.length; i += 2) {
    if (fields[i] !== STREAM_FIELD) continue;
    try {
      const parsed = JSON.parse(fields[i + 1]!) as StreamRecord;
      if (parsed && parsed.v === 1 && parsed.event && Array.isArray(parsed.matched) && Array.isArray(parsed.skipped)) return parsed;
    } catch {
      return null;
    }
  }
  return null;
}
