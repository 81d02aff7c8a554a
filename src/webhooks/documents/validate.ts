/**
 * Webhook documents (SPEC §7.1): validation at every write (HTTP routes, `apply`, bootstrap,
 * the unsaved document of a test send), reporting every problem at once, each naming its field
 * (`timeout_ms must be an integer from 1000 to 30000`). Defaults are filled: `enabled` true,
 * `timeout_ms` 5000, `headers` {}, `transform.enabled` true when a transform is given without
 * it, a generated `whsec_` secret for HTTP webhooks (or the existing document's), `createdAt`
 * (kept from the existing document) and `updatedAt` (now).
 *
 * Decisions:
 * - `createdAt` / `updatedAt` are read-only: accepted on input (so a GET→PUT round trip works)
 *   and replaced by the server's values;
 * - `_id` is optional (the routes set it); when absent a random id is generated;
 * - `email.bodyType` is required (no default: it decides the escaping);
 * - an HTTP webhook's body template is rendered in JSON mode unless `headers` set a non-JSON
 *   Content-Type (then it is sent as written, unescaped);
 * - headers that Outrigger controls (`webhook-*`, framing and hop-by-hop headers, Host) are
 *   refused in `headers`;
 * - at most 50 recipients (to + cc) per e-mail webhook.
 */
import { randomBytes } from 'node:crypto';
import { checkWebhookUrlAtWrite, type HostLookup } from '../../net/ssrf-guard/index.js';
import { generateWebhookSecret, webhookSecretProblem } from '../signature.js';
import { templateSyntaxProblem } from '../template/index.js';
import { parseRetryDelay, RETRY_SCHEDULE_MAX_LENGTH } from '../../config/retry-schedule.js';
import type { ParsedCidrs } from '../../net/cidr.js';
import { headerFieldProblem } from '../../input-limits/http-field.js';
import type { EpochDate } from '../../util/epoch-date.js';
import type { EmailSettings, HttpWebhookDocument, WebhookDocument, WebhookValidation } from '../webhook.js';

export interface WebhookValidationOptions {
  /** Parses a condition; returns the error (with position) or null. */
  readonly validateCondition: (text: string) => string | null;
  /** `webhooks.allowPrivateTargets`, parsed or as strings. */
  readonly allowPrivateTargets?: ParsedCidrs | readonly string[];
  /** Resolver for the URL check (tests inject one). */
  readonly lookup?: HostLookup;
  /** The stored document this write replaces (its secret and createdAt are kept). */
  readonly existing?: { secret?: unknown; createdAt?: unknown } | undefined;
  /** Clock for createdAt/updatedAt, epoch ms. */
  readonly now?: number;
  /** Do not resolve the URL's host name (scheme, credentials and IP literals are still checked). Default false. */
  readonly skipUrlResolution?: boolean;
}

export const TIMEOUT_MS_MIN = 1000;
export const TIMEOUT_MS_MAX = 30000;
export const TIMEOUT_MS_DEFAULT = 5000;
export const MAX_TEMPLATE_CHARS = 100 * 1024;
export const MAX_RECIPIENTS = 50;
const MAX_NAME_CHARS = 200;
const MAX_CONDITION_CHARS = 10_000;
const MAX_URL_CHARS = 2048;
const MAX_HEADERS = 50;
const MAX_HEADER_VALUE_CHARS = 8192;
const MAX_SUBJECT_CHARS = 500;
const ID_PATTERN = /^[A-Za-z0-9._~:@-]{1,128}$/;

const COMMON_FIELDS = ['_id', 'name', 'type', 'condition', 'enabled', 'maxPerSecond', 'retrySchedule', 'disabledReason', 'disabledAt', 'createdAt', 'updatedAt'];
export const MAX_PER_SECOND_MAX = 10_000;
const MAX_DISABLED_REASON_CHARS = 500;
const HTTP_FIELDS = ['url', 'timeout_ms', 'headers', 'transform', 'secret'];
const EMAIL_FIELDS = ['email'];
const TRANSFORM_FIELDS = ['enabled', 'template'];
const EMAIL_SETTINGS_FIELDS = ['to', 'cc', 'subject', 'bodyType', 'bodyTemplate'];

