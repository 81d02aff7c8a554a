/**
 * The webhooks feature, wired (SPEC §7): documents in a DocumentStore (compiled once per change
 * for the observer), the admin area, the observer and its event producer (when this process
 * serves HTTP), the worker (when it delivers), and the `webhooks` section of setup files.
 */
import type { AppContext } from '../app-context.js';
import { parseCondition, ConditionSyntaxError, type Condition } from '../condition/index.js';
import type { OutriggerConfig } from '../config/types.js';
import type { FeatureModule, FeatureModuleOptions } from '../feature-module.js';
import type { Validation } from '../http/document-routes.js';
import type { SetupKind } from '../setup/setup-kind.js';
import { DocumentStore, type StoredDocument } from '../store/document-store.js';
import type { buildConnector } from 'undici';
import { createAutoDisable } from './auto-disable.js';
import { Deliverer } from './delivery.js';
import { EmailAllowance } from './email-allowance.js';
import { EventProducer } from './event-producer.js';
import { WebhookLogStore } from './log-store.js';
import { CAPTURE_SECRET_HEADERS, WebhookObserver, type CompiledWebhook, type CompiledWebhooks } from './observer.js';
import { Recording, RECORDING_MAX_ENTRIES, RECORDING_TTL_MS } from './recording.js';
import { createHeaderRedactor } from './redaction.js';
import { Redelivery } from './redelivery.js';
import { createWebhookRoutes } from './routes.js';
import type { HostLookup } from '../net/ssrf-guard/index.js';
import { validateWebhookDocument } from './webhook-document.js';
import type { WebhookDocument, WebhookValidation } from './webhook.js';
import { WebhookWorker, type WebhookWorkerOptions } from './worker.js';

/** Ids that name sub-routes of /_admin/webhooks and so cannot be webhook ids. */
const RESERVED_IDS = new Set(['test', 'recording']);

/** Write-time condition check: the parser's message with the position, or null. */
export function webhookConditionProblem(text: string): string | null {
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
  if (value && typeof value === 'object') return Object.fromEntries(Object.keys(value).sort().map((k) => [k, sortKeys((value as Record<string, unknown>)[k])]));
  return value;
}

export interface WebhooksInternals {
  store: DocumentStore<WebhookDocument>;
  logs: WebhookLogStore;
  recording: Recording;
  producer: EventProducer;
  deliverer: Deliverer;
  observer: WebhookObserver;
  worker: WebhookWorker | null;
  /** Builds another worker on this process's connections (tests: a second worker, a crash). */
  createWorker(overrides?: Partial<WebhookWorkerOptions>): WebhookWorker;
  compiled(): CompiledWebhooks;
}

export interface WebhooksModule extends FeatureModule {
  internals: WebhooksInternals;
}

export interface WebhooksModuleExtras {
  /** Resolver for the SSRF guard at write and at send (tests). */
  lookup?: HostLookup;
  /** Socket opener behind the SSRF guard (tests watch connects with it). */
  socketConnector?: buildConnector.connector;
}

export async function createWebhooksModule(context: AppContext, options: FeatureModuleOptions, extras: WebhooksModuleExtras = {}): Promise<WebhooksModule> {
  const { config, redis, keys, bus, logger, metrics, features } = context;
  const settings = config.webhooks;
  const store = new DocumentStore<WebhookDocument>(redis, bus, 'webhooks', keys.webhooks, keys.webhooksVersion);
  const retentionMs = settings.logRetentionSeconds !== null ? settings.logRetentionSeconds * 1000 : settings.logRetentionDays * 86_400_000;
  const logs = new WebhookLogStore(redis, keys, retentionMs);
  const recording = new Recording(redis, keys, bus, settings.recordingSeconds * 1000);
  const validate = webhookValidator(config, { lookup: extras.lookup });
  const secretHeaders = [...CAPTURE_SECRET_HEADERS, ...config.log.secretHeaders];
  const redact = createHeaderRedactor(secretHeaders);
  const deliverer = new Deliverer({
    serviceId: config.service.id,
    webhooks: settings,
    secretHeaders,
    allowance: new EmailAllowance(redis, keys, settings.email.dailyAllowance),
    logger,
    lookup: extras.lookup,
    socketConnector: extras.socketConnector,
  });

  // Conditions are parsed once per definition change, never per request.
  let compiled: CompiledWebhooks = { all: [], enabled: [] };
  const cache = new Map<string, Condition | string>();
  store.onLoaded((docs) => {
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
    compiled = { all, enabled: all.filter((w) => w.enabled) };
    // Starting or stopping a recording is announced as a webhooks change (see recording.ts).
    recording.changed();
  });

  const producer = new EventProducer({
    redis,
    keys,
    capacity: settings.queueCapacity,
    streamMaxLength: settings.streamMaxLength,
    recordingMaxEntries: RECORDING_MAX_ENTRIES,
    recordingTtlMs: RECORDING_TTL_MS,
    metrics,
    logger,
    waitForReplicas: config.redis.waitForReplicas,
  });
  const observer = new WebhookObserver({
    serviceId: config.service.id,
    captureBytes: settings.captureBodyBytes,
    secretHeaders: config.log.secretHeaders,
    keysPath: config.routes.keys,
    webhooksEnabled: () => features.enabled('webhooks'),
    webhooks: () => compiled,
    recordingActive: (now) => recording.isActive(now),
    exchangeFor: context.exchangeFor,
    producer,
  });

  const autoDisable = createAutoDisable({
    store,
    logger,
    metrics,
    alertEmail: settings.alertEmail,
    serviceId: config.service.id,
    sendNotice: (to, subject, text) => deliverer.sendNotice(to, subject, text),
  });
  const createWorker = (overrides: Partial<WebhookWorkerOptions> = {}) =>
    new WebhookWorker({
      redis,
      openBlockingConnection: (blockMs) => context.connections.blocking('webhook-worker', blockMs),
      keys,
      webhook: (id) => store.get(id),
      enabled: () => features.enabled('webhooks'),
      deliverer,
      logs,
      logger,
      metrics,
      retrySchedule: settings.retrySchedule,
      reclaimIdleMs: settings.reclaimIdleMs,
      disableAfterFailures: settings.disableAfterFailures,
      onAutoDisable: autoDisable,
      ...overrides,
    });
  const worker = options.worker ? createWorker() : null;

  const area = createWebhookRoutes({
    serviceId: config.service.id,
    store,
    logs,
    recording,
    redelivery: new Redelivery({ redis, keys, retentionMs, reclaimIdleMs: settings.reclaimIdleMs, webhook: (id) => store.fetch(id) }),
    isAdmin: (principal) => context.acl.isAdmin(principal),
    validate,
    deliverer,
    redact,
  });

  const internals: WebhooksInternals = { store, logs, recording, producer, deliverer, observer, worker, createWorker, compiled: () => compiled };
  return {
    name: 'webhooks',
    adminAreas: { webhooks: area },
    ...(options.serve ? { observer } : {}),
    setupKinds: [webhookSetupKind(config, store, { lookup: extras.lookup })],
    internals,
    async start() {
      await store.start();
      if (options.serve) await recording.start();
      worker?.start();
      if (worker) context.logger.info({ enabled: context.features.enabled('webhooks'), retrySchedule: config.webhooks.retrySchedule }, 'webhook worker started');
    },
    async stop() {
      // SIGTERM: the server has stopped taking requests; write what the observer queued.
      await producer.drain(10_000);
      producer.close();
      await worker?.stop();
      recording.stop();
      store.stop();
      await deliverer.close();
    },
  };
}
