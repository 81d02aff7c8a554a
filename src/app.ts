import { resolve } from 'node:path';
import { BasicAuthenticator } from './access/basic-authenticator.js';
import { BruteForceGuard } from './access/brute-force-guard.js';
import { createAuthenticator, type ApiKeyAuthenticator } from './access/authenticate.js';
import { createIdentityPropagation } from './access/identity/identity-propagation.js';
import { AccessControl } from './access/permissions/access-control.js';
import type { PermissionDocument } from './access/permissions/permission-document.js';
import { createPermissionRoutes } from './access/permissions/routes.js';
import { createProxyPolicy } from './access/proxy-policy.js';
import { createStaticUserVerifier } from './access/users/static-users.js';
import { createUpstreamUserVerifier } from './access/users/upstream-users.js';
import type { UserVerifier } from './access/users/user-verifier.js';
import { createAdminRoute, type SubRouteHandler } from './admin/admin-route.js';
import { createBackendArea } from './admin/backend-area.js';
import { createConditionCheckRoute } from './admin/condition-check.js';
import { createConsoleAreas } from './admin/console-route.js';
import { createBackendGuards, type AppContext } from './app-context.js';
import { parseCondition, type Exchange } from './condition/index.js';
import type { OutriggerConfig } from './config/types.js';
import { FeatureStates } from './features/feature-states.js';
import { createFeatureRoutes } from './features/routes.js';
import { createClientIpResolver } from './http/client-ip.js';
import { exchangeForScope } from './chain/exchange.js';
import { createRequestHandler } from './chain/request-chain.js';
import { combineObservers, type RequestObserver } from './chain/observer.js';
import type { RequestScope } from './http/scope.js';
import { RouteTable, type OwnRoute } from './http/route-table.js';
import { sendError } from './http/respond.js';
import { listen, type ListeningServer, type RequestHandler } from './http/server.js';
import { routeUpgrades } from './http/upgrade/route-upgrades.js';
import { serviceUnavailable } from './errors.js';
import { createLogger, type Logger } from './observability/logger.js';
import { createMetrics, type Metrics } from './observability/metrics.js';
import { logRedisTransitions } from './observability/redis-events.js';
import { healthRoute, metricsRoute } from './admin/health-and-metrics.js';
import { startSummary } from './observability/start-summary.js';
import { Tracing } from './observability/tracing/tracing.js';
import { resolveTelemetry } from './config/telemetry.js';
import { Forwarder } from './proxy/forwarder.js';
import { ChangeBus } from './store/change-bus.js';
import { startResponseCache } from './cache/start.js';
import { idempotencyParts } from './chain/stages/idempotency.js';
import { createIdempotencyStore } from './idempotency/store.js';
import { createRedisConnections, describeTarget, waitForRedis, type RedisTarget } from './store/connections.js';
import { RedisReadiness } from './store/redis-readiness.js';
import { DocumentStore } from './store/document-store.js';
import { startEmbeddedRedis, type EmbeddedRedis } from './store/embedded-redis.js';
import { redisKeys } from './store/keys.js';
import { startBootstrap } from './setup/bootstrap.js';
import { withMcpChallenge } from './oauth/challenge.js';
import { oauthEndpoints } from './oauth/endpoints.js';
import type { FeatureModule } from './feature-module.js';
import { createFeatureModules } from './feature-list.js';
import { offlineSetupKinds } from './offline-setup-kinds.js';
import { beginDrain, closeRestInReverse, runShutdown, type RestParts } from './shutdown.js';
import type { Reloadable } from './reload.js';
import { CorsSettings } from './chain/stages/cors.js';
import { RateLimiter } from './limits/limiter.js';
import { Draining } from './util/draining.js';

