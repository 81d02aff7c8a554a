import type { OutriggerConfig, StaticUser } from './types.js';
import { parseCidr } from '../net/cidr.js';
import { SectionReader } from './reader.js';
import { readRedis } from './redis-config.js';
import { readShutdown } from './shutdown-config.js';
import { readCors } from './cors-config.js';
import { readCache } from './cache-config.js';
import { readTelemetry, resolveTelemetry } from './telemetry.js';
import { readLimits } from './limits-config.js';
import { GRAPHQL_LIMIT_DEFAULTS, HTTP_PROFILES, httpProfile } from './graphql-limits.js';
import { readSubscriptions } from './subscriptions-config.js';
import { readAdaptiveConcurrency, readBreaker } from './upstream-protection.js';

import { parseRetryDelay, RETRY_SCHEDULE_MAX_LENGTH } from './retry-schedule.js';
import { ConditionSyntaxError, parseCondition } from '../condition/index.js';

const httpUrl = (v: string): string | null => {
  try {
    const u = new URL(v);
    return u.protocol === 'http:' || u.protocol === 'https:' ? null : 'must be an http:// or https:// URL';
  } catch {
    return `must be an absolute URL like http://127.0.0.1:8081 (got ${JSON.stringify(v)})`;
  }
};
const routePath = (v: string): string | null => (/^\/[A-Za-z0-9._~\-/]*$/.test(v) && !v.endsWith('/') ? null : 'must be a path starting with / and not ending with / (e.g. /keys)');
const cidr = (v: string): string | null => {
  const parsed = parseCidr(v);
  return typeof parsed === 'string' ? `${JSON.stringify(v)} is not a CIDR: ${parsed} (write it like 10.0.0.0/8, 192.168.1.7/32 or fd00::/8)` : null;
};
const serviceId = (v: string): string | null => (/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/.test(v) ? null : 'must be 1-64 letters, digits, dot, dash or underscore, starting with a letter or digit');
const headerName = (v: string): string | null => (/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/.test(v) ? null : 'must be an HTTP header name');

const FEATURE_STATES = ['not-installed', 'enabled', 'disabled'] as const;

/** Validates and defaults a parsed (and env-interpolated) YAML document. Never throws. */
export function validateConfig(raw: unknown): { config: OutriggerConfig; problems: string[] } {
  const problems: string[] = [];
  const root = new SectionReader(raw, '', problems);

  const service = root.section('service');
  const listen = root.section('listen');
  const port = listen.integer('port', 8080, 0, 65535);
  const config: OutriggerConfig = {
    service: {
      id: service.required('id', serviceId),
      publicUrl: service.string('publicUrl', `http://localhost:${port}`, httpUrl).replace(/\/$/, ''),
    },
    listen: {
      host: listen.string('host', '0.0.0.0'),
      port,
      trustedProxies: listen.strings('trustedProxies', [], cidr),
      headersTimeoutMs: listen.integer('headersTimeoutMs', 30_000, 100, 600_000),
      requestTimeoutMs: listen.integer('requestTimeoutMs', 300_000, 100, 86_400_000),
      bodyIdleTimeoutMs: listen.integer('bodyIdleTimeoutMs', 30_000, 100, 3_600_000),
      sendTimeoutMs: listen.integer('sendTimeoutMs', 60_000, 100, 3_600_000),
    },
    shutdown: readShutdown(root.section('shutdown'), listen),
    upstream: readUpstream(root.section('upstream')),
    redis: readRedis(root.section('redis')),
    users: readUsers(root.section('users')),
    acl: readAcl(root.section('acl')),
    apiKeys: readApiKeys(root.section('apiKeys')),
    graphql: readGraphql(root.section('graphql')),
    routes: readRoutes(root.section('routes')),
    features: readFeatures(root.section('features')),
    webhooks: readWebhooks(root.section('webhooks')),
    telemetry: readTelemetry(root.section('telemetry')),
    limits: readLimits(root.section('limits')),
    subscriptions: readSubscriptions(root.section('subscriptions')),
    log: readLog(root.section('log')),
    cors: readCors(root.section('cors')),
    cache: readCache(root.section('cache')),
    mcp: readMcp(root.section('mcp')),
  };
  config.graphql.backend.url ||= config.upstream.url;
  config.mcp.maxResponseBytes ||= config.graphql.maxResponseBytes;
  service.finish();
  listen.finish();
  root.finish();

  crossCheck(config, problems);
  // The OTEL_* variables are part of what `check` checks: `start` would refuse them the same way.
  problems.push(...resolveTelemetry(config.telemetry, process.env).problems);
  return { config, problems };
}

