/**
 * `POST /_admin/webhooks/test` (SPEC §7.1): sends a webhook once, now, for a sample event, and
 * answers the log entry it would write (the target's answer included). Nothing is stored: no
 * log, no retry, no document. Admin roles only, since it shows what a target answered; the
 * URL goes through the same SSRF checks as a saved webhook (at validation and at connect).
 */
import type { Principal } from '../../principal/principal.js';
import { exchangeFromParts, parseCondition } from '../../condition/index.js';
import { badRequest, forbidden, notFound, ValidationError } from '../../errors.js';
import { readJsonBody } from '../../http/body.js';
import { isJsonObject } from '../../util/objects.js';
import { sendJson } from '../../http/respond.js';
import type { RequestScope } from '../../http/scope.js';
import type { WebhookAttempts } from '../delivery-contract.js';
import { newEventId, queryObject, type CapturedEvent, type CapturedHeaders } from '../event.js';
import type { createHeaderRedactor } from '../capture/redaction.js';
import type { WebhookDocument, WebhookValidation } from '../webhook.js';

export interface TestSendDeps {
  serviceId: string;
  isAdmin(principal: Principal): boolean;
  fetch(id: string): Promise<WebhookDocument | undefined>;
  validate(candidate: Record<string, unknown>, existing: WebhookDocument | undefined): Promise<WebhookValidation>;
  deliverer: WebhookAttempts;
  redact: ReturnType<typeof createHeaderRedactor>;
}

const BODY_FIELDS = new Set(['webhook', 'webhookId', 'event']);

export async function handleTestSend(deps: TestSendDeps, scope: RequestScope): Promise<void> {
  if (!deps.isAdmin(scope.principal)) throw forbidden('test sends are for admin roles only (they show what a target answered); save the webhook and read its logs instead');
  const body = await readJsonBody(scope);
  if (!isJsonObject(body)) throw badRequest('the body must be {"webhook": {...}} or {"webhookId": "..."}, with an optional "event"');
  const unknown = Object.keys(body).filter((k) => !BODY_FIELDS.has(k));
  if (unknown.length) throw badRequest(`${unknown[0]} is not a test-send field (use webhook or webhookId, and optionally event)`);

  let webhook: WebhookDocument;
  if (body.webhookId !== undefined) {
    if (body.webhook !== undefined) throw badRequest('give either webhook (an unsaved document) or webhookId (a saved one), not both');
    if (typeof body.webhookId !== 'string' || body.webhookId === '') throw badRequest('webhookId must be the _id of a saved webhook');
    const stored = await deps.fetch(body.webhookId);
    if (!stored) throw notFound(`no webhook with _id ${JSON.stringify(body.webhookId)}`);
    webhook = stored;
  } else if (isJsonObject(body.webhook)) {
    const id = typeof body.webhook._id === 'string' ? body.webhook._id : undefined;
    const existing = id ? await deps.fetch(id) : undefined;
    const result = await deps.validate({ ...body.webhook, _id: id ?? 'unsaved' }, existing);
    if (!result.ok) throw new ValidationError(result.problems.map((p) => `webhook.${p}`));
    webhook = result.doc;
  } else {
    throw badRequest('webhook is required: the webhook document to try (unsaved), or give webhookId of a saved one');
  }

  const event = sampleEvent(body.event, deps.serviceId, deps.redact);
  const condition = evaluateOnSample(webhook.condition, event);
  const result = await deps.deliverer.attempt(webhook, event, { attempt: 1, condition, test: true });
  sendJson(scope.res, 200, result.entry);
}

function evaluateOnSample(conditionText: string, event: CapturedEvent): { matched: boolean; reason: string } {
  try {
    const condition = parseCondition(conditionText);
    const matched = condition.evaluate(
      exchangeFromParts({
        method: event.request.method,
        path: event.request.path,
        query: event.request.query,
        headers: event.request.headers,
        status: event.response.statusCode,
        responseHeaders: event.response.headers,
        ...(event.request.body !== null ? { body: event.request.body } : {}),
      }),
    );
    return {
      matched,
      reason: `test send: the condition ${matched ? 'matches' : 'does not match'} the sample ${event.request.method} ${event.request.path}; sent regardless`,
    };
  } catch (error) {
    return { matched: false, reason: `test send: the condition cannot be evaluated (${(error as Error).message}); sent regardless` };
  }
}

