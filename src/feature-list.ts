import type { AppContext } from './app-context.js';
import type { FeatureModule, FeatureModuleOptions } from './feature-module.js';
import { createGraphqlModule } from './graphql/module.js';
import { createWebhooksModule } from './webhooks/module.js';
import { createApiKeysModule } from './keys/api-keys-module.js';
import { createOAuthModule } from './oauth/module.js';
import { createMcpModule } from './mcp/module.js';

/** Every feature, in the order their routes and observers are consulted. */
export async function createFeatureModules(context: AppContext, options: FeatureModuleOptions): Promise<FeatureModule[]> {
  const modules: FeatureModule[] = [];
  modules.push(await createApiKeysModule(context, options));
  const graphql = await createGraphqlModule(context, options);
  modules.push(graphql);
  const webhooks = await createWebhooksModule(context, options);
  modules.push(webhooks);
  // Each backend write a GraphQL mutation makes is an exchange for the webhooks (SPEC §6.4).
  if (options.serve) graphql.observeWrites?.((exchange) => webhooks.internals.observer.observeBackendExchange(exchange));
  modules.push(await createOAuthModule(context, options));
  // Outrigger's own MCP server (mcp.server: outrigger): tools from the GraphQL apps (SPEC §11).
  modules.push(createMcpModule(context, options, graphql));
  return modules;
}
