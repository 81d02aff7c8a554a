import { notFound } from '../errors.js';
import type { OwnRoute } from '../http/route-table.js';
import type { RequestScope } from '../http/scope.js';

export type SubRouteHandler = (scope: RequestScope, subPath: string) => Promise<void> | void;

/**
 * `/_admin/<area>/...`: every area (acl, keys, features, webhooks, the console) behind one
 * authorization step — admin roles, or whoever a permission allows (SPEC §3.5).
 */
export function createAdminRoute(prefix: string, authorize: (scope: RequestScope) => void, areas: Record<string, SubRouteHandler>): OwnRoute {
  return {
    kind: 'admin',
    prefix,
    unobserved: true,
    async handle(scope) {
      const rest = scope.path.slice(prefix.length);
      const slash = rest.indexOf('/', 1);
      const area = slash === -1 ? rest.slice(1) : rest.slice(1, slash);
      const handler = areas[area];
      if (!handler) throw notFound(`nothing at ${scope.path}; admin areas are ${Object.keys(areas).map((a) => `${prefix}/${a}`).join(', ')}`);
      authorize(scope);
      await handler(scope, slash === -1 ? '' : rest.slice(slash));
    },
  };
}
