/**
 * Whether an error means "Redis cannot be reached or cannot serve right now" (as opposed to a bug
 * or a bad command): ioredis's own errors for a connection that is down (the offline queue is off,
 * so commands fail at once), the Cluster and Sentinel clients' errors while a failover is under
 * way, and the replies of a server that is loading, failing over or read-only.
 * `http/respond.ts` answers these 503 wherever they come from.
 */
const UNAVAILABLE = /^(?:Stream isn't writeable|Connection is closed|Reached the max retries per request|connect E[A-Z]+|read E[A-Z]+|write E[A-Z]+|LOADING |MASTERDOWN |CLUSTERDOWN |TRYAGAIN |READONLY |BUSY |Cluster isn't ready|None of startup nodes is available|Too many Cluster redirections|All sentinels are unreachable)/;

export function isRedisUnavailable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  return error.name === 'MaxRetriesPerRequestError' || UNAVAILABLE.test(error.message);
}
