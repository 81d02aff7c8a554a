/**
 * Resend and recover (SPEC §7.1): `POST /_admin/webhooks/<id>/logs/<logId>/resend` and
 * `POST /_admin/webhooks/<id>/recover {"since"}`.
 *
 * Both rebuild the event from a log entry (the only place an event outlives its stream entry)
 * and hand it to the worker through the retry schedule: a retry job due now, with the next
 * attempt number. The worker then delivers it like any retry (current definition, same
 * `webhook-id`, logged, retried on the schedule's remaining steps). Nothing here calls the
 * worker or writes log entries itself, so it does not depend on how the worker batches.
 *
 * The job, the delivery marker (set to `retry`, so the worker does not drop the job as already
 * final) and the removal of any retry still pending for the same delivery are one MULTI: a
 * resend replaces a pending retry instead of adding a second delivery.
 */
import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { conflict, notFound } from '../../errors.js';
import type { RedisKeys } from '../../store/keys.js';
import type { CapturedEvent, CapturedHeaders } from '../event.js';
import type { WebhookLogEntry } from '../log-entry.js';
import { parseStoredLogEntry } from '../logs/stored-log-entry.js';
import type { WebhookDocument } from '../webhook.js';
import { deliveryMarkerTtlMs, type RetryJob } from '../delivery-contract.js';

/** At most this many events are re-queued by one recover call (the answer says when more remain). */
export const RECOVER_MAX_EVENTS = 10_000;
const READ_CHUNK = 500;
const RESEND_SCAN_LIMIT = 5000;

export interface RedeliveryOptions {
  redis: Redis;
  keys: RedisKeys;
  retentionMs: number;
  reclaimIdleMs: number;
  webhook(id: string): Promise<WebhookDocument | undefined>;
}

export interface Requeued {
  eventId: string;
  attempt: number;
}

export interface RecoverResult {
  /** Events handed to the retry schedule, due now. */
  requeued: number;
  /** Events whose last attempt failed but whose retry is still scheduled (left to it). */
  alreadyScheduled: number;
  /** True when RECOVER_MAX_EVENTS was reached: call again to re-queue the rest. */
  more: boolean;
}

export class Redelivery {
  constructor(private readonly o: RedeliveryOptions) {}

  /** Re-queues the event of one log entry now. */
  async resend(webhookId: string, logId: string): Promise<Requeued> {
    await this.deliverable(webhookId);
    const entry = await this.readEntry(logId);
    if (!entry || entry.webhookId !== webhookId) throw notFound(`webhook ${JSON.stringify(webhookId)} has no log entry ${JSON.stringify(logId)} (it may have expired or been cleared)`);
    if (entry.status === 'skipped') throw conflict('this entry is a skipped evaluation (the condition did not match): there is no delivery to resend');
    const attempts = await this.attemptsOf(webhookId, entry.eventId, entry.timestamp.$date);
    const event = eventFromLogEntry(entry);
    if (!event) throw conflict('this log entry does not hold the whole event (it has neither the payload sent nor the template input), so it cannot be resent');
    const attempt = Math.max(entry.attempt, attempts) + 1;
    await this.enqueue(webhookId, [{ event, attempt, condition: entry.detail.condition }]);
    return { eventId: entry.eventId, attempt };
  }

  /** Re-queues every event of the webhook whose last attempt, at or after `since`, failed. */
  async recover(webhookId: string, since: number): Promise<RecoverResult> {
    await this.deliverable(webhookId);
    const { redis, keys } = this.o;
    const from = Math.max(since, Date.now() - this.o.retentionMs);
    const ids = await redis.zrangebyscore(keys.webhookLogIndex(webhookId), from, '+inf');
    // The newest entry of each event decides; entries are read oldest first, so later ones win.
    const last = new Map<string, WebhookLogEntry>();
    for (let i = 0; i < ids.length; i += READ_CHUNK) {
      const texts = await redis.mget(ids.slice(i, i + READ_CHUNK).map((id) => keys.webhookLogEntry(id)));
      for (const text of texts) {
        const entry = parseEntry(text);
        if (!entry || entry.status === 'skipped' || entry.webhookId !== webhookId) continue;
        const seen = last.get(entry.eventId);
        if (!seen || entry.timestamp.$date >= seen.timestamp.$date) last.set(entry.eventId, entry);
      }
    }
    const failed = [...last.values()].filter((e) => e.status === 'failed');
    const pending = await this.pendingEvents(webhookId);
    const jobs: Array<{ event: CapturedEvent; attempt: number; condition: RetryJob['condition'] }> = [];
    let alreadyScheduled = 0;
    let more = false;
    for (const entry of failed) {
      if (pending.has(entry.eventId)) {
        alreadyScheduled++;
        continue;
      }
      if (jobs.length >= RECOVER_MAX_EVENTS) {
        more = true;
        break;
      }
      const event = eventFromLogEntry(entry);
      if (event) jobs.push({ event, attempt: entry.attempt + 1, condition: entry.detail.condition });
    }
    for (let i = 0; i < jobs.length; i += READ_CHUNK) await this.enqueue(webhookId, jobs.slice(i, i + READ_CHUNK), false);
    return { requeued: jobs.length, alreadyScheduled, more };
  }

  private async deliverable(webhookId: string): Promise<WebhookDocument> {
    const webhook = await this.o.webhook(webhookId);
    if (!webhook) throw notFound(`no webhook with _id ${JSON.stringify(webhookId)}`);
    if (!webhook.enabled) throw conflict(`webhook ${JSON.stringify(webhookId)} is disabled, so nothing would be sent; enable it first (PATCH {"enabled": true})`);
    return webhook;
  }