export interface StartOptions {
  /** Run the webhook worker in this process (default true; `start --no-worker` turns it off). */
  worker?: boolean;
  /** Serve HTTP (false for `outrigger worker`). */
  serve?: boolean;
  logger?: Logger;
  /** Where `redis.url: embedded` keeps its data; default ./.outrigger/redis-<service id>. */
  embeddedRedisDir?: string;
  /** Apply `acl.bootstrap` (default true; `outrigger apply` applies only its own file). */
  bootstrap?: boolean;
  /** Outrigger's version, for the traces' `service.version`. */
  version?: string;
  /**
   * The document stores' version poll (default 2 s). Tests set it far away to show that the
   * change bus alone carries a change to every replica within SPEC's 1 s (issue 54).
   */
  documentPollMs?: number;
}

export interface RunningOutrigger {
  url: string | null;
  context: AppContext;
  modules: FeatureModule[];
  /** SIGTERM behaviour (src/shutdown.ts): drain, stop accepting, finish in-flight (bounded), flush what features queued, close. */
  stop(): Promise<void>;
  /** SIGUSR2 (a native sidecar's preStop): the drain alone, readiness 503 and Connection: close, until stop(). */
  beginDrain(): void;
  /** What a reload (src/reload.ts: SIGHUP, a file change) applies without a restart; one entry per config path. */
  reloadables: Reloadable[];
}

/** The composition root: builds every part once, in dependency order, and starts them. */
export async function startOutrigger(config: OutriggerConfig, options: StartOptions = {}): Promise<RunningOutrigger> {
  const logger = options.logger ?? createLogger({ level: config.log.level, secretHeaders: config.log.secretHeaders });
  const metrics = createMetrics();
  const serve = options.serve ?? true;
  if (config.shutdown.deprecation) logger.warn(config.shutdown.deprecation);
  const draining = new Draining();
  const tracing = Tracing.create(resolveTelemetry(config.telemetry, process.env).settings, options.version ?? process.env.npm_package_version, metrics, logger);

  // Bind first: a taken port must fail before anything (embedded Redis, the bootstrap) is
  // started or written. Until the parts below exist, requests get a 503.
  let handle: RequestHandler = (_req, res, finished) => {
    res.once('close', finished);
    sendError(res, serviceUnavailable('Outrigger is starting; try again in a moment', 'STARTING'));
  };
  const server: ListeningServer | null = serve ? await listen((req, res, finished) => handle(req, res, finished), config.listen.host, config.listen.port, config.listen) : null;

  const { embedded, target, connections, redis, keys, readiness, unwatchRedis } = await startRedisParts(config, options, server, logger, metrics);

  const bus = new ChangeBus(redis, connections.subscriber, keys.changes);
  await bus.start().catch(() => {});
  const responseCache = serve ? await startResponseCache(config, { redis, subscriber: connections.subscriber, keys, metrics }) : null;
  const features = new FeatureStates(redis, keys, bus, { 'api-keys': config.features.apiKeys, webhooks: config.features.webhooks });
  await features.start();

  const { permissions, acl, planIdentity, policy } = await startAccess(config, { redis, bus, keys, logger, documentPollMs: options.documentPollMs });

  const { userVerifier, basic } = server ? await createBasicSignIn(config, { redis, keys, metrics, logger }) : { userVerifier: null, basic: null };
  // Rate limits and key usage (SPEC §10): before the features, which read usage and charge GraphQL cost.
  const limiter = serve ? new RateLimiter({ config: config.limits, redis, keys, metrics, logger, adminPrefix: config.routes.admin, exchangeFor: exchangeForScope }) : null;
  limiter?.start();

  const context: AppContext = {
    config,
    logger,
    metrics,
    tracing,
    redis,
    connections,
    keys,
    bus,
    features,
    permissions,
    acl,
    draining,
    documentPollMs: options.documentPollMs,
    exchangeFor: exchangeForScope,
    authorizeOwnRoute: policy.authorizeOwnRoute,
    planIdentity,
    backendGuards: createBackendGuards(config.upstream, logger, metrics),
    ...(limiter ? { limits: limiter } : {}),
    ...(responseCache ? { responseCache } : {}),
    ...(serve ? { idempotency: createIdempotencyStore(redis, keys, config.idempotency, (error, what) => logger.warn({ err: (error as Error).message }, what)) } : {}),
    ...(basic ? { signIn: (id: string, password: string, ip: string) => basic.authenticate(basicHeader(id, password), ip) } : {}),
  };

  const modules = await createFeatureModules(context, { worker: options.worker ?? true, serve: options.serve ?? true });
  const bootstrap = await startBootstrapIfAsked(context, modules, options);
  for (const module of modules) await module.start?.();

  // The request chain (src/chain/): only a process that serves HTTP has one. `cors` is swapped by a reload.
  const cors = new CorsSettings(config.cors);
  const chain = basic ? wireRequestChain({ context, modules, basic, policy, readiness, limiter, server, cors }) : null;
  if (chain) handle = chain.handle;
  const forwarder = chain?.forwarder ?? null;
  const ownRoutePrefixes = chain?.ownRoutePrefixes ?? [];
  logStart({ config, logger, server, target, redis, features, permissions, modules, worker: options.worker ?? true, routes: ownRoutePrefixes });

  const rest: RestParts = { bootstrap, modules, permissions, features, readiness, unwatchRedis, forwarder, userVerifier, limiter, connections, embedded, tracing, logger };
  const closeRest = () => closeRestInReverse(rest);
  let stopping: Promise<void> | null = null;
  return {
    url: server?.url ?? null,
    context,
    modules,
    stop() {
      stopping ??= runShutdown({
        settings: config.shutdown,
        server,
        draining,
        modules,
        logger,
        closeRest,
      });
      return stopping;
    },
    beginDrain: () => beginDrain({ server, draining }),
    reloadables: [
      { path: 'limits.policies', apply: (next) => limiter?.applyPolicies(next.limits.policies) },
      { path: 'cors', apply: (next) => cors.apply(next.cors) },
      // Started with no rule the rules are not reloadable: a first rule is logged as needing a restart (docs/caching.md).
      ...(responseCache && config.cache.rules.length > 0 ? [{ path: 'cache.rules', apply: (next: OutriggerConfig) => responseCache.cache.applyRules(next.cache.rules) }] : []),
    ],
  };
}

