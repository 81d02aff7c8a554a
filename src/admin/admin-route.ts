import { notFound } from '../errors.js';
import type { OwnRoute } from '../http/route-table.js';
import type { RequestScope } from '../http/scope.js';
import { logAdminChange } from './admin-audit.js';
import type { Logger } from '../observability/logger.js';

export type SubRouteHandler = (scope: RequestScope, subPath: string) => Promise<void> | void;

/**
 * `/_admin/<area>/...`: every area (acl, keys, features, webhooks) behind one authorization step —
 * admin roles, or whoever a permission allows (SPEC §3.5). `publicAreas` (the console's page
 * and its static files, under the area names '' and 'console') skip that step: the page holds
 * no data, and it signs in with Basic credentials it keeps in memory and sends on each API call.
 */
export function createAdminRoute(
  prefix: string,
  authorize: (scope: RequestScope) => void,
  areas: Record<string, SubRouteHandler>,
  logger?: Logger,
  publicAreas: Record<string, SubRouteHandler> = {},
): OwnRoute {
  return {
    kind: 'admin',
    prefix,
    unobserved: true,
    async handle(scope) {
      const rest = scope.path.slice(prefix.length);
      const slash = rest.indexOf('/', 1);
      const area = slash === -1 ? rest.slice(1) : rest.slice(1, slash);
      const subPath = slash === -1 ? '' : rest.slice(slash);
      const open = publicAreas[area];
      if (open) return open(scope, subPath);
      const handler = areas[area];
      if (!handler)
        throw notFound(
          `nothing at ${scope.path}; admin areas are ${Object.keys(areas)
            .map((a) => `${prefix}/${a}`)
            .join(', ')}`,
        );
      authorize(scope);
      await handler(scope, subPath);
      // Checking a condition (the console, on every keystroke) changes nothing: not an audit line.
      if (logger && area !== 'conditions') logAdminChange(logger, scope);
    },
  };
}
