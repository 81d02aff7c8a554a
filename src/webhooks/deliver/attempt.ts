/**
 * One delivery attempt of one event to one webhook (SPEC §7.2.3-5), HTTP or e-mail, and the log
 * entry describing it. Nothing here writes to Redis except the e-mail allowance: the worker
 * decides what happens next (retry or final) and stores the entry; a test send only returns it.
 *
 * HTTP: POST through the SSRF-guarded dispatcher (resolve, check every address, connect to the
 * checked one; no redirects followed), one timeout (`timeout_ms`) over connect, headers and body,
 * Standard Webhooks headers with a `webhook-id` stable across retries. 2xx is success; network
 * errors, timeouts, 429 and 5xx are retryable; anything else (3xx, other 4xx, an SSRF refusal, a
 * template that does not render) is final.
 *
 * E-mail: nodemailer over the configured SMTP server with bounded timeouts; the daily allowance
 * is reserved first (all recipients or none) and given back when nothing was sent. SMTP 5xx
 * answers are final, 4xx and connection problems retryable.
 */
import type { Agent, buildConnector } from 'undici';
import nodemailer from 'nodemailer';
import type { OutriggerConfig } from '../../config/types.js';
import type { Logger } from '../../observability/logger.js';
import { defaultPayloadParts, payloadBytes, payloadText } from './default-payload.js';
import type { EmailAllowance } from './email-allowance.js';
import type { AttemptContext, AttemptResult, WebhookAttempts } from '../delivery-contract.js';
import { captureBody, type CapturedEvent } from '../event.js';
import {
  incomingRequestSection,
  newLogId,
  webhookTarget,
  type OutgoingRequestSection,
  type TargetResponseSection,
  type TransformationSection,
  type WebhookLogEntry,
} from '../log-entry.js';
import { createHeaderRedactor } from '../capture/redaction.js';
import { notePayloadParts, type PayloadParts } from '../logs/stored-log-entry.js';
import { postOnce } from './http-post.js';
import { parseRetryAfter } from './retry-policy.js';
import { buildStandardWebhookHeaders, deliveryMessageId } from '../signature.js';
import { createGuardedDispatcher, type HostLookup } from '../../net/ssrf-guard/index.js';
import { buildTemplateView, renderTemplate, templateModeForHttp } from '../template/index.js';
import type { EmailWebhookDocument, HttpWebhookDocument, WebhookDocument } from '../webhook.js';

export const USER_AGENT = 'Outrigger-Webhooks/1';

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
}

type Outcome = Pick<AttemptResult, 'retryable' | 'retryAfterMs'> & {
  status: 'success' | 'failed';
  statusCode: number | null;
  error: string | null;
  transformation?: TransformationSection;
  outgoingRequest?: OutgoingRequestSection;
  response?: TargetResponseSection;
};

interface PreparedHttpWebhook {
  /** The target's origin and path with query, as undici takes them. */
  origin: string;
  path: string;
  /** The webhook's own headers over the defaults (the signing headers are added per attempt). */
  headers: Record<string, string>;
  /** The same, redacted, for the log entry. */
  loggedHeaders: Record<string, string>;
}

export class Deliverer implements WebhookAttempts {
  readonly dispatcher: Agent;
  private mailer: nodemailer.Transporter | null = null;
  private readonly redact: ReturnType<typeof createHeaderRedactor>;
  private readonly preparedByDoc = new WeakMap<HttpWebhookDocument, PreparedHttpWebhook>();
  /** `log.secretHeaders` names one of the signing headers (unusual): they are redacted one by one in logs. */
  private readonly signingHeadersSecret: boolean;

  constructor(private readonly o: DelivererOptions) {
    this.redact = createHeaderRedactor(o.secretHeaders);
    const probe = { 'webhook-id': 'x', 'webhook-timestamp': 'x', 'webhook-signature': 'x' };
    this.signingHeadersSecret = Object.entries(this.redact(probe)).some(([name, value]) => value !== probe[name as keyof typeof probe]);
    this.dispatcher = createGuardedDispatcher({
      allowPrivateTargets: o.webhooks.allowPrivateTargets,
      lookup: o.lookup,
      socketConnector: o.socketConnector,
      connectTimeoutMs: 10_000,
      agentOptions: { keepAliveTimeout: 10_000, keepAliveMaxTimeout: 60_000 },
    });
  }