function readUpstream(u: SectionReader): OutriggerConfig['upstream'] {
  const identity = u.section('identity');
  const jwt = identity.section('jwt');
  const headers = identity.section('headers');
  const connections = u.integer('connections', 128, 1, 4096);
  const adaptiveConcurrency = readAdaptiveConcurrency(u, connections);
  const out: OutriggerConfig['upstream'] = {
    url: u.required('url', httpUrl).replace(/\/$/, ''),
    timeoutMs: u.integer('timeoutMs', 30_000, 100, 3_600_000),
    connections,
    maxConnectionsPerClient: u.integer('maxConnectionsPerClient', 64, 1, 4096),
    // SPEC §13: with a learned limit a long wait only queues into a backend that is already slow.
    queueTimeoutMs: u.integer('queueTimeoutMs', adaptiveConcurrency.enabled ? 100 : 10_000, 10, 600_000),
    adaptiveConcurrency,
    breaker: readBreaker(u),
    maxQueuedPerClient: u.integer('maxQueuedPerClient', 256, 0, 100_000),
    bufferBodyBytes: u.integer('bufferBodyBytes', 1024 * 1024, 0, 64 * 1024 * 1024),
    // At least 1 MiB: own routes' bodies (up to 1 MiB) count against both bounds too (http/body.ts, issue 53).
    bufferTotalBytes: u.integer('bufferTotalBytes', 256 * 1024 * 1024, 1024 * 1024, 64 * 1024 * 1024 * 1024),
    bufferBytesPerClient: u.integer('bufferBytesPerClient', 32 * 1024 * 1024, 1024 * 1024, 64 * 1024 * 1024 * 1024),
    identity: {
      mode: identity.oneOf('mode', 'none', ['jwt', 'headers', 'none'] as const),
      jwt: {
        secret: jwt.string('secret', null),
        algorithm: jwt.oneOf('algorithm', 'HS256', ['HS256', 'HS384', 'HS512'] as const),
        issuer: jwt.string('issuer', 'restheart.org'),
        audience: jwt.string('audience', null),
        ttlSeconds: jwt.integer('ttlSeconds', 60, 10, 86_400),
      },
      headers: {
        user: headers.string('user', 'X-Forwarded-User', headerName),
        roles: headers.string('roles', 'X-Forwarded-Roles', headerName),
      },
    },
  };
  jwt.finish();
  headers.finish();
  identity.finish();
  u.finish();
  return out;
}

function readUsers(u: SectionReader): OutriggerConfig['users'] {
  const up = u.section('upstream');
  const out: OutriggerConfig['users'] = {
    source: u.oneOf('source', 'static', ['static', 'upstream'] as const),
    static: readStaticUsers(u.raw('static'), `${u.path}.static`, u.problems),
    upstream: {
      path: up.string('path', '/roles/{id}', (v) => (v.startsWith('/') && v.includes('{id}') ? null : 'must be a path containing {id}, e.g. /roles/{id}')),
      rolesField: up.string('rolesField', 'roles'),
      cacheSeconds: up.integer('cacheSeconds', 10, 0, 3600),
    },
  };
  up.finish();
  u.finish();
  return out;
}

export function readStaticUsers(raw: unknown, path: string, problems: string[]): StaticUser[] {
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw)) {
    problems.push(`${path}: must be a list of {id, password, roles}`);
    return [];
  }
  const users: StaticUser[] = [];
  const seen = new Set<string>();
  raw.forEach((entry, i) => {
    const r = new SectionReader(entry, `${path}[${i}]`, problems);
    const id = r.required('id');
    const password = r.required('password', (v) => (v.startsWith('scrypt$') ? null : 'must be an scrypt hash from `outrigger hash-password` (plain passwords are refused)'));
    const roles = r.strings('roles', []);
    r.finish();
    if (seen.has(id)) problems.push(`${path}[${i}].id: duplicate user ${JSON.stringify(id)}`);
    seen.add(id);
    users.push({ id, password, roles });
  });
  return users;
}

