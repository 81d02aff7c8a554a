/**
 * The webhook observer on the request path (SPEC §7.2.1; DESIGN "response done → webhook
 * observer → bounded queue"). `begin` costs nothing when the feature is off or nothing wants
 * the request (no enabled webhook, no recording). Otherwise the request and response body
 * chunks are kept by reference up to the capture cap as they pass, and when the response is
 * complete every enabled webhook's condition (parsed once per definition change) is evaluated
 * on the request and response. Matches, due `skipped` entries and recordings become one queued
 * item; nothing here awaits, and nothing touches Redis. For the stream, headers are redacted
 * here, but bodies are neither decoded nor parsed: their captured bytes (copied) go to Redis and
 * the worker turns them into values (stream-record.ts), except the few bodies a secret must be
 * taken out of first (OAuth routes, `POST /keys`) and compressed ones. A recording still needs
 * the whole event here.
 */
import type { Condition, Exchange } from '../../condition/index.js';
import type { ObservedRequest, RequestObserver } from '../../chain/observer.js';
import type { RequestScope } from '../../http/scope.js';
import { captureBody, newEventId, queryObject, type CapturedBody, type CapturedEvent } from '../event.js';
import { backendExchange, type BackendExchangeParts } from './backend-exchange.js';
import type { EventProducer } from './event-producer.js';
import { ObservedExchange } from './observed-exchange.js';
import { ObservedWebhookRequest, type BodyTap, type RequestCompletion } from './observed-request.js';
import { REDACTED, createHeaderJsonRedactor, createHeaderRedactor, jsonString, removeIssuedKey } from './redaction.js';
import {
  ENTRY_FIELD,
  SKIPPED_LOG_INTERVAL_MS,
  capturedBodyRef,
  encodeCapturedEvent,
  encodeEntry,
  type RecordedRequest,
  type SkippedWebhook,
  type StreamBody,
  type StreamFields,
} from '../stream-record.js';

/** One webhook as the observer needs it: parsed condition or the reason it has none. */
export interface CompiledWebhook {
  id: string;
  name: string;
  enabled: boolean;
  condition: Condition | null;
  /** Why the stored condition cannot be evaluated (hand-edited, or a newer syntax). */
  conditionError?: string;
}

export interface CompiledWebhooks {
  all: CompiledWebhook[];
  enabled: CompiledWebhook[];
}

/** Redacted in captures besides SPEC §0's four and `log.secretHeaders`: a RESTHeart backend's token answers. */
export const CAPTURE_SECRET_HEADERS: readonly string[] = ['auth-token'];

export interface WebhookObserverOptions {
  serviceId: string;
  captureBytes: number;
  secretHeaders: readonly string[];
  /** `routes.keys`: the `key` of a `POST` answer there is removed from captures. */
  keysPath: string;
  webhooksEnabled(): boolean;
  webhooks(): CompiledWebhooks;
  recordingActive(now: number): boolean;
  exchangeFor(scope: RequestScope): Exchange;
  producer: EventProducer;
}

export class WebhookObserver implements RequestObserver, RequestCompletion {
  readonly redact: ReturnType<typeof createHeaderRedactor>;
  private readonly headersJson: ReturnType<typeof createHeaderJsonRedactor>;
  private readonly serviceIdJson: string;
  private readonly lastSkipped = new Map<string, number>();
  /** `log.secretHeaders` names Content-Type or Content-Encoding: their values must not reach Redis beside a body. */
  private readonly contentHeadersSecret: boolean;

  constructor(readonly o: WebhookObserverOptions) {
    // RESTHeart's Auth-Token answers are credentials too (decision: redacted like Set-Cookie).
    this.redact = createHeaderRedactor([...CAPTURE_SECRET_HEADERS, ...o.secretHeaders]);
    this.headersJson = createHeaderJsonRedactor([...CAPTURE_SECRET_HEADERS, ...o.secretHeaders]);
    this.serviceIdJson = JSON.stringify(o.serviceId);
    this.contentHeadersSecret = o.secretHeaders.some((h) => ['content-type', 'content-encoding'].includes(h.trim().toLowerCase()));
  }

  begin(): ObservedRequest | null {
    if (!this.o.webhooksEnabled()) return null;
    if (this.o.webhooks().enabled.length === 0 && !this.o.recordingActive(Date.now())) return null;
    return new ObservedWebhookRequest(this, this.o.captureBytes);
  }