  async attempt(webhook: WebhookDocument, event: CapturedEvent, context: AttemptContext): Promise<AttemptResult> {
    const started = Date.now();
    const t0 = performance.now();
    let outcome: Outcome;
    try {
      outcome = webhook.type === 'http' ? await this.sendHttp(webhook, event) : await this.sendEmail(webhook, event);
    } catch (error) {
      // A bug, not a target problem: final, and said so.
      this.o.logger.error({ err: String(error), webhook: webhook._id }, 'unexpected error while delivering a webhook');
      outcome = { status: 'failed', statusCode: null, error: `internal error: ${(error as Error).message}`, retryable: false, retryAfterMs: null };
    }
    const entry: WebhookLogEntry = {
      _id: newLogId(started),
      webhookId: webhook._id,
      eventId: event.id,
      timestamp: { $date: started },
      status: outcome.status,
      attempt: context.attempt,
      durationMs: Math.round(performance.now() - t0),
      ...(context.test ? { test: true as const } : {}),
      summary: {
        method: event.request.method,
        path: event.request.path,
        target: webhookTarget(webhook),
        statusCode: outcome.statusCode,
        error: outcome.error,
      },
      detail: {
        incomingRequest: incomingRequestSection(event),
        condition: context.condition,
        ...(outcome.transformation ? { transformation: outcome.transformation } : {}),
        ...(outcome.outgoingRequest ? { outgoingRequest: outcome.outgoingRequest } : {}),
        ...(outcome.response ? { response: outcome.response } : {}),
        ...(outcome.error ? { error: outcome.error } : {}),
      },
    };
    return { entry, retryable: outcome.status === 'failed' && outcome.retryable, retryAfterMs: outcome.retryAfterMs };
  }

  /** What every attempt of one webhook version shares: computed once per stored document object. */
  private prepared(webhook: HttpWebhookDocument): PreparedHttpWebhook {
    let p = this.preparedByDoc.get(webhook);
    if (!p) {
      const headers: Record<string, string> = { 'content-type': 'application/json', 'user-agent': USER_AGENT };
      for (const [name, value] of Object.entries(webhook.headers ?? {})) {
        const lower = name.toLowerCase();
        if (lower === 'content-type' || lower === 'user-agent') delete headers[lower];
        headers[name] = value;
      }
      const url = new URL(webhook.url);
      p = { origin: url.origin, path: `${url.pathname}${url.search}`, headers, loggedHeaders: this.redact(headers) as Record<string, string> };
      this.preparedByDoc.set(webhook, p);
    }
    return p;
  }

  // ----------------------------------------------------------------------------------------------
  // HTTP