function readGraphql(g: SectionReader): OutriggerConfig['graphql'] {
  const D = GRAPHQL_LIMIT_DEFAULTS;
  const b = g.section('backend');
  const c = g.section('maxCost');
  const out: OutriggerConfig['graphql'] = {
    defaultDb: g.string('defaultDb', D.defaultDb),
    appsPath: g.string('appsPath', '/gql-apps', routePath),
    backend: {
      url: b.string('url', '', (v) => (v === '' ? null : httpUrl(v))).replace(/\/$/, ''),
      collectionPath: b.string('collectionPath', '/{db}/{collection}', (v) => (v.includes('{collection}') ? null : 'must contain {collection} (and usually {db})')),
      auth: b.oneOf('auth', 'caller', ['caller', 'service'] as const),
      serviceAuthorization: b.string('serviceAuthorization', null),
    },
    defaultLimit: g.integer('defaultLimit', D.defaultLimit, 1, 1000),
    maxLimit: g.integer('maxLimit', D.maxLimit, 1, 1000),
    maxDepth: g.integer('maxDepth', D.maxDepth, 1, 100),
    maxBackendReads: g.integer('maxBackendReads', D.maxBackendReads, 1, 10_000),
    maxBackendWrites: g.integer('maxBackendWrites', D.maxBackendWrites, 1, 10_000),
    maxBulkWrite: g.integer('maxBulkWrite', D.maxBulkWrite, 1, 100_000),
    storedListItems: g.integer('storedListItems', D.storedListItems, 1, 100_000),
    timeoutMs: g.integer('timeoutMs', D.timeoutMs, 100, 600_000),
    introspection: g.boolean('introspection', D.introspection),
    maxCost: {
      reads: c.integer('reads', D.maxCost.reads, 1, 100_000),
      documents: c.integer('documents', D.maxCost.documents, 1, 100_000_000),
      // Values one answer may hold (issue 25); the reasons for the defaults are in docs/graphql.md.
      output: c.integer('output', D.maxCost.output, 1, 100_000_000),
    },
    maxAliases: g.integer('maxAliases', D.maxAliases, 1, 100_000),
    maxResponseBytes: g.integer('maxResponseBytes', D.maxResponseBytes, 1024, 1024 * 1024 * 1024),
    verbose: g.boolean('verbose', D.verbose),
    aggregations: g.boolean('aggregations', D.aggregations),
    httpProfile: httpProfile(g.oneOf('httpProfile', D.httpProfile, HTTP_PROFILES)),
  };
  c.finish();
  b.finish();
  g.finish();
  return out;
}

function readRoutes(r: SectionReader): OutriggerConfig['routes'] {
  const o = r.section('oauth');
  const out: OutriggerConfig['routes'] = {
    keys: r.string('keys', '/keys', routePath),
    graphql: r.string('graphql', '/graphql', routePath),
    admin: r.string('admin', '/_admin', routePath),
    health: r.string('health', '/_health', routePath),
    metrics: r.string('metrics', '/_metrics', routePath),
    oauth: {
      token: o.string('token', '/token', routePath),
      authorize: o.string('authorize', '/authorize', routePath),
      register: o.string('register', '/register', routePath),
    },
  };
  o.finish();
  r.finish();
  return out;
}

