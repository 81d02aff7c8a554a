/**
 * The sections without a file of their own (SPEC §1): each a zod schema with its defaults and
 * bounds. The sections with rules of their own (redis, limits, shutdown, cors, subscriptions,
 * telemetry, graphql) are in their files; validate.ts puts them all together.
 */
import { z } from 'zod';
import { ConditionSyntaxError, parseCondition } from '../condition/index.js';
import { parseRetryDelay, RETRY_SCHEDULE_MAX_LENGTH } from './retry-schedule.js';
import { ALWAYS, boolean, checks, got, integer, oneOf, optionalSection, optionalText, required, route, section, strings, text } from './fields.js';
import { shutdownGraceMs } from './shutdown-config.js';
import { ADAPTIVE_DEFAULTS, adaptiveConcurrencySchema, breakerSchema } from './upstream-protection.js';

const FEATURE_STATES = ['not-installed', 'enabled', 'disabled'] as const;
const serviceId = (v: string): string | null => (/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/.test(v) ? null : 'must be 1-64 letters, digits, dot, dash or underscore, starting with a letter or digit');
const withoutTrailingSlash = (v: string) => v.replace(/\/$/, '');

export const serviceSchema = optionalSection({
  id: required(serviceId),
  /** Default: http://localhost:<listen.port> (validate.ts). */
  publicUrl: text(checks.httpUrl).transform(withoutTrailingSlash).optional(),
});

export const listenSchema = optionalSection({
  host: text(undefined, { fallback: '0.0.0.0' }),
  port: integer(0, 65535).default(8080),
  trustedProxies: strings(checks.cidr).default([]),
  headersTimeoutMs: integer(100, 600_000).default(30_000),
  requestTimeoutMs: integer(100, 86_400_000).default(300_000),
  bodyIdleTimeoutMs: integer(100, 3_600_000).default(30_000),
  sendTimeoutMs: integer(100, 3_600_000).default(60_000),
  /** Deprecated: shutdown.timeoutSeconds (shutdown-config.ts). */
  shutdownGraceMs,
});

const upstreamFields = optionalSection({
  url: required(checks.httpUrl).transform(withoutTrailingSlash),
  timeoutMs: integer(100, 3_600_000).default(30_000),
  connections: integer(1, 4096).default(128),
  maxConnectionsPerClient: integer(1, 4096).default(64),
  // SPEC §13: with a learned limit a long wait only queues into a backend that is already slow (upstreamOf).
  queueTimeoutMs: integer(10, 600_000).optional().meta({ default: 100, description: '100 with adaptiveConcurrency on (the default), 10000 with it off' }),
  adaptiveConcurrency: adaptiveConcurrencySchema,
  breaker: breakerSchema,
  maxQueuedPerClient: integer(0, 100_000).default(256),
  bufferBodyBytes: integer(0, 64 * 1024 * 1024).default(1024 * 1024),
  // At least 1 MiB: own routes' bodies (up to 1 MiB) count against both bounds too (http/body.ts, issue 53).
  bufferTotalBytes: integer(1024 * 1024, 64 * 1024 * 1024 * 1024).default(256 * 1024 * 1024),
  bufferBytesPerClient: integer(1024 * 1024, 64 * 1024 * 1024 * 1024).default(32 * 1024 * 1024),
  identity: optionalSection({
    mode: oneOf(['jwt', 'headers', 'none']).default('none'),
    jwt: optionalSection({
      secret: optionalText(),
      algorithm: oneOf(['HS256', 'HS384', 'HS512']).default('HS256'),
      issuer: text(undefined, { fallback: 'restheart.org' }),
      audience: optionalText(),
      ttlSeconds: integer(10, 86_400).default(60),
    }),
    headers: optionalSection({
      user: text(checks.headerName, { fallback: 'X-Forwarded-User' }),
      roles: text(checks.headerName, { fallback: 'X-Forwarded-Roles' }),
    }),
  }),
});

