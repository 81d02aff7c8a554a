/**
 * Every Redis key Outrigger uses, built in this one file (BullMQ's queue-keys pattern) so a
 * reader can see the whole data model and no two features collide.
 *
 * All keys of one service share the hash tag `{<serviceId>}`: on Redis Cluster they land in one
 * slot, which lets the Lua scripts touch several of them atomically. Two services with different
 * ids never share a key, so they can share one Redis.
 */
export function redisKeys(prefix: string, serviceId: string) {
  const ns = `${prefix}:{${serviceId}}`;
  return {
    namespace: ns,
    /** pub/sub channel announcing changes (`{kind, id}` JSON) so replicas drop cached copies. */
    changes: `${ns}:changes`,

    /** hash: feature name -> state. */
    features: `${ns}:features`,
    /** hash: permission _id -> JSON document. */
    permissions: `${ns}:acl`,
    /** string: a number bumped on every permission write, polled as the 20 s staleness bound. */
    permissionsVersion: `${ns}:acl:version`,

    /** hash: key record id -> JSON record (with keyHash). */
    apiKeyRecords: `${ns}:apikeys`,
    /** string: SHA-256 hex of a key -> key record id. */
    apiKeyByHash: (hash: string) => `${ns}:apikey-hash:${hash}`,
    /** set: the key record ids an owner holds. */
    apiKeysOfOwner: (owner: string) => `${ns}:apikeys-of:${owner}`,
    /** hash: key record id -> last use (epoch ms), written at most once a minute per key per replica. */
    apiKeyLastUsed: `${ns}:apikeys-last-used`,

    /** counter with TTL: consecutive Basic failures of one user from one client address (IPv6: its /64). */
    basicFailuresUserIp: (user: string, ip: string) => `${ns}:bf:u:${user}:${ip}`,
    /** counter with TTL: Basic failures from one client address (IPv6: its /64) within a UTC day. */
    basicFailuresIp: (ip: string, day: string) => `${ns}:bf:ip:${ip}:${day}`,

    /** counter with TTL: failed API key verifications from one client address (IPv6: its /64; window restarts with each). */
    apiKeyFailuresIp: (ip: string) => `${ns}:kf:ip:${ip}`,

    /** hash: app _id -> JSON document; plus a version counter for change detection. */
    graphqlApps: `${ns}:gql-apps`,
    graphqlAppsVersion: `${ns}:gql-apps:version`,
    /**
     * Automatic persisted queries of one app (SPEC §15), bounded in count and bytes by
     * scripts/persisted-queries/register-persisted-query.ts, all three with one TTL renewed at each registration:
     * hash sha256 hex -> query text; sorted set of those hashes by registration order (the
     * oldest evicted first); hash `bytes` (the texts' total) and `seq` (the last order number).
     */
    persistedQueryTexts: (appId: string) => `${ns}:apq-texts:${appId}`,
    persistedQueryOrder: (appId: string) => `${ns}:apq-order:${appId}`,
    persistedQueryMeta: (appId: string) => `${ns}:apq-meta:${appId}`,

    /** hash: webhook _id -> JSON document. */
    webhooks: `${ns}:webhooks`,
    webhooksVersion: `${ns}:webhooks:version`,
    /** stream of captured request/response events. */
    events: `${ns}:events`,
    /** consumer group name on `events`. */
    eventsGroup: 'webhook-workers',
    /** sorted set: retry job JSON scored by due time (ms). */
    retrySchedule: `${ns}:webhook-retries`,
    /** string with TTL: a worker consumer is alive (renewed every 1.5 s, expires 5 s after its last renewal). */
    webhookWorkerAlive: (consumer: string) => `${ns}:webhook-worker-alive:${consumer}`,
    /** counter with TTL: consecutive events of one webhook version that ended `failed` (auto-disable). */
    webhookFailures: (webhookId: string, version: string) => `${ns}:wh-failures:${webhookId}:${version}`,
    /** counter with TTL: deliveries started to one throttled webhook within one second (epoch s). */
    webhookThrottle: (webhookId: string, second: number) => `${ns}:wh-throttle:${webhookId}:${second}`,
    /** string: a delivery already final, so a reclaimed entry is not delivered twice. */
    deliveryDone: (eventId: string, webhookId: string) => `${ns}:delivered:${eventId}:${webhookId}`,
    /**
     * hash with TTL: the same markers for the first attempts of one stream entry's deliveries,
     * field `<eventId>:<webhookId>` (one HSET per entry and commit instead of one SET per
     * delivery); deleted when the entry is acknowledged.
     */
    entryDeliveries: (entryId: string) => `${ns}:entry-delivered:${entryId}`,
    /** sorted set of log ids by timestamp, per webhook; entries as hashes with TTL. */
    webhookLogIndex: (webhookId: string) => `${ns}:wh-logs:${webhookId}`,
    webhookLogEntry: (logId: string) => `${ns}:wh-log:${logId}`,
    /** sorted set of log ids by timestamp, per webhook and status (the logs' `?status=` filter). */
    webhookLogStatusIndex: (webhookId: string, status: string) => `${ns}:wh-logs-by-status:${status}:${webhookId}`,
    /** string with TTL: rate limit for `skipped` log entries. */
    skippedLogGate: (webhookId: string) => `${ns}:wh-skip-gate:${webhookId}`,
    /** counter per UTC day: email recipients reserved. */
    emailAllowance: (day: string) => `${ns}:email-allowance:${day}`,
    /** string with TTL: an active recording; list of captured requests. */
    recordingState: `${ns}:recording`,
    recordingEntries: `${ns}:recording:entries`,

    /** stream: GraphQL subscriptions' change feed `{db, collection, op, _id, document?}`, capped (`subscriptions.retention`). */
    subscriptionFeed: `${ns}:sub-feed`,
    /** sorted set: `["<db>","<collection>"]` some replica has subscribers for, scored by when that claim expires (ms, Redis's clock). */
    subscribedCollections: `${ns}:sub-collections`,
    /** string with TTL: a batch of changes already appended to the feed, so a resent batch is not appended twice. */
    subscriptionFeedBatch: (token: string) => `${ns}:sub-feed-batch:${token}`,

    /** OAuth (agent sign-in): registered clients (JSON with TTL), authorization codes (JSON, 60 s, by SHA-256 of the code). */
    oauthClient: (clientId: string) => `${ns}:oauth-client:${clientId}`,
    oauthCode: (codeHash: string) => `${ns}:oauth-code:${codeHash}`,
    /** string with TTL: the key a redeemed code gave, so a replayed code revokes it (RFC 6749 §4.1.2). */
    oauthCodeUsed: (codeHash: string) => `${ns}:oauth-code-used:${codeHash}`,
    /** string with TTL: an authorization request between its pages (JSON, 10 min). */
    oauthRequest: (requestId: string) => `${ns}:oauth-request:${requestId}`,
    /** counter with TTL: dynamic registrations from one client IP in one hour. */
    oauthRegistrationsIp: (ip: string, hour: string) => `${ns}:oauth-reg:${ip}:${hour}`,
    /** counter with TTL: dynamic registrations from every address in one UTC day (`mcp.registrationsPerDay`). */
    oauthRegistrationsDay: (day: string) => `${ns}:oauth-reg-day:${day}`,
    /** counter with TTL: authorization requests started from one address (IPv6: its /64) in a 10-minute window. */
    oauthAuthorizeIp: (address: string) => `${ns}:oauth-authorize:${address}`,
    /** counter with TTL: authorization requests started from every address in a 10-minute window (`mcp.authorizeRequestsTotal`). */
    oauthAuthorizeTotal: `${ns}:oauth-authorize-total`,
    /** counter with TTL: failed token requests from one client address (IPv6: its /64; 10-minute window). */
    oauthTokenFailuresIp: (ip: string) => `${ns}:oauth-token-fail:${ip}`,
    /** sorted set: ids of users' own sign-in tokens by expiry, so expired ones are swept. */
    signInTokensByExpiry: `${ns}:signin-tokens`,

    /**
     * hash with TTL (the window's end): one rate-limit allowance (SPEC §10), `w` its window's id on
     * Redis's clock, `n` the units handed out to replicas in it. `window` is `60s`, `day` or
     * `month`, so an override with another window starts a fresh allowance.
     */
    rateLimit: (policy: string, window: string, subject: string) => `${ns}:rl:${policy}:${window}:${subject}`,
    /** hash with TTL (100 days): one key's usage in one UTC day (`requests`, `units`, `refused`). */
    keyUsage: (keyId: string, day: string) => `${ns}:key-usage:${keyId}:${day}`,

    /** pub/sub channel of the response cache's drops (`response-cache` bus messages), apart from `changes` so a busy admin bus never delays them. */
    cacheInvalidations: `${ns}:cache-invalidations`,
    /**
     * counter: a response-cache generation for `cache.consistency: strong` (INCR by a write before
     * its answer, read by every hit). `part` is `all`, or a kind and a slot number (the name's
     * hash modulo 4096, src/cache/cache-scope.ts), so clients cannot mint keys without bound.
     */
    cacheGeneration: (part: string) => `${ns}:cache-gen:${part}`,

    /**
     * hash with TTL: one idempotency record (SPEC §14), `digest` the SHA-256 hex of the caller's
     * scope and key. Hash-tagged by the service and digest, not by the service alone: records are
     * spread over a cluster's slots (each script touches this one key), and a client's key never
     * reaches a key name. Fields `s` state (run, done, big), `f` fingerprint, `t` the running
     * ticket, `c` status, `h` headers JSON, `b` body.
     */
    idempotencyRecord: (digest: string) => `${prefix}:idem:{${serviceId}:${digest}}`,
  };
}

export type RedisKeys = ReturnType<typeof redisKeys>;

/** A delivery's field in its entry's `entryDeliveries` hash (event ids hold no `:`): not a key, so outside `redisKeys`. */
export function entryDeliveryField(eventId: string, webhookId: string): string {
  return `${eventId}:${webhookId}`;
}

/** UTC day stamp used in daily counters, e.g. 2026-11-21. */
export function utcDay(now = Date.now()): string {
  return new Date(now).toISOString().slice(0, 10);
}
