/**
 * Tools for agents (SPEC §11), wired: with `mcp.server: outrigger` the MCP route answers
 * `mcp.path` itself, its tools rebuilt from the GraphQL app store each time the store loads (the
 * store's change-bus notices reach every replica, as they do for the GraphQL registry). With
 * `mcp.server: backend` (the default) this module adds nothing and `/mcp` is proxied as before.
 */
import type { AppContext } from '../app-context.js';
import type { FeatureModule, FeatureModuleOptions } from '../feature-module.js';
import type { StoredApp } from '../graphql/document/setup-kind.js';
import type { ChangeWatch } from '../graphql/subscribe/watch.js';
import type { OuterAnswer } from '../http/after-answer.js';
import type { RequestScope } from '../http/scope.js';
import type { Principal } from '../principal/principal.js';
import { UriUpdates } from './listen/uri-updates.js';
import { literalCollection } from './resource-uris.js';
import { oauthEndpoints } from '../oauth/endpoints.js';
import type { DocumentStore } from '../store/document-store.js';
import { ToolCatalogue } from './catalogue.js';
import { InternalCalls } from './internal-calls.js';
import { createMcpRoute } from './route.js';
import type { ResourceDoor } from './resources.js';
import { parseCondition, type Exchange } from '../condition/index.js';

export interface McpModule extends FeatureModule {
  /** Null unless this process serves Outrigger's own MCP server. */
  catalogue: ToolCatalogue | null;
}

/**
 * `ttlMs` from `cache.rules` as the config gave them at start (a rule `outrigger reload` changes
 * reaches these hints at the next start; the cache itself follows the reload).
 */
function ttlOfCacheRules(rules: AppContext['config']['cache']['rules']): (exchange: Exchange) => number {
  const compiled = rules.map((rule) => ({ condition: parseCondition(rule.when), ms: rule.maxAgeSeconds * 1000 }));
  return (exchange) => compiled.find((rule) => rule.condition.evaluate(exchange))?.ms ?? 0;
}

/** The GraphQL module's parts this one uses: the app store (tools), the change feed (per-URI notifications). */
export interface McpGraphqlParts {
  readonly store: DocumentStore<StoredApp>;
  readonly changes?: ChangeWatch | undefined;
  /** Tells the GraphQL door which `/mcp` answer a tool call's changes also wait for (SPEC §11.1). */
  answersFollow?(outer: OuterAnswer): void;
}

/**
 * Which collections' writes go to the change feed for resource listeners: those `mcp.resources`
 * names literally; with any other condition, every collection (Redis appends a write only when a
 * listener somewhere claims its collection, so an unwatched one costs one script call per batch).
 */
function wantedBy(door: ResourceDoor): (db: string, collection: string) => boolean {
  if (door.conditions.some(({ text }) => literalCollection(text, door.collectionPath) === null)) return () => true;
  const named = new Set(door.conditions.map(({ text }) => literalCollection(text, door.collectionPath)).map((c) => `${c!.db}\u0000${c!.collection}`));
  return (db, collection) => named.has(`${db}\u0000${collection}`);
}

export function createMcpModule(context: AppContext, options: FeatureModuleOptions, graphql: McpGraphqlParts): McpModule {
  const apps = graphql.store;
  const { config, logger } = context;
  if (config.mcp.server !== 'outrigger' || !options.serve) return { name: 'mcp-tools', catalogue: null };
  const catalogue = new ToolCatalogue({ defaultDb: config.graphql.defaultDb, maxLimit: config.graphql.maxLimit, aggregations: config.graphql.aggregations }, (app, problem) =>
    logger.warn({ app, problem }, 'a GraphQL app offers a tool agents cannot use'),
  );
  apps.onLoaded((docs) => catalogue.rebuild(docs.values()));
  const resourceMetadataUrl = config.mcp.signIn === 'off' ? null : oauthEndpoints(config).resourceMetadata;
  const internal = new InternalCalls();
  const dispatcher = internal.dispatcher();
  // A tool call's changes are published once the agent has its `/mcp` answer, not when the inner GraphQL answer left.
  graphql.answersFollow?.((req) => internal.outerAnswer(req));
  const resources: ResourceDoor | null =
    config.mcp.resources.length === 0
      ? null
      : {
          acl: context.acl,
          collectionPath: config.graphql.backend.collectionPath,
          conditions: config.mcp.resources.map((text) => ({ text, condition: parseCondition(text) })),
          dispatcher,
          timeoutMs: config.upstream.timeoutMs + 5000,
          ttlFor: ttlOfCacheRules(config.cache.rules),
        };
  const changes = graphql.changes;
  const updates = resources && changes ? new UriUpdates(changes, resources, (error, what) => logger.warn({ err: String(error) }, `error while ${what}`)) : null;
  if (resources && changes) changes.alsoWanted(wantedBy(resources));
  let authenticate: ((scope: RequestScope) => Promise<Principal> | Principal) | undefined;
  const route = createMcpRoute(context, { catalogue, resourceMetadataUrl, dispatcher, hold: (res) => internal.hold(res), resources, updates, authenticate: () => authenticate });
  // Each replica hears app and permission changes through the change bus; its own listeners are told (SPEC §11.1).
  apps.onLoaded(() => route.listChanged());
  context.permissions.onLoaded(() => {
    route.listChanged();
    updates?.accessChanged();
  });
  return {
    name: 'mcp-tools',
    catalogue,
    routes: [route],
    wrapClientIp: (resolve) => internal.wrap(resolve),
    useAuthenticator(fn) {
      authenticate = fn;
    },
    async stop() {
      await route.close();
      await dispatcher.close();
    },
  };
}