  private async sendHttp(webhook: HttpWebhookDocument, event: CapturedEvent): Promise<Outcome> {
    const ref = { id: webhook._id, name: webhook.name };
    let body: string;
    /** What is signed and sent, when built as bytes (the default payload). */
    let bytes: Buffer | undefined;
    let transformation: TransformationSection | undefined;
    let parts: PayloadParts | undefined;
    if (webhook.transform?.enabled && webhook.transform.template !== undefined) {
      const view = buildTemplateView(event, ref);
      const rendered = renderTemplate(webhook.transform.template, view, templateModeForHttp(webhook.headers));
      if (!rendered.ok) {
        return {
          status: 'failed',
          statusCode: null,
          error: `transformation failed: ${rendered.error}`,
          retryable: false,
          retryAfterMs: null,
          transformation: { input: view, output: null, error: rendered.error },
        };
      }
      body = rendered.output;
      transformation = { input: view, output: body, error: null };
    } else {
      parts = defaultPayloadParts(event, ref);
      body = payloadText(parts);
      bytes = payloadBytes(parts);
    }

    const prepared = this.prepared(webhook);
    const signing = buildStandardWebhookHeaders({ secret: webhook.secret, msgId: deliveryMessageId(event.id, webhook._id), body: bytes ?? body });
    const headers: Record<string, string> = { ...prepared.headers, ...signing };
    const outgoingRequest: OutgoingRequestSection = {
      method: 'POST',
      url: webhook.url,
      headers: {
        ...prepared.loggedHeaders,
        ...(this.signingHeadersSecret ? (this.redact(signing as unknown as Record<string, string>) as Record<string, string>) : signing),
      },
      body,
    };
    if (parts) notePayloadParts(outgoingRequest, parts);
    const base = { transformation, outgoingRequest };

    const timeoutMs = webhook.timeout_ms;
    const limit = this.o.webhooks.captureBodyBytes;
    const res = await postOnce(this.dispatcher, { origin: prepared.origin, path: prepared.path, headers, body: bytes ?? body, timeoutMs, limit });
    if (!res.ok) return { ...base, ...this.networkFailure(res.error, res.timedOut, timeoutMs) };
    const bodyError =
      res.bodyError === 'timeout'
        ? `the response body was cut: timed out after ${timeoutMs} ms`
        : res.bodyError === 'broken'
          ? 'the response body was cut: the connection broke'
          : null;
    const contentType = headerText(res.headers['content-type']);
    const captured = captureBody(res.kept, {
      contentType,
      contentEncoding: headerText(res.headers['content-encoding']),
      limit,
      totalBytes: res.total,
    });
    const response: TargetResponseSection = {
      statusCode: res.statusCode,
      headers: this.redact(res.headers as Record<string, string | string[]>),
      body: captured.body,
      ...(captured.truncated ? { bodyTruncated: true as const } : {}),
    };
    const code = res.statusCode;
    if (code >= 200 && code < 300) return { ...base, response, status: 'success', statusCode: code, error: bodyError, retryable: false, retryAfterMs: null };
    const retryable = code === 429 || code >= 500;
    const error =
      code >= 300 && code < 400
        ? `the target answered ${code} (a redirect${res.headers.location ? ` to ${headerText(res.headers.location)}` : ''}); redirects are not followed: point the webhook at the final URL`
        : `the target answered ${code}`;
    return {
      ...base,
      response,
      status: 'failed',
      statusCode: code,
      error,
      retryable,
      retryAfterMs: retryable ? parseRetryAfter(res.headers['retry-after']) : null,
    };
  }

