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
import type { AppContext } from './app-context.js';
import { parseCondition, type Exchange } from './condition/index.js';
import type { OutriggerConfig } from './config/types.js';
import { FeatureStates } from './features/feature-states.js';
import { createFeatureRoutes } from './features/routes.js';
import { createClientIpResolver } from './http/client-ip.js';
import { exchangeForScope } from './http/exchange.js';
import { createRequestHandler } from './http/handler.js';
import type { RequestObserver } from './http/observe.js';
import { RouteTable, type OwnRoute } from './http/route-table.js';
import { listen, type ListeningServer } from './http/server.js';
import { createLogger, type Logger } from './observability/logger.js';
import { createMetrics } from './observability/metrics.js';
import { healthRoute, metricsRoute } from './observability/routes.js';
import { Forwarder } from './proxy/forwarder.js';
import { ChangeBus } from './store/change-bus.js';
import { createRedisConnections, waitForRedis } from './store/connections.js';
import { DocumentStore } from './store/document-store.js';
import { startEmbeddedRedis, type EmbeddedRedis } from './store/embedded-redis.js';
import { redisKeys } from './store/keys.js';
import { applySetupFile } from './setup/apply-setup.js';
import { createFeatureModules, type FeatureModule } from './feature-modules.js';

export interface StartOptions {
  /** Run the webhook worker in this process (default true; `start --no-worker` turns it off). */
  worker?: boolean;
  /** Serve HTTP (false for `outrigger worker`). */
  serve?: boolean;
  logger?: Logger;
  /** Where `redis.url: embedded` keeps its data; default ./.outrigger/redis-<service id>. */
  embeddedRedisDir?: string;
}

export interface RunningOutrigger {
  url: string | null;
  context: AppContext;
  modules: FeatureModule[];
  /** SIGTERM behaviour: stop accepting, finish in-flight (bounded), flush webhook events, close. */
  stop(): Promise<void>;
}

/** The composition root: builds every part once, in dependency order, and starts them. */
export async function startOutrigger(config: OutriggerConfig, options: StartOptions = {}): Promise<RunningOutrigger> {
  const logger = options.logger ?? createLogger({ level: config.log.level, secretHeaders: config.log.secretHeaders });
  const metrics = createMetrics();

  let embedded: EmbeddedRedis | null = null;
  let redisUrl = config.redis.url;
  if (redisUrl === 'embedded') {
    embedded = await startEmbeddedRedis({ dir: options.embeddedRedisDir ?? resolve('.outrigger', `redis-${config.service.id}`) });
    redisUrl = embedded.url;
    logger.info({ redis: redisUrl, dir: embedded.dir }, 'started embedded redis-server');
  }
  const connections = createRedisConnections(redisUrl, `outrigger:${config.service.id}`);
  const redis = connections.commands;
  metrics.redisUp.track(() => (redis.status === 'ready' ? 1 : 0));
  try {
    await waitForRedis(redis, 5000);
  } catch (error) {
    logger.warn({ redis: redactUrl(redisUrl), err: (error as Error).message }, 'Redis is not reachable yet; serving what needs no Redis and retrying in the background');
  }

  const keys = redisKeys(config.redis.keyPrefix, config.service.id);
  const bus = new ChangeBus(redis, connections.subscriber, keys.changes);
  await bus.start().catch(() => {});
  const features = new FeatureStates(redis, keys, bus, { 'api-keys': config.features.apiKeys, webhooks: config.features.webhooks });
  await features.start();

  const permissions = new DocumentStore<PermissionDocument>(redis, bus, 'permissions', keys.permissions, keys.permissionsVersion);
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

  const context: AppContext = {
    config, logger, metrics, redis, connections, keys, bus, features, permissions, acl,
    exchangeFor: exchangeForScope,
    authorizeOwnRoute: policy.authorizeOwnRoute,
    planIdentity,
  };

  const modules = await createFeatureModules(context, { worker: options.worker ?? true, serve: options.serve ?? true });
  if (config.acl.bootstrap) {
    const summary = await applySetupFile(context, config.acl.bootstrap, modules.flatMap((m) => m.setupKinds ?? []));
    logger.info({ file: config.acl.bootstrap, ...summary.counts }, 'applied the bootstrap setup file');
  }
  for (const module of modules) await module.start?.();

  let server: ListeningServer | null = null;
  let forwarder: Forwarder | null = null;
  let userVerifier: (UserVerifier & { close?(): Promise<void> }) | null = null;
  if (options.serve ?? true) {
    userVerifier =
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
    const keyAuthenticators = modules.map((m) => m.apiKeyAuthenticator).filter(Boolean) as Array<() => ApiKeyAuthenticator | null>;
    const authenticate = createAuthenticator({ basic, apiKeys: () => keyAuthenticators[0]?.() ?? null, keyPrefix: config.apiKeys.prefix });

    const adminAreas: Record<string, SubRouteHandler> = {
      acl: createPermissionRoutes(context),
      features: createFeatureRoutes(features),
    };
    for (const module of modules) Object.assign(adminAreas, module.adminAreas);
    const routes: OwnRoute[] = [
      healthRoute(config.routes.health, () => {
        const redisReady = redis.status === 'ready';
        return { ready: redisReady, checks: { redis: redisReady ? 'ok' : `not ready (${redis.status})`, config: 'loaded' } };
      }),
      metricsRoute(config.routes.metrics, metrics),
      createAdminRoute(config.routes.admin, policy.authorizeOwnRoute, adminAreas),
      ...modules.flatMap((m) => m.routes ?? []),
    ];
    const observers = modules.map((m) => m.observer).filter(Boolean) as RequestObserver[];
    forwarder = new Forwarder({ url: config.upstream.url, timeoutMs: config.upstream.timeoutMs, connections: config.upstream.connections });
    const handler = createRequestHandler({
      routes: new RouteTable(routes),
      forwarder,
      clientIp: createClientIpResolver(config.listen.trustedProxies),
      authenticate,
      authorizeProxy: policy.authorizeProxy,
      planProxy: policy.planProxy,
      observer: observers[0] ?? null,
      metrics,
      logger,
    });
    server = await listen(handler, config.listen.host, config.listen.port);
    logger.info(
      {
        url: server.url,
        upstream: config.upstream.url,
        service: config.service.id,
        aclMode: config.acl.mode,
        identity: config.upstream.identity.mode,
        features: Object.fromEntries(features.list().map((f) => [f.name, f.state])),
        routes: routes.map((r) => r.prefix),
      },
      `Outrigger listening on ${server.url}, proxying to ${config.upstream.url}`,
    );
  }

  let stopping: Promise<void> | null = null;
  return {
    url: server?.url ?? null,
    context,
    modules,
    stop() {
      stopping ??= (async () => {
        if (server) {
          const { forced } = await server.drain(config.listen.shutdownGraceMs);
          if (forced) logger.warn({ forced }, 'shutdown grace period ended; cut the requests still in flight');
        }
        for (const module of [...modules].reverse()) await module.stop?.().catch((error: unknown) => logger.error({ err: String(error) }, 'error while stopping'));
        permissions.stop();
        features.stop();
        await forwarder?.close().catch(() => {});
        await userVerifier?.close?.().catch(() => {});
        await connections.close();
        await embedded?.stop();
        logger.info('Outrigger stopped');
      })();
      return stopping;
    },
  };
}

function redactUrl(url: string): string {
  return url.replace(/\/\/[^@/]*@/, '//[redacted]@');
}
