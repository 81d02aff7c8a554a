/**
 * Extended JSON as the backend speaks it (`{"$oid": ...}`, `{"$date": ...}`, `{"$numberLong": ...}`):
 * recognising literal values among operator objects, canonical equality keys, and ordering, so that
 * results of a batched read can be split back per parent the way MongoDB matched them.
 */
import { isPlainObject } from '../../util/objects.js';

/**
 * The extended-JSON literals accepted as values, each with the exact shape of its content
 * (issue 25): a literal is a value, so nothing inside it may be an operator, and types that are
 * not plain values are not literals at all. `$regularExpression` (an equality would become a
 * regex match), `$code` / `$scope` (JavaScript), `$dbPointer` (a reference to another
 * collection) and `$symbol` are therefore not literals: `findOperatorKey` reports them, so they
 * are refused in argument values, foreign values, enum values and `$arg` defaults.
 */
const INTEGER = /^-?\d{1,19}$/;
const DECIMAL = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$|^[+-]?(Infinity|Inf)$|^NaN$/;
const LITERAL_SHAPES: Readonly<Record<string, (content: unknown) => boolean>> = {
  $oid: (c) => typeof c === 'string' && /^[0-9a-fA-F]{24}$/.test(c),
  $date: (c) =>
    (typeof c === 'number' && Number.isFinite(c)) ||
    (typeof c === 'string' && !Number.isNaN(Date.parse(c))) ||
    (isPlainObject(c) && Object.keys(c).length === 1 && typeof c.$numberLong === 'string' && INTEGER.test(c.$numberLong)),
  $numberLong: (c) => typeof c === 'string' && INTEGER.test(c),
  $numberInt: (c) => typeof c === 'string' && /^-?\d{1,10}$/.test(c),
  $numberDouble: (c) => typeof c === 'string' && DECIMAL.test(c),
  $numberDecimal: (c) => typeof c === 'string' && DECIMAL.test(c),
  $binary: (c) =>
    isPlainObject(c) && Object.keys(c).length === 2 && typeof c.base64 === 'string' && /^[A-Za-z0-9+/]*={0,2}$/.test(c.base64) && typeof c.subType === 'string' && /^[0-9a-fA-F]{1,2}$/.test(c.subType),
  $timestamp: (c) => isPlainObject(c) && Object.keys(c).length === 2 && Number.isSafeInteger(c.t) && (c.t as number) >= 0 && Number.isSafeInteger(c.i) && (c.i as number) >= 0,
  $uuid: (c) => typeof c === 'string' && /^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$/.test(c),
  $minKey: (c) => c === 1,
  $maxKey: (c) => c === 1,
  $undefined: (c) => c === true,
};

/** Keys of the literal types above (a `$`-key object with one of them is a literal or malformed, never an operator). */
export const LITERAL_KEYS: ReadonlySet<string> = new Set(Object.keys(LITERAL_SHAPES));

/** Extended-JSON types that are not values: refused wherever they appear (app documents, arguments). */
export const UNSAFE_EJSON_KEYS: ReadonlySet<string> = new Set(['$regularExpression', '$code', '$scope', '$dbPointer', '$symbol']);

/**
 * True for an object that is an accepted extended-JSON literal (`{"$oid": "<24 hex>"}`,
 * `{"$date": 1}`, ...): exactly one key of an allowed type, with content of that type's shape.
 */
export function isEjsonLiteral(value: unknown): value is Record<string, unknown> {
  if (!isPlainObject(value)) return false;
  let key: string | undefined;
  for (const k in value) {
    if (key !== undefined) return false;
    key = k;
  }
  if (key === undefined || !Object.hasOwn(LITERAL_SHAPES, key)) return false;
  return (LITERAL_SHAPES[key] as (content: unknown) => boolean)(value[key]);
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
    if (isEjsonLiteral(value) || Object.keys(value).some((k) => UNSAFE_EJSON_KEYS.has(k))) return 'other';
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
