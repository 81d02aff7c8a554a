/**
 * Extended JSON as the backend speaks it (`{"$oid": ...}`, `{"$date": ...}`, `{"$numberLong": ...}`):
 * recognising literal values among operator objects, canonical equality keys, and ordering, so that
 * results of a batched read can be split back per parent the way MongoDB matched them.
 */
import { isPlainObject } from './app-document.js';

/** Keys that mark an extended-JSON literal (a value), not a query operator. */
const EJSON_KEYS = new Set([
  '$oid',
  '$date',
  '$numberLong',
  '$numberInt',
  '$numberDouble',
  '$numberDecimal',
  '$binary',
  '$timestamp',
  '$regularExpression',
  '$uuid',
  '$symbol',
  '$minKey',
  '$maxKey',
  '$undefined',
  '$code',
  '$scope',
  '$dbPointer',
]);

/** True for an object that is an extended-JSON literal (`{"$oid": "..."}`, `{"$date": 1}`, ...). */
export function isEjsonLiteral(value: unknown): value is Record<string, unknown> {
  if (!isPlainObject(value)) return false;
  const keys = Object.keys(value);
  if (keys.length === 0 || keys.length > 2) return false;
  return keys.every((k) => EJSON_KEYS.has(k)) && (keys.length === 1 || (keys.includes('$code') && keys.includes('$scope')));
}

/**
 * Finds a key starting with `$` that is not part of an extended-JSON literal, at any depth.
 * Returns its path (e.g. `where.$ne`) or undefined. Used to refuse operator injection.
 */
export function findOperatorKey(value: unknown, path = ''): string | undefined {
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const hit = findOperatorKey(value[i], path ? `${path}.${i}` : String(i));
      if (hit !== undefined) return hit;
    }
    return undefined;
  }
  if (value === null || typeof value !== 'object') return undefined;
  if (isEjsonLiteral(value)) return undefined;
  for (const [k, v] of Object.entries(value)) {
    const p = path ? `${path}.${k}` : k;
    if (k.startsWith('$')) return p;
    const hit = findOperatorKey(v, p);
    if (hit !== undefined) return hit;
  }
  return undefined;
}

type Bracket = 'null' | 'number' | 'string' | 'object' | 'array' | 'binary' | 'oid' | 'bool' | 'date' | 'timestamp' | 'regex' | 'other';

/** The number an extended-JSON or plain number stands for, or undefined. */
function numberOf(value: unknown): number | undefined {
  if (typeof value === 'number') return value;
  if (isPlainObject(value)) {
    for (const k of ['$numberLong', '$numberInt', '$numberDouble', '$numberDecimal']) {
      if (k in value) {
        const n = Number(value[k]);
        return Number.isNaN(n) && value[k] !== 'NaN' ? undefined : n;
      }
    }
  }
  return undefined;
}

/** Epoch millis of a `$date` literal (number, ISO string or `{"$numberLong"}`), or undefined. */
export function dateMillis(value: unknown): number | undefined {
  if (!isPlainObject(value) || !('$date' in value) || Object.keys(value).length !== 1) return undefined;
  const d = value.$date;
  if (typeof d === 'number') return d;
  if (typeof d === 'string') {
    const ms = Date.parse(d);
    return Number.isNaN(ms) ? undefined : ms;
  }
  return numberOf(d);
}

function bracketOf(value: unknown): Bracket {
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'number' || numberOf(value) !== undefined) return 'number';
  if (typeof value === 'string' || (isPlainObject(value) && '$symbol' in value)) return 'string';
  if (typeof value === 'boolean') return 'bool';
  if (Array.isArray(value)) return 'array';
  if (isPlainObject(value)) {
    if ('$oid' in value) return 'oid';
    if (dateMillis(value) !== undefined) return 'date';
    if ('$timestamp' in value) return 'timestamp';
    if ('$binary' in value || '$uuid' in value) return 'binary';
    if ('$regularExpression' in value) return 'regex';
    if (isEjsonLiteral(value)) return 'other';
    return 'object';
  }
  return 'other';
}

/**
 * A string that is equal for two values exactly when MongoDB would find them equal (numbers by
 * value across int/long/double, `$oid` case-insensitively, `$date` by instant, objects by field
 * order, as BSON compares them).
 */
export function canonicalKey(value: unknown): string {
  // The common foreign values first (what the switch below returns for them).
  if (typeof value === 'string') return `s${value}`;
  if (typeof value === 'number') return `n${String(value)}`;
  const b = bracketOf(value);
  switch (b) {
    case 'null':
      return 'z';
    case 'number':
      return `n${String(numberOf(value))}`;
    case 'string':
      return `s${typeof value === 'string' ? value : String((value as Record<string, unknown>).$symbol)}`;
    case 'bool':
      return value ? 'T' : 'F';
    case 'oid':
      return `o${String((value as Record<string, unknown>).$oid).toLowerCase()}`;
    case 'date':
      return `d${String(dateMillis(value))}`;
    case 'array':
      return `[${(value as unknown[]).map(canonicalKey).join(',')}]`;
    case 'object':
      return `{${Object.entries(value as Record<string, unknown>)
        .map(([k, v]) => `${JSON.stringify(k)}:${canonicalKey(v)}`)
        .join(',')}}`;
    default:
      return `x${JSON.stringify(value)}`;
  }
}

/**
 * Orders two values of the same comparable bracket (numbers, strings, dates, object ids); returns
 * undefined when MongoDB's `$gt`/`$lt` would not compare them (different brackets). Strings use
 * binary (code unit) order, as MongoDB's default simple collation does.
 */
export function compareValues(a: unknown, b: unknown): number | undefined {
  const ba = bracketOf(a);
  const bb = bracketOf(b);
  if (ba !== bb) return undefined;
  switch (ba) {
    case 'number': {
      const x = numberOf(a) as number;
      const y = numberOf(b) as number;
      return x < y ? -1 : x > y ? 1 : 0;
    }
    case 'string': {
      const x = canonicalKey(a);
      const y = canonicalKey(b);
      return x < y ? -1 : x > y ? 1 : 0;
    }
    case 'date': {
      const x = dateMillis(a) as number;
      const y = dateMillis(b) as number;
      return x < y ? -1 : x > y ? 1 : 0;
    }
    case 'oid': {
      const x = canonicalKey(a);
      const y = canonicalKey(b);
      return x < y ? -1 : x > y ? 1 : 0;
    }
    case 'bool':
      return a === b ? 0 : a ? 1 : -1;
    case 'null':
      return 0;
    default:
      return undefined;
  }
}

const BRACKET_RANK: Record<Bracket, number> = {
  null: 1,
  number: 2,
  string: 3,
  object: 4,
  array: 5,
  binary: 6,
  oid: 7,
  bool: 8,
  date: 9,
  timestamp: 10,
  regex: 11,
  other: 12,
};

/** Total order for sorting documents locally, following MongoDB's cross-type comparison order. */
export function compareForSort(a: unknown, b: unknown): number {
  const c = compareValues(a, b);
  if (c !== undefined) return c;
  const ra = BRACKET_RANK[bracketOf(a)];
  const rb = BRACKET_RANK[bracketOf(b)];
  if (ra !== rb) return ra - rb;
  const x = canonicalKey(a);
  const y = canonicalKey(b);
  return x < y ? -1 : x > y ? 1 : 0;
}