/** `acl.bootstrap` started when the config names one and the caller did not turn it off (`outrigger apply` applies only its own file). */
async function startBootstrapIfAsked(context: AppContext, modules: FeatureModule[], options: StartOptions) {
  const { config } = context;
  if (!config.acl.bootstrap || !(options.bootstrap ?? true)) return null;
  return startBootstrap(
    context,
    config.acl.bootstrap,
    modules.flatMap((m) => m.setupKinds ?? []),
    offlineSetupKinds(config),
  );
}

/** Redis (embedded when asked), its connections and key names, and the readiness probe's view of it. */
async function startRedisParts(config: OutriggerConfig, options: StartOptions, server: ListeningServer | null, logger: Logger, metrics: Metrics) {
  let embedded: EmbeddedRedis | null = null;
  let target: RedisTarget = config.redis;
  if (config.redis.url === 'embedded') {
    embedded = await startEmbeddedRedis({
      dir: options.embeddedRedisDir ?? resolve('.outrigger', `redis-${config.service.id}`),
      onLeftover: (message) => logger.warn(message),
    }).catch(async (error: unknown) => {
      await server?.drain(0);
      throw error;
    });
    target = { ...config.redis, url: embedded.url };
    logger.info({ redis: embedded.url, dir: embedded.dir }, 'started embedded redis-server');
  }
  const connections = createRedisConnections(target, `outrigger:${config.service.id}`);
  const redis = connections.commands;
  const keys = redisKeys(config.redis.keyPrefix, config.service.id);
  const readiness = new RedisReadiness(redis, connections.topology, keys.features);
  metrics.redisUp.track(() => (readiness.report().ready ? 1 : 0));
  try {
    await waitForRedis(redis, 5000);
  } catch (error) {
    logger.warn({ redis: describeTarget(target), err: (error as Error).message }, 'Redis is not reachable yet; serving what needs no Redis and retrying in the background');
  }
  readiness.start();
  const unwatchRedis = logRedisTransitions(redis, logger, describeTarget(target));

  return { embedded, target, connections, redis, keys, readiness, unwatchRedis };
}