function readWebhooks(w: SectionReader): OutriggerConfig['webhooks'] {
  const email = w.section('email');
  const smtp = email.section('smtp');
  const authRaw = smtp.raw('auth');
  let auth: { user: string; pass: string } | null = null;
  if (authRaw !== undefined && authRaw !== null) {
    const a = new SectionReader(authRaw, `${smtp.path}.auth`, w.problems);
    auth = { user: a.required('user'), pass: a.required('pass') };
    a.finish();
  }
  const out: OutriggerConfig['webhooks'] = {
    allowPrivateTargets: w.strings('allowPrivateTargets', [], cidr),
    logRetentionDays: w.integer('logRetentionDays', 30, 1, 3650),
    queueCapacity: w.integer('queueCapacity', 10_000, 10, 1_000_000),
    captureBodyBytes: w.integer('captureBodyBytes', 65_536, 0, 10 * 1024 * 1024),
    retrySchedule: readRetrySchedule(w),
    recordingSeconds: w.integer('recordingSeconds', 60, 1, 3600),
    reclaimIdleMs: w.integer('reclaimIdleMs', 120_000, 100, 3_600_000),
    logRetentionSeconds: w.integer('logRetentionSeconds', 0, 1, 3650 * 86_400) || null,
    streamMaxLength: w.integer('streamMaxLength', 1_000_000, 1000, 100_000_000),
    disableAfterFailures: w.integer('disableAfterFailures', 100, 0, 1_000_000),
    alertEmail: w.string('alertEmail', null, (v) => (/^[^\s@<>,]+@[^\s@<>,]+$/.test(v) ? null : `must be one e-mail address like ops@example.com (got ${JSON.stringify(v)})`)),
    email: {
      smtp: {
        host: smtp.string('host', null),
        port: smtp.integer('port', 587, 1, 65535),
        secure: smtp.boolean('secure', false),
        auth,
      },
      from: email.string('from', null),
      dailyAllowance: email.integer('dailyAllowance', 100, 0, 1_000_000),
      ownServer: email.boolean('ownServer', false),
    },
  };
  smtp.finish();
  email.finish();
  w.finish();
  return out;
}

/** `webhooks.retrySchedule`: a list of delays, each a number of seconds or a string like 200ms, 5s, 1m, 10m, 1h, 6h. */
function readRetrySchedule(w: SectionReader): number[] {
  const fallback = [5_000, 60_000, 600_000, 3_600_000, 21_600_000];
  const raw = w.raw('retrySchedule');
  const path = w.path ? `${w.path}.retrySchedule` : 'retrySchedule';
  if (raw === undefined || raw === null) return fallback;
  if (!Array.isArray(raw) || raw.length > RETRY_SCHEDULE_MAX_LENGTH) {
    w.problems.push(`${path}: must be a list of at most ${RETRY_SCHEDULE_MAX_LENGTH} delays, e.g. [5s, 1m, 10m, 1h, 6h] ([] disables retries)`);
    return fallback;
  }
  const out: number[] = [];
  raw.forEach((item: unknown, i) => {
    const ms = parseRetryDelay(item);
    if (ms === null) {
      w.problems.push(`${path}[${i}]: must be a delay from 10ms to 7d, as seconds or a string like 200ms, 5s, 1m, 1h (got ${JSON.stringify(item)})`);
    } else out.push(ms);
  });
  return out;
}

function crossCheck(config: OutriggerConfig, problems: string[]): void {
  const { identity } = config.upstream;
  if (identity.mode === 'jwt') {
    if (!identity.jwt.secret) problems.push('upstream.identity.jwt.secret: is required when upstream.identity.mode is jwt');
    else if (identity.jwt.secret.length < 32) problems.push('upstream.identity.jwt.secret: must be at least 32 characters (an HS256 key shorter than the hash is weak)');
  }
  if (config.users.source === 'static' && config.users.static.length === 0 && config.acl.mode === 'enforce') {
    // Allowed (keys from another replica, anonymous access), but worth a startup warning; see main.ts.
  }
  if (config.listen.headersTimeoutMs > config.listen.requestTimeoutMs) problems.push(`listen.headersTimeoutMs: must not exceed listen.requestTimeoutMs (${config.listen.requestTimeoutMs})`);
  if (config.graphql.defaultLimit > config.graphql.maxLimit) problems.push(`graphql.defaultLimit: must not exceed graphql.maxLimit (${config.graphql.maxLimit})`);
  if (config.webhooks.email.smtp.host && !config.webhooks.email.from) problems.push('webhooks.email.from: is required when webhooks.email.smtp.host is set');

  const own = new Map<string, string>();
  const routes: Array<[string, string]> = [
    ['routes.keys', config.routes.keys],
    ['routes.graphql', config.routes.graphql],
    ['routes.admin', config.routes.admin],
    ['routes.health', config.routes.health],
    ['routes.metrics', config.routes.metrics],
    ['routes.oauth.token', config.routes.oauth.token],
    ['routes.oauth.authorize', config.routes.oauth.authorize],
    ['routes.oauth.register', config.routes.oauth.register],
    ['graphql.appsPath', config.graphql.appsPath],
    ['mcp.path', config.mcp.path],
  ];
  for (const [name, path] of routes) {
    const other = own.get(path);
    if (other) problems.push(`${name}: ${path} is already used by ${other}; give each route its own path`);
    own.set(path, name);
  }
}