  /**
   * The skipped-entry gate: at most one per webhook per 10 s from this replica (workers add the
   * cross-replica gate). Checked for every quiet webhook on every request, so the times live in
   * an array beside the current webhook list; the map keeps them across list changes.
   */
  private skippedDue(gate: Float64Array, index: number, webhookId: string, now: number): boolean {
    if (now - gate[index]! < SKIPPED_LOG_INTERVAL_MS) return false;
    gate[index] = now;
    this.lastSkipped.set(webhookId, now);
    return true;
  }

  private skipGateFor(set: CompiledWebhooks): Float64Array {
    if (this.gateSet !== set) {
      this.gateSet = set;
      this.gate = Float64Array.from(set.enabled, (w) => this.lastSkipped.get(w.id) ?? -Infinity);
    }
    return this.gate;
  }

  private gateSet: CompiledWebhooks | null = null;
  private gate = new Float64Array(0);

  /**
   * Every webhook's condition on one exchange: the ones that matched, the ones due to be logged
   * as skipped (at most once per SKIPPED_LOG_INTERVAL_MS each, always while recording), and while
   * recording every result. `what` names the exchange in a skipped entry's reason; it is called
   * only for one. `what` null: no skipped entry at all, and the gate left alone (SPEC §15: an own
   * route, `/keys` or `/graphql`, is evaluated but leaves no skipped entry; the console's own calls
   * flooded the log, and would take the gate's turn from a proxied request).
   */
  // eslint-disable-next-line max-params -- runs on every observed request: a parameter object would be one more allocation per request
  private evaluateWebhooks(set: CompiledWebhooks, exchange: Exchange, now: number, recording: boolean, completed: boolean, what: (() => string) | null) {
    let matched: string[] | undefined;
    let skipped: SkippedWebhook[] | undefined;
    const results = recording ? new Map<string, boolean>() : undefined;
    // Not recording: the enabled list, in the order of the gate's times.
    const evaluated = recording ? set.all : set.enabled;
    const gate = recording ? null : this.skipGateFor(set);
    for (let i = 0; i < evaluated.length; i++) {
      const webhook = evaluated[i]!;
      const ok = evaluate(webhook, exchange);
      results?.set(webhook.id, ok);
      if (!completed || !webhook.enabled) continue;
      if (ok) (matched ??= []).push(webhook.id);
      else if (what !== null && (recording || this.skippedDue(gate!, i, webhook.id, now))) {
        const reason = webhook.condition ? `the condition did not match ${what()}` : `the stored condition cannot be evaluated: ${webhook.conditionError}`;
        (skipped ??= []).push({ id: webhook.id, reason, always: recording });
      }
    }
    return { matched, skipped, results };
  }

  complete(observed: ObservedWebhookRequest, scope: RequestScope, completed: boolean): void {
    const now = Date.now();
    const recording = this.o.recordingActive(now);
    if (!completed && !recording) return;
    if (!this.o.webhooksEnabled()) return;
    const set = this.o.webhooks();
    const exchange = new ObservedExchange(this.o.exchangeFor(scope), observed);

    // Runs for every observed request: allocate only what a match, a due skip or a recording needs.
    // A match's reason is built by the worker from the event (stream-record.ts `matchedReason`).
    const what = scope.routeKind === 'proxy' ? () => `${scope.method} ${scope.path} (response ${observed.statusCode})` : null;
    const { matched, skipped, results } = this.evaluateWebhooks(set, exchange, now, recording, completed, what);
    if (!matched && !skipped && !recording) return;

    if (!recording) {
      // The common case, on the request path: bodies go to Redis as captured bytes, parsed by the worker.
      this.o.producer.offer({ stream: this.streamFields(observed, scope, now, matched ?? [], skipped ?? []) });
      return;
    }
    const event = this.capture(observed, scope, now);
    if (scope.trace) event.traceparent = scope.trace.traceparent;
    this.o.producer.offer({
      ...(matched || skipped ? { stream: encodeCapturedEvent(event, matched ?? [], skipped ?? [], scope.rawQuery) } : {}),
      recorded: JSON.stringify(recordedRequest(event, completed, set.all, results!)),
    });
  }

