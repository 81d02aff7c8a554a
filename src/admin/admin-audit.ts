import type { RequestScope } from '../http/scope.js';
import type { Logger } from '../observability/logger.js';

const READS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Logs every admin change at info: who (user id, how they signed in) changed what (method and
 * path, which names the document) with what outcome. Called once the handler has answered, so
 * only changes that happened (a status below 400) are logged; reads never are.
 */
export function logAdminChange(logger: Logger, scope: RequestScope): void {
  if (READS.has(scope.method) || scope.res.statusCode >= 400) return;
  const { principal } = scope;
  const who = principal.id ?? 'anonymous';
  logger.info(
    { admin: { user: who, via: principal.via, ...(principal.keyId && { keyId: principal.keyId }) }, method: scope.method, path: scope.path, status: scope.res.statusCode, requestId: scope.id },
    `admin change: ${scope.method} ${scope.path} by ${who}`,
  );
}
