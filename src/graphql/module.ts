/**
 * The GraphQL apps feature, wired (SPEC §6): app documents in a DocumentStore (Redis hash plus an
 * in-process copy refreshed by the change bus), compiled into a registry once per app version, the
 * `<appsPath>` and `<routes.graphql>/<uri>` routes, and the `apps` section of setup files.
 */
import type { AppContext } from '../app-context.js';
import type { FeatureModule, FeatureModuleOptions } from '../feature-module.js';
import { DocumentStore } from '../store/document-store.js';
import { graphqlAppSetupKind, type StoredApp } from './document/setup-kind.js';
import { createHttpBackendReader, type HttpBackendReader } from './backend/http-reader.js';
import { backendReadCache } from './backend/read-cache.js';
import { backendHeadersFor, createCallerReadPolicy } from './backend/caller-identity.js';
import type { ReadPolicy, RequestContext, WriteExchange, WriteObserver } from './types.js';
import { createHttpBackendWriter, type HttpBackendWriter } from './backend/http-writer.js';
import { createCallerWritePolicy } from './backend/write-policy.js';
import { GraphqlAppRegistry } from './compile/registry.js';
import { createAppsRoute, createGraphqlRoute } from './serve/routes.js';
import { SubscriptionService } from './subscribe/service.js';
import { createCallers, type Authenticate } from './subscribe/caller.js';
import { createChangeWatch, type ChangeWatch } from './subscribe/watch.js';
import { createSseTransport } from './subscribe/sse.js';
import { createWsTransport, type WsParts } from './subscribe/ws.js';
import { createClientIpResolver } from '../http/client-ip.js';
import type { OuterAnswer } from '../http/after-answer.js';
import { accessFacts, identityFacts } from '../principal/access-facts.js';

export interface GraphqlModule extends FeatureModule {
  store: DocumentStore<StoredApp>;
  /** Null when this process does not serve HTTP (`apply`, `worker`). */
  registry: GraphqlAppRegistry | null;
  /** Where each backend write a mutation makes goes as an exchange (the webhooks' observer; feature-list.ts). */
  observeWrites?(sink: (exchange: WriteExchange) => void): void;
  /** The change feed for MCP's per-URI notifications (SPEC §11.1); absent when this process does not serve. */
  changes?: ChangeWatch;
  /** Which answer an inner request made for an agent (an MCP tool call) also waits for before its changes are published (SPEC §11.1). */
  answersFollow?(outer: OuterAnswer): void;
}

export async function createGraphqlModule(context: AppContext, options: FeatureModuleOptions): Promise<GraphqlModule> {
  const { config, redis, bus, keys, logger } = context;
  const settings = config.graphql;
  const store = new DocumentStore<StoredApp>(redis, bus, 'graphql-apps', keys.graphqlApps, keys.graphqlAppsVersion, context.documentPollMs);
  const setupKinds = [graphqlAppSetupKind(config, store)];
  if (!options.serve) return { name: 'graphql', store, registry: null, setupKinds };

  const { serviceAuth, reader, writer, readPolicy, writePolicy } = backendOf(context);
  let writeExchanges: ((exchange: WriteExchange) => void) | undefined;
  // Subscriptions (SPEC §6.5): the change feed, the hub and the two transports (subscribe/).
  const subscriptions = subscriptionsOf(context, { reader, readPolicy, serviceAuth });
  const onWrite: WriteObserver = (w, ctx) => {
    const held = subscriptions.observeWrite(w, ctx);
    writeExchanges?.(writeExchangeOf(w, ctx));
    return held;
  };
  const registry = new GraphqlAppRegistry({
    // The limits whole: the config's graphql section is GraphqlLimits and the wiring beside it.
    ...settings,
    reader,
    writer,
    onWrite,
    beforeWrite: subscriptions.readBefore,
    ...(writePolicy ? { writePolicy } : {}),
    ...(readPolicy ? { readPolicy } : {}),
    onError: (error, ctx) => logger.error({ err: error, requestId: ctx.requestId }, 'unexpected error while resolving a GraphQL query'),
    onInvalidApp: (app, problems) => logger.error({ app: app._id, problems }, 'a stored GraphQL app is not valid and is not served; fix it with PUT or PATCH'),
  });
  // Compiled once per app version: a reload recompiles only the apps whose document changed.
  store.onLoaded((docs) => {
    subscriptions.updateApps(docs.values());
    registry.replaceAll(docs.values());
    armForAnswers(context, docs.values());
  });
  let authenticate: Authenticate | undefined;
  let outerAnswer: OuterAnswer | undefined;
  const callerOf = createCallers({ context, registry, authenticate: () => authenticate });
  const serveSse = createSseTransport(subscriptions, config.subscriptions.heartbeatSeconds * 1000);
  const websockets = websocketsOf(context, { subscriptions, registry, callerOf, authenticate: () => authenticate });
  context.metrics.subscriptionsOpen.track(() => subscriptions.hub.count('sse'), { transport: 'sse' });
  context.metrics.subscriptionsOpen.track(() => subscriptions.hub.count('ws'), { transport: 'ws' });
  context.metrics.webSocketsOpen.track(() => websockets.openSockets());
  // SIGTERM (src/shutdown.ts): when accepting stops, subscribers get their reconnect hint.
  context.draining.onStopAccepting((hint) => {
    subscriptions.closeAll(hint.retryAfterMs);
    websockets.closeAll();
  });

  return {
    name: 'graphql',
    store,
    registry,
    setupKinds,
    routes: [
      createAppsRoute(context, store),
      createGraphqlRoute(
        context,
        registry,
        (scope, app, appPath, body) => serveSse(scope.req, scope.res, body, callerOf(scope, app, appPath)),
        () => outerAnswer,
      ),
    ],
    observer: subscriptions.observer,
    upgrade: websockets.handleUpgrade,
    useAuthenticator(fn) {
      authenticate = fn;
    },
    observeWrites(sink) {
      writeExchanges = sink;
    },
    answersFollow(outer) {
      outerAnswer = outer;
    },
    changes: changeWatchOf(context, subscriptions, { reader, readPolicy, serviceAuth }),
    async start() {
      await store.start();
      await subscriptions.start();
    },
    async stop() {
      await subscriptions.stop();
      store.stop();
      await reader.close();
      await writer.close();
    },
  };
}

