/**
 * What the stages around delivery agree on without importing the worker: a retry job (the
 * worker schedules one for a retry or a throttled delivery; resend and recover put one in the
 * retry set, and the worker runs it like any retry), how long a delivery's marker lives, and
 * one delivery attempt (the worker makes it, a test send makes one and only shows the entry).
 */
import type { CapturedEvent } from './event.js';
import type { WebhookLogEntry } from './log-entry.js';
import type { WebhookDocument } from './webhook.js';

export interface RetryJob {
  v: 1;
  /** Makes every job member unique. */
  job: string;
  eventId: string;
  webhookId: string;
  /** The attempt this job makes (2 for the first retry). */
  attempt: number;
  /** Set when the job only waits for a throttled webhook's next free second (no attempt was used). */
  throttled?: true;
  condition: { matched: boolean; reason: string };
  event: CapturedEvent;
}

/**
 * How long a delivery's marker is kept. It only has to outlive the window between the
 * delivery's MULTI and the entry's acknowledgement plus a reclaim (retry jobs are removed in
 * the same MULTI, so they cannot come back), hence an hour, or 20 reclaim periods if longer.
 */
export function deliveryMarkerTtlMs(reclaimIdleMs: number): number {
  return Math.max(3600_000, 20 * reclaimIdleMs);
}

export interface AttemptContext {
  /** 1 for the first attempt. */
  attempt: number;
  /** The observer's evaluation, for the condition section. */
  condition: { matched: boolean; reason: string };
  /** A test send: the entry is marked and never stored. */
  test?: boolean;
}

export interface AttemptResult {
  entry: WebhookLogEntry;
  /** A failure worth trying again (network, timeout, 429, 5xx, SMTP 4xx). */
  retryable: boolean;
  /** From a Retry-After answer, ms. */
  retryAfterMs: number | null;
}

/** One attempt of one event to one webhook: the deliver stage's Deliverer. */
export interface WebhookAttempts {
  attempt(webhook: WebhookDocument, event: CapturedEvent, context: AttemptContext): Promise<AttemptResult>;
}
