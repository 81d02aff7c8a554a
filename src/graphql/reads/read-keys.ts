/**
 * The field paths a read's filter and sort look at, for refusing those a caller's projectResponse
 * hides (issue 25): a filter or sort on a hidden field would tell the caller its value, one query
 * at a time, and a join keyed on it would do the same. The walk is conservative: what it cannot
 * reduce to field paths (`$text`, `$where`, `$jsonSchema`, `$expr` over a hidden field) counts as
 * looking at a hidden field.
 */
import { isPlainObject } from '../../util/objects.js';
import { LITERAL_KEYS } from '../values/ejson.js';
import type { BackendRead } from '../types.js';

const LOGICAL = new Set(['$and', '$or', '$nor']);
/** Top-level operators whose fields cannot be read off the query: refused under any projection. */
const OPAQUE = new Set(['$text', '$where', '$jsonSchema', '$function', '$accumulator']);

/**
 * The first filter or sort path of `read` that `hides` hides (an opaque operator is named as
 * such), or undefined. `_id` in the sort is allowed: it is the order every read has by default.
 */
export function hiddenReadKey(read: BackendRead, hides: (path: string) => boolean): string | undefined {
  const paths: string[] = [];
  if (read.filter) queryPaths(read.filter, '', paths);
  for (const path of paths) if (path.startsWith('$') ? true : hides(path)) return path;
  for (const path of Object.keys(read.sort ?? {})) if (path !== '_id' && hides(path)) return path;
  return undefined;
}

/** Collects the field paths of a query document (relative to `prefix`, for `$elemMatch`). */
function queryPaths(query: Record<string, unknown>, prefix: string, out: string[]): void {
  for (const [key, value] of Object.entries(query)) {
    if (LOGICAL.has(key) && Array.isArray(value)) {
      for (const part of value) if (isPlainObject(part)) queryPaths(part, prefix, out);
    } else if (key === '$expr') {
      expressionPaths(value, prefix, out);
    } else if (OPAQUE.has(key)) {
      out.push(key);
    } else if (key.startsWith('$')) {
      // An operator on the element itself (inside $elemMatch): the prefix was counted already.
    } else {
      const path = prefix ? `${prefix}.${key}` : key;
      const inner: string[] = [];
      // An equality (a literal or a whole subdocument) or an operator compares the field itself;
      // `$elemMatch` on fields of its elements compares only those.
      if (!isOperatorObject(value) || operatorPaths(value, path, inner)) out.push(path);
      out.push(...inner);
    }
  }
}

function isOperatorObject(value: unknown): value is Record<string, unknown> {
  if (!isPlainObject(value)) return false;
  const keys = Object.keys(value);
  return keys.length > 0 && keys.every((k) => k.startsWith('$') && !LITERAL_KEYS.has(k));
}

/**
 * Field paths reached by the operators on a field: `$elemMatch` looks at fields of its elements,
 * `$not` wraps. Answers whether some operator compares the field's own value.
 */
function operatorPaths(condition: Record<string, unknown>, path: string, out: string[]): boolean {
  let self = false;
  for (const [op, arg] of Object.entries(condition)) {
    if (op === '$elemMatch' && isPlainObject(arg)) {
      if (Object.keys(arg).some((k) => k.startsWith('$') && !LOGICAL.has(k))) self = true;
      queryPaths(arg, path, out);
    } else if (op === '$not' && isPlainObject(arg)) {
      if (operatorPaths(arg, path, out)) self = true;
    } else self = true;
  }
  return self;
}

/** `$expr` names fields as `"$path"` strings (`"$$var"` is a variable, not a field). */
function expressionPaths(value: unknown, prefix: string, out: string[]): void {
  if (typeof value === 'string') {
    if (value.startsWith('$') && !value.startsWith('$$')) out.push(prefix ? `${prefix}.${value.slice(1)}` : value.slice(1));
    else if (value.startsWith('$$')) out.push('$expr'); // variables ($$ROOT, $$CURRENT) reach the whole document
  } else if (Array.isArray(value)) {
    for (const v of value) expressionPaths(v, prefix, out);
  } else if (isPlainObject(value)) {
    for (const v of Object.values(value)) expressionPaths(v, prefix, out);
  }
}
