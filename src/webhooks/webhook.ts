/**
 * A webhook as stored (SPEC §7.1), the shape every stage reads: the documents stage validates it,
 * the worker delivers by it, the routes show it. `WebhookRef` is what a payload or a template
 * names of it.
 */
import type { EpochDate } from '../util/epoch-date.js';

// Type aliases rather than interfaces, so documents are assignable to the store's
// `StoredDocument` (`{_id: string; [field: string]: unknown}`).
type WebhookCommon = {
  _id: string;
  name: string;
  condition: string;
  enabled: boolean;
  /** At most this many deliveries start per second; the excess waits in the retry set. */
  maxPerSecond?: number;
  /** Replaces `webhooks.retrySchedule` for this webhook: delays as seconds or strings like 5s, 1m. */
  retrySchedule?: Array<number | string>;
  /** Why the webhook was disabled automatically (kept while it stays disabled). */
  disabledReason?: string;
  disabledAt?: EpochDate;
  createdAt: EpochDate;
  updatedAt: EpochDate;
};

export type WebhookTransform = {
  enabled: boolean;
  template?: string;
};

export type HttpWebhookDocument = WebhookCommon & {
  type: 'http';
  url: string;
  timeout_ms: number;
  headers: Record<string, string>;
  transform?: WebhookTransform;
  secret: string;
};

export type EmailSettings = {
  to: string[];
  cc?: string[];
  subject: string;
  bodyType: 'json' | 'html';
  bodyTemplate: string;
};

export type EmailWebhookDocument = WebhookCommon & {
  type: 'email';
  email: EmailSettings;
};

export type WebhookDocument = HttpWebhookDocument | EmailWebhookDocument;

export type WebhookValidation = { ok: true; doc: WebhookDocument } | { ok: false; problems: string[] };

/** A webhook as a payload or a template view names it. */
export interface WebhookRef {
  readonly id: string;
  readonly name: string;
}