  /**
   * A backend write made for a client (SPEC §6.4): evaluated and queued like an observed request
   * (the same gate for skipped entries, recordings too), as a version 2 entry whose request
   * carries `via` and `graphql`. Off the client's response path: the mutation is still running.
   */
  observeBackendExchange(x: BackendExchangeParts): void {
    if (!this.o.webhooksEnabled()) return;
    const now = Date.now();
    const recording = this.o.recordingActive(now);
    const set = this.o.webhooks();
    if (set.enabled.length === 0 && !recording) return;
    const requestText = x.requestBody === undefined ? '' : JSON.stringify(x.requestBody);
    const exchange = backendExchange(x, requestText);
    const { matched, skipped, results } = this.evaluateWebhooks(set, exchange, now, recording, true, () => `${x.method} ${x.path} (response ${x.status}, a write of the GraphQL app ${x.graphql.app})`);
    if (!matched && !skipped && !recording) return;
    const limit = this.o.captureBytes;
    const request = captureBody(Buffer.from(requestText), { contentType: 'application/json', limit });
    const response = captureBody(Buffer.from(x.responseBody), { contentType: x.responseHeaders['content-type'], limit });
    const event: CapturedEvent = {
      id: newEventId(now),
      timestamp: now,
      serviceId: this.o.serviceId,
      request: {
        method: x.method,
        path: x.path,
        query: queryObject(x.query),
        headers: this.redact(x.requestHeaders),
        body: request.body,
        bodyTruncated: request.truncated,
        via: x.via,
        graphql: x.graphql,
      },
      response: { statusCode: x.status, headers: this.redact(x.responseHeaders), body: response.body, bodyTruncated: response.truncated },
      ...(x.traceparent ? { traceparent: x.traceparent } : {}),
    };
    this.o.producer.offer({
      ...(matched || skipped ? { stream: encodeCapturedEvent(event, matched ?? [], skipped ?? [], x.query) } : {}),
      ...(recording ? { recorded: JSON.stringify({ ...recordedRequest(event, true, set.all, results!), via: x.via, graphql: x.graphql }) } : {}),
    });
  }

  /**
   * A version 3 stream entry (stream-record.ts) without decoding or parsing a body: headers are
   * redacted here (secrets never reach Redis), bodies travel as their captured bytes unless a
   * secret must be taken out of them first, which only a few routes need.
   */
  private streamFields(observed: ObservedWebhookRequest, scope: RequestScope, now: number, matched: string[], skipped: SkippedWebhook[]): StreamFields {
    const reqHeaders = scope.req.headers;
    const responseHeaders = (observed.responseHeaders ?? {}) as Record<string, string | string[] | number | undefined>;
    const bodies: Buffer[] = [];
    let qb: StreamBody | undefined;
    let rb: StreamBody | undefined;
    const special = scope.routeKind === 'oauth' || (scope.method === 'POST' && (scope.path === this.o.keysPath || scope.path === `${this.o.keysPath}/`));
    if (special) {
      const captured = this.capturedBodies(observed, scope);
      if (captured.request.body !== null || captured.request.truncated) qb = capturedBodyRef(captured.request.body, captured.request.truncated);
      if (captured.response.body !== null || captured.response.truncated) rb = capturedBodyRef(captured.response.body, captured.response.truncated);
    } else {
      qb = this.rawBody(observed.request, reqHeaders['content-type'], reqHeaders['content-encoding'], bodies);
      rb = this.rawBody(observed.response, responseHeaders['content-type'], responseHeaders['content-encoding'], bodies);
    }
    // StreamMeta as JSON text, written directly: the tee's largest cost on the request path was
    // building this as objects (redacted header copies) and serialising them.
    const meta =
      `{"v":3,"id":"${newEventId(now)}","t":${now},"s":${this.serviceIdJson},"m":${jsonString(scope.method)},"p":${jsonString(scope.path)},` +
      `"q":${jsonString(scope.rawQuery)},"qh":${this.headersJson(reqHeaders)}${qb ? `,"qb":${bodyJson(qb)}` : ''},"sc":${observed.statusCode},` +
      `"rh":${this.headersJson(responseHeaders)}${rb ? `,"rb":${bodyJson(rb)}` : ''},"ma":${JSON.stringify(matched)}${skipped.length > 0 ? `,"sk":${JSON.stringify(skipped)}` : ''}${scope.trace ? `,"tp":"${scope.trace.traceparent}"` : ''}}`;
    return [ENTRY_FIELD, encodeEntry(meta, bodies)];
  }