/** The change feed for MCP's per-URI notifications: who reads as whom, as for a GraphQL subscriber (subscribe/caller.ts). */
function changeWatchOf(context: AppContext, subscriptions: SubscriptionService, backend: { reader: HttpBackendReader; readPolicy: ReadPolicy | undefined; serviceAuth: boolean }): ChangeWatch {
  const { reader, readPolicy, serviceAuth } = backend;
  return createChangeWatch(subscriptions, { reader, readPolicy, onError: (error, what) => context.logger.warn({ err: String(error) }, `error while ${what}`) }, (scope) => ({
    principal: identityFacts(scope.principal),
    backendHeaders: serviceAuth ? {} : backendHeadersFor(context.planIdentity(scope.principal), scope.principal, scope.req.headers),
    requestId: scope.id,
    caller: { principal: scope.principal, headers: scope.req.headers, clientIp: scope.clientIp, secure: scope.secure },
  }));
}

/** A mutation's backend write as the webhooks see it: the REST exchange a client would have made through the proxy. */
function writeExchangeOf(w: Parameters<WriteObserver>[0], ctx: RequestContext): WriteExchange {
  const caller = ctx.caller;
  const requestHeaders: Record<string, string | string[] | undefined> = { ...(caller?.headers ?? {}) };
  delete requestHeaders['content-length'];
  delete requestHeaders['transfer-encoding'];
  if (w.body !== undefined) requestHeaders['content-type'] = 'application/json';
  else delete requestHeaders['content-type'];
  const principal = caller?.principal;
  return {
    method: w.method,
    path: w.path,
    query: w.query,
    requestHeaders,
    requestBody: w.body,
    // No answer from the backend: what the proxy would have answered a REST client (502).
    status: w.response?.status ?? 502,
    responseHeaders: { ...(w.response?.headers ?? {}) },
    responseBody: w.response?.body ?? '',
    ...(principal ? accessFacts(principal) : {}),
    remoteIp: caller?.clientIp ?? '127.0.0.1',
    secure: caller?.secure ?? false,
    via: 'graphql',
    graphql: { app: w.app, operation: w.operationName },
    ...(ctx.trace ? { traceparent: ctx.trace.traceparent } : {}),
  };
}

/** GraphQL over WebSocket on `/graphql/<uri>` upgrades (subscribe/ws.ts), wired to this module's parts. */
function websocketsOf(
  context: AppContext,
  parts: { subscriptions: SubscriptionService; registry: GraphqlAppRegistry; callerOf: WsParts['callerOf']; authenticate: () => Authenticate | undefined },
): ReturnType<typeof createWsTransport> {
  const { config, logger } = context;
  const clientIp = createClientIpResolver(config.listen.trustedProxies);
  return createWsTransport({
    service: parts.subscriptions,
    prefix: config.routes.graphql,
    heartbeatMs: config.subscriptions.heartbeatSeconds * 1000,
    lookup: (path) => {
      const found = parts.registry.lookup(path);
      return found.found ? { app: found.app, appPath: path } : undefined;
    },
    clientIp: (req) => clientIp(req.socket.remoteAddress ?? '', req.headers['x-forwarded-for']).ip,
    authenticate: parts.authenticate,
    authorize: (scope) => context.authorizeOwnRoute(scope),
    limit: (scope) => context.limits?.check(scope),
    callerOf: parts.callerOf,
    bounds: config.subscriptions.webSockets,
    ownOrigin: new URL(config.service.publicUrl).origin,
    logger,
  });
}

