/**
 * The answer to a failed request, whichever stage (or the upstream) failed: nothing for a client
 * that left (499), a counter and an info line for an upstream failure (502/504), a counter and a
 * rate-limited warning for a Redis refusal, then the error's answer (http/respond.ts) with the
 * request id and, on a covered request, the rate-limit headers (SPEC §10), in the body shape its
 * own route names (GraphQL's on `/graphql/<uri>`, SPEC §15).
 */
import { OutriggerError } from '../errors.js';
import { sendError } from '../http/respond.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import { redisRefusal, type RedisRefusal } from '../store/redis-errors.js';
import type { ChainRequest } from './request.js';

/** A refusal of one reason is logged at once, then at most once per this long (with a count). */
const REFUSAL_LOG_EVERY_MS = 10_000;

export function createFailureAnswer(metrics: Metrics, logger: Logger): (request: ChainRequest, error: unknown) => void {
  const refusalsLogged = new Map<string, { at: number; since: number }>();
  // The client gets 503 (respond.ts); the operator gets a counter and a warning saying what Redis answered.
  const reportRefusal = (refusal: RedisRefusal, error: Error, request: ChainRequest) => {
    metrics.redisRefusals.inc({ reason: refusal.reason });
    const now = Date.now();
    const last = refusalsLogged.get(refusal.reason);
    if (last !== undefined && now - last.at < REFUSAL_LOG_EVERY_MS) {
      last.since++;
      return;
    }
    refusalsLogged.set(refusal.reason, { at: now, since: 0 });
    logger.warn(
      {
        requestId: request.id,
        trace_id: request.trace?.traceId,
        method: request.method,
        path: request.rawPath,
        reason: refusal.reason,
        redis: error.message,
        alsoRefusedSinceLastLine: last?.since ?? 0,
      },
      'Redis refused a command; answered 503 with Retry-After (outrigger_redis_refusals_total)',
    );
  };

  return (request, error) => {
    const status = (error as { status?: number }).status;
    if (status === 499) return; // the client left; nobody to answer
    const traceId = request.trace!.traceId;
    if (status === 502 || status === 504) {
      metrics.upstreamErrors.inc({ kind: status === 504 ? 'timeout' : 'unreachable' });
      // Operators must see each upstream failure at the default level, not only as a counter.
      logger.info(
        { requestId: request.id, trace_id: traceId, method: request.method, path: request.rawPath, status, code: (error as { code?: string }).code, err: (error as Error).message },
        'upstream failure',
      );
    }
    if (!(error instanceof OutriggerError)) {
      const refusal = redisRefusal(error);
      if (refusal !== null) reportRefusal(refusal, error as Error, request);
    }
    const res = request.res;
    if (!res.headersSent) {
      res.setHeader('x-request-id', request.id);
      // A rate limit's 429, and any other error of a covered request, carry the rate-limit headers too (SPEC §10).
      const limits = request.rateLimitHeaders;
      if (limits) for (const name in limits) res.setHeader(name, limits[name]!);
    }
    // The route's body shape (GraphQL's on /graphql/<uri>, SPEC §15); read only on this failure path.
    sendError(res, error, logger, { requestId: request.id, traceId, format: request.route?.errorFormat });
  };
}
