/**
 * The webhooks feature, wired (SPEC §7): documents in a DocumentStore (compiled once per change
 * for the observer), the admin area, the observer and its event producer (when this process
 * serves HTTP), the worker (when it delivers), and the `webhooks` section of setup files. It
 * imports every stage (README.md has the order); no stage imports it.
 */
import type { AppContext } from '../app-context.js';
import type { FeatureModule, FeatureModuleOptions } from '../feature-module.js';
import type { HostLookup } from '../net/ssrf-guard/index.js';
import { DocumentStore } from '../store/document-store.js';
import type { buildConnector } from 'undici';
import { webhookSetupKind, webhookValidator } from './documents/index.js';
import { CAPTURE_SECRET_HEADERS, WebhookObserver, type CompiledWebhooks } from './capture/observer.js';
import { createWebhookCompiler } from './capture/compile-webhooks.js';
import { EventProducer } from './capture/event-producer.js';
import { Recording, RECORDING_MAX_ENTRIES, RECORDING_TTL_MS } from './capture/recording.js';
import { createHeaderRedactor } from './capture/redaction.js';
import { WebhookLogStore } from './logs/log-store.js';
import { Deliverer } from './deliver/attempt/deliverer.js';
import { createAutoDisable } from './deliver/auto-disable.js';
import { EmailAllowance } from './deliver/attempt/email-allowance.js';
import { WebhookWorker, type WebhookWorkerOptions } from './deliver/worker.js';
import { createWebhookRoutes } from './routes/admin-routes.js';
import { Redelivery } from './routes/redelivery.js';
import type { WebhookDocument } from './webhook.js';

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
  const store = new DocumentStore<WebhookDocument>(redis, bus, 'webhooks', keys.webhooks, keys.webhooksVersion, context.documentPollMs);
  const retentionMs = settings.logRetentionSeconds !== null ? settings.logRetentionSeconds * 1000 : settings.logRetentionDays * 86_400_000;
  const logs = new WebhookLogStore(redis, keys, retentionMs);
  const recording = new Recording(redis, keys, bus, settings.recordingSeconds * 1000);
  const validate = webhookValidator(config, { lookup: extras.lookup });
  const secretHeaders = [...CAPTURE_SECRET_HEADERS, ...config.log.secretHeaders];
  const redact = createHeaderRedactor(secretHeaders);
  const deliverer = createDeliverer(context, secretHeaders, extras);

  // Conditions are parsed once per definition change, never per request.
  let compiled: CompiledWebhooks = { all: [], enabled: [] };
  const compile = createWebhookCompiler(logger);
  store.onLoaded((docs) => {
    compiled = compile(docs);
    // Starting or stopping a recording is announced as a webhooks change (see capture/recording.ts).
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

  const createWorker = workerFactory(context, { store, deliverer, logs });
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
    // The shutdown sequence's steps (src/shutdown.ts): the worker stops taking work as the server
    // stops accepting; the tee's queue is written once the in-flight requests are done.
    ...(worker ? { stopAccepting: (timeoutMs: number) => worker.stop(timeoutMs) } : {}),
    ...(options.serve ? { flush: (timeoutMs: number) => producer.drain(timeoutMs) } : {}),
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

/** Builds a worker on this process's connections: the module's own, or another (tests: a second worker, a crash). */
function workerFactory(
  context: AppContext,
  { store, deliverer, logs }: { store: DocumentStore<WebhookDocument>; deliverer: Deliverer; logs: WebhookLogStore },
): (overrides?: Partial<WebhookWorkerOptions>) => WebhookWorker {
  const { config, redis, keys, logger, metrics, features } = context;
  const settings = config.webhooks;
  const autoDisable = createAutoDisable({
    store,
    logger,
    metrics,
    alertEmail: settings.alertEmail,
    serviceId: config.service.id,
    sendNotice: (to, subject, text) => deliverer.sendNotice(to, subject, text),
  });
  return (overrides = {}) =>
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
}

/** What sends: HTTP through the SSRF guard, email within the daily allowance. */
function createDeliverer(context: AppContext, secretHeaders: string[], extras: WebhooksModuleExtras): Deliverer {
  const { config, redis, keys, logger } = context;
  return new Deliverer({
    serviceId: config.service.id,
    webhooks: config.webhooks,
    secretHeaders,
    allowance: new EmailAllowance(redis, keys, config.webhooks.email.dailyAllowance),
    logger,
    lookup: extras.lookup,
    socketConnector: extras.socketConnector,
    tracing: context.tracing,
  });
}
