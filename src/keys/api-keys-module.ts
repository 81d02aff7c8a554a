import type { AppContext } from '../app-context.js';
import type { FeatureModule, FeatureModuleOptions } from '../feature-module.js';
import { KeyFailureGuard } from '../access/key-failure-guard.js';
import { ApiKeyIssuer } from './issuer.js';
import { createKeyAuthenticator } from './key-authenticator.js';
import { ApiKeyStore } from './key-store.js';
import { LastUsedThrottle } from './last-used.js';
import { createKeyRoutes } from './routes.js';
import { createLimitsArea } from './limits-area.js';
import { KeyVerificationCache } from './verification-cache.js';

/**
 * The API keys feature (SPEC §5.1-5.5): `/keys`, `/_admin/keys`, and the verifier of
 * `Authorization: Bearer <prefix>_...`. While the feature is not enabled no key authenticates
 * (the authenticator is withheld) and `POST /keys` answers 403; nothing stored is touched, so
 * enabling it again finds every key as it was.
 */
export async function createApiKeysModule(context: AppContext, options: FeatureModuleOptions): Promise<FeatureModule> {
  const { config, redis, keys, bus, features, metrics, logger } = context;
  const store = new ApiKeyStore(redis, keys);
  const issuer = new ApiKeyIssuer(store, bus, { prefix: config.apiKeys.prefix, serviceId: config.service.id }, logger);
  const cache = new KeyVerificationCache(
    (hash) => store.findByHash(hash),
    config.service.id,
    {},
    (result) => metrics.keyCache.inc({ result }),
  );
  const lastUsed = new LastUsedThrottle();
  const authenticator = createKeyAuthenticator({
    prefix: config.apiKeys.prefix,
    failures: new KeyFailureGuard(context.redis, context.keys, { maxFailures: config.apiKeys.maxFailuresPerClient, windowSeconds: config.apiKeys.failureWindowSeconds }),
    cache,
    lastUsed,
    recordUse: (id, at) => store.touchLastUsed(id, at),
    metrics,
    logger,
  });
  const { route, adminArea } = createKeyRoutes({ context, store, issuer });

  let unsubscribe: (() => void) | null = null;
  return {
    name: 'api-keys',
    routes: options.serve ? [route] : [],
    adminAreas: { keys: adminArea, limits: createLimitsArea(config.limits) },
    apiKeyAuthenticator: () => (features.enabled('api-keys') ? authenticator : null),
    async start() {
      unsubscribe = bus.on((message) => {
        if (message === 'resync') return cache.flush();
        if (message.kind === 'apikeys') {
          if (message.id === undefined) cache.flush();
          else {
            cache.evictId(message.id);
            lastUsed.forget(message.id);
          }
        } else if (message.kind === 'features' && message.id === 'api-keys') cache.flush();
      });
    },
    async stop() {
      unsubscribe?.();
    },
  };
}
