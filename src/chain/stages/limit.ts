/**
 * limit: rate limits and quotas (SPEC §10; limits/limiter.ts), after authentication and before
 * the route or the forwarder; public own routes are covered only by `by: client` and
 * `by: service` policies. Throws 429 (or 503 under `onRedisUnavailable: deny`). Absent from the
 * chain when no limiter runs.
 */
import type { RequestScope } from '../../http/scope.js';
import type { Stage, Step } from '../stage.js';

export function limitStage(limit: ((scope: RequestScope) => Promise<void> | void) | undefined): Stage | null {
  if (limit === undefined) return null;
  return { name: 'limit', run: (request): Step => limit(request) };
}
