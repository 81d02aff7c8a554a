import type { AppContext } from '../app-context.js';
import type { FeatureModule, FeatureModuleOptions } from '../feature-module.js';
import { notFound } from '../errors.js';
import type { OwnRoute } from '../http/route-table.js';
import type { RequestScope } from '../http/scope.js';
import { ApiKeyIssuer } from '../keys/issuer.js';
import { ApiKeyStore } from '../keys/key-store.js';
import { createAuthorizeHandler } from './sign-in/authorize.js';
import { ClientMetadataFetcher } from './clients/client-metadata-document.js';
import { ClientDirectory } from './clients/client-directory.js';
import { oauthEndpoints } from './endpoints.js';
import { metadataRoutes } from './metadata.js';
import { createOfferMaker } from './sign-in/offer.js';
import { OAuthStore } from './oauth-store.js';
import { createRegistrationHandler } from './clients/registration.js';
import { createTokenHandler } from './token.js';

/**
 * Agent sign-in (SPEC §5.6): Outrigger as the OAuth authorization server of `mcp.path`. Its
 * routes are public (answered before authentication: they authenticate in their own way) and
 * answer 404 under `mcp.signIn: off`. The 401 challenge on `mcp.path` is wired in app.ts
 * (challenge.ts), since it wraps the request chain rather than adding a route.
 */
export async function createOAuthModule(context: AppContext, options: FeatureModuleOptions): Promise<FeatureModule> {
  const { config, redis, keys, bus, logger, features } = context;
  const endpoints = oauthEndpoints(config);
  const off = () => config.mcp.signIn === 'off';
  const store = new OAuthStore(redis, keys);
  const keyStore = new ApiKeyStore(redis, keys);
  const issuer = new ApiKeyIssuer(keyStore, bus, { prefix: config.apiKeys.prefix, serviceId: config.service.id }, logger);
  const documents = new ClientMetadataFetcher(config.mcp.clientMetadata);
  const authorize = createAuthorizeHandler({
    endpoints,
    path: config.routes.oauth.authorize,
    manageKeys: { console: `${config.routes.admin}/#/my-keys`, keys: config.routes.keys },
    requestsPerAddress: config.mcp.authorizeRequestsPerAddress,
    requestsTotal: config.mcp.authorizeRequestsTotal,
    secureCookies: config.service.publicUrl.startsWith('https://'),
    store,
    clients: new ClientDirectory(store, documents),
    offerFor: createOfferMaker(context, keyStore),
    issuer,
    signIn: (id, password, ip) => {
      if (!context.signIn) throw new Error('agent sign-in needs the Basic authenticator (only a serving process has one)');
      return context.signIn(id, password, ip);
    },
    logger,
  });
  const token = createTokenHandler({ endpoints, store, issuer, features, tokenTtlMinutes: config.mcp.tokenTtlMinutes, logger });
  const register = createRegistrationHandler({ store, perHour: config.mcp.registrationsPerHour, perDay: config.mcp.registrationsPerDay, logger });

  const route = (prefix: string, handle: (scope: RequestScope) => Promise<void>): OwnRoute => ({
    kind: 'oauth',
    prefix,
    public: true,
    handle(scope) {
      if (off()) throw notFound('agent sign-in is off on this service (mcp.signIn: off)');
      if (scope.path !== prefix) throw notFound(`nothing at ${scope.path}; the endpoint is ${prefix}`);
      return handle(scope);
    },
  });

  return {
    name: 'agent-sign-in',
    routes: options.serve
      ? [...metadataRoutes(endpoints, config.mcp.path, off), route(config.routes.oauth.authorize, authorize), route(config.routes.oauth.token, token), route(config.routes.oauth.register, register)]
      : [],
    async stop() {
      await documents.close();
    },
  };
}
