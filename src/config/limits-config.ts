/**
 * `limits:` (SPEC §10): rate-limit policies and calendar quotas, read and checked by path so
 * `outrigger check` names every mistake at once (`limits.policies[1].window: ...`). The same
 * window and quota syntax is what a key's override (`PATCH /_admin/keys/<id>`) is checked with,
 * so it lives here, below both the config and the keys feature.
 */
import { ConditionSyntaxError, parseCondition } from '../condition/index.js';
import { QUOTA_PERIODS, type LimitAmount, type QuotaPeriod } from '../principal/limit-amount.js';
import { PRIORITY_CLASSES, type PriorityClass } from '../principal/priority.js';
import { z } from 'zod';
import { ALWAYS, boolean, got, integer, oneOf, optionalSection, optionalText, problemsOf, required, section, strings, withoutNulls } from './fields.js';

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

const limit = integer(1, LIMIT_MAX);

const window = z.union([z.number(), z.string()], { error: (iss) => `${WINDOW_HELP} ${got(iss.input)}` }).transform((value, ctx) => {
  const parsed = parseLimitWindow(value);
  if (typeof parsed === 'number') return parsed;
  ctx.addIssue({ code: 'custom', message: parsed, input: value });
  return z.NEVER;
});

const quota = section(
  {
    limit,
    period: z.enum(QUOTA_PERIODS, { error: (iss) => `must be one of ${QUOTA_PERIODS.join(', ')} (a calendar period in UTC; got ${JSON.stringify(iss.input)})` }),
  },
  { unknown: ' (a quota has limit and period)', notMapping: 'must be a mapping like { limit: 100000, period: month }' },
);

/** The amount's keys, as a policy and a key's override write them: `{limit, window}` or `{quota}`. */
const amountFields = {
  limit: limit.optional(),
  window: window.optional(),
  quota: quota.optional(),
};

type AmountInput = { limit?: number; window?: number; quota?: { limit: number; period: QuotaPeriod } };

/** Either limit and window, or a quota; each missing part named. */
function amountProblems(value: Record<string, unknown>, ctx: z.RefinementCtx): void {
  if (typeof value !== 'object' || Array.isArray(value)) return;
  const hasQuota = value.quota !== undefined;
  if (hasQuota && (value.window !== undefined || value.limit !== undefined)) ctx.addIssue({ code: 'custom', message: 'set either limit and window, or quota, not both', input: value });
  else if (!hasQuota) {
    if (value.limit === undefined) ctx.addIssue({ code: 'custom', path: ['limit'], message: 'is required (units per window), or give a quota: { limit, period }', input: value });
    if (value.window === undefined) ctx.addIssue({ code: 'custom', path: ['window'], message: 'is required (e.g. 60s)', input: value });
  }
}

function amountOf(value: AmountInput): LimitAmount {
  return value.quota ? { limit: value.quota.limit, window: { period: value.quota.period } } : { limit: value.limit!, window: { seconds: value.window! } };
}

const limitAmountSchema = z.looseObject(amountFields).superRefine(amountProblems, ALWAYS);

/**
 * A limit and its window (`{limit, window}`) or a calendar quota (`{quota: {limit, period}}`) at
 * `path`, as a key's override writes them (PATCH /_admin/keys/<id>); problems go to `problems` by path.
 */
export function readLimitAmount(raw: Record<string, unknown>, path: string, problems: string[]): LimitAmount | null {
  const result = limitAmountSchema.safeParse(withoutNulls(raw));
  if (result.success) return amountOf(result.data as AmountInput);
  problems.push(...problemsOf(result.error.issues, path));
  return null;
}

const NAME_RULE = 'must be 1-32 letters, digits, _ or - (it is named in headers, messages and metrics)';

const policy = section({
  name: required((v) => (NAME.test(v) ? null : NAME_RULE)),
  by: z.enum(LIMIT_BY, {
    error: (iss) => (iss.input === undefined ? `is required (one of ${LIMIT_BY.join(', ')}: what shares one allowance)` : `must be one of ${LIMIT_BY.join(', ')} ${got(iss.input)}`),
  }),
  condition: optionalText(conditionProblem),
  roles: strings().min(1, { error: 'must name at least one role, or be left out (every principal)' }).nullable().default(null),
  units: oneOf(LIMIT_UNITS).default('requests'),
  priority: oneOf(PRIORITY_CLASSES).optional(),
  ...amountFields,
})
  .superRefine(amountProblems, ALWAYS)
  .transform(({ name, by, condition, roles, units, priority, ...amount }): LimitPolicyConfig => ({
    name,
    by,
    condition,
    roles,
    units,
    ...amountOf(amount as AmountInput),
    ...(priority ? { priority } : {}),
  }));

const policies = z.array(policy, { error: 'must be a list of policies ({ name, by, limit, window } or { name, by, quota })' }).superRefine((list, ctx) => {
  if (!Array.isArray(list)) return;
  const names = new Set<unknown>();
  list.forEach((p, i) => {
    const name = (p as { name?: unknown } | undefined)?.name;
    if (typeof name === 'string' && names.has(name))
      ctx.addIssue({ code: 'custom', path: [i, 'name'], message: `${JSON.stringify(name)} is already the name of another policy; names must be unique` });
    names.add(name);
  });
}, ALWAYS);

/** `limits:` (SPEC §10): every problem named by its path. */
export const limitsSchema = optionalSection({
  policies: policies.default([]),
  headers: boolean().default(true),
  onRedisUnavailable: oneOf(ON_REDIS_UNAVAILABLE).default('local'),
});

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
