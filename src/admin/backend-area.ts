import { methodNotAllowed, notFound } from '../errors.js';
import { sendJson } from '../http/respond.js';
import type { BackendGuards } from '../proxy/guard/backend-guard.js';
import type { SubRouteHandler } from './admin-route.js';

/**
 * `GET <admin>/backend` → 200 `{"origins": [...]}`: per upstream origin, the adaptive limit, what
 * is in flight and waiting, and the circuit breaker (SPEC §13), as the console's Backend page
 * shows them. Read from the guards at the moment of the request; nothing is stored.
 */
export function createBackendArea(guards: BackendGuards): SubRouteHandler {
  return function handleBackend(scope, subPath) {
    if (subPath !== '' && subPath !== '/') throw notFound(`nothing at ${scope.path}; the backend's state is GET ${scope.path.slice(0, scope.path.length - subPath.length)}`);
    if (scope.method !== 'GET') throw methodNotAllowed(['GET']);
    sendJson(scope.res, 200, { origins: [...guards.all()].map((guard) => guard.state()) });
  };
}
