/** The validated, defaulted configuration. Field names are the YAML names (SPEC §1). */
import type { GraphqlLimitsConfig } from './graphql-limits.js';
import type { CorsConfig } from './cors-config.js';
import type { CacheConfig } from './cache-config.js';
import type { ShutdownConfig } from './shutdown-config.js';
import type { LimitsConfig } from './limits-config.js';
import type { SubscriptionsConfig } from './subscriptions-config.js';
import type { TelemetryConfig } from './telemetry.js';
import type { AdaptiveConcurrencyConfig, BreakerConfig } from './upstream-protection.js';

export type FeatureState = 'not-installed' | 'enabled' | 'disabled';
export type IdentityMode = 'jwt' | 'headers' | 'none';

export interface StaticUser {
  id: string;
  /** `scrypt$N$r$p$salt$hash` as printed by `outrigger hash-password`. */
  password: string;
  roles: string[];
}

export interface RedisNode {
  host: string;
  port: number;
}

/** Exactly one of `url`, `cluster`, `sentinel` is set (the other two are null). */
export interface RedisConfig {
  /** A single node (redis://, rediss://) or "embedded". */
  url: string | null;
  cluster: { nodes: RedisNode[] } | null;
  sentinel: { masterName: string; nodes: RedisNode[]; password: string | null } | null;
  /** Password (AUTH) for every data node; a password inside `url` counts as this. */
  password: string | null;
  /** TLS to every data node (and to the sentinels); `rediss://` implies it. */
  tls: boolean;
  keyPrefix: string;
  /**
   * Replicas that must acknowledge a batch of webhook events, or of subscription changes, before
   * its writer lets it go (WAIT); 1 by default on cluster and sentinel, so a master killed right
   * after a write loses nothing; 0 skips the wait.
   */
  waitForReplicas: number;
  /**
   * Deadline of every command on the request path's connection, from its first send (a command
   * resent after a reconnect keeps it): past it the request gets SPEC §2's 503 instead of waiting
   * out a frozen Redis (issue 34).
   */
  commandTimeoutMs: number;
}

