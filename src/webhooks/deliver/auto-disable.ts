/**
 * Failing targets (SPEC §7.1): a webhook whose last `webhooks.disableAfterFailures` events all
 * ended `failed` is disabled, with `disabledReason` and `disabledAt`, a warn log, a metric and,
 * when `webhooks.alertEmail` is set, an e-mail. The worker counts (outcome.ts); this writes.
 *
 * The count belongs to the webhook's version (its `updatedAt`): the disable itself and any later
 * write, re-enabling included, start from zero. The disable is skipped when the webhook changed
 * since the counted version (someone fixed it meanwhile) or is disabled already.
 */
import type { Logger } from '../../observability/logger.js';
import type { Metrics } from '../../observability/metrics.js';
import type { DocumentStore } from '../../store/document-store.js';
import type { WebhookDocument } from '../webhook.js';

export interface AutoDisableOptions {
  store: DocumentStore<WebhookDocument>;
  logger: Logger;
  metrics: Metrics;
  alertEmail: string | null;
  serviceId: string;
  sendNotice(to: string, subject: string, text: string): Promise<void>;
}

export function createAutoDisable(o: AutoDisableOptions) {
  return async (webhookId: string, version: string, failures: number): Promise<void> => {
    const doc = await o.store.fetch(webhookId);
    if (!doc || !doc.enabled || String(doc.updatedAt?.$date ?? 0) !== version) return;
    const now = Date.now();
    const reason = `disabled automatically after ${failures} consecutive events ended failed (webhooks.disableAfterFailures)`;
    await o.store.put({ ...doc, enabled: false, disabledReason: reason, disabledAt: { $date: now }, updatedAt: { $date: now } });
    o.metrics.webhooksAutoDisabled.inc({ type: doc.type });
    o.logger.warn({ webhook: webhookId, name: doc.name, failures }, 'a webhook was disabled after consecutive failed events; enable it again once its target works');
    if (!o.alertEmail) return;
    const subject = `[Outrigger ${o.serviceId}] webhook "${doc.name}" was disabled`;
    const text =
      `The webhook "${doc.name}" (${webhookId}) of service ${o.serviceId} was disabled at ${new Date(now).toISOString()}:\n` +
      `${reason}.\n\nIts logs show why the deliveries failed. Enabling it again (PATCH {"enabled": true}) restarts the count.\n`;
    await o
      .sendNotice(o.alertEmail, subject, text)
      .catch((error: unknown) => o.logger.error({ err: String(error), webhook: webhookId }, 'could not e-mail the notice of a disabled webhook to webhooks.alertEmail'));
  };
}
