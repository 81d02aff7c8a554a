/**
 * One delivery attempt of one event to one webhook (SPEC §7.2.3-5), HTTP (http-send.ts) or
 * e-mail (email-send.ts), and the log entry describing it. Nothing here writes to Redis except
 * the e-mail allowance: the worker decides what happens next (retry or final) and stores the
 * entry; a test send only returns it.
 */
import type { buildConnector } from 'undici';
import type { OutriggerConfig } from '../../../config/types.js';
import type { HostLookup } from '../../../net/ssrf-guard/index.js';
import type { Logger } from '../../../observability/logger.js';
import type { Tracing } from '../../../observability/tracing/tracing.js';
import type { AttemptContext, AttemptResult, WebhookAttempts } from '../../delivery-contract.js';
import type { CapturedEvent } from '../../event.js';
import { incomingRequestSection, newLogId, webhookTarget, type WebhookLogEntry } from '../../log-entry.js';
import type { WebhookDocument } from '../../webhook.js';
import type { EmailAllowance } from './email-allowance.js';
import { EmailSender } from './email-send.js';
import { HttpSender } from './http-send.js';
import type { SendOutcome } from './send-outcome.js';

export interface DelivererOptions {
  serviceId: string;
  webhooks: OutriggerConfig['webhooks'];
  secretHeaders: readonly string[];
  allowance: EmailAllowance;
  logger: Logger;
  /** Resolver for the SSRF guard (tests inject one). */
  lookup?: HostLookup;
  /** Opens sockets once an address passed the guard (tests wrap it to watch connects). */
  socketConnector?: buildConnector.connector;
  /** Each attempt is a span in the originating request's trace (SPEC §9). */
  tracing?: Tracing;
}

export class Deliverer implements WebhookAttempts {
  private readonly http: HttpSender;
  private readonly email: EmailSender;

  constructor(private readonly o: DelivererOptions) {
    this.http = new HttpSender(o);
    this.email = new EmailSender(o);
  }

  async attempt(webhook: WebhookDocument, event: CapturedEvent, context: AttemptContext): Promise<AttemptResult> {
    const started = Date.now();
    const t0 = performance.now();
    const span = this.o.tracing?.startSpan(`webhook deliver ${webhook.name}`, 'client', event.traceparent, () => deliverySpanAttributes(webhook, event, context.attempt));
    let outcome: SendOutcome;
    try {
      outcome = webhook.type === 'http' ? await this.http.send(webhook, event, span?.traceparent) : await this.email.send(webhook, event, span?.traceparent);
    } catch (error) {
      // A bug, not a target problem: final, and said so.
      this.o.logger.error({ err: String(error), webhook: webhook._id }, 'unexpected error while delivering a webhook');
      outcome = { status: 'failed', statusCode: null, error: `internal error: ${(error as Error).message}`, retryable: false, retryAfterMs: null };
    }
    if (span) {
      if (outcome.status !== 'success') span.fail(outcome.statusCode === null ? 'delivery_failed' : String(outcome.statusCode), outcome.error ?? undefined);
      span.end(outcome.statusCode ?? undefined);
    }
    // Member by member, optional ones only when set (the stored text keeps this order); spreading
    // the optional members in cost more than the rest of the entry.
    const partial: Omit<WebhookLogEntry, 'summary' | 'detail'> = {
      _id: newLogId(started),
      webhookId: webhook._id,
      eventId: event.id,
      timestamp: { $date: started },
      status: outcome.status,
      attempt: context.attempt,
      durationMs: Math.round(performance.now() - t0),
    };
    if (context.test) partial.test = true;
    if (event.traceparent) partial.traceparent = event.traceparent;
    const entry = partial as WebhookLogEntry;
    entry.summary = { method: event.request.method, path: event.request.path, target: webhookTarget(webhook), statusCode: outcome.statusCode, error: outcome.error };
    const detail: WebhookLogEntry['detail'] = { incomingRequest: incomingRequestSection(event), condition: context.condition };
    if (outcome.transformation) detail.transformation = outcome.transformation;
    if (outcome.outgoingRequest) detail.outgoingRequest = outcome.outgoingRequest;
    if (outcome.response) detail.response = outcome.response;
    if (outcome.error) detail.error = outcome.error;
    entry.detail = detail;
    return { entry, retryable: outcome.status === 'failed' && outcome.retryable, retryAfterMs: outcome.retryAfterMs };
  }

  /** An operator notice (the automatic disable's alert) over the configured SMTP server. */
  sendNotice(to: string, subject: string, text: string): Promise<void> {
    return this.email.sendNotice(to, subject, text);
  }

  async close(): Promise<void> {
    this.email.close();
    await this.http.close();
  }
}

/**
 * A delivery span's attributes (SPEC §9), built only for a recorded span. The target appears as
 * its scheme, host and port only: a webhook URL's path or query often is its credential (Slack,
 * Teams), and no secret goes into a span.
 */
function deliverySpanAttributes(webhook: WebhookDocument, event: CapturedEvent, attempt: number): Record<string, string | number> {
  const out: Record<string, string | number> = {
    'outrigger.webhook.id': webhook._id,
    'outrigger.webhook.attempt': attempt,
    'outrigger.webhook.type': webhook.type,
    'outrigger.event.id': event.id,
  };
  if (webhook.type === 'http') {
    const url = new URL(webhook.url);
    out['http.request.method'] = 'POST';
    out['url.scheme'] = url.protocol.slice(0, -1);
    out['server.address'] = url.hostname;
    out['server.port'] = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
  }
  return out;
}