  /** A body for the stream: its bytes appended to `bodies`, or (compressed, or a redacted content header) captured here. */
  private rawBody(tap: BodyTap, contentTypeHeader: string | string[] | number | undefined, contentEncodingHeader: string | string[] | number | undefined, bodies: Buffer[]): StreamBody | undefined {
    if (tap.total === 0) return undefined;
    const contentType = firstValue(contentTypeHeader);
    const contentEncoding = firstValue(contentEncodingHeader);
    if (contentEncoding !== undefined || this.contentHeadersSecret) {
      // A placeholder, no parsing; or the Content-Type is a configured secret and must not travel in clear.
      const captured = captureBody(tap.bytes(), { contentType, contentEncoding, limit: this.o.captureBytes, totalBytes: tap.total });
      return captured.body === null && !captured.truncated ? undefined : capturedBodyRef(captured.body, captured.truncated);
    }
    const bytes = tap.bytes();
    bodies.push(bytes);
    return contentType === undefined ? { n: tap.total, k: bytes.length } : { n: tap.total, ct: contentType, k: bytes.length };
  }

  private capturedBodies(observed: ObservedWebhookRequest, scope: RequestScope): { request: CapturedBodyResult; response: CapturedBodyResult } {
    const limit = this.o.captureBytes;
    const reqHeaders = scope.req.headers;
    const request = captureBody(observed.request.bytes(), {
      contentType: firstValue(reqHeaders['content-type']),
      contentEncoding: firstValue(reqHeaders['content-encoding']),
      limit,
      totalBytes: observed.request.total,
    });
    const responseHeaders = observed.responseHeaders ?? {};
    const response = captureBody(observed.response.bytes(), {
      contentType: firstValue(responseHeaders['content-type']),
      contentEncoding: firstValue(responseHeaders['content-encoding']),
      limit,
      totalBytes: observed.response.total,
    });
    if (scope.routeKind === 'oauth') {
      // Sign-in forms carry passwords and authorization codes, token answers carry API keys.
      if (request.body !== null) request.body = REDACTED;
      if (response.body !== null) response.body = REDACTED;
    } else if (scope.method === 'POST' && (scope.path === this.o.keysPath || scope.path === `${this.o.keysPath}/`)) {
      response.body = removeIssuedKey(response.body);
    }
    return { request, response };
  }

  /** The whole event, bodies decoded and parsed (recordings need it in the proxy). */
  private capture(observed: ObservedWebhookRequest, scope: RequestScope, now: number): CapturedEvent {
    const { request, response } = this.capturedBodies(observed, scope);
    return {
      id: newEventId(now),
      timestamp: now,
      serviceId: this.o.serviceId,
      request: {
        method: scope.method,
        path: scope.path,
        query: queryObject(scope.rawQuery),
        headers: this.redact(scope.req.headers),
        body: request.body,
        bodyTruncated: request.truncated,
        ...(request.tooDeep ? { bodyTooDeep: true as const } : {}),
      },
      response: {
        statusCode: observed.statusCode,
        headers: this.redact((observed.responseHeaders ?? {}) as Record<string, string | string[] | number | undefined>),
        body: response.body,
        bodyTruncated: response.truncated,
        ...(response.tooDeep ? { bodyTooDeep: true as const } : {}),
      },
    };
  }
}

interface CapturedBodyResult {
  body: CapturedBody;
  truncated: boolean;
  tooDeep?: true;
}

function evaluate(webhook: CompiledWebhook, exchange: Exchange): boolean {
  if (!webhook.condition) return false;
  try {
    return webhook.condition.evaluate(exchange);
  } catch {
    return false;
  }
}

function recordedRequest(event: CapturedEvent, completed: boolean, all: CompiledWebhook[], results: Map<string, boolean>): RecordedRequest {
  return {
    eventId: event.id,
    timestamp: { $date: event.timestamp },
    method: event.request.method,
    path: event.request.path,
    query: event.request.query,
    headers: event.request.headers,
    body: event.request.body,
    ...(event.request.bodyTruncated ? { bodyTruncated: true as const } : {}),
    response: { statusCode: event.response.statusCode },
    completed,
    webhooks: all.map((w) => ({ id: w.id, name: w.name, enabled: w.enabled, matched: results.get(w.id) ?? false })),
  };
}

/** A StreamBody as JSON: the raw-bytes form, on every teed request with a body, written directly. */
function bodyJson(ref: StreamBody): string {
  if (!('n' in ref)) return JSON.stringify(ref);
  return `{"n":${ref.n}${ref.ct === undefined ? '' : `,"ct":${jsonString(ref.ct)}`},"k":${ref.k ?? 0}}`;
}

function firstValue(value: string | string[] | number | undefined): string | undefined {
  if (value === undefined) return undefined;
  return Array.isArray(value) ? value[0] : String(value);
}
