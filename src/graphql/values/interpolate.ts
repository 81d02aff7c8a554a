/**
 * Substitution of `{"$arg": ...}` (the field's arguments, or `rootDoc.<path>`) and `{"$fk": ...}`
 * (the parent document) into a mapping's find/sort/skip/limit. Values are substituted as literal
 * values, never parsed as query syntax.
 *
 * Omitted arguments (SPEC §6.3): in a query document (the find, or a document inside its
 * `$and`/`$or`/`$nor`), an entry whose whole value is an `$arg` the client omitted, and that has
 * no default, is dropped, so optional arguments are optional filters. Anywhere else an omitted
 * argument is a field error naming it.
 */
import { GraphQLError } from 'graphql';
import { argRefParts, isArgRef, isFkRef, ROOT_DOC_ARG, type ArgRef } from '../app-document.js';
import { isPlainObject } from '../../util/objects.js';
import { findOperatorKey } from './ejson.js';
import { readPath } from './paths.js';

export interface ArgScope {
  /** The field's arguments as graphql-js coerced them (schema defaults applied). */
  readonly args: Readonly<Record<string, unknown>>;
  /** The parent document (for `$fk`). */
  readonly parent?: unknown;
  /** The document the root field returned above this one (for `rootDoc.<path>`). */
  readonly rootDoc?: unknown;
}

/** Collects what happened while interpolating. */
export interface InterpolationNotes {
  /** A `$fk` met a missing or null parent value: the join matches nothing (no read needed). */
  nullForeignKey: boolean;
}

export function fieldError(message: string, code: string): GraphQLError {
  return new GraphQLError(message, { extensions: { code } });
}

export function missingArgument(name: string): GraphQLError {
  return fieldError(`argument "${name}" is required by this field's mapping: pass it, or give it a default in the schema`, 'MISSING_ARGUMENT');
}

type Resolved = { found: true; value: unknown } | { found: false; name: string };

function resolveArg(ref: ArgRef, scope: ArgScope): Resolved {
  const { path, hasDefault, defaultValue } = argRefParts(ref);
  const dot = path.indexOf('.');
  const first = dot === -1 ? path : path.slice(0, dot);
  const rest = dot === -1 ? undefined : path.slice(dot + 1);
  let value: unknown;
  if (first === ROOT_DOC_ARG && rest !== undefined) {
    value = readPath(scope.rootDoc, rest);
    if (value === undefined) value = hasDefault ? defaultValue : null;
    return { found: true, value };
  }
  if (Object.prototype.hasOwnProperty.call(scope.args, first)) {
    const arg = scope.args[first];
    value = rest === undefined ? arg : readPath(arg, rest);
  }
  if (value === undefined) return hasDefault ? { found: true, value: defaultValue } : { found: false, name: path };
  return { found: true, value };
}

function resolveFk(path: string, scope: ArgScope, notes: InterpolationNotes): unknown {
  const value = readPath(scope.parent, path);
  if (value === undefined || value === null) {
    notes.nullForeignKey = true;
    return null;
  }
  const op = findOperatorKey(value);
  if (op !== undefined) throw foreignValueError(path, op);
  return value;
}

export function foreignValueError(path: string, op: string): GraphQLError {
  return fieldError(`the parent document's "${path}" holds an object with the key "${op}", which would act as a query operator; it cannot be used to join`, 'INVALID_FOREIGN_VALUE');
}

/** Substitutes everything in `value`; an omitted argument without default throws a field error. */
export function interpolateValue(value: unknown, scope: ArgScope, notes: InterpolationNotes): unknown {
  if (Array.isArray(value)) return value.map((v) => interpolateValue(v, scope, notes));
  if (!isPlainObject(value)) return value;
  if (isArgRef(value)) {
    const r = resolveArg(value, scope);
    if (!r.found) throw missingArgument(r.name);
    return r.value;
  }
  if (isFkRef(value)) return resolveFk(value.$fk, scope, notes);
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) setOwn(out, k, interpolateValue(v, scope, notes));
  return out;
}

/** `out[key] = value` that never touches a prototype (a mapping may hold any key, `__proto__` included). */
export function setOwn(out: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
}

const LOGICAL = new Set(['$and', '$or', '$nor']);

/** Substitutes a query document, dropping entries whose whole value is an omitted optional argument. */
export function interpolateQuery(find: Record<string, unknown>, scope: ArgScope, notes: InterpolationNotes): Record<string, unknown> {
  if (isArgRef(find)) {
    const r = resolveArg(find, scope);
    if (!r.found) return {};
    if (!isPlainObject(r.value)) throw fieldError(`argument "${argRefParts(find).path}" must be an object to serve as the whole find`, 'INVALID_ARGUMENT');
    return r.value;
  }
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(find)) {
    if (LOGICAL.has(k) && Array.isArray(v)) {
      const parts = v.map((p) => (isPlainObject(p) ? interpolateQuery(p, scope, notes) : interpolateValue(p, scope, notes)));
      const emptied = parts.some((p) => isPlainObject(p) && Object.keys(p).length === 0);
      if (k === '$or') {
        // An alternative that lost all its conditions matches everything: the whole $or is vacuous.
        if (!emptied) setOwn(out, k, parts);
      } else {
        const kept = parts.filter((p) => !(isPlainObject(p) && Object.keys(p).length === 0));
        if (kept.length > 0) setOwn(out, k, kept);
      }
      continue;
    }
    if (!k.startsWith('$') && isArgRef(v)) {
      const r = resolveArg(v, scope);
      if (r.found) setOwn(out, k, r.value);
      continue;
    }
    setOwn(out, k, interpolateValue(v, scope, notes));
  }
  return out;
}
