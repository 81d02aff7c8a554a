/**
 * The one validation every webhook write goes through (HTTP routes, test sends, `apply`,
 * bootstrap, `outrigger check`), and the `webhooks` section of setup files built on it. Without
 * a store it only validates: `outrigger check` takes this stage alone, never the worker.
 */
import { parseCondition, ConditionSyntaxError } from '../../condition/index.js';
import type { OutriggerConfig } from '../../config/types.js';
import type { Validation } from '../../http/document-routes.js';
import type { HostLookup } from '../../net/ssrf-guard/index.js';
import type { SetupKind } from '../../setup/setup-kind.js';
import type { DocumentStore, StoredDocument } from '../../store/document-store.js';
import type { WebhookDocument, WebhookValidation } from '../webhook.js';
import { validateWebhookDocument } from './validate.js';

/** Ids that name sub-routes of /_admin/webhooks and so cannot be webhook ids. */
const RESERVED_IDS = new Set(['test', 'recording']);

/** Write-time condition check: the parser's message with the position, or null. */
function webhookConditionProblem(text: string): string | null {
  try {
    parseCondition(text);
    return null;
  } catch (error) {
    if (error instanceof ConditionSyntaxError) return `${error.message} (at position ${error.position})`;
    throw error;
  }
}

export interface WebhookValidatorOptions {
  lookup?: HostLookup;
  /** `outrigger check`: no DNS resolution of URLs (literal addresses are still checked). */
  offline?: boolean;
}

/** The one validation every write goes through: HTTP routes, test sends, `apply`, bootstrap, `check`. */
export function webhookValidator(config: OutriggerConfig, options: WebhookValidatorOptions = {}) {
  return async (candidate: Record<string, unknown>, existing: WebhookDocument | StoredDocument | undefined): Promise<WebhookValidation> => {
    if (typeof candidate._id === 'string' && RESERVED_IDS.has(candidate._id))
      return { ok: false, problems: [`_id ${JSON.stringify(candidate._id)} is reserved (it names a route under /_admin/webhooks); choose another`] };
    return validateWebhookDocument(candidate, {
      validateCondition: webhookConditionProblem,
      allowPrivateTargets: config.webhooks.allowPrivateTargets,
      lookup: options.lookup,
      existing: existing as WebhookDocument | undefined,
      skipUrlResolution: options.offline ?? false,
    });
  };
}

/** The `webhooks` section of setup files; without a store it only validates (`outrigger check`). */
export function webhookSetupKind(config: OutriggerConfig, store?: DocumentStore<WebhookDocument>, options: WebhookValidatorOptions = {}): SetupKind {
  const validate = webhookValidator(config, { ...options, offline: options.offline ?? !store });
  return {
    section: 'webhooks',
    noun: 'webhook',
    store: store as unknown as SetupKind['store'],
    async validate(candidate, existing) {
      const result = await validate(candidate, existing);
      // Re-applying the same file must report "unchanged": keep the stored updatedAt when nothing else differs.
      if (result.ok && existing && sameExceptUpdatedAt(existing, result.doc)) result.doc.updatedAt = existing.updatedAt as WebhookDocument['updatedAt'];
      return result as unknown as Validation<StoredDocument>;
    },
  };
}

function sameExceptUpdatedAt(a: StoredDocument, b: WebhookDocument): boolean {
  const { updatedAt: _a, ...restA } = a;
  const { updatedAt: _b, ...restB } = b;
  void _a;
  void _b;
  return JSON.stringify(sortKeys(restA)) === JSON.stringify(sortKeys(restB));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value && typeof value === 'object')
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((k) => [k, sortKeys((value as Record<string, unknown>)[k])]),
    );
  return value;
}
