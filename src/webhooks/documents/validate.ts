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
 * - an HTTP webhook's body template is rendered in JSON mode unless `headers` set a non-JSON
 *   Content-Type (then it is sent as written, unescaped).
 * The fields of each kind (HTTP, e-mail) are checked in channel-fields.ts.
 */
import { randomBytes } from 'node:crypto';
import { checkWebhookUrlAtWrite, type HostLookup } from '../../net/ssrf-guard/index.js';
import { generateWebhookSecret, webhookSecretProblem } from '../signature.js';
import { parseRetryDelay, RETRY_SCHEDULE_MAX_LENGTH } from '../../config/retry-schedule.js';
import type { ParsedCidrs } from '../../net/cidr.js';
import type { EpochDate } from '../../util/epoch-date.js';
import type { HttpWebhookDocument, WebhookDocument, WebhookValidation } from '../webhook.js';
import { checkEmailFields, checkHttpFields, has, typeName } from './channel-fields.js';
import { isJsonObject } from '../../util/objects.js';

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

const TIMEOUT_MS_DEFAULT = 5000;
const MAX_NAME_CHARS = 200;
const MAX_CONDITION_CHARS = 10_000;
const MAX_URL_CHARS = 2048;
const ID_PATTERN = /^[A-Za-z0-9._~:@-]{1,128}$/;

const COMMON_FIELDS = ['_id', 'name', 'type', 'condition', 'enabled', 'maxPerSecond', 'retrySchedule', 'disabledReason', 'disabledAt', 'createdAt', 'updatedAt'];
const MAX_PER_SECOND_MAX = 10_000;
const MAX_DISABLED_REASON_CHARS = 500;
const HTTP_FIELDS = ['url', 'timeout_ms', 'headers', 'transform', 'secret'];
const EMAIL_FIELDS = ['email'];

/**
 * Validates a candidate webhook document. Never throws for bad input; resolves to the complete
 * document (defaults filled) or to every problem found.
 */
export async function validateWebhookDocument(input: unknown, options: WebhookValidationOptions): Promise<WebhookValidation> {
  if (!isJsonObject(input)) return { ok: false, problems: [`must be a JSON object (got ${typeName(input)})`] };
  const problems: string[] = [];
  const now = options.now ?? Date.now();

  // Type first: it decides which fields exist.
  const type = input.type;
  const typeOk = type === 'http' || type === 'email';
  if (!has(input, 'type')) problems.push('type is required: "http" or "email"');
  else if (!typeOk) problems.push(`type must be "http" or "email" (got ${JSON.stringify(type)})`);

  checkFieldNames(input, type, problems);

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

  checkDeliveryPacing(input, problems);
  const keepDisabled = disabledState(input, enabled, problems);

  const existingCreated = options.existing?.createdAt;
  const createdAt: EpochDate = isJsonObject(existingCreated) && typeof existingCreated.$date === 'number' ? { $date: existingCreated.$date } : { $date: now };
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

  if (type === 'http') return httpDocument(input, common, options, problems);

  if (type === 'email') {
    const email = checkEmailFields(input, problems);
    if (problems.length > 0 || !email) return { ok: false, problems };
    return { ok: true, doc: { ...common, type: 'email', email } };
  }

  return { ok: false, problems };
}

/** Which fields a webhook of this type may have: the common ones and its channel's. */
function checkFieldNames(input: Record<string, unknown>, type: unknown, problems: string[]): void {
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
}

/** maxPerSecond and retrySchedule (SPEC §7.1: failing targets). */
function checkDeliveryPacing(input: Record<string, unknown>, problems: string[]): void {
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
        if (parseRetryDelay(item) === null) problems.push(`retrySchedule[${i}] must be a delay from 10ms to 7d, as seconds or a string like 200ms, 5s, 1m, 1h (got ${JSON.stringify(item)})`);
      });
  }
}

/** disabledReason / disabledAt: written by the automatic disable, kept while the webhook stays disabled. */
function disabledState(input: Record<string, unknown>, enabled: boolean, problems: string[]): { disabledReason?: string; disabledAt?: EpochDate } {
  const disabledReason = input.disabledReason;
  const disabledAt = input.disabledAt;
  if (has(input, 'disabledReason') && (typeof disabledReason !== 'string' || disabledReason.length > MAX_DISABLED_REASON_CHARS))
    problems.push(`disabledReason must be a string of at most ${MAX_DISABLED_REASON_CHARS} characters`);
  if (has(input, 'disabledAt') && !(isJsonObject(disabledAt) && typeof disabledAt.$date === 'number')) problems.push('disabledAt must be a date {"$date": <epoch ms>}');
  return !enabled && typeof disabledReason === 'string'
    ? { disabledReason, ...(isJsonObject(disabledAt) && typeof disabledAt.$date === 'number' ? { disabledAt: { $date: disabledAt.$date } } : {}) }
    : {};
}

/** The http channel's fields, its target checked at write time, and the document with its defaults. */
async function httpDocument(
  input: Record<string, unknown>,
  common: Omit<HttpWebhookDocument, 'type' | 'url' | 'timeout_ms' | 'headers' | 'transform' | 'secret'>,
  options: WebhookValidationOptions,
  problems: string[],
): Promise<WebhookValidation> {
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
    secret: typeof input.secret === 'string' ? input.secret : typeof existingSecret === 'string' && webhookSecretProblem(existingSecret) === null ? existingSecret : generateWebhookSecret(),
  };
  return { ok: true, doc };
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
  return doc.name.toLowerCase().includes(t) || doc.condition.toLowerCase().includes(t) || (doc.type === 'http' && doc.url.toLowerCase().includes(t));
}