  private networkFailure(error: unknown, timedOut: boolean, timeoutMs: number): Omit<Outcome, 'transformation' | 'outgoingRequest'> {
    const e = error as { code?: string; message?: string; cause?: { code?: string; message?: string } };
    const code = e?.code ?? e?.cause?.code;
    const failed = (message: string, retryable: boolean) => ({ status: 'failed' as const, statusCode: null, error: message, retryable, retryAfterMs: null });
    if (code === 'SSRF_BLOCKED') return failed(e.message ?? 'the target address is not allowed', false);
    if (timedOut || code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT' || code === 'UND_ERR_CONNECT_TIMEOUT')
      return failed(`timed out after ${timeoutMs} ms without an answer`, true);
    if (code === 'WEBHOOK_TARGET_UNRESOLVED') return failed(e.message ?? 'the target host could not be resolved', true);
    const detail = code && e?.message && !e.message.includes(code) ? `${code}: ${e.message}` : (e?.message ?? code ?? String(error));
    return failed(`could not reach the target (${detail})`, true);
  }

  // ----------------------------------------------------------------------------------------------
  // E-mail

  private async sendEmail(webhook: EmailWebhookDocument, event: CapturedEvent): Promise<Outcome> {
    const settings = this.o.webhooks.email;
    const ref = { id: webhook._id, name: webhook.name };
    const view = buildTemplateView(event, ref);
    const subject = renderTemplate(webhook.email.subject, view, 'text');
    const body = renderTemplate(webhook.email.bodyTemplate, view, webhook.email.bodyType === 'json' ? 'json' : 'html');
    const templateError = !subject.ok ? `subject: ${subject.error}` : !body.ok ? `bodyTemplate: ${body.error}` : null;
    const transformation: TransformationSection = {
      input: view,
      output: subject.ok && body.ok ? { subject: subject.output, body: body.output } : null,
      error: templateError,
    };
    if (!subject.ok || !body.ok) {
      return { status: 'failed', statusCode: null, error: `transformation failed: ${templateError}`, retryable: false, retryAfterMs: null, transformation };
    }

    const to = webhook.email.to;
    const cc = webhook.email.cc ?? [];
    const messageId = `<${deliveryMessageId(event.id, webhook._id)}@outrigger.${this.o.serviceId}>`;
    const outgoingRequest: OutgoingRequestSection = {
      method: 'SMTP',
      url: settings.smtp.host ? `smtp://${settings.smtp.host}:${settings.smtp.port}` : 'smtp://(not configured)',
      headers: {
        from: settings.from ?? '',
        to: to.join(', '),
        ...(cc.length ? { cc: cc.join(', ') } : {}),
        subject: subject.output,
        'message-id': messageId,
        'content-type': webhook.email.bodyType === 'html' ? 'text/html; charset=utf-8' : 'text/plain; charset=utf-8',
      },
      body: body.output,
    };
    const base = { transformation, outgoingRequest };
    if (!settings.smtp.host || !settings.from) {
      return { ...base, status: 'failed', statusCode: null, error: 'e-mail is not configured: set webhooks.email.smtp.host and webhooks.email.from', retryable: false, retryAfterMs: null };
    }

    const recipients = to.length + cc.length;
    let reservedDay: string | null = null;
    if (!settings.ownServer) {
      const reservation = await this.o.allowance.reserve(recipients);
      if (!reservation.ok) return { ...base, status: 'failed', statusCode: null, error: 'daily email allowance exceeded', retryable: false, retryAfterMs: null };
      reservedDay = reservation.day;
    }

    try {
      const info = (await this.transport().sendMail({
        from: settings.from,
        to,
        ...(cc.length ? { cc } : {}),
        subject: subject.output,
        ...(webhook.email.bodyType === 'html' ? { html: body.output } : { text: body.output }),
        messageId,
        headers: { 'X-Outrigger-Webhook-Id': webhook._id, 'X-Outrigger-Event-Id': event.id },
      })) as { response?: string; accepted?: unknown[]; rejected?: unknown[] };
      const reply = String(info.response ?? '');
      const code = Number(/^(\d{3})/.exec(reply)?.[1] ?? 250);
      return {
        ...base,
        status: 'success',
        statusCode: code,
        error: null,
        retryable: false,
        retryAfterMs: null,
        response: { statusCode: code, headers: {}, body: { reply, accepted: (info.accepted ?? []).map(String), rejected: (info.rejected ?? []).map(String) } },
      };
    } catch (error) {
      if (reservedDay) await this.o.allowance.release(recipients, reservedDay).catch(() => {});
      const e = error as { code?: string; responseCode?: number; response?: string; message?: string };
      const smtpCode = typeof e.responseCode === 'number' ? e.responseCode : null;
      const retryable = smtpCode === null ? e.code !== 'EAUTH' && e.code !== 'EENVELOPE' && e.code !== 'EMESSAGE' : smtpCode < 500;
      return {
        ...base,
        status: 'failed',
        statusCode: smtpCode,
        error: `the SMTP server refused or could not be reached: ${e.message ?? String(error)}`,
        retryable,
        retryAfterMs: null,
        ...(smtpCode !== null ? { response: { statusCode: smtpCode, headers: {}, body: e.response ?? null } } : {}),
      };
    }
  }

  /** An operator notice (the automatic disable's alert) over the configured SMTP server. */
  async sendNotice(to: string, subject: string, text: string): Promise<void> {
    const settings = this.o.webhooks.email;
    if (!settings.smtp.host || !settings.from) throw new Error('e-mail is not configured: set webhooks.email.smtp.host and webhooks.email.from');
    await this.transport().sendMail({ from: settings.from, to, subject, text });
  }

  private transport(): nodemailer.Transporter {
    if (this.mailer) return this.mailer;
    const { smtp } = this.o.webhooks.email;
    // nodemailer's own defaults wait minutes (connection 2 min, socket 10 min): an e-mail attempt
    // is bounded like an HTTP one instead (notes/webhooks.md §E.8).
    this.mailer = nodemailer.createTransport({
      host: smtp.host ?? undefined,
      port: smtp.port,
      secure: smtp.secure,
      ...(smtp.auth ? { auth: { user: smtp.auth.user, pass: smtp.auth.pass } } : {}),
      pool: true,
      maxConnections: 3,
      connectionTimeout: 10_000,
      greetingTimeout: 10_000,
      socketTimeout: 30_000,
      dnsTimeout: 10_000,
    });
    return this.mailer;
  }

  async close(): Promise<void> {
    this.mailer?.close();
    this.mailer = null;
    await this.dispatcher.close().catch(() => {});
  }
}

function headerText(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(', ') : value;
}