/** The defaults one upstream key takes from another: the adaptive limit's floor and the queue's wait. */
export const upstreamSchema = upstreamFields
  .superRefine((u, ctx) => {
    const minLimit = (u?.adaptiveConcurrency as { minLimit?: unknown } | undefined)?.minLimit;
    if (typeof minLimit === 'number' && typeof u.connections === 'number' && minLimit > u.connections)
      ctx.addIssue({ code: 'custom', path: ['adaptiveConcurrency', 'minLimit'], message: `must not exceed upstream.connections (${u.connections})`, input: minLimit });
  }, ALWAYS)
  .transform((u) => ({
    ...u,
    queueTimeoutMs: u.queueTimeoutMs ?? (u.adaptiveConcurrency.enabled ? 100 : 10_000),
    adaptiveConcurrency: { ...u.adaptiveConcurrency, minLimit: u.adaptiveConcurrency.minLimit ?? Math.min(ADAPTIVE_DEFAULTS.minLimit, u.connections) },
  }));

const staticUser = section({
  id: required(),
  password: required((v) => (v.startsWith('scrypt$') ? null : 'must be an scrypt hash from `outrigger hash-password` (plain passwords are refused)')),
  roles: strings().default([]),
});

const staticUsers = z.array(staticUser, { error: 'must be a list of {id, password, roles}' }).superRefine((users, ctx) => {
  if (!Array.isArray(users)) return;
  const seen = new Set<unknown>();
  users.forEach((user, i) => {
    const id = (user as { id?: unknown } | undefined)?.id;
    if (typeof id === 'string' && seen.has(id)) ctx.addIssue({ code: 'custom', path: [i, 'id'], message: `duplicate user ${JSON.stringify(id)}` });
    seen.add(id);
  });
}, ALWAYS);

export const usersSchema = optionalSection({
  source: oneOf(['static', 'upstream']).default('static'),
  static: staticUsers.default([]),
  /** A YAML file holding the `static` list (a separate Secret); load.ts reads it into `static`. */
  file: z.string().optional(),
  upstream: optionalSection({
    path: text((v) => (v.startsWith('/') && v.includes('{id}') ? null : 'must be a path containing {id}, e.g. /roles/{id}'), { fallback: '/roles/{id}' }),
    rolesField: text(undefined, { fallback: 'roles' }),
    cacheSeconds: integer(0, 3600).default(10),
  }),
});

export const aclSchema = optionalSection({
  mode: oneOf(['enforce', 'own-routes']).default('enforce'),
  adminRoles: strings().default(['root', 'srv-admin']),
  bootstrap: optionalText(),
});

export const apiKeysSchema = optionalSection({
  prefix: text((v) => (/^[a-z][a-z0-9]{1,15}$/.test(v) ? null : 'must be 2-16 lowercase letters or digits, starting with a letter'), { fallback: 'rig' }),
  maxExpiresInDays: integer(1, 3650).default(3650),
  maxKeysPerUser: integer(1, 1000).default(10),
  maxFailuresPerClient: integer(1, 1_000_000).default(100),
  failureWindowSeconds: integer(1, 86_400).default(60),
});

export const routesSchema = optionalSection({
  keys: route('/keys'),
  graphql: route('/graphql'),
  admin: route('/_admin'),
  health: route('/_health'),
  metrics: route('/_metrics'),
  oauth: optionalSection({ token: route('/token'), authorize: route('/authorize'), register: route('/register') }),
});

export const featuresSchema = optionalSection({
  apiKeys: oneOf(FEATURE_STATES).default('enabled'),
  webhooks: oneOf(FEATURE_STATES).default('enabled'),
});

/** `webhooks.retrySchedule`: delays, each a number of seconds or a string like 200ms, 5s, 1m, 10m, 1h, 6h; in ms. */
const retrySchedule = z
  .array(
    z.union([z.number(), z.string()]).transform((item, ctx) => {
      const ms = parseRetryDelay(item);
      if (ms !== null) return ms;
      ctx.addIssue({ code: 'custom', message: `must be a delay from 10ms to 7d, as seconds or a string like 200ms, 5s, 1m, 1h ${got(item)}`, input: item });
      return z.NEVER;
    }),
    { error: `must be a list of at most ${RETRY_SCHEDULE_MAX_LENGTH} delays, e.g. [5s, 1m, 10m, 1h, 6h] ([] disables retries)` },
  )
  .max(RETRY_SCHEDULE_MAX_LENGTH);

