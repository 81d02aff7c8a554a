/**
 * `limits:` (SPEC §10): rate-limit policies and calendar quotas, read and checked by path so
 * `outrigger check` names every mistake at once (`limits.policies[1].window: ...`). The same
 * window and quota syntax is what a key's override (`PATCH /_admin/keys/<id>`) is checked with,
 * so it lives here, below both the config and the keys feature.
 */
import { ConditionSyntaxError, parseCondition } from '../condition/index.js';
import { QUOTA_PERIODS, type LimitAmount, type QuotaPeriod } from '../principal/limit-amount.js';
import { SectionReader } from './reader.js';
import { PRIORITY_CLASSES, type PriorityClass } from '../principal/priority.js';

export const LIMIT_BY = ['key', 'user', 'client', 'service'] as const;
export type LimitBy = (typeof LIMIT_BY)[number];
export const LIMIT_UNITS = ['requests', 'cost'] as const;
export type LimitUnits = (typeof LIMIT_UNITS)[number];
export const ON_REDIS_UNAVAILABLE = ['local', 'allow', 'deny'] as const;

export interface LimitPolicyConfig extends LimitAmount {
  /** `[A-Za-z0-9_-]{1,32}`, unique: named in headers, messages and the metric's label. */
  name: string;
  by: LimitBy;
  /** The condition's text (§4), or null: every request the policy's `by` and `roles` cover. */
  condition: string | null;
  /** Only principals holding one of these roles, or null: every principal. */
  roles: string[] | null;
  units: LimitUnits;
  /** SPEC §13: the class of the requests it covers when the backend is at its limit. */
  priority?: PriorityClass;
}

export interface LimitsConfig {
  policies: LimitPolicyConfig[];
  /** `RateLimit` / `RateLimit-Policy` on covered responses. */
  headers: boolean;
  onRedisUnavailable: (typeof ON_REDIS_UNAVAILABLE)[number];
}

export const WINDOW_MIN_SECONDS = 1;
export const WINDOW_MAX_SECONDS = 86_400;
/** Units per window or period: a billion a month is 385 a second, far past any quota sold per key. */
export const LIMIT_MAX = 1_000_000_000;
const NAME = /^[A-Za-z0-9_-]{1,32}$/;
const WINDOW_UNITS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400 };
const WINDOW_HELP = `must be a duration from ${WINDOW_MIN_SECONDS}s to 1d, as seconds or a string like 1s, 60s, 15m, 1h, 1d`;

/** `60s`, `15m`, `1h`, `1d` or a number of seconds → whole seconds, or the problem (zero, fractions and more than a day refused). */
export function parseLimitWindow(value: unknown): number | string {
  let seconds = NaN;
  if (typeof value === 'number') seconds = value;
  else if (typeof value === 'string') {
    const m = /^\s*(\d+)\s*(s|m|h|d)?\s*$/.exec(value);
    if (m) seconds = Number(m[1]) * WINDOW_UNITS[m[2] ?? 's']!;
  }
  if (!Number.isInteger(seconds)) return `${WINDOW_HELP} (got ${JSON.stringify(value)})`;
  if (seconds < WINDOW_MIN_SECONDS) return `${WINDOW_HELP}; a window of ${seconds} seconds would refuse or admit everything (got ${JSON.stringify(value)})`;
  if (seconds > WINDOW_MAX_SECONDS) return `${WINDOW_HELP}; for longer periods use a calendar quota: quota: { limit: N, period: day | month } (got ${JSON.stringify(value)})`;
  return seconds;
}

function limitProblem(value: unknown): string | null {
  return typeof value === 'number' && Number.isInteger(value) && value >= 1 && value <= LIMIT_MAX ? null : `must be an integer from 1 to ${LIMIT_MAX} (got ${JSON.stringify(value)})`;
}

/**
 * A limit and its window (`{limit, window}`) or a calendar quota (`{quota: {limit, period}}`) at
 * `path`, as a policy and a key's override write them; problems go to `problems` by path.
 */
