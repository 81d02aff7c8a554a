/**
 * An e-mail attempt (SPEC §7.2.5): nodemailer over the configured SMTP server with bounded
 * timeouts; the daily allowance is reserved first (all recipients or none) and given back when
 * nothing was sent. SMTP 5xx answers are final, 4xx and connection problems retryable.
 */
import nodemailer from 'nodemailer';
import type { OutriggerConfig } from '../../../config/types.js';
import type { CapturedEvent } from '../../event.js';
import type { OutgoingRequestSection, TransformationSection } from '../../log-entry.js';
import { deliveryMessageId } from '../../signature.js';
import { buildTemplateView, renderTemplate } from '../../template/index.js';
import type { EmailWebhookDocument } from '../../webhook.js';
import type { EmailAllowance } from './email-allowance.js';
import type { SendOutcome } from './send-outcome.js';

export interface EmailSenderOptions {
  serviceId: string;
  webhooks: OutriggerConfig['webhooks'];
  allowance: EmailAllowance;
}

export class EmailSender {
  private mailer: nodemailer.Transporter | null = null;

  constructor(private readonly o: EmailSenderOptions) {}

  /** `traceparent`: the attempt span's (SPEC §9), a header of the message as on the webhook POST, so a mail pipeline that traces joins the request's trace. */
  async send(webhook: EmailWebhookDocument, event: CapturedEvent, traceparent?: string): Promise<SendOutcome> {
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
        ...(traceparent ? { traceparent } : {}),
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
        headers: { 'X-Outrigger-Webhook-Id': webhook._id, 'X-Outrigger-Event-Id': event.id, ...(traceparent ? { traceparent } : {}) },
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

  close(): void {
    this.mailer?.close();
    this.mailer = null;
  }
}
