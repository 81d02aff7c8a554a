/**
 * The whole configuration as one zod schema: it validates the file (every problem as
 * `path: problem`, unknown keys refused at every level), fills the defaults, and is what
 * `outrigger config schema` prints as JSON Schema, so an editor checks what `check` checks.
 */
import { z } from 'zod';
import type { OutriggerConfig } from './types.js';
import { ALWAYS, problemsOf, section, withoutNulls } from './fields.js';
import { cacheSchema } from './cache-config.js';
import { corsSchema } from './cors-config.js';
import { graphqlSchema } from './graphql-limits.js';
import { limitsSchema } from './limits-config.js';
import { redisSchema } from './redis-config.js';
import {
  aclSchema,
  apiKeysSchema,
  featuresSchema,
  idempotencySchema,
  listenSchema,
  logSchema,
  mcpSchema,
  routesSchema,
  serviceSchema,
  upstreamSchema,
  usersSchema,
  webhooksSchema,
} from './sections.js';
import { SHUTDOWN_DEFAULTS, shutdownOf, shutdownSchema } from './shutdown-config.js';
import { subscriptionsSchema } from './subscriptions-config.js';
import { resolveTelemetry, telemetrySchema } from './telemetry.js';

const fields = section({
  service: serviceSchema,
  listen: listenSchema,
  shutdown: shutdownSchema,
  upstream: upstreamSchema,
  redis: redisSchema,
  users: usersSchema,
  acl: aclSchema,
  apiKeys: apiKeysSchema,
  graphql: graphqlSchema,
  routes: routesSchema,
  features: featuresSchema,
  webhooks: webhooksSchema,
  telemetry: telemetrySchema,
  limits: limitsSchema,
  subscriptions: subscriptionsSchema,
  log: logSchema,
  cors: corsSchema,
  cache: cacheSchema,
  idempotency: idempotencySchema,
  mcp: mcpSchema,
});

type Fields = z.output<typeof fields>;

export const configSchema = fields
  .superRefine((value, ctx) => {
    // A value refused on its own is left out of the rules across keys, as its default stood in before.
    const refused = new Set(ctx.issues.map((issue) => (issue.path ?? []).join('.')));
    crossCheck(value, refused, (path, message) => ctx.addIssue({ code: 'custom', path: path.split('.'), message, input: undefined }));
  }, ALWAYS)
  .transform(finish);

/** The values one key's default is taken from another (publicUrl from the port, the backend from upstream). */
function finish(f: Fields): OutriggerConfig {
  const { shutdownGraceMs, ...listen } = f.listen;
  const { file: _file, ...users } = f.users;
  return {
    ...f,
    service: { id: f.service.id, publicUrl: f.service.publicUrl ?? `http://localhost:${listen.port}` },
    listen,
    shutdown: shutdownOf(f.shutdown, shutdownGraceMs, []),
    users,
    graphql: { ...f.graphql, backend: { ...f.graphql.backend, url: f.graphql.backend.url || f.upstream.url } },
    mcp: { ...f.mcp, maxResponseBytes: f.mcp.maxResponseBytes ?? f.graphql.maxResponseBytes },
  };
}

const num = (v: unknown): number | undefined => (typeof v === 'number' ? v : undefined);
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

/** Rules across keys; it runs beside the keys' own problems, so it reads each value defensively. */
function crossCheck(raw: Fields, refused: ReadonlySet<string>, issue: (path: string, message: string) => void): void {
  const f = raw as unknown as Record<string, Record<string, unknown> | undefined>;
  const ok = (section: string, key: string) => (refused.has(`${section}.${key}`) ? undefined : f[section]?.[key]);
  const identity = (f.upstream?.identity ?? {}) as { mode?: unknown; jwt?: { secret?: unknown } };
  if (identity.mode === 'jwt') {
    const secret = str(identity.jwt?.secret);
    if (!secret) issue('upstream.identity.jwt.secret', 'is required when upstream.identity.mode is jwt');
    else if (secret.length < 32) issue('upstream.identity.jwt.secret', 'must be at least 32 characters (an HS256 key shorter than the hash is weak)');
  }
  const [headers, request] = [num(ok('listen', 'headersTimeoutMs')), num(ok('listen', 'requestTimeoutMs'))];
  if (headers !== undefined && request !== undefined && headers > request) issue('listen.headersTimeoutMs', `must not exceed listen.requestTimeoutMs (${request})`);
  const [defaultLimit, maxLimit] = [num(ok('graphql', 'defaultLimit')), num(ok('graphql', 'maxLimit'))];
  if (defaultLimit !== undefined && maxLimit !== undefined && defaultLimit > maxLimit) issue('graphql.defaultLimit', `must not exceed graphql.maxLimit (${maxLimit})`);
  const email = (f.webhooks?.email ?? {}) as { smtp?: { host?: unknown }; from?: unknown };
  if (str(email.smtp?.host) && !str(email.from)) issue('webhooks.email.from', 'is required when webhooks.email.smtp.host is set');
  const drain = num(ok('shutdown', 'drainSeconds')) ?? SHUTDOWN_DEFAULTS.drainSeconds;
  const problems: Array<{ path: string; message: string }> = [];
  shutdownOf({ drainSeconds: drain, timeoutSeconds: num(ok('shutdown', 'timeoutSeconds')) }, num(ok('listen', 'shutdownGraceMs')), problems);
  for (const p of problems) issue(p.path, p.message);
  checkRoutesApart(f, issue);
}