export function readLimitAmount(raw: Record<string, unknown>, path: string, problems: string[]): LimitAmount | null {
  const hasQuota = raw.quota !== undefined && raw.quota !== null;
  const hasWindow = raw.window !== undefined || raw.limit !== undefined;
  if (hasQuota && hasWindow) {
    problems.push(`${path}: set either limit and window, or quota, not both`);
    return null;
  }
  if (hasQuota) {
    const q = raw.quota;
    if (typeof q !== 'object' || Array.isArray(q)) {
      problems.push(`${path}.quota: must be a mapping like { limit: 100000, period: month }`);
      return null;
    }
    const quota = q as Record<string, unknown>;
    const before = problems.length;
    const lp = limitProblem(quota.limit);
    if (lp) problems.push(`${path}.quota.limit: ${lp}`);
    if (!QUOTA_PERIODS.includes(quota.period as QuotaPeriod))
      problems.push(`${path}.quota.period: must be one of ${QUOTA_PERIODS.join(', ')} (a calendar period in UTC; got ${JSON.stringify(quota.period)})`);
    for (const key of Object.keys(quota)) if (key !== 'limit' && key !== 'period') problems.push(`${path}.quota.${key}: unknown option (a quota has limit and period)`);
    return problems.length === before ? { limit: quota.limit as number, window: { period: quota.period as QuotaPeriod } } : null;
  }
  const before = problems.length;
  if (raw.limit === undefined) problems.push(`${path}.limit: is required (units per window), or give a quota: { limit, period }`);
  else {
    const lp = limitProblem(raw.limit);
    if (lp) problems.push(`${path}.limit: ${lp}`);
  }
  let seconds = 0;
  if (raw.window === undefined) problems.push(`${path}.window: is required (e.g. 60s)`);
  else {
    const parsed = parseLimitWindow(raw.window);
    if (typeof parsed === 'string') problems.push(`${path}.window: ${parsed}`);
    else seconds = parsed;
  }
  return problems.length === before ? { limit: raw.limit as number, window: { seconds } } : null;
}

/** Validates and defaults `limits:`; every problem is pushed by path. */
export function readLimits(l: SectionReader): LimitsConfig {
  const out: LimitsConfig = {
    policies: readPolicies(l),
    headers: l.boolean('headers', true),
    onRedisUnavailable: l.oneOf('onRedisUnavailable', 'local', ON_REDIS_UNAVAILABLE),
  };
  l.finish();
  return out;
}

function readPolicies(l: SectionReader): LimitPolicyConfig[] {
  const raw = l.raw('policies');
  const path = l.path ? `${l.path}.policies` : 'policies';
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw)) {
    l.problems.push(`${path}: must be a list of policies ({ name, by, limit, window } or { name, by, quota })`);
    return [];
  }
  const policies: LimitPolicyConfig[] = [];
  const names = new Set<string>();
  raw.forEach((entry: unknown, i) => {
    const at = `${path}[${i}]`;
    const p = new SectionReader(entry, at, l.problems);
    const name = p.required('name', (v) => (NAME.test(v) ? null : 'must be 1-32 letters, digits, _ or - (it is named in headers, messages and metrics)'));
    if (name && names.has(name)) l.problems.push(`${at}.name: ${JSON.stringify(name)} is already the name of another policy; names must be unique`);
    names.add(name);
    const by = p.oneOf('by', 'key', LIMIT_BY);
    if (!p.has('by')) l.problems.push(`${at}.by: is required (one of ${LIMIT_BY.join(', ')}: what shares one allowance)`);
    const condition = p.string('condition', null, conditionProblem);
    const roles = p.has('roles') ? p.strings('roles', []) : (p.raw('roles'), null);
    if (roles !== null && roles.length === 0) l.problems.push(`${at}.roles: must name at least one role, or be left out (every principal)`);
    const units = p.oneOf('units', 'requests', LIMIT_UNITS);
    const priority = p.has('priority') ? p.oneOf('priority', 'default', PRIORITY_CLASSES) : (p.raw('priority'), undefined);
    const amount = readLimitAmount({ limit: p.raw('limit'), window: p.raw('window'), quota: p.raw('quota') } as Record<string, unknown>, at, l.problems);
    p.finish();
    if (amount) policies.push({ name, by, condition, roles, units, ...amount, ...(priority ? { priority } : {}) });
  });
  return policies;
}

function conditionProblem(text: string): string | null {
  try {
    const condition = parseCondition(text);
    if (condition.usesRequestBody) return 'may not read the request body (bson-request-*): a limit is decided before the body is read';
    if (condition.usesResponse) return 'may not read the response: a limit is decided before there is one';
    return null;
  } catch (error) {
    if (error instanceof ConditionSyntaxError) return `is not a valid condition: ${error.message}`;
    throw error;
  }
}
