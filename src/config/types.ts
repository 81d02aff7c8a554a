/** The validated, defaulted configuration. Field names are the YAML names (SPEC §1). */
export type FeatureState = 'not-installed' | 'enabled' | 'disabled';
export type IdentityMode = 'jwt' | 'headers' | 'none';

export interface StaticUser {
  id: string;
  /** `scrypt$N$r$p$salt$hash` as printed by `outrigger hash-password`. */
  password: string;
  roles: string[];
}

export interface OutriggerConfig {
  service: { id: string; publicUrl: string };
  listen: { host: string; port: number; trustedProxies: string[]; shutdownGraceMs: number };
  upstream: {
    url: string;
    timeoutMs: number;
    connections: number;
    identity: {
      mode: IdentityMode;
      jwt: { secret: string | null; algorithm: 'HS256' | 'HS384' | 'HS512'; issuer: string; audience: string | null; ttlSeconds: number };
      headers: { user: string; roles: string };
    };
  };
  redis: { url: string; keyPrefix: string };
  users: {
    source: 'static' | 'upstream';
    static: StaticUser[];
    upstream: { path: string; rolesField: string; cacheSeconds: number };
  };
  acl: { mode: 'enforce' | 'own-routes'; adminRoles: string[]; bootstrap: string | null };
  apiKeys: { prefix: string; maxExpiresInDays: number; maxKeysPerUser: number };
  graphql: {
    defaultDb: string;
    appsPath: string;
    backend: { url: string; collectionPath: string; auth: 'caller' | 'service'; serviceAuthorization: string | null };
    defaultLimit: number;
    maxLimit: number;
    maxDepth: number;
    maxBackendReads: number;
    timeoutMs: number;
    introspection: boolean;
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
    /** Approximate cap on the event stream (XADD MAXLEN ~). */
    streamMaxLength: number;
    email: {
      smtp: { host: string | null; port: number; secure: boolean; auth: { user: string; pass: string } | null };
      from: string | null;
      dailyAllowance: number;
      ownServer: boolean;
    };
  };
  log: { level: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent'; secretHeaders: string[] };
  mcp: { signIn: 'key-or-token' | 'key-only' | 'token-only' };
}
