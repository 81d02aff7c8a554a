/**
 * The documents stage: a webhook document checked at every write (validate.ts, the fields of
 * each kind in channel-fields.ts), and the setup kind and validator built on it (setup-kind.ts).
 */
export { emailAddressProblem } from './channel-fields.js';
export { webhookSetupKind, webhookValidator } from './setup-kind.js';
export { matchesWebhookSearch, validateWebhookDocument, withoutSecret, type WebhookValidationOptions } from './validate.js';
