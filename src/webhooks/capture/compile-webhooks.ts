/**
 * The observer's view of the stored webhooks: each condition parsed once per definition change,
 * never per request, and a parse kept while any webhook still uses its text. A condition that
 * does not parse is logged once and kept as its error: that webhook never fires until fixed.
 */
import { parseCondition, type Condition } from '../../condition/index.js';
import type { Logger } from '../../observability/logger.js';
import type { WebhookDocument } from '../webhook.js';
import type { CompiledWebhook, CompiledWebhooks } from './observer.js';

/** A compiler for a store's loads: give it every document, it answers the compiled set sorted by id. */
export function createWebhookCompiler(logger: Logger): (docs: ReadonlyMap<string, WebhookDocument>) => CompiledWebhooks {
  const cache = new Map<string, Condition | string>();
  return (docs) => {
    const all: CompiledWebhook[] = [];
    const seen = new Set<string>();
    for (const doc of docs.values()) {
      if (typeof doc.condition !== 'string') continue;
      seen.add(doc.condition);
      let parsed = cache.get(doc.condition);
      if (parsed === undefined) {
        try {
          parsed = parseCondition(doc.condition);
        } catch (error) {
          parsed = (error as Error).message;
          logger.error({ webhook: doc._id, err: parsed }, 'a stored webhook condition cannot be parsed; the webhook never fires until it is fixed');
        }
        cache.set(doc.condition, parsed);
      }
      all.push({
        id: doc._id,
        name: String(doc.name),
        enabled: doc.enabled !== false,
        condition: typeof parsed === 'string' ? null : parsed,
        ...(typeof parsed === 'string' ? { conditionError: parsed } : {}),
      });
    }
    for (const text of cache.keys()) if (!seen.has(text)) cache.delete(text);
    all.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    return { all, enabled: all.filter((w) => w.enabled) };
  };
}