/** The stored permissions, the ACL over them, identity propagation and the proxy policy (SPEC §3). */
async function startAccess(
  config: OutriggerConfig,
  { redis, bus, keys, logger, documentPollMs }: { redis: AppContext['redis']; bus: ChangeBus; keys: AppContext['keys']; logger: Logger; documentPollMs: number | undefined },
) {
  const permissions = new DocumentStore<PermissionDocument>(redis, bus, 'permissions', keys.permissions, keys.permissionsVersion, documentPollMs);
  const acl = new AccessControl<Exchange>(
    permissions,
    config.acl.adminRoles,
    (predicate) => parseCondition(predicate, { allowUserVariables: true }),
    config.service.id,
    (doc, error) => logger.error({ permission: doc._id, err: String(error) }, 'a stored permission cannot be parsed and grants nothing'),
  );
  await permissions.start();

  const planIdentity = createIdentityPropagation(config);
  const ownTokenPath = config.routes.oauth.token;
  const policy = createProxyPolicy<Exchange>({
    mode: config.acl.mode,
    acl,
    exchangeFor: exchangeForScope,
    planIdentity,
    collectionPath: config.graphql.backend.collectionPath,
    backendTokenPath: ownTokenPath === '/token' ? null : '/token',
  });

  return { permissions, acl, planIdentity, policy };
}

/** Basic sign-in: the users' verifier (static or the upstream's) behind a cache and the brute-force guard. */
async function createBasicSignIn(config: OutriggerConfig, { redis, keys, metrics, logger }: { redis: AppContext['redis']; keys: AppContext['keys']; metrics: Metrics; logger: Logger }) {
  const userVerifier: UserVerifier & { close?(): Promise<void> } =
    config.users.source === 'static'
      ? await createStaticUserVerifier(config.users.static)
      : createUpstreamUserVerifier({ upstreamUrl: config.upstream.url, ...config.users.upstream, timeoutMs: config.upstream.timeoutMs });
  const basic = new BasicAuthenticator(
    userVerifier,
    new BruteForceGuard(redis, keys),
    config.users.source === 'static' ? 60_000 : config.users.upstream.cacheSeconds * 1000,
    config.service.id,
    metrics,
    logger,
  );
  return { userVerifier, basic };
}

interface StartFacts {
  config: OutriggerConfig;
  logger: Logger;
  server: ListeningServer | null;
  target: RedisTarget;
  redis: AppContext['redis'];
  features: FeatureStates;
  permissions: DocumentStore<PermissionDocument>;
  modules: FeatureModule[];
  worker: boolean;
  routes: string[];
}

/** The one start line: where it listens, which Redis, what is loaded and on. */
function logStart({ config, logger, server, target, redis, features, permissions, modules, worker, routes }: StartFacts): void {
  const loaded: Record<string, number> = { permissions: permissions.all().size };
  for (const kind of modules.flatMap((m) => m.setupKinds ?? [])) if (kind.store) loaded[kind.section] = kind.store.all().size;
  const summary = startSummary({
    config,
    url: server?.url ?? null,
    redis: describeTarget(target),
    redisReady: redis.status === 'ready',
    features: Object.fromEntries(features.list().map((f) => [f.name, f.state])),
    loaded,
    worker,
    routes,
  });
  logger.info(summary.fields, summary.message);
}

interface ChainInputs {
  context: AppContext;
  modules: FeatureModule[];
  basic: BasicAuthenticator;
  policy: ReturnType<typeof createProxyPolicy<Exchange>>;
  readiness: RedisReadiness;
  limiter: RateLimiter | null;
  server: ListeningServer | null;
  cors: CorsSettings;
}

