/**
 * The field kinds every section's zod schema is built from, each with the message the
 * hand-written reader gave (`must be an integer from 1 to 10 (got 0)`), and the one place that
 * turns zod's issues into `path: problem` lines. The same definitions validate the file and emit
 * its JSON Schema (validate.ts `configJsonSchema`): a rule written here is one an editor sees.
 *
 * Errors are given per schema, never through `z.config()`: zod is one instance shared with the
 * MCP SDK, whose messages a global error map would change.
 */
import { z } from 'zod';
import { parseCidr } from '../net/cidr.js';
import { didYouMean } from '../util/did-you-mean.js';

/**
 * For a refinement that must run even when the value has other issues (zod skips it otherwise),
 * so `check` names a duplicate policy name beside a bad window in one run; such a refinement
 * reads a value that may be partly invalid and checks types before it compares.
 */
export const ALWAYS = { when: () => true };

/** A check on a value already of the right type: the problem, or null. */
export type Check<T> = (value: T) => string | null;

export const got = (input: unknown): string => `(got ${JSON.stringify(input)})`;

function checked<T>(check: Check<T> | undefined) {
  return (value: T, ctx: z.RefinementCtx) => {
    const problem = check?.(value);
    if (problem) ctx.addIssue({ code: 'custom', message: problem, input: value });
  };
}

/** A whole number in [min, max]. */
export function integer(min: number, max: number) {
  // The schema's own error covers its checks (int, min, max) too.
  return z
    .int({ error: (iss) => `must be an integer from ${min} to ${max} ${got(iss.input)}` })
    .min(min)
    .max(max);
}

/** A number in [min, max], fractions allowed. */
export function decimal(min: number, max: number) {
  return z
    .number({ error: (iss) => `must be a number from ${min} to ${max} ${got(iss.input)}` })
    .min(min)
    .max(max);
}

export function boolean() {
  return z.boolean({ error: (iss) => `must be true or false ${got(iss.input)}` });
}

export function oneOf<const T extends readonly [string, ...string[]]>(values: T) {
  return z.enum(values, { error: (iss) => `must be one of ${values.join(', ')} ${got(iss.input)}` });
}

/**
 * A string (a number is taken as its text, as YAML reads `id: 42`), checked by `check`.
 * `required` says "is required" when the key is missing instead of "must be a string".
 */
export function text(check?: Check<string>, options: { required?: boolean; fallback?: string } = {}) {
  const base = z.union([z.string(), z.number()], { error: (iss) => (iss.input === undefined && options.required ? 'is required' : 'must be a string') });
  const defaulted = options.fallback === undefined ? base : base.default(options.fallback);
  return defaulted.transform(String).superRefine(checked(check));
}

/** A required string: missing is `is required`. */
export const required = (check?: Check<string>) => text(check, { required: true });

/** A string or null (the default), as `audience: null` is written. */
export const optionalText = (check?: Check<string>) => z.union([text(check), z.null()]).default(null);

/** A list of strings, each checked by `check` and named by its index when refused. */
export function strings(check?: Check<string>) {
  return z.array(z.string({ error: 'must be a string' }).superRefine(checked(check)), { error: 'must be a list of strings' });
}

/**
 * A mapping that refuses keys it does not know, naming each with a "did you mean" when one is
 * close. zod reports the unknown keys of one mapping as one issue; its message carries one
 * `key<TAB>problem` line per key, which `problemsOf` spreads into one problem per key.
 */
export function section<S extends z.ZodRawShape>(shape: S, hints: { unknown?: string; notMapping?: string } = {}) {
  const known = Object.keys(shape);
  return z.strictObject(shape, {
    error: (iss) => {
      if (iss.code === 'unrecognized_keys') return iss.keys.map((key) => `${key}\tunknown option${didYouMean(key, known) || hints.unknown || UNKNOWN_HINT}`).join('\n');
      if (iss.code === 'invalid_type') return hints.notMapping ?? 'must be a mapping (key: value lines)';
      return undefined;
    },
  });
}

const UNKNOWN_HINT = ' (check the spelling; see the configuration reference in README.md)';

/** `a.b[0].c` from zod's path, under `prefix`. */
export function pathText(prefix: string, path: readonly PropertyKey[]): string {
  let out = prefix;
  for (const part of path) out += typeof part === 'number' ? `[${part}]` : out ? `.${String(part)}` : String(part);
  return out;
}

/** zod's issues as `path: problem` lines, in the order they were found. */
export function problemsOf(issues: readonly z.core.$ZodIssue[], prefix = ''): string[] {
  const out: string[] = [];
  for (const issue of issues) {
    const at = pathText(prefix, issue.path);
    if (issue.code === 'unrecognized_keys') {
      for (const line of issue.message.split('\n')) {
        const tab = line.indexOf('\t');
        out.push(`${pathText(at, [line.slice(0, tab)])}: ${line.slice(tab + 1)}`);
      }
    } else if (issue.code === 'invalid_union' && chosenBranch(issue.errors)) out.push(...problemsOf(chosenBranch(issue.errors)!, at));
    else out.push(`${at || '(root)'}: ${issue.message}`);
  }
  return out;
}

/**
 * Of a union's alternatives (`echo | none | [origins]`, a node list or one string), the one the
 * value was written as: the only one whose issues lie inside the value rather than on its type.
 * Its issues name the item at fault; with none or several, the union's own message is given.
 */
function chosenBranch(branches: readonly (readonly z.core.$ZodIssue[])[]): readonly z.core.$ZodIssue[] | undefined {
  const inside = branches.filter((issues) => issues.some((i) => i.path.length > 0 || !TYPE_MISMATCH.has(i.code)));
  return inside.length === 1 ? inside[0] : undefined;
}

const TYPE_MISMATCH = new Set(['invalid_type', 'invalid_value', 'invalid_union']);

/** YAML's empty value (`key:`) and `null` mean "the default", as they did: a parse without them. */
export function withoutNulls(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutNulls);
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) if (item !== null) out[key] = withoutNulls(item);
    return out;
  }
  return value;
}

/** A mapping that may be left out: then each of its keys takes its default. */
export function optionalSection<S extends z.ZodRawShape>(shape: S) {
  return section(shape).prefault({} as z.input<ReturnType<typeof section<S>>>);
}

/** The checks several sections share. */
export const checks = {
  httpUrl: (v: string): string | null => {
    try {
      const u = new URL(v);
      return u.protocol === 'http:' || u.protocol === 'https:' ? null : 'must be an http:// or https:// URL';
    } catch {
      return `must be an absolute URL like http://127.0.0.1:8081 (got ${JSON.stringify(v)})`;
    }
  },
  routePath: (v: string): string | null => (/^\/[A-Za-z0-9._~\-/]*$/.test(v) && !v.endsWith('/') ? null : 'must be a path starting with / and not ending with / (e.g. /keys)'),
  cidr: (v: string): string | null => {
    const parsed = parseCidr(v);
    return typeof parsed === 'string' ? `${JSON.stringify(v)} is not a CIDR: ${parsed} (write it like 10.0.0.0/8, 192.168.1.7/32 or fd00::/8)` : null;
  },
  headerName: (v: string): string | null => (/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/.test(v) ? null : 'must be an HTTP header name'),
};

/** A route of Outrigger's own, defaulting to `fallback`. */
export const route = (fallback: string) => text(checks.routePath, { fallback });