export const webhooksSchema = optionalSection({
  allowPrivateTargets: strings(checks.cidr).default([]),
  logRetentionDays: integer(1, 3650).default(30),
  queueCapacity: integer(10, 1_000_000).default(10_000),
  captureBodyBytes: integer(0, 10 * 1024 * 1024).default(65_536),
  retrySchedule: retrySchedule.prefault(['5s', '1m', '10m', '1h', '6h']),
  recordingSeconds: integer(1, 3600).default(60),
  reclaimIdleMs: integer(100, 3_600_000).default(120_000),
  logRetentionSeconds: integer(1, 3650 * 86_400)
    .nullable()
    .default(null),
  streamMaxLength: integer(1000, 100_000_000).default(1_000_000),
  disableAfterFailures: integer(0, 1_000_000).default(100),
  alertEmail: optionalText((v) => (/^[^\s@<>,]+@[^\s@<>,]+$/.test(v) ? null : `must be one e-mail address like ops@example.com (got ${JSON.stringify(v)})`)),
  email: optionalSection({
    smtp: optionalSection({
      host: optionalText(),
      port: integer(1, 65535).default(587),
      secure: boolean().default(false),
      auth: section({ user: required(), pass: required() }).nullable().default(null),
    }),
    from: optionalText(),
    dailyAllowance: integer(0, 1_000_000).default(100),
    ownServer: boolean().default(false),
  }),
});

export const logSchema = optionalSection({
  level: oneOf(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  secretHeaders: strings(checks.headerName)
    .default([])
    .transform((names) => names.map((h) => h.toLowerCase())),
});

/** An `mcp.resources` entry: a condition decided on a `GET` of the resource's REST path, before any body or answer. */
function resourceCondition(text: string): string | null {
  try {
    const condition = parseCondition(text);
    if (condition.usesRequestBody || condition.usesResponse) return 'may read neither a request body nor a response: it decides which paths are resources, before either exists';
    return null;
  } catch (error) {
    if (error instanceof ConditionSyntaxError) return `is not a valid condition: ${error.message}`;
    throw error;
  }
}

export const mcpSchema = optionalSection({
  server: oneOf(['backend', 'outrigger']).default('backend'),
  signIn: oneOf(['key-or-token', 'key-only', 'token-only', 'off']).default('key-or-token'),
  path: route('/mcp'),
  resources: strings(resourceCondition).default([]),
  /** Default: graphql.maxResponseBytes, what one GraphQL answer may hold (issue 53; validate.ts). */
  maxResponseBytes: integer(64 * 1024, 1024 * 1024 * 1024).optional(),
  tokenTtlMinutes: integer(1, 24 * 60).default(60),
  registrationsPerHour: integer(1, 100_000).default(30),
  // 500 a day keeps at most 15,000 self-registered clients (30 days each, at most ~6 KB:
  // 10 redirect URIs of 512 characters) below ~100 MB of Redis; a new client install
  // registers once, so a busy service needs far fewer.
  registrationsPerDay: integer(1, 1_000_000).default(500),
  authorizeRequestsPerAddress: integer(1, 100_000).default(60),
  // Each stored request is at most ~3 KB for 10 minutes: 10,000 a window is ~60 MB at most.
  authorizeRequestsTotal: integer(1, 10_000_000).default(10_000),
  adminRoles: oneOf(['refuse', 'allow']).default('refuse'),
  clientMetadata: optionalSection({
    allowPrivateTargets: strings(checks.cidr).default([]),
    timeoutMs: integer(100, 60_000).default(5000),
    maxBytes: integer(512, 1024 * 1024).default(16 * 1024),
    cacheSeconds: integer(0, 86_400).default(300),
  }),
});

/** An `idempotency.required` entry: decided on a write's head, before its body is read and before any answer. */
function headCondition(text: string): string | null {
  try {
    const condition = parseCondition(text);
    if (condition.usesRequestBody || condition.usesResponse) return 'may read neither a request body nor a response: it decides whether the Idempotency-Key header is required, before either is read';
    return null;
  } catch (error) {
    if (error instanceof ConditionSyntaxError) return `is not a valid condition: ${error.message}`;
    throw error;
  }
}

/** `idempotency:` (SPEC §14; src/idempotency/, docs/idempotency.md). */
export const idempotencySchema = optionalSection({
  ttlSeconds: integer(1, 30 * 86_400).default(86_400),
  lockSeconds: integer(1, 3600).default(60),
  maxBodyBytes: integer(0, 64 * 1024 * 1024).default(1024 * 1024),
  maxRequestBytes: integer(1, 64 * 1024 * 1024).default(1024 * 1024),
  required: strings(headCondition).default([]),
});
