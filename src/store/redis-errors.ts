/**
 * The one mapping from "Redis cannot serve this right now" to what a client is told (SPEC §2):
 * every refusal is a 503 with Retry-After whose message says what Redis refused, never a 500.
 * `http/respond.ts` applies it wherever the error comes from; `http/handler.ts` counts it
 * (outrigger_redis_refusals_total{reason}) and logs it for the operator. A refusal is:
 * - ioredis' own errors for a connection that is down (the offline queue is off, so commands fail
 *   at once), a command timeout, and the Cluster and Sentinel clients' errors while a failover
 *   is under way;
 * - the replies of a server that will not run the command now: out of memory (OOM), a read-only
 *   replica (READONLY), loading its data (LOADING), without its master (MASTERDOWN), a cluster
 *   down or resharding (CLUSTERDOWN, TRYAGAIN), a script running (BUSY), a failed save that stops
 *   writes (MISCONF), too few replicas (NOREPLICAS); a transaction discarded (EXECABORT) because
 *   one of its commands was refused in one of these ways.
 * Anything else (a wrong command, CROSSSLOT, a bug) is not a refusal: it stays a 500.
 */
export type RedisRefusalReason = 'unreachable' | 'timeout' | 'failover' | 'oom' | 'readonly' | 'loading' | 'masterdown' | 'clusterdown' | 'tryagain' | 'busy' | 'misconf' | 'noreplicas';

export interface RedisRefusal {
  /** A fixed label for the metric and the log. */
  reason: RedisRefusalReason;
  /** For the client: what Redis refused, and that retrying later is the thing to do. */
  message: string;
  /** Seconds, for Retry-After. */
  retryAfterSeconds: number;
}

const STORE = "Outrigger's store (Redis)";

const REPLIES: Array<[RegExp, RedisRefusalReason, string, number]> = [
  [/^OOM /, 'oom', `${STORE} is out of memory and refuses writes (OOM: maxmemory reached with no eviction); retry later`, 30],
  [/^READONLY /, 'readonly', `${STORE} refuses writes: it is a read-only replica (READONLY), likely during a failover; retry shortly`, 5],
  [/^LOADING /, 'loading', `${STORE} is loading its data after a restart (LOADING); retry shortly`, 5],
  [/^MASTERDOWN /, 'masterdown', `${STORE} refuses the command: its replica lost the link to its master (MASTERDOWN); retry shortly`, 5],
  [/^CLUSTERDOWN /, 'clusterdown', `${STORE} refuses the command: the Redis cluster is down (CLUSTERDOWN); retry shortly`, 5],
  [/^TRYAGAIN /, 'tryagain', `${STORE} asked to try again: a cluster slot is being moved (TRYAGAIN); retry shortly`, 1],
  [/^BUSY /, 'busy', `${STORE} is busy running a script (BUSY); retry shortly`, 5],
  [/^MISCONF /, 'misconf', `${STORE} refuses writes because it could not save its data to disk (MISCONF); retry later`, 30],
  [/^NOREPLICAS /, 'noreplicas', `${STORE} refuses writes: too few replicas are connected (NOREPLICAS); retry shortly`, 5],
  [/^Command timed out/, 'timeout', `${STORE} did not answer in time; retry shortly`, 5],
  [
    /^(?:Cluster isn't ready|Too many Cluster redirections|All sentinels are unreachable|None of startup nodes is available)/,
    'failover',
    `${STORE} is failing over or regrouping and cannot serve right now; retry shortly`,
    5,
  ],
  [
    /^(?:Stream isn't writeable|Connection is closed|Reached the max retries per request|connect E[A-Z]+|read E[A-Z]+|write E[A-Z]+)/,
    'unreachable',
    `${STORE} is unreachable right now; retry shortly`,
    5,
  ],
];

/** What Redis refused, or null when the error is not a refusal (a bug, a bad command). */
export function redisRefusal(error: unknown): RedisRefusal | null {
  if (!(error instanceof Error)) return null;
  if (error.name === 'MaxRetriesPerRequestError') return { reason: 'unreachable', message: `${STORE} is unreachable right now; retry shortly`, retryAfterSeconds: 5 };
  const message = error.message;
  if (message.startsWith('EXECABORT')) {
    // A MULTI whose commands were refused (OOM, READONLY) is discarded; ioredis keeps why.
    const previous = (error as { previousErrors?: unknown }).previousErrors;
    if (Array.isArray(previous)) for (const e of previous) if (redisRefusal(e) !== null) return redisRefusal(e);
    return null;
  }
  for (const [pattern, reason, text, retryAfterSeconds] of REPLIES) {
    if (pattern.test(message)) return { reason, message: text, retryAfterSeconds };
  }
  // A refusal wrapped by a caller that kept the original as its cause.
  return error.cause instanceof Error ? redisRefusal(error.cause) : null;
}

/** Whether an error means "Redis cannot be reached or cannot serve right now" (any refusal above). */
export function isRedisUnavailable(error: unknown): boolean {
  return redisRefusal(error) !== null;
}