const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const RESERVED_HEADERS = new Set([
  'host',
  'content-length',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authorization',
  'te',
  'trailer',
  'upgrade',
  'expect',
  'webhook-id',
  'webhook-timestamp',
  'webhook-signature',
]);

const EMAIL_LOCAL_ATOM = "[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+";
const EMAIL_LABEL = '[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?';
const EMAIL = new RegExp(`^${EMAIL_LOCAL_ATOM}(?:\\.${EMAIL_LOCAL_ATOM})*@${EMAIL_LABEL}(?:\\.${EMAIL_LABEL})+$`);

/** Why `address` is not a usable e-mail address, or null. Plain addresses only (no display names). */
export function emailAddressProblem(address: unknown): string | null {
  if (typeof address !== 'string') return 'must be an e-mail address string such as ops@example.com';
  if (address.length > 254) return 'is longer than 254 characters';
  if (!EMAIL.test(address)) return `"${address}" is not an e-mail address (write it like ops@example.com, without a display name)`;
  if (address.split('@')[0]!.length > 64) return 'has a local part (before @) longer than 64 characters';
  return null;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function has(obj: Record<string, unknown>, key: string): boolean {
  return Object.prototype.hasOwnProperty.call(obj, key);
}

function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

function checkTemplate(problems: string[], field: string, value: unknown): value is string {
  if (typeof value !== 'string') {
    problems.push(`${field} must be a Mustache template string (got ${typeName(value)})`);
    return false;
  }
  if (value.length > MAX_TEMPLATE_CHARS) {
    problems.push(`${field} must be at most ${MAX_TEMPLATE_CHARS} characters`);
    return false;
  }
  const syntax = templateSyntaxProblem(value);
  if (syntax) {
    problems.push(`${field}: ${syntax}`);
    return false;
  }
  return true;
}

function checkAddressList(problems: string[], field: string, value: unknown, required: boolean): string[] | undefined {
  if (value === undefined && !required) return undefined;
  if (!Array.isArray(value) || (required && value.length === 0)) {
    problems.push(`${field} must be ${required ? 'a non-empty' : 'an'} array of e-mail addresses`);
    return undefined;
  }
  const seen = new Set<string>();
  value.forEach((address, i) => {
    const problem = emailAddressProblem(address);
    if (problem) problems.push(`${field}[${i}] ${problem}`);
    else if (seen.has((address as string).toLowerCase())) problems.push(`${field}[${i}] repeats ${String(address)}`);
    else seen.add((address as string).toLowerCase());
  });
  return value as string[];
}

/**
 * Validates a candidate webhook document. Never throws for bad input; resolves to the complete
 * document (defaults filled) or to every problem found.
 */
export async function validateWebhookDocument(input: unknown, options: WebhookValidationOptions): Promise<WebhookValidation> {
  if (!isPlainObject(input)) return { ok: false, problems: [`must be a JSON object (got ${typeName(input)})`] };
  const problems: string[] = [];
  const now = options.now ?? Date.now();

  // Type first: it decides which fields exist.
  const type = input.type;
  const typeOk = type === 'http' || type === 'email';
  if (!has(input, 'type')) problems.push('type is required: "http" or "email"');
  else if (!typeOk) problems.push(`type must be "http" or "email" (got ${JSON.stringify(type)})`);

  for (const key of Object.keys(input)) {
    if (COMMON_FIELDS.includes(key)) continue;
    if (HTTP_FIELDS.includes(key)) {
      if (type === 'email') problems.push(`${key} is only allowed on http webhooks (this one has type "email")`);
      continue;
    }
    if (EMAIL_FIELDS.includes(key)) {
      if (type === 'http') problems.push(`${key} is only allowed on email webhooks (this one has type "http")`);
      continue;
    }
    problems.push(`${key} is not a webhook field (allowed: ${[...COMMON_FIELDS, ...HTTP_FIELDS, ...EMAIL_FIELDS].join(', ')})`);
  }

  // _id
  let id: string;
  if (has(input, '_id')) {
    id = typeof input._id === 'string' ? input._id : '';
    if (typeof input._id !== 'string' || !ID_PATTERN.test(input._id)) {
      problems.push('_id must be a string of 1-128 letters, digits or ._~:@- characters');
    }
  } else {
    id = randomBytes(12).toString('hex');
  }

  // name
  const name = input.name;
  if (name === undefined) problems.push('name is required: a non-empty string');
  else if (typeof name !== 'string' || name.trim() === '') problems.push('name must be a non-empty string');
  else if (name.length > MAX_NAME_CHARS) problems.push(`name must be at most ${MAX_NAME_CHARS} characters`);

  // condition
  const condition = input.condition;
  if (condition === undefined) problems.push('condition is required: a condition such as method(POST) and path-prefix(/orders)');
  else if (typeof condition !== 'string' || condition.trim() === '') problems.push('condition must be a non-empty string');
  else if (condition.length > MAX_CONDITION_CHARS) problems.push(`condition must be at most ${MAX_CONDITION_CHARS} characters`);
  else {
    const error = options.validateCondition(condition);
    if (error) problems.push(`condition is invalid: ${error}`);
  }

  // enabled
  if (has(input, 'enabled') && typeof input.enabled !== 'boolean') problems.push('enabled must be true or false');
  const enabled = typeof input.enabled === 'boolean' ? input.enabled : true;

  // maxPerSecond, retrySchedule (SPEC §7.1: failing targets)
  if (has(input, 'maxPerSecond')) {
    const m = input.maxPerSecond;
    if (typeof m !== 'number' || !Number.isInteger(m) || m < 1 || m > MAX_PER_SECOND_MAX)
      problems.push(`maxPerSecond must be an integer from 1 to ${MAX_PER_SECOND_MAX} (deliveries per second), or absent for no limit`);
  }
  if (has(input, 'retrySchedule')) {
    const r = input.retrySchedule;
    if (!Array.isArray(r) || r.length > RETRY_SCHEDULE_MAX_LENGTH)
      problems.push(`retrySchedule must be a list of at most ${RETRY_SCHEDULE_MAX_LENGTH} delays, e.g. ["5s", "1m", "10m"] ([] for no retries)`);
    else
      r.forEach((item: unknown, i) => {
        if (parseRetryDelay(item) === null)
          problems.push(`retrySchedule[${i}] must be a delay from 10ms to 7d, as seconds or a string like 200ms, 5s, 1m, 1h (got ${JSON.stringify(item)})`);
      });
  }
  // disabledReason / disabledAt: written by the automatic disable, kept while the webhook stays disabled.
  const disabledReason = input.disabledReason;
  const disabledAt = input.disabledAt;
  if (has(input, 'disabledReason') && (typeof disabledReason !== 'string' || disabledReason.length > MAX_DISABLED_REASON_CHARS))
    problems.push(`disabledReason must be a string of at most ${MAX_DISABLED_REASON_CHARS} characters`);
  if (has(input, 'disabledAt') && !(isPlainObject(disabledAt) && typeof disabledAt.$date === 'number'))
    problems.push('disabledAt must be a date {"$date": <epoch ms>}');
  const keepDisabled =
    !enabled && typeof disabledReason === 'string' ? { disabledReason, ...(isPlainObject(disabledAt) && typeof disabledAt.$date === 'number' ? { disabledAt: { $date: disabledAt.$date } } : {}) } : {};

  const existingCreated = options.existing?.createdAt;
  const createdAt: EpochDate =
    isPlainObject(existingCreated) && typeof existingCreated.$date === 'number' ? { $date: existingCreated.$date } : { $date: now };
  const updatedAt: EpochDate = { $date: now };

  const common = {
    _id: id,
    name: name as string,
    condition: condition as string,
    enabled,
    ...(typeof input.maxPerSecond === 'number' ? { maxPerSecond: input.maxPerSecond } : {}),
    ...(Array.isArray(input.retrySchedule) ? { retrySchedule: [...(input.retrySchedule as Array<number | string>)] } : {}),
    ...keepDisabled,
    createdAt,
    updatedAt,
  };

  if (type === 'http') {
    checkHttpFields(input, problems);
    const url = input.url;
    if (typeof url === 'string' && url.length > MAX_URL_CHARS) {
      problems.push(`url must be at most ${MAX_URL_CHARS} characters`);
    } else {
      problems.push(
        ...(await checkWebhookUrlAtWrite(url, {
          allowPrivateTargets: options.allowPrivateTargets,
          lookup: options.lookup,
          resolveNames: !options.skipUrlResolution,
        })),
      );
    }
    if (problems.length > 0) return { ok: false, problems };

    const transform = input.transform as Record<string, unknown> | undefined;
    const existingSecret = options.existing?.secret;
    const doc: HttpWebhookDocument = {
      ...common,
      type: 'http',
      url: url as string,
      timeout_ms: (input.timeout_ms as number | undefined) ?? TIMEOUT_MS_DEFAULT,
      headers: { ...((input.headers as Record<string, string> | undefined) ?? {}) },
      ...(transform !== undefined
        ? {
            transform: {
              enabled: typeof transform.enabled === 'boolean' ? transform.enabled : true,
              ...(typeof transform.template === 'string' ? { template: transform.template } : {}),
            },
          }
        : {}),
      secret:
        typeof input.secret === 'string'
          ? input.secret
          : typeof existingSecret === 'string' && webhookSecretProblem(existingSecret) === null
            ? existingSecret
            : generateWebhookSecret(),
    };
    return { ok: true, doc };
  }

  if (type === 'email') {
    const email = checkEmailFields(input, problems);
    if (problems.length > 0 || !email) return { ok: false, problems };
    return { ok: true, doc: { ...common, type: 'email', email } };
  }

  return { ok: false, problems };
}

/** Checks timeout_ms, headers, transform and secret, pushing problems. */
function checkHttpFields(input: Record<string, unknown>, problems: string[]): void {
  if (has(input, 'timeout_ms')) {
    const t = input.timeout_ms;
    if (typeof t !== 'number' || !Number.isInteger(t) || t < TIMEOUT_MS_MIN || t > TIMEOUT_MS_MAX) {
      problems.push(`timeout_ms must be an integer from ${TIMEOUT_MS_MIN} to ${TIMEOUT_MS_MAX} (milliseconds)`);
    }
  }

  if (has(input, 'headers')) {
    const headers = input.headers;
    if (!isPlainObject(headers)) {
      problems.push('headers must be an object of header names to string values');
    } else {
      const entries = Object.entries(headers);
      if (entries.length > MAX_HEADERS) problems.push(`headers may hold at most ${MAX_HEADERS} headers`);
      const seen = new Set<string>();
      for (const [hName, value] of entries) {
        const lower = hName.toLowerCase();
        if (!HEADER_NAME.test(hName)) {
          problems.push(`headers.${hName} is not a valid header name (letters, digits and !#$%&'*+.^_\`|~- only)`);
          continue;
        }
        if (RESERVED_HEADERS.has(lower)) {
          problems.push(`headers.${hName} cannot be set: Outrigger sets it itself`);
          continue;
        }
        if (seen.has(lower)) problems.push(`headers.${hName} appears twice (header names are case-insensitive)`);
        seen.add(lower);
        if (typeof value !== 'string') problems.push(`headers.${hName} must be a string (got ${typeName(value)})`);
        else if (headerFieldProblem(hName, value)) problems.push(`headers.${hName}: ${headerFieldProblem(hName, value)!}`);
        else if (value.length > MAX_HEADER_VALUE_CHARS) problems.push(`headers.${hName} must be at most ${MAX_HEADER_VALUE_CHARS} characters`);
      }
    }
  }

  if (has(input, 'transform')) {
    const transform = input.transform;
    if (!isPlainObject(transform)) {
      problems.push('transform must be an object {enabled, template}');
    } else {
      for (const key of Object.keys(transform)) {
        if (!TRANSFORM_FIELDS.includes(key)) problems.push(`transform.${key} is not a transform field (allowed: enabled, template)`);
      }
      if (has(transform, 'enabled') && typeof transform.enabled !== 'boolean') problems.push('transform.enabled must be true or false');
      const enabled = typeof transform.enabled === 'boolean' ? transform.enabled : true;
      if (has(transform, 'template')) {
        if (checkTemplate(problems, 'transform.template', transform.template) && enabled && transform.template.trim() === '') {
          problems.push('transform.template must not be empty while transform.enabled is true');
        }
      } else if (enabled) {
        problems.push('transform.template is required while transform.enabled is true');
      }
    }
  }

  if (has(input, 'secret')) {
    const problem = webhookSecretProblem(input.secret);
    if (problem) problems.push(`secret ${problem}`);
  }
}

function checkEmailFields(input: Record<string, unknown>, problems: string[]): EmailSettings | undefined {
  const email = input.email;
  if (email === undefined) {
    problems.push('email is required for an email webhook: {to, cc?, subject, bodyType, bodyTemplate}');
    return undefined;
  }
  if (!isPlainObject(email)) {
    problems.push('email must be an object {to, cc?, subject, bodyType, bodyTemplate}');
    return undefined;
  }
  for (const key of Object.keys(email)) {
    if (!EMAIL_SETTINGS_FIELDS.includes(key)) problems.push(`email.${key} is not an email field (allowed: ${EMAIL_SETTINGS_FIELDS.join(', ')})`);
  }
  const to = checkAddressList(problems, 'email.to', email.to, true);
  const cc = checkAddressList(problems, 'email.cc', email.cc, false);
  if ((to?.length ?? 0) + (cc?.length ?? 0) > MAX_RECIPIENTS) {
    problems.push(`email.to and email.cc together may name at most ${MAX_RECIPIENTS} recipients`);
  }

  const subject = email.subject;
  if (subject === undefined) problems.push('email.subject is required: a Mustache template for the subject line');
  else if (typeof subject === 'string' && subject.length > MAX_SUBJECT_CHARS) problems.push(`email.subject must be at most ${MAX_SUBJECT_CHARS} characters`);
  else checkTemplate(problems, 'email.subject', subject);

  const bodyType = email.bodyType;
  if (bodyType === undefined) problems.push('email.bodyType is required: "json" or "html"');
  else if (bodyType !== 'json' && bodyType !== 'html') problems.push(`email.bodyType must be "json" or "html" (got ${JSON.stringify(bodyType)})`);

  const bodyTemplate = email.bodyTemplate;
  if (bodyTemplate === undefined) problems.push('email.bodyTemplate is required: a Mustache template for the body');
  else checkTemplate(problems, 'email.bodyTemplate', bodyTemplate);

  if (problems.length > 0) return undefined;
  return {
    to: [...(to ?? [])],
    ...(cc !== undefined ? { cc: [...cc] } : {}),
    subject: subject as string,
    bodyType: bodyType as 'json' | 'html',
    bodyTemplate: bodyTemplate as string,
  };
}

/** The document as a non-admin may see it (SPEC §7.1: the secret is readable by admins only). */
export function withoutSecret<T extends { secret?: unknown }>(doc: T): Omit<T, 'secret'> {
  const copy = { ...doc };
  delete copy.secret;
  return copy;
}

/** `?search=` of the webhook list: case-insensitive substring of name, condition or url. */
export function matchesWebhookSearch(doc: WebhookDocument, term: string): boolean {
  const t = term.toLowerCase();
  if (t === '') return true;
  return (
    doc.name.toLowerCase().includes(t) ||
    doc.condition.toLowerCase().includes(t) ||
    (doc.type === 'http' && doc.url.toLowerCase().includes(t))
  );
}