/** The request chain's parts (src/chain/): who is calling, the own routes, the forwarder, the observers; the handler. */
function wireRequestChain({ context, modules, basic, policy, readiness, limiter, server, cors }: ChainInputs): { handle: RequestHandler; forwarder: Forwarder; ownRoutePrefixes: string[] } {
  const { config, metrics, logger, tracing } = context;
  const keyAuthenticators = modules.map((m) => m.apiKeyAuthenticator).filter(Boolean) as Array<() => ApiKeyAuthenticator | null>;
  const access = {
    authenticate: createAuthenticator({ basic, apiKeys: () => keyAuthenticators[0]?.() ?? null, keyPrefix: config.apiKeys.prefix }),
    authorizeProxy: policy.authorizeProxy,
  };
  const { authenticate, authorizeProxy } = config.mcp.signIn === 'off' ? access : withMcpChallenge(access, config.mcp.path, oauthEndpoints(config).resourceMetadata);
  const routes = ownRoutes(context, modules, policy, readiness);
  const observers = modules.map((m) => m.observer).filter(Boolean) as RequestObserver[];
  const forwarder = new Forwarder(config, context.backendGuards);
  const slots = forwarder.slots;
  metrics.upstreamSlots.track(() => slots.activeCount, { state: 'in-use' });
  metrics.upstreamSlots.track(() => slots.waitingCount, { state: 'waiting' });
  metrics.requestBufferBytes.track(() => forwarder.bufferedBytes);
  const handle = createRequestHandler({
    routes: new RouteTable(routes),
    forwarder,
    clientIp: modules.reduce((resolve, m) => m.wrapClientIp?.(resolve) ?? resolve, createClientIpResolver(config.listen.trustedProxies)),
    authenticate,
    authorizeProxy,
    planProxy: policy.planProxy,
    ...(limiter ? { limit: (scope: RequestScope) => limiter.check(scope) } : {}),
    observer: combineObservers(observers),
    metrics,
    logger,
    tracing,
    sendTimeoutMs: config.listen.sendTimeoutMs,
    ...(context.responseCache ? { cache: context.responseCache } : {}),
    ...(context.idempotency ? { idempotency: idempotencyParts(context.idempotency, config.idempotency, logger) } : {}),
    cors,
    corsSameOrigin: [config.mcp.path],
  });
  // WebSocket upgrades (GraphQL subscriptions): a module takes its own paths; other WebSocket
  // paths get a 404, other upgrades (h2c) are served as plain requests (http/upgrade.ts).
  // From here requests are served: a cache armed later tells the other replicas to start over.
  context.responseCache?.serving();
  for (const module of modules) module.useAuthenticator?.(authenticate);
  if (server) routeUpgrades(server.server, (req, socket, head) => modules.some((m) => m.upgrade?.(req, socket, head)), logger, config.routes.graphql);
  return { handle, forwarder, ownRoutePrefixes: routes.map((r) => r.prefix) };
}

/** What Outrigger answers itself: probes, the admin API and console, every feature's routes. */
function ownRoutes(context: AppContext, modules: FeatureModule[], policy: ChainInputs['policy'], readiness: RedisReadiness): OwnRoute[] {
  const { config, features, draining, metrics, logger } = context;
  const adminAreas: Record<string, SubRouteHandler> = {
    acl: createPermissionRoutes(context),
    features: createFeatureRoutes(features),
    conditions: createConditionCheckRoute(),
    backend: createBackendArea(context.backendGuards),
  };
  for (const module of modules) Object.assign(adminAreas, module.adminAreas);
  if (context.responseCache) adminAreas.cache = context.responseCache.adminArea;
  return [
    healthRoute(config.routes.health, (): { ready: boolean; checks: Record<string, string> } => {
      const { ready, detail } = readiness.report();
      // From the first SIGTERM on, so the endpoint leaves rotation while requests are still served.
      if (draining.draining) return { ready: false, checks: { redis: detail, config: 'loaded', shutdown: 'draining' } };
      return { ready, checks: { redis: detail, config: 'loaded' } };
    }),
    metricsRoute(config.routes.metrics, metrics),
    createAdminRoute(config.routes.admin, policy.authorizeOwnRoute, adminAreas, logger, createConsoleAreas(config.routes.admin, config.routes.keys)),
    ...modules.flatMap((m) => m.routes ?? []),
  ];
}

function basicHeader(id: string, password: string): string {
  return `Basic ${Buffer.from(`${id}:${password}`).toString('base64')}`;
}
