/**
 * The values a mutation writes (SPEC §6.4): a mapping's `insert`, `update` and `find` with every
 * `{"$arg": ...}` replaced by the argument's value (whole input objects too) and the strings
 * `"@user.id"` / `"@user.roles"` by the caller's. Unlike a read, an omitted argument is always a
 * field error: a write must never widen by dropping a condition. Argument values are literal
 * values: an object key starting with `$` (outside extended-JSON literals) or holding a `.` (a
 * dot path that would reach another field) is refused, at any depth.
 */
import { GraphQLError } from 'graphql';
import { argRefParts, isArgRef } from '../app-document.js';
import { isPlainObject } from '../../util/objects.js';
import { isEjsonLiteral } from '../values/ejson.js';
import { fieldError, missingArgument, setOwn } from '../values/interpolate.js';
import { readPath } from '../values/paths.js';

/**
 * A refusal known from a write's arguments alone that widens or moves what the write acts on (an
 * id that is no plain path segment, a null in `find`): plan.ts refuses the whole mutation with it
 * before the first write, so an earlier field is not left written (issue 34).
 */
export class TargetRefusal extends GraphQLError {}

/** Deepest argument value a mutation accepts (objects and lists nested). */
export const MAX_WRITE_VALUE_DEPTH = 32;

export interface Caller {
  readonly id: string | null;
  readonly roles: readonly string[];
}

/** What is wrong with an argument value written to the backend, or undefined when it is a plain value. */
export function argumentValueProblem(value: unknown, path: string, depth = 0): string | undefined {
  if (depth > MAX_WRITE_VALUE_DEPTH) return `${path} is nested more than ${MAX_WRITE_VALUE_DEPTH} levels deep`;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const p = argumentValueProblem(value[i], `${path}.${i}`, depth + 1);
      if (p !== undefined) return p;
    }
    return undefined;
  }
  if (value === null || typeof value !== 'object') return undefined;
  if (isEjsonLiteral(value)) return undefined;
  for (const [key, v] of Object.entries(value)) {
    if (key.startsWith('$')) return `${path}.${key}: a key starting with "$" would act as a MongoDB operator; argument values are written as plain values`;
    if (key.includes('.')) return `${path}: the key "${key}" holds a ".", which MongoDB reads as a path into another field; use nested objects`;
    if (key === '__proto__') return `${path}: the key "__proto__" is not accepted`;
    const p = argumentValueProblem(v, `${path}.${key}`, depth + 1);
    if (p !== undefined) return p;
  }
  return undefined;
}

/**
 * Substitutes `$arg`s and caller values into a write value; an omitted argument throws. With
 * `nullIsMissing` (a write's `find`), an argument given as an explicit null is refused the same
 * way (or takes the reference's default): `{owner: null}` would match every document without an
 * owner, and a null filter none of the conditions the mapping meant (issue 34).
 */
export function writeValue(value: unknown, args: Readonly<Record<string, unknown>>, caller: Caller, options: { nullIsMissing?: boolean } = {}): unknown {
  if (typeof value === 'string') {
    if (value === '@user.id') {
      if (caller.id === null) throw fieldError('this mutation writes "@user.id", and you are not signed in; sign in first', 'UNAUTHENTICATED');
      return caller.id;
    }
    if (value === '@user.roles') return [...caller.roles];
    return value;
  }
  if (Array.isArray(value)) return value.map((v) => writeValue(v, args, caller, options));
  if (!isPlainObject(value)) return value;
  if (isArgRef(value)) {
    const { path, hasDefault, defaultValue } = argRefParts(value);
    const dot = path.indexOf('.');
    const first = dot === -1 ? path : path.slice(0, dot);
    let found: unknown;
    if (Object.prototype.hasOwnProperty.call(args, first)) found = dot === -1 ? args[first] : readPath(args[first], path.slice(dot + 1));
    if (found === undefined || (found === null && options.nullIsMissing)) {
      if (!hasDefault)
        throw found === null
          ? new TargetRefusal(`argument ${path} is null; a write's find never drops a condition, so give it a value`, { extensions: { code: 'MISSING_ARGUMENT' } })
          : missingArgument(path);
      found = defaultValue;
    }
    const problem = argumentValueProblem(found, path);
    if (problem !== undefined) throw fieldError(`argument ${problem}`, 'BAD_USER_INPUT');
    return found;
  }
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) setOwn(out, k, writeValue(v, args, caller, options));
  return out;
}
