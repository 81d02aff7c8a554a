/**
 * `<admin>/cache` (SPEC §12): `GET` what the cache holds, `DELETE` drops it by hand, everything
 * or `?collection=db/coll` (or `?collection=db`), on every replica. Behind the admin route's
 * authorization (admin roles, or a permission that allows the path).
 */
import { badRequest, methodNotAllowed, notFound } from '../errors.js';
import { sendJson } from '../http/respond.js';
import type { RequestScope } from '../http/scope.js';
import { ALL, parseScope, scopeName } from './cache-scope.js';
import type { ResponseCache } from './response-cache.js';

export function createCacheAdminArea(cache: ResponseCache) {
  return function handle(scope: RequestScope, subPath: string): void {
    if (subPath !== '' && subPath !== '/') throw notFound(`nothing at ${scope.path}; the cache is one resource (GET to read, DELETE to purge)`);
    if (scope.method === 'GET')
      return sendJson(scope.res, 200, {
        entries: cache.entries,
        bytes: cache.bytes,
        maxBytes: cache.maxBytes,
        storing: cache.storing,
        rules: cache.rules.map((r) => ({ name: r.name, maxAgeSeconds: r.maxAgeSeconds })),
        // This process's numbers (each replica keeps its own; the metrics add them up).
        byRule: cache.ruleStats(),
      });
    if (scope.method !== 'DELETE') throw methodNotAllowed(['GET', 'DELETE']);
    const named = scope.query.get('collection');
    for (const key of scope.query.keys()) if (key !== 'collection') throw badRequest(`unknown query parameter ${JSON.stringify(key)}; only collection=db/coll is accepted`);
    const target = named === null ? ALL : parseScope(named);
    if (typeof target === 'string') throw badRequest(`collection ${target}`);
    cache.purge(target);
    return sendJson(scope.res, 200, { purged: scopeName(target) });
  };
}