  private async readEntry(logId: string): Promise<WebhookLogEntry | null> {
    if (!/^[0-9a-z]{1,16}-[0-9a-f]{1,32}$/.test(logId)) return null;
    return parseEntry(await this.o.redis.get(this.o.keys.webhookLogEntry(logId)));
  }

  /**
   * The highest attempt number logged for one delivery: later attempts are later entries, so only
   * entries from `from` on are read (bounded, so a busy webhook's resend stays cheap).
   */
  private async attemptsOf(webhookId: string, eventId: string, from: number): Promise<number> {
    const { redis, keys } = this.o;
    const ids = await redis.zrangebyscore(keys.webhookLogIndex(webhookId), from, '+inf', 'LIMIT', 0, RESEND_SCAN_LIMIT);
    let highest = 0;
    for (let i = 0; i < ids.length; i += READ_CHUNK) {
      const texts = await redis.mget(ids.slice(i, i + READ_CHUNK).map((id) => keys.webhookLogEntry(id)));
      for (const text of texts) {
        const entry = parseEntry(text);
        if (entry && entry.eventId === eventId && entry.webhookId === webhookId) highest = Math.max(highest, entry.attempt);
      }
    }
    return highest;
  }

  /** Retry jobs of this webhook waiting in the schedule: event id -> job members. */
  private async pendingEvents(webhookId: string): Promise<Map<string, string[]>> {
    const out = new Map<string, string[]>();
    let cursor = '0';
    do {
      const [next, flat] = await this.o.redis.zscan(this.o.keys.retrySchedule, cursor, 'COUNT', 500);
      cursor = next;
      for (let i = 0; i < flat.length; i += 2) {
        const member = flat[i]!;
        try {
          const job = JSON.parse(member) as RetryJob;
          if (job.webhookId !== webhookId) continue;
          const list = out.get(job.eventId) ?? [];
          list.push(member);
          out.set(job.eventId, list);
        } catch {
          // not a job of ours; the worker drops it
        }
      }
    } while (cursor !== '0');
    return out;
  }

  private async enqueue(webhookId: string, items: Array<{ event: CapturedEvent; attempt: number; condition: RetryJob['condition'] }>, replacePending = true): Promise<void> {
    const { redis, keys } = this.o;
    const pending = replacePending ? await this.pendingEvents(webhookId) : new Map<string, string[]>();
    const now = Date.now();
    const multi = redis.multi();
    for (const { event, attempt, condition } of items) {
      const job: RetryJob = { v: 1, job: randomBytes(8).toString('hex'), eventId: event.id, webhookId, attempt, condition, event };
      for (const member of pending.get(event.id) ?? []) multi.zrem(keys.retrySchedule, member);
      multi.set(keys.deliveryDone(event.id, webhookId), 'retry', 'PX', deliveryMarkerTtlMs(this.o.reclaimIdleMs));
      multi.zadd(keys.retrySchedule, now, JSON.stringify(job));
    }
    const results = await multi.exec();
    const failure = results?.find(([error]) => error);
    if (!results || failure) throw (failure?.[0] as Error) ?? new Error('the redelivery transaction was discarded');
  }
}

function parseEntry(text: string | null | undefined): WebhookLogEntry | null {
  if (!text) return null;
  try {
    const entry = parseStoredLogEntry(text);
    return entry && typeof entry.eventId === 'string' && entry.detail?.incomingRequest ? entry : null;
  } catch {
    return null;
  }
}

/**
 * The captured event behind a log entry. The request is the entry's `incomingRequest`; the
 * response (and the event time) come from what the attempt sent: the default payload of an
 * HTTP webhook, or the template input of a transform or an e-mail. Null when the entry has
 * neither (an attempt that failed before building its body).
 */
export function eventFromLogEntry(entry: WebhookLogEntry): CapturedEvent | null {
  const source = responseSource(entry);
  if (!source) return null;
  const incoming = entry.detail.incomingRequest;
  const timestamp = typeof source.timestamp === 'string' ? Date.parse(source.timestamp) : NaN;
  return {
    id: entry.eventId,
    ...(typeof entry.traceparent === 'string' ? { traceparent: entry.traceparent } : {}),
    timestamp: Number.isNaN(timestamp) ? entry.timestamp.$date : timestamp,
    serviceId: typeof source.service?.id === 'string' ? source.service.id : '',
    request: {
      method: incoming.method,
      path: incoming.path,
      query: incoming.query ?? {},
      headers: incoming.headers ?? {},
      body: incoming.body ?? null,
      bodyTruncated: incoming.bodyTruncated === true,
    },
    response: {
      statusCode: source.response.statusCode,
      headers: (source.response.headers ?? {}) as CapturedHeaders,
      body: source.response.body ?? null,
      bodyTruncated: source.response.bodyTruncated === true,
    },
  };
}

interface ResponseSource {
  timestamp?: unknown;
  service?: { id?: unknown };
  response: { statusCode: number; headers?: unknown; body?: unknown; bodyTruncated?: unknown };
}

function responseSource(entry: WebhookLogEntry): ResponseSource | null {
  const input = entry.detail.transformation?.input;
  if (hasResponse(input)) return input;
  const outgoing = entry.detail.outgoingRequest;
  if (outgoing && outgoing.method !== 'SMTP' && typeof outgoing.body === 'string' && !entry.detail.transformation) {
    try {
      const payload = JSON.parse(outgoing.body) as unknown;
      if (hasResponse(payload)) return payload;
    } catch {
      // not the default payload
    }
  }
  return null;
}

function hasResponse(value: unknown): value is ResponseSource {
  const response = (value as { response?: { statusCode?: unknown } } | null | undefined)?.response;
  return typeof response === 'object' && response !== null && typeof response.statusCode === 'number';
}
