/**
 * `GET /_admin/limits`: the rate-limit policies as configured (SPEC §10), for the console's keys
 * page, which offers an override for each `by: key` policy and shows its default beside it.
 * Read at each request: a reload (src/reload.ts) replaces `limits.policies` in place.
 */
import type { SubRouteHandler } from '../admin/admin-route.js';
import type { LimitsConfig } from '../config/limits-config.js';
import { methodNotAllowed, notFound } from '../errors.js';
import { sendJson } from '../http/respond.js';
import { presentKeyLimits } from './key-limits.js';

export function createLimitsArea(limits: LimitsConfig): SubRouteHandler {
  const present = () =>
    limits.policies.map((p) => ({
      name: p.name,
      by: p.by,
      units: p.units,
      ...presentKeyLimits({ [p.name]: p })[p.name]!,
      ...(p.condition !== null ? { condition: p.condition } : {}),
      ...(p.roles !== null ? { roles: p.roles } : {}),
    }));
  return (scope, subPath) => {
    if (subPath !== '' && subPath !== '/') throw notFound(`nothing at ${scope.path}; the policies are listed at the area's root`);
    if (scope.method !== 'GET') throw methodNotAllowed(['GET']);
    sendJson(scope.res, 200, { policies: present(), headers: limits.headers, onRedisUnavailable: limits.onRedisUnavailable });
  };
}