/**
 * SPEC §12: an app that keeps whole answers starts the response cache (its writes must drop them),
 * without cache.rules; only when GraphQL reads the upstream, whose writes the cache sees (serve/routes.ts).
 */
function armForAnswers(context: AppContext, apps: Iterable<StoredApp>): void {
  const running = context.responseCache;
  if (running === undefined || running.armed) return;
  if (new URL(context.config.graphql.backend.url).origin !== new URL(context.config.upstream.url).origin) return;
  for (const app of apps) if (app.descriptor?.cache !== undefined) return running.arm();
}

/** How the engine reaches the backend: as the service (its own credentials) or as each caller (their ACL decides reads and writes). */
function backendOf(context: AppContext) {
  const { config, logger } = context;
  const settings = config.graphql;
  const serviceAuth = settings.backend.auth === 'service';
  if (serviceAuth && !settings.backend.serviceAuthorization)
    logger.warn('graphql.backend.auth is service but graphql.backend.serviceAuthorization is not set: GraphQL reads reach the backend without credentials');
  const serviceHeaders: Record<string, string> = settings.backend.serviceAuthorization ? { authorization: settings.backend.serviceAuthorization } : {};
  // SPEC §13: the backend's guard, shared with the pass-through when it is the same origin.
  const guard = context.backendGuards.for(new URL(settings.backend.url).origin);
  // SPEC §12: a query's reads share the proxy's cache, whose keys are paths on the upstream: only
  // when the GraphQL backend is that same origin (else one path could name two backends' answers).
  const sameOrigin = new URL(settings.backend.url).origin === new URL(config.upstream.url).origin;
  const cache = context.responseCache && sameOrigin ? backendReadCache(context.responseCache) : undefined;
  const reader: HttpBackendReader = createHttpBackendReader({
    guard,
    ...(cache ? { cache } : {}),
    baseUrl: settings.backend.url,
    collectionPath: settings.backend.collectionPath,
    ...(serviceAuth ? { headersFor: () => ({ ...serviceHeaders }) } : {}),
  });
  const writer: HttpBackendWriter = createHttpBackendWriter({
    guard,
    baseUrl: settings.backend.url,
    collectionPath: settings.backend.collectionPath,
    ...(context.responseCache ? { dropCached: context.responseCache.dropWritten } : {}),
    ...(serviceAuth ? { headersFor: () => ({ ...serviceHeaders }) } : {}),
  });
  const writePolicy = serviceAuth ? undefined : createCallerWritePolicy({ acl: context.acl, mode: config.acl.mode });
  const readPolicy = serviceAuth ? undefined : createCallerReadPolicy({ acl: context.acl, collectionPath: settings.backend.collectionPath, mode: config.acl.mode });
  return { serviceAuth, reader, writer, readPolicy, writePolicy };
}

/** The change feed, the hub and what delivering reads with (subscribe/service.ts). */
function subscriptionsOf(context: AppContext, backend: { reader: HttpBackendReader; readPolicy: ReadPolicy | undefined; serviceAuth: boolean }): SubscriptionService {
  const { config, redis, bus, keys, logger } = context;
  const settings = config.graphql;
  const { reader, readPolicy, serviceAuth } = backend;
  return new SubscriptionService({
    redis,
    blocking: context.connections.blocking('subscription-feed', 1000),
    bus,
    feedKey: keys.subscriptionFeed,
    claimsKey: keys.subscribedCollections,
    batchKey: keys.subscriptionFeedBatch,
    defaultDb: settings.defaultDb,
    settings: config.subscriptions,
    waitForReplicas: config.redis.waitForReplicas,
    ...(config.redis.waitForReplicas > 0 ? { publishing: context.connections.writer('subscription-publisher') } : {}),
    collectionPath: settings.backend.collectionPath,
    reader,
    readPolicy,
    onError: (error, what) => logger.warn({ err: String(error) }, `error while ${what}`),
    counted: (outcome) => context.metrics.subscriptionEvents.inc({ outcome }),
    ...(context.responseCache ? { dropCached: context.responseCache.dropChanged } : {}),
    // A proxied write's state is read back as a GraphQL read of its writer would be made.
    writerContext: (scope) => ({
      requestId: scope.id,
      backendHeaders: serviceAuth ? {} : backendHeadersFor(context.planIdentity(scope.principal), scope.principal, scope.req.headers),
    }),
  });
}
