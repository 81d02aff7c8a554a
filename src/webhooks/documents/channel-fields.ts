/**
 * The fields of each kind of webhook, checked for validate.ts: an HTTP webhook's timeout,
 * headers, transform and secret, an e-mail webhook's recipients, subject and body template.
 * Headers that Outrigger controls (`webhook-*`, framing and hop-by-hop headers, Host) are
 * refused in `headers`; at most 50 recipients (to + cc) per e-mail webhook; `email.bodyType`
 * is required (no default: it decides the escaping).
 */
import { headerFieldProblem } from '../../input-limits/http-field.js';
import { webhookSecretProblem } from '../signature.js';
import { templateSyntaxProblem } from '../template/index.js';
import type { EmailSettings } from '../webhook.js';
import { isJsonObject } from '../../util/objects.js';

const TIMEOUT_MS_MIN = 1000;
const TIMEOUT_MS_MAX = 30000;
export const TIMEOUT_MS_DEFAULT = 5000;
const MAX_TEMPLATE_CHARS = 100 * 1024;
const MAX_RECIPIENTS = 50;
const MAX_HEADERS = 50;
const MAX_HEADER_VALUE_CHARS = 8192;
const MAX_SUBJECT_CHARS = 500;
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

export function has(obj: Record<string, unknown>, key: string): boolean {
  return Object.prototype.hasOwnProperty.call(obj, key);
}

export function typeName(value: unknown): string {
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

/** Checks timeout_ms, headers, transform and secret, pushing problems. */
export function checkHttpFields(input: Record<string, unknown>, problems: string[]): void {
  if (has(input, 'timeout_ms')) {
    const t = input.timeout_ms;
    if (typeof t !== 'number' || !Number.isInteger(t) || t < TIMEOUT_MS_MIN || t > TIMEOUT_MS_MAX) {
      problems.push(`timeout_ms must be an integer from ${TIMEOUT_MS_MIN} to ${TIMEOUT_MS_MAX} (milliseconds)`);
    }
  }

  if (has(input, 'headers')) {
    const headers = input.headers;
    if (!isJsonObject(headers)) {
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
    if (!isJsonObject(transform)) {
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

export function checkEmailFields(input: Record<string, unknown>, problems: string[]): EmailSettings | undefined {
  const email = input.email;
  if (email === undefined) {
    problems.push('email is required for an email webhook: {to, cc?, subject, bodyType, bodyTemplate}');
    return undefined;
  }
  if (!isJsonObject(email)) {
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
