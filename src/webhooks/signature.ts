/**
 * Standard Webhooks signing (https://www.standardwebhooks.com, spec v1; notes/webhooks.md §B.1).
 *
 * Signed content: `<webhook-id>.<webhook-timestamp>.<raw body>`, HMAC-SHA256 keyed with the
 * base64-decoded part of the `whsec_...` secret, serialised as `v1,<base64>`. Receivers verify
 * with any Standard Webhooks library (`new Webhook(secret).verify(body, headers)`).
 *
 * `webhook-id` must be stable across retries of one delivery (the receiver's idempotency key)
 * and `webhook-timestamp` is the time of this attempt, in seconds.
 */
import { createHmac, createSecretKey, hash, randomBytes, type KeyObject } from 'node:crypto';
import { OutriggerError } from '../errors.js';

export const SECRET_PREFIX = 'whsec_';
const MIN_SECRET_BYTES = 24;
const MAX_SECRET_BYTES = 64;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/** A new secret: `whsec_` + base64 of 32 random bytes. */
export function generateWebhookSecret(bytes = 32): string {
  const n = Math.min(MAX_SECRET_BYTES, Math.max(MIN_SECRET_BYTES, Math.floor(bytes)));
  return SECRET_PREFIX + randomBytes(n).toString('base64');
}

/**
 * Why `secret` is not a usable signing secret, or null. Accepted: `whsec_` + standard base64 of
 * 24 to 64 bytes (what `generateWebhookSecret` and other Standard Webhooks senders produce).
 */
export function webhookSecretProblem(secret: unknown): string | null {
  if (typeof secret !== 'string') return 'must be a string starting with whsec_';
  if (!secret.startsWith(SECRET_PREFIX)) return 'must start with whsec_ (omit it to have one generated)';
  const b64 = secret.slice(SECRET_PREFIX.length);
  if (b64.length % 4 !== 0 || !BASE64.test(b64)) return 'must be whsec_ followed by standard base64';
  const len = Buffer.from(b64, 'base64').length;
  if (len < MIN_SECRET_BYTES || len > MAX_SECRET_BYTES) {
    return `must encode ${MIN_SECRET_BYTES} to ${MAX_SECRET_BYTES} random bytes (this one has ${len})`;
  }
  return null;
}

/**
 * Keys by secret: a webhook's secret is checked and decoded once, not on every attempt. Kept as
 * KeyObjects: given a Buffer, Node 24's createHmac first asks whether it is a KeyObject or a
 * CryptoKey by reading their private slots and catching the two exceptions that throws, which
 * cost a delivery more than the HMAC itself (17% of the worker's CPU, measured on Node 24.21).
 */
const decodedKeys = new Map<string, KeyObject>();

function secretKey(secret: string): KeyObject {
  const cached = decodedKeys.get(secret);
  if (cached) return cached;
  const problem = webhookSecretProblem(secret);
  if (problem) throw new OutriggerError(500, 'WEBHOOK_SECRET_INVALID', `the webhook's secret ${problem}`);
  const key = createSecretKey(Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64'));
  if (decodedKeys.size >= 1000) decodedKeys.clear();
  decodedKeys.set(secret, key);
  return key;
}

export interface SignInput {
  readonly secret: string;
  /** `webhook-id`; must not contain `.` */
  readonly msgId: string;
  /** `webhook-timestamp`, integer Unix seconds. */
  readonly timestamp: number;
  /** The exact bytes that are sent. */
  readonly body: string | Uint8Array;
}

function checkIdAndTimestamp(msgId: string, timestamp: number): void {
  if (typeof msgId !== 'string' || msgId === '' || msgId.includes('.')) {
    throw new OutriggerError(500, 'WEBHOOK_ID_INVALID', 'webhook-id must be a non-empty string without "."');
  }
  if (!Number.isSafeInteger(timestamp) || timestamp < 0) {
    throw new OutriggerError(500, 'WEBHOOK_TIMESTAMP_INVALID', 'webhook-timestamp must be a non-negative integer number of seconds');
  }
}

/** `v1,<base64 HMAC-SHA256 of msgId.timestamp.body>`. */
export function signPayload({ secret, msgId, timestamp, body }: SignInput): string {
  checkIdAndTimestamp(msgId, timestamp);
  const hmac = createHmac('sha256', secretKey(secret));
  hmac.update(`${msgId}.${timestamp}.`);
  // A string is hashed as its UTF-8 bytes without first being copied into a Buffer.
  hmac.update(body);
  return `v1,${hmac.digest('base64')}`;
}

export interface StandardWebhookHeaders {
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
}

export interface HeaderInput {
  readonly secret: string;
  readonly msgId: string;
  readonly body: string | Uint8Array;
  /** Seconds; defaults to now. */
  readonly timestamp?: number;
}

/** The three Standard Webhooks headers for one attempt. */
export function buildStandardWebhookHeaders({ secret, msgId, body, timestamp }: HeaderInput): StandardWebhookHeaders {
  const ts = timestamp ?? Math.floor(Date.now() / 1000);
  return {
    'webhook-id': msgId,
    'webhook-timestamp': String(ts),
    'webhook-signature': signPayload({ secret, msgId, timestamp: ts, body }),
  };
}

/**
 * A `webhook-id` for the delivery of one event to one webhook: the same on every retry and on
 * every redelivery of the event (at-least-once), different for each webhook. `msg_` + 32
 * base64url characters of SHA-256(eventId NUL webhookId); never contains `.`.
 */
export function deliveryMessageId(eventId: string, webhookId: string): string {
  const digest = hash('sha256', `${eventId}\u0000${webhookId}`, 'base64url');
  return `msg_${digest.slice(0, 32)}`;
}
