/**
 * What one delivery attempt leaves behind (SPEC §7.2.3): its log entry and marker, and either a
 * retry job on the webhook's schedule (its own `retrySchedule`, or `webhooks.retrySchedule`,
 * parsed once per webhook version) or, when final, its share of the consecutive-failure count
 * of that webhook version; then the metric, and a log line for a delivery that ended failed.
 * A failure count belongs to one version of the webhook (`updatedAt`): any write, re-enabling
 * included, starts a new one; the worker whose commit crosses `disableAfterFailures` disables it.
 */
import { parseRetryDelay } from '../../config/retry-schedule.js';
import type { Logger } from '../../observability/logger.js';
import type { Metrics } from '../../observability/metrics.js';
import type { RedisKeys } from '../../store/keys.js';
import type { AttemptResult } from '../delivery-contract.js';
import type { CapturedEvent } from '../event.js';
import type { WebhookLogEntry } from '../log-entry.js';
import type { WebhookDocument } from '../webhook.js';
import type { CommitPart, MarkerAt } from './group-commit.js';
import type { Delivery } from './delivery.js';
import { retryJobMember } from './retry-jobs.js';
import { nextRetryDelayMs } from './retry-policy.js';

export interface DeliveryOutcomeOptions {
  keys: RedisKeys;
  logger: Logger;
  metrics: Metrics;
  webhook(id: string): WebhookDocument | undefined;
  retrySchedule: readonly number[];
  random: () => number;
  disableAfterFailures?: number;
  onAutoDisable?(webhookId: string, version: string, failures: number): Promise<void>;
}

export class DeliveryOutcomes {
  private readonly schedules = new WeakMap<WebhookDocument, readonly number[]>();

  constructor(private readonly o: DeliveryOutcomeOptions) {}

  /**
   * The writes that settle one attempt: the entry (with `nextAttemptAt` when a retry is
   * scheduled), the delivery's marker, the removal of the job it came from (`done`), and the
   * next retry job or the failure count.
   */
  settle(webhook: WebhookDocument, { event, condition, attempt }: Delivery, marker: MarkerAt, done: string[] | undefined, result: AttemptResult): CommitPart {
    let nextAt: number | null = null;
    if (result.retryable) {
      const delay = nextRetryDelayMs(this.scheduleOf(webhook), attempt, result.retryAfterMs, this.o.random);
      if (delay !== null) nextAt = Date.now() + delay;
    }
    const entry = result.entry;
    if (nextAt !== null) entry.nextAttemptAt = { $date: nextAt };
    const part: CommitPart = { logs: [entry], markers: [[marker.key, nextAt === null ? entry.status : 'retry', marker.field]], retryRemove: done };
    if (nextAt !== null) {
      part.retryAdd = [[nextAt, retryJobMember(event, webhook._id, attempt + 1, condition)]];
    } else if (this.o.disableAfterFailures) {
      part.outcome = { webhookId: webhook._id, counterKey: this.o.keys.webhookFailures(webhook._id, webhookVersion(webhook)), failed: entry.status === 'failed' };
    }
    return part;
  }

  /** Once committed: the metric, and a log line when the delivery ended failed. */
  report(webhook: WebhookDocument, event: CapturedEvent, attempt: number, entry: WebhookLogEntry, retrying: boolean): void {
    this.o.metrics.webhookDeliveries.inc({ type: webhook.type, outcome: retrying ? 'retry-scheduled' : entry.status });
    if (!retrying && entry.status === 'failed') {
      const { target, statusCode, error } = entry.summary;
      // The target without its query string, which may carry a token.
      // trace_id: the originating request's trace, in which this delivery's attempts are spans (SPEC §9).
      const traceId = /^00-([0-9a-f]{32})-/.exec(event.traceparent ?? '')?.[1];
      this.o.logger.info(
        { webhook: webhook._id, event: event.id, attempt, target: target.split('?')[0], statusCode, err: error, ...(traceId ? { trace_id: traceId } : {}) },
        'webhook delivery ended failed (no retry left)',
      );
    }
  }

  /** A commit counted a webhook version's failures from `before` to `after`: disables it on crossing the limit. */
  failuresCounted(webhookId: string, before: number, after: number): void {
    const limit = this.o.disableAfterFailures ?? 0;
    if (limit <= 0 || before >= limit || after < limit) return;
    const webhook = this.o.webhook(webhookId);
    if (!webhook || !webhook.enabled || !this.o.onAutoDisable) return;
    this.o.onAutoDisable(webhookId, webhookVersion(webhook), after).catch((error: unknown) => this.o.logger.error({ err: String(error), webhook: webhookId }, 'could not disable a failing webhook'));
  }

  /** The webhook's own retry schedule, or the configured one; parsed once per webhook version. */
  private scheduleOf(webhook: WebhookDocument): readonly number[] {
    if (!Array.isArray(webhook.retrySchedule)) return this.o.retrySchedule;
    let schedule = this.schedules.get(webhook);
    if (!schedule) {
      schedule = webhook.retrySchedule.map(parseRetryDelay).filter((ms): ms is number => ms !== null);
      this.schedules.set(webhook, schedule);
    }
    return schedule;
  }
}

/** A failure count belongs to one version of the webhook: any write (re-enabling included) starts a new one. */
function webhookVersion(webhook: WebhookDocument): string {
  return String(webhook.updatedAt?.$date ?? 0);
}
