/**
 * An HTTP attempt (SPEC §7.2.3): POST through the SSRF-guarded dispatcher (resolve, check every
 * address, connect to the checked one; no redirects followed), one timeout (`timeout_ms`) over
 * connect, headers and body, Standard Webhooks headers with a `webhook-id` stable across
 * retries. 2xx is success; network errors, timeouts, 429 and 5xx are retryable; anything else
 * (3xx, other 4xx, an SSRF refusal, a template that does not render) is final.
 */
import type { Agent, buildConnector } from 'undici';
import type { OutriggerConfig } from '../../../config/types.js';
import { createGuardedDispatcher, type HostLookup } from '../../../net/ssrf-guard/index.js';
import { createHeaderRedactor } from '../../capture/redaction.js';
import { captureBody, type CapturedEvent } from '../../event.js';
import type { OutgoingRequestSection, TargetResponseSection, TransformationSection } from '../../log-entry.js';
import { notePayloadParts, type PayloadParts } from '../../logs/stored-log-entry.js';
import { buildStandardWebhookHeaders, deliveryMessageId } from '../../signature.js';
import { buildTemplateView, renderTemplate, templateModeForHttp } from '../../template/index.js';
import type { HttpWebhookDocument } from '../../webhook.js';
import { parseRetryAfter } from '../retry-policy.js';
import { defaultPayloadParts, payloadBytes, payloadText } from './default-payload.js';
import { postOnce } from './http-post.js';
import type { SendOutcome } from './send-outcome.js';

const USER_AGENT = 'Outrigger-Webhooks/1';

export interface HttpSenderOptions {
  webhooks: OutriggerConfig['webhooks'];
  secretHeaders: readonly string[];
  /** Resolver for the SSRF guard (tests inject one). */
  lookup?: HostLookup;
  /** Opens sockets once an address passed the guard (tests wrap it to watch connects). */
  socketConnector?: buildConnector.connector;
}

interface PreparedHttpWebhook {
  /** The target's origin and path with query, as undici takes them. */
  origin: string;
  path: string;
  /** The webhook's own headers over the defaults, as name, value pairs (the signing headers are added per attempt). */
  headers: string[];
  /** Where in `headers` the value of a header of the webhook's own named `traceparent` is (-1: none): the attempt's replaces it. */
  traceparentAt: number;
  /** The same, redacted, for the log entry. */
  loggedHeaders: Record<string, string>;
}

export class HttpSender {
  private readonly dispatcher: Agent;
  private readonly redact: ReturnType<typeof createHeaderRedactor>;
  private readonly preparedByDoc = new WeakMap<HttpWebhookDocument, PreparedHttpWebhook>();
  /** `log.secretHeaders` names one of the signing headers (unusual): they are redacted one by one in logs. */
  private readonly signingHeadersSecret: boolean;

  constructor(private readonly o: HttpSenderOptions) {
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

  /** `traceparent`: the attempt span's (SPEC §9), so a receiver that traces joins the request's trace. */
  async send(webhook: HttpWebhookDocument, event: CapturedEvent, traceparent?: string): Promise<SendOutcome> {
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
    // Built by assignment, not spread: spreading objects costs several times more per attempt.
    const headers = prepared.headers.slice();
    headers.push('webhook-id', signing['webhook-id'], 'webhook-timestamp', signing['webhook-timestamp'], 'webhook-signature', signing['webhook-signature']);
    if (traceparent) {
      if (prepared.traceparentAt >= 0) headers[prepared.traceparentAt] = traceparent;
      else headers.push('traceparent', traceparent);
    }
    const outgoingRequest: OutgoingRequestSection = { method: 'POST', url: webhook.url, headers: this.loggedHeaders(prepared, signing), body };
    if (parts) notePayloadParts(outgoingRequest, parts);

    const timeoutMs = webhook.timeout_ms;
    const limit = this.o.webhooks.captureBodyBytes;
    const res = await postOnce(this.dispatcher, { origin: prepared.origin, path: prepared.path, headers, body: bytes ?? body, timeoutMs, limit });
    if (!res.ok) {
      const failure = this.networkFailure(res.error, res.timedOut, timeoutMs);
      return { transformation, outgoingRequest, status: failure.status, statusCode: failure.statusCode, error: failure.error, retryable: failure.retryable, retryAfterMs: failure.retryAfterMs };
    }
    const bodyError =
      res.bodyError === 'timeout' ? `the response body was cut: timed out after ${timeoutMs} ms` : res.bodyError === 'broken' ? 'the response body was cut: the connection broke' : null;
    const contentType = headerText(res.headers['content-type']);
    const captured = captureBody(res.kept, {
      contentType,
      contentEncoding: headerText(res.headers['content-encoding']),
      limit,
      totalBytes: res.total,
    });
    const response: TargetResponseSection = { statusCode: res.statusCode, headers: this.redact(res.headers as Record<string, string | string[]>), body: captured.body };
    if (captured.truncated) response.bodyTruncated = true;
    const code = res.statusCode;
    if (code >= 200 && code < 300) return { transformation, outgoingRequest, response, status: 'success', statusCode: code, error: bodyError, retryable: false, retryAfterMs: null };
    const retryable = code === 429 || code >= 500;
    const error =
      code >= 300 && code < 400
        ? `the target answered ${code} (a redirect${res.headers.location ? ` to ${headerText(res.headers.location)}` : ''}); redirects are not followed: point the webhook at the final URL`
        : `the target answered ${code}`;
    return {
      transformation,
      outgoingRequest,
      response,
      status: 'failed',
      statusCode: code,
      error,
      retryable,
      retryAfterMs: retryable ? parseRetryAfter(res.headers['retry-after']) : null,
    };
  }

  /** The headers as the log entry shows them: the prepared ones, and the signing ones (redacted when configured secret). */
  private loggedHeaders(prepared: PreparedHttpWebhook, signing: ReturnType<typeof buildStandardWebhookHeaders>): Record<string, string | string[]> {
    const loggedHeaders: Record<string, string | string[]> = Object.assign({}, prepared.loggedHeaders);
    if (this.signingHeadersSecret) Object.assign(loggedHeaders, this.redact(signing as unknown as Record<string, string>));
    else {
      loggedHeaders['webhook-id'] = signing['webhook-id'];
      loggedHeaders['webhook-timestamp'] = signing['webhook-timestamp'];
      loggedHeaders['webhook-signature'] = signing['webhook-signature'];
    }
    return loggedHeaders;
  }

  private networkFailure(error: unknown, timedOut: boolean, timeoutMs: number): Omit<SendOutcome, 'transformation' | 'outgoingRequest'> {
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
      const flat = Object.entries(headers).flat();
      const traceparentName = flat.findIndex((item, i) => i % 2 === 0 && item === 'traceparent');
      p = {
        origin: url.origin,
        path: `${url.pathname}${url.search}`,
        headers: flat,
        traceparentAt: traceparentName < 0 ? -1 : traceparentName + 1,
        loggedHeaders: this.redact(headers) as Record<string, string>,
      };
      this.preparedByDoc.set(webhook, p);
    }
    return p;
  }

  async close(): Promise<void> {
    await this.dispatcher.close().catch(() => {});
  }
}

function headerText(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(', ') : value;
}