export interface OutriggerConfig {
  service: { id: string; publicUrl: string };
  listen: {
    host: string;
    port: number;
    trustedProxies: string[];
    /** A request's headers must arrive within this long of its first byte. */
    headersTimeoutMs: number;
    /** The whole request (headers and body) must arrive within this long of its first byte. */
    requestTimeoutMs: number;
    /** A streamed request body that sends nothing for this long is cut (408). */
    bodyIdleTimeoutMs: number;
    /** A proxied response the client stops reading is cut after this long without progress (issue 34). */
    sendTimeoutMs: number;
  };
  /** SIGTERM: drain, then close (SPEC §2; src/shutdown.ts). */
  shutdown: ShutdownConfig;
  upstream: {
    url: string;
    timeoutMs: number;
    connections: number;
    /** Upstream connections one client IP may hold at once; its other requests wait. */
    maxConnectionsPerClient: number;
    /** How long a request may wait for the backend (a free connection, the adaptive limit) before it is answered 503 (default 100 ms with adaptive concurrency, 10 s without). */
    queueTimeoutMs: number;
    /** SPEC §13: requests in flight limited by a limit learned from the backend's latency. */
    adaptiveConcurrency: AdaptiveConcurrencyConfig;
    /** SPEC §13: per upstream origin, fail fast while the backend fails. */
    breaker: BreakerConfig;
    /** Requests one client IP may have waiting for an upstream connection; more are answered 429. */
    maxQueuedPerClient: number;
    /** Request bodies up to this many bytes are read in full before taking an upstream connection (0: stream all). */
    bufferBodyBytes: number;
    /** What all bodies being buffered may take together; past it bodies stream. */
    bufferTotalBytes: number;
    /** What one client address's bodies being buffered may take of that; past it its bodies stream. */
    bufferBytesPerClient: number;
    identity: {
      mode: IdentityMode;
      jwt: { secret: string | null; algorithm: 'HS256' | 'HS384' | 'HS512'; issuer: string; audience: string | null; ttlSeconds: number };
      headers: { user: string; roles: string };
    };
  };
  redis: RedisConfig;
  users: {
    source: 'static' | 'upstream';
    static: StaticUser[];
    upstream: { path: string; rolesField: string; cacheSeconds: number };
  };
  acl: { mode: 'enforce' | 'own-routes'; adminRoles: string[]; bootstrap: string | null };
  apiKeys: {
    prefix: string;
    maxExpiresInDays: number;
    maxKeysPerUser: number;
    /** Failed key verifications one client IP may make per failureWindowSeconds before 429 (shared by replicas). */
    maxFailuresPerClient: number;
    failureWindowSeconds: number;
  };
  /** The GraphQL engine: its limits (graphql-limits.ts), where it is served and what it reads. */
  graphql: GraphqlLimitsConfig & {
    appsPath: string;
    backend: { url: string; collectionPath: string; auth: 'caller' | 'service'; serviceAuthorization: string | null };
  };
  routes: {
    keys: string;
    graphql: string;
    admin: string;
    health: string;
    metrics: string;
    oauth: { token: string; authorize: string; register: string };
  };
  features: { apiKeys: FeatureState; webhooks: FeatureState };
  webhooks: {
    allowPrivateTargets: string[];
    logRetentionDays: number;
    queueCapacity: number;
    captureBodyBytes: number;
    /** Delay before each retry of a failed delivery, in ms (default 5 s, 1 min, 10 min, 1 h, 6 h). */
    retrySchedule: number[];
    /** How long a recording captures requests (default 60). */
    recordingSeconds: number;
    /** A delivery pending this long in a worker that stopped heartbeating is reclaimed by another worker. */
    reclaimIdleMs: number;
    /** Overrides logRetentionDays with a shorter retention, in seconds (null: use logRetentionDays). */
    logRetentionSeconds: number | null;
    /** Approximate cap on the events in the stream (XADD MAXLEN ~, scaled by the events per entry). */
    streamMaxLength: number;
    /** A webhook is disabled after this many consecutive events ended `failed` (0: never). */
    disableAfterFailures: number;
    /** Where the notice of an automatically disabled webhook is e-mailed (null: nobody). */
    alertEmail: string | null;
    email: {
      smtp: { host: string | null; port: number; secure: boolean; auth: { user: string; pass: string } | null };
      from: string | null;
      dailyAllowance: number;
      ownServer: boolean;
    };
  };
  /** Traces (SPEC §9): export settings; propagation needs none. */
  telemetry: TelemetryConfig;
  /** Rate limits and quotas (SPEC §10; src/limits/). */
  limits: LimitsConfig;
  /** GraphQL subscriptions: the change feed's retention and the bounds (SPEC §6.5; src/graphql/subscribe/). */
  subscriptions: SubscriptionsConfig;
  /** CORS for the proxied API and the GraphQL apps (SPEC §15; config/cors-config.ts). */
  cors: CorsConfig;
  /** The response cache (SPEC §12; config/cache-config.ts, src/cache/). */
  cache: CacheConfig;
  /** Idempotency keys (SPEC §14; src/idempotency/, docs/idempotency.md). */
  idempotency: {
    /** How long a finished write's answer is kept and replayed (default 24 h). */
    ttlSeconds: number;
    /** How long a running write's lock outlives a process that died holding it (default 60; refreshed every third while it runs). */
    lockSeconds: number;
    /** An answer larger than this is kept as its status only and replays as 409 (default 1 MiB). */
    maxBodyBytes: number;
    /** A keyed write's body is read whole before it runs (for its fingerprint): larger is 413 (default 1 MiB). */
    maxRequestBytes: number;
    /** Conditions (§4) on a write's head where the Idempotency-Key header is mandatory (400 without it). */
    required: string[];
  };
  log: { level: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent'; secretHeaders: string[] };
  mcp: {
    /** Who answers `mcp.path` (SPEC §11): the backend's MCP server (proxied) or Outrigger's own, whose tools are the GraphQL apps' operations. */
    server: 'backend' | 'outrigger';
    /** What agent sign-in hands out (SPEC §5.6); `off` answers 404 on every OAuth route. */
    signIn: 'key-or-token' | 'key-only' | 'token-only' | 'off';
    /** The protected resource: its 401 carries the resource_metadata challenge. */
    path: string;
    /** Conditions (§4) naming the collection paths offered as MCP resources (SPEC §11.1); empty: no resources. A literal `path-prefix('/<db>/<coll>')` also lists the collection. */
    resources: string[];
    /** Bytes the results of one `POST /mcp` answer may take together (default `graphql.maxResponseBytes`); a tool result past what is left is an error naming it. */
    maxResponseBytes: number;
    /** Lifetime of a user's own sign-in token. */
    tokenTtlMinutes: number;
    /** Dynamic registrations accepted per client IP (IPv6: per /64) per hour. */
    registrationsPerHour: number;
    /** Dynamic registrations accepted per UTC day from all addresses together (each is kept 30 days). */
    registrationsPerDay: number;
    /** Authorization requests (GET /authorize) one address (IPv6: one /64) may start per 10 minutes, the life of a request. */
    authorizeRequestsPerAddress: number;
    /** Authorization requests all addresses together may start per 10-minute window (each is stored 10 minutes). */
    authorizeRequestsTotal: number;
    /** Whether an agent's key or token may carry the user's admin roles (`acl.adminRoles`): `refuse` leaves them out. */
    adminRoles: 'refuse' | 'allow';
    clientMetadata: {
      /** CIDRs the SSRF guard lets metadata-document fetches reach; an http:// client_id is accepted only when its host is an IP inside them. */
      allowPrivateTargets: string[];
      timeoutMs: number;
      maxBytes: number;
      cacheSeconds: number;
    };
  };
}