/** Two of Outrigger's own routes on one path would shadow each other. */
function checkRoutesApart(f: Record<string, Record<string, unknown> | undefined>, issue: (path: string, message: string) => void): void {
  const routes = f.routes ?? {};
  const oauth = (routes.oauth ?? {}) as Record<string, unknown>;
  const own = new Map<string, string>();
  const named: Array<[string, unknown]> = [
    ['routes.keys', routes.keys],
    ['routes.graphql', routes.graphql],
    ['routes.admin', routes.admin],
    ['routes.health', routes.health],
    ['routes.metrics', routes.metrics],
    ['routes.oauth.token', oauth.token],
    ['routes.oauth.authorize', oauth.authorize],
    ['routes.oauth.register', oauth.register],
    ['graphql.appsPath', f.graphql?.appsPath],
    ['mcp.path', f.mcp?.path],
  ];
  for (const [name, path] of named) {
    if (typeof path !== 'string') continue;
    const other = own.get(path);
    if (other) issue(name, `${path} is already used by ${other}; give each route its own path`);
    own.set(path, name);
  }
}

/** Validates and defaults a parsed (and env-interpolated) YAML document. Never throws. */
export function validateConfig(raw: unknown): { config: OutriggerConfig; problems: string[] } {
  const doc = withoutNulls(raw ?? {});
  const result = configSchema.safeParse(doc);
  const problems = result.success ? [] : problemsOf(result.error.issues);
  const config = result.success ? result.data : fallbackConfig(doc, result.error.issues);
  // The OTEL_* variables are part of what `check` checks: `start` would refuse them the same way.
  problems.push(...resolveTelemetry(config.telemetry, process.env).problems);
  return { config, problems };
}

/** Stand-ins for the required values, so a config with problems still has every other value. */
const PLACEHOLDERS: Record<string, string> = { 'service.id': 'unset', 'upstream.url': 'http://unset.invalid' };

/**
 * The config beside its problems (callers may read the parts that were valid): the document with
 * each refused value taken out, so its default stands in, as the hand-written reader did.
 */
function fallbackConfig(doc: unknown, issues: readonly z.core.$ZodIssue[]): OutriggerConfig {
  const repaired = structuredClone(doc) as Record<string, unknown>;
  for (let pass = 0; pass < 5; pass++) {
    for (const issue of issues) {
      if (issue.code === 'unrecognized_keys') for (const key of issue.keys) remove(repaired, [...issue.path, key]);
      else remove(repaired, issue.path);
    }
    const result = configSchema.safeParse(repaired);
    if (result.success) return result.data;
    issues = result.error.issues;
  }
  return configSchema.parse({ service: { id: PLACEHOLDERS['service.id'] }, upstream: { url: PLACEHOLDERS['upstream.url'] } });
}

/** Takes out the value at `path` (a list whole), or, when it is missing, its parent; a required top-level value gets a placeholder. */
function remove(doc: Record<string, unknown>, path: readonly PropertyKey[]): void {
  const list = path.findIndex((part) => typeof part === 'number');
  const at = (list === -1 ? path : path.slice(0, list)).map(String);
  const placeholder = PLACEHOLDERS[at.join('.')];
  let parent: Record<string, unknown> = doc;
  for (const part of at.slice(0, -1)) {
    const next = parent[part];
    if (next && typeof next === 'object' && !Array.isArray(next)) parent = next as Record<string, unknown>;
    else if (placeholder) parent = parent[part] = {};
    else return remove(doc, at.slice(0, -1));
  }
  const key = at[at.length - 1];
  if (key === undefined) return;
  if (placeholder) parent[key] = placeholder;
  else if (parent[key] !== undefined) delete parent[key];
  else if (at.length > 1) remove(doc, at.slice(0, -1));
}

/** The configuration's JSON Schema (draft 2020-12), from the same definitions that validate it. */
export function configJsonSchema(): Record<string, unknown> {
  const schema = z.toJSONSchema(fields, { target: 'draft-2020-12', io: 'input', unrepresentable: 'any' });
  return {
    $schema: schema.$schema,
    title: 'Outrigger configuration',
    description: 'The YAML file `outrigger start -c` reads (SPEC §1); generated by `outrigger config schema`.',
    ...schema,
    // Both sections may be written empty as far as zod is concerned (their keys then name what is
    // missing); an editor should ask for them.
    required: ['service', 'upstream'],
  };
}