function readAcl(a: SectionReader): OutriggerConfig['acl'] {
  const out = {
    mode: a.oneOf('mode', 'enforce', ['enforce', 'own-routes'] as const),
    adminRoles: a.strings('adminRoles', ['root', 'srv-admin']),
    bootstrap: a.string('bootstrap', null),
  };
  a.finish();
  return out;
}

function readApiKeys(k: SectionReader): OutriggerConfig['apiKeys'] {
  const out = {
    prefix: k.string('prefix', 'rig', (v) => (/^[a-z][a-z0-9]{1,15}$/.test(v) ? null : 'must be 2-16 lowercase letters or digits, starting with a letter')),
    maxExpiresInDays: k.integer('maxExpiresInDays', 3650, 1, 3650),
    maxKeysPerUser: k.integer('maxKeysPerUser', 10, 1, 1000),
    maxFailuresPerClient: k.integer('maxFailuresPerClient', 100, 1, 1_000_000),
    failureWindowSeconds: k.integer('failureWindowSeconds', 60, 1, 86_400),
  };
  k.finish();
  return out;
}

function readFeatures(f: SectionReader): OutriggerConfig['features'] {
  const out = { apiKeys: f.oneOf('apiKeys', 'enabled', FEATURE_STATES), webhooks: f.oneOf('webhooks', 'enabled', FEATURE_STATES) };
  f.finish();
  return out;
}

function readLog(l: SectionReader): OutriggerConfig['log'] {
  const out = {
    level: l.oneOf('level', 'info', ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const),
    secretHeaders: l.strings('secretHeaders', [], headerName).map((h) => h.toLowerCase()),
  };
  l.finish();
  return out;
}

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

function readMcp(m: SectionReader): OutriggerConfig['mcp'] {
  const c = m.section('clientMetadata');
  const out = {
    server: m.oneOf('server', 'backend', ['backend', 'outrigger'] as const),
    signIn: m.oneOf('signIn', 'key-or-token', ['key-or-token', 'key-only', 'token-only', 'off'] as const),
    path: m.string('path', '/mcp', routePath),
    resources: m.strings('resources', [], resourceCondition),
    // 0 until validateConfig sets it: by default one answer holds what one GraphQL answer may (issue 53).
    maxResponseBytes: m.has('maxResponseBytes') ? m.integer('maxResponseBytes', 0, 64 * 1024, 1024 * 1024 * 1024) : 0,
    tokenTtlMinutes: m.integer('tokenTtlMinutes', 60, 1, 24 * 60),
    registrationsPerHour: m.integer('registrationsPerHour', 30, 1, 100_000),
    // 500 a day keeps at most 15,000 self-registered clients (30 days each, at most ~6 KB:
    // 10 redirect URIs of 512 characters) below ~100 MB of Redis; a new client install
    // registers once, so a busy service needs far fewer.
    registrationsPerDay: m.integer('registrationsPerDay', 500, 1, 1_000_000),
    authorizeRequestsPerAddress: m.integer('authorizeRequestsPerAddress', 60, 1, 100_000),
    // Each stored request is at most ~3 KB for 10 minutes: 10,000 a window is ~60 MB at most.
    authorizeRequestsTotal: m.integer('authorizeRequestsTotal', 10_000, 1, 10_000_000),
    adminRoles: m.oneOf('adminRoles', 'refuse', ['refuse', 'allow'] as const),
    clientMetadata: {
      allowPrivateTargets: c.strings('allowPrivateTargets', [], cidr),
      timeoutMs: c.integer('timeoutMs', 5000, 100, 60_000),
      maxBytes: c.integer('maxBytes', 16 * 1024, 512, 1024 * 1024),
      cacheSeconds: c.integer('cacheSeconds', 300, 0, 86_400),
    },
  };
  c.finish();
  m.finish();
  return out;
}
