/**
 * A key's own limits (SPEC §10, "Per-key overrides"): an admin gives one key its own limit or
 * quota for a named `by: key` policy with `PATCH /_admin/keys/<id>`
 * (`{"limits": {"per-key": {"limit": 1000, "window": "60s"}}}`, or `{"quota": {...}}`; null
 * removes one, as a JSON merge patch does). Stored on the key's record; the verification cache
 * hands them to the limiter on the principal.
 */
import { readLimitAmount, type LimitPolicyConfig } from '../config/limits-config.js';
import type { LimitAmount } from '../principal/limit-amount.js';
import { ValidationError } from '../errors.js';
import { isPriorityClass, PRIORITY_CLASSES } from '../principal/priority.js';

export type KeyLimits = Record<string, LimitAmount>;

/** The override as the API writes it: `{limit, window: "60s"}` or `{quota: {limit, period}}`. */
export function presentKeyLimits(limits: KeyLimits | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, amount] of Object.entries(limits ?? {})) {
    out[name] = amount.window.period ? { quota: { limit: amount.limit, period: amount.window.period } } : { limit: amount.limit, window: windowText(amount.window.seconds) };
  }
  return out;
}

/** 86400 → `1d`, 7200 → `2h`, 60 → `60s`: as a person would write it in the config. */
function windowText(seconds: number): string {
  if (seconds % 86_400 === 0) return `${seconds / 86_400}d`;
  if (seconds % 3600 === 0) return `${seconds / 3600}h`;
  return `${seconds}s`;
}

/** Applies a PATCH body to a key's limits; every problem named by path (400). */
export function patchKeyLimits(current: KeyLimits | undefined, body: unknown, policies: readonly LimitPolicyConfig[]): KeyLimits | undefined {
  const problems: string[] = [];
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new ValidationError(['send a JSON object like {"limits": {"per-key": {"limit": 1000, "window": "60s"}}}']);
  for (const key of Object.keys(body))
    if (key !== 'limits' && key !== 'priority') problems.push(`${key}: cannot be changed here; only limits and priority can (a key's other fields are fixed when it is issued)`);
  const priority = (body as { priority?: unknown }).priority;
  if (priority !== undefined && priority !== null && !isPriorityClass(priority))
    problems.push(`priority: must be one of ${PRIORITY_CLASSES.join(', ')}, or null (SPEC §13; got ${JSON.stringify(priority)})`);
  if (!('limits' in body)) {
    if (problems.length) throw new ValidationError(problems);
    return current;
  }
  const patch = (body as { limits?: unknown }).limits;
  if (patch === null) {
    if (problems.length) throw new ValidationError(problems);
    return undefined;
  }
  if (typeof patch !== 'object' || patch === undefined || Array.isArray(patch)) problems.push('limits: must be an object of policy names, each {limit, window}, {quota: {limit, period}} or null');
  const next: KeyLimits = { ...current };
  const byKey = policies.filter((p) => p.by === 'key').map((p) => p.name);
  for (const [name, value] of Object.entries((typeof patch === 'object' && patch) || {})) {
    if (!byKey.includes(name)) {
      problems.push(`limits.${name}: no by: key policy has this name (${byKey.length ? `the by: key policies are ${byKey.join(', ')}` : 'limits.policies has no by: key policy'})`);
      continue;
    }
    if (value === null) {
      delete next[name];
      continue;
    }
    if (typeof value !== 'object' || Array.isArray(value)) {
      problems.push(`limits.${name}: must be {limit, window}, {quota: {limit, period}} or null`);
      continue;
    }
    for (const k of Object.keys(value as object)) if (!['limit', 'window', 'quota'].includes(k)) problems.push(`limits.${name}.${k}: unknown option (an override has limit and window, or quota)`);
    const amount = readLimitAmount(value as Record<string, unknown>, `limits.${name}`, problems);
    if (amount) next[name] = amount;
  }
  if (problems.length) throw new ValidationError(problems);
  return Object.keys(next).length ? next : undefined;
}