/**
 * The event of a test send: the caller's sample (any part may be left out) over a default
 * `POST /sample/orders` answered 201. Headers are redacted like captured ones.
 */
export function sampleEvent(input: unknown, serviceId: string, redact: TestSendDeps['redact'], now = Date.now()): CapturedEvent {
  if (input !== undefined && !isJsonObject(input)) throw badRequest('event must be an object {request?: {...}, response?: {...}}');
  const sample = (input ?? {}) as Record<string, unknown>;
  for (const key of Object.keys(sample)) if (key !== 'request' && key !== 'response') throw badRequest(`event.${key} is not an event field (use request and response)`);
  const req = part(sample.request, 'event.request', ['method', 'path', 'query', 'headers', 'body']);
  const res = part(sample.response, 'event.response', ['statusCode', 'headers', 'body']);

  const method = (req.method ?? 'POST') as string;
  if (typeof method !== 'string' || !/^[A-Za-z]+$/.test(method)) throw badRequest('event.request.method must be an HTTP method such as POST');
  const pathInput = req.path ?? '/sample/orders';
  if (typeof pathInput !== 'string' || !pathInput.startsWith('/')) throw badRequest('event.request.path must be a path starting with /');
  let path = pathInput;
  let query: Record<string, string | string[]> = {};
  const q = path.indexOf('?');
  if (q !== -1) {
    query = queryObject(path.slice(q + 1));
    path = path.slice(0, q);
  }
  if (req.query !== undefined) {
    if (typeof req.query === 'string') query = { ...query, ...queryObject(req.query.replace(/^\?/, '')) };
    else if (isJsonObject(req.query) && Object.values(req.query).every(isStringOrStrings)) query = { ...query, ...(req.query as Record<string, string | string[]>) };
    else throw badRequest('event.request.query must be a query string or an object of strings');
  }
  const statusCode = res.statusCode ?? 201;
  if (typeof statusCode !== 'number' || !Number.isInteger(statusCode) || statusCode < 100 || statusCode > 599) throw badRequest('event.response.statusCode must be an integer from 100 to 599');

  const requestBody = req.body === undefined ? { _id: 'sample-1', status: 'new' } : req.body;
  const responseBody = res.body === undefined ? { _id: 'sample-1' } : res.body;
  return {
    id: newEventId(now),
    timestamp: now,
    serviceId,
    request: {
      method: method.toUpperCase(),
      path,
      query,
      headers: headersOf(req.headers, 'event.request.headers', redact, requestBody),
      body: requestBody,
      bodyTruncated: false,
    },
    response: {
      statusCode,
      headers: headersOf(res.headers, 'event.response.headers', redact, responseBody),
      body: responseBody,
      bodyTruncated: false,
    },
  };
}

function part(value: unknown, path: string, fields: string[]): Record<string, unknown> {
  if (value === undefined) return {};
  if (!isJsonObject(value)) throw badRequest(`${path} must be an object`);
  for (const key of Object.keys(value)) if (!fields.includes(key)) throw badRequest(`${path}.${key} is not a field here (use ${fields.join(', ')})`);
  return value;
}

function isStringOrStrings(value: unknown): value is string | string[] {
  return typeof value === 'string' || (Array.isArray(value) && value.every((v) => typeof v === 'string'));
}

function headersOf(value: unknown, path: string, redact: TestSendDeps['redact'], body: unknown): CapturedHeaders {
  if (value === undefined) return body !== null && typeof body === 'object' ? { 'content-type': 'application/json' } : {};
  if (!isJsonObject(value) || !Object.values(value).every(isStringOrStrings)) throw badRequest(`${path} must be an object of header names to strings`);
  return redact(value as Record<string, string | string[]>);
}
