/**
 * Dot paths into documents. `readPath` follows RESTHeart's field mappings (a numeric segment
 * indexes an array, another segment applied to an array maps over its elements, missing → undefined);
 * `candidateValues` follows MongoDB's query semantics for the same path (what `{"a.b": v}` compares
 * `v` against), used to split batched results back per parent.
 */
import { isPlainObject } from '../../util/objects.js';

const INDEX = /^\d+$/;

/** The value at `path` the way RESTHeart's field mappings and `$fk` read it. */
export function readPath(source: unknown, path: string | readonly string[]): unknown {
  const segments = typeof path === 'string' ? path.split('.') : path;
  let current: unknown = source;
  for (let i = 0; i < segments.length; i++) {
    const seg = segments[i] as string;
    if (current === null || current === undefined) return undefined;
    if (Array.isArray(current)) {
      if (INDEX.test(seg)) current = current[Number(seg)];
      else {
        const rest = segments.slice(i);
        return current.map((element) => readPath(element, rest));
      }
    } else if (typeof current === 'object') {
      current = Object.prototype.hasOwnProperty.call(current, seg) ? (current as Record<string, unknown>)[seg] : undefined;
    } else return undefined;
  }
  return current;
}

/**
 * Every value MongoDB compares a query value with for `path` in `doc`: arrays met on the way are
 * traversed (one level), and a final array contributes both itself and each of its elements.
 * Returns [] when the path leads nowhere (the field is missing).
 */
export function candidateValues(doc: unknown, path: string | readonly string[]): unknown[] {
  const segments = typeof path === 'string' ? path.split('.') : path;
  const out: unknown[] = [];
  collect(doc, segments, 0, out);
  return out;
}

function collect(value: unknown, segments: readonly string[], i: number, out: unknown[]): void {
  if (i === segments.length) {
    if (value === undefined) return;
    out.push(value);
    if (Array.isArray(value)) for (const element of value) out.push(element);
    return;
  }
  const seg = segments[i] as string;
  if (Array.isArray(value)) {
    if (INDEX.test(seg)) collect(value[Number(seg)], segments, i + 1, out);
    // Field names reach into the array's documents (arrays nested in arrays are not traversed).
    for (const element of value) if (isPlainObject(element)) collect(element, segments, i, out);
    return;
  }
  if (isPlainObject(value) && Object.prototype.hasOwnProperty.call(value, seg)) collect(value[seg], segments, i + 1, out);
}

/** What `withinShape` leaves out. */
const LEFT_OUT = Symbol('left out');

/**
 * `doc`'s values, kept only where `shape` (the same document as another reader was shown it, maybe
 * in a later state) has the field: a field the other read did not show is left out, at any depth
 * (arrays of objects by the union of their elements' fields). A value whose kind differs between
 * the two (an object against a scalar or an array) is left out, since what would be hidden inside
 * it cannot be told. Values are always `doc`'s, never `shape`'s.
 */
export function withinShape(doc: unknown, shape: unknown): unknown {
  const out = within(doc, shape);
  return out === LEFT_OUT ? undefined : out;
}

function within(doc: unknown, shape: unknown): unknown {
  if (Array.isArray(doc)) {
    if (!Array.isArray(shape)) return LEFT_OUT;
    const objects = shape.filter((e) => isPlainObject(e) && !isLiteral(e));
    const union = objects.length > 0 ? (Object.assign({}, ...objects) as Record<string, unknown>) : undefined;
    const out: unknown[] = [];
    for (const element of doc) {
      if (isPlainObject(element) && !isLiteral(element)) {
        if (!union) continue;
        const kept = within(element, union);
        if (kept !== LEFT_OUT) out.push(kept);
      } else out.push(element);
    }
    return out;
  }
  if (isPlainObject(doc) && !isLiteral(doc)) {
    if (!isPlainObject(shape) || isLiteral(shape)) return LEFT_OUT;
    const out: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(doc)) {
      if (!Object.hasOwn(shape, key) || shape[key] === undefined) continue; // not shown
      const kept = within(value, shape[key]);
      if (kept !== LEFT_OUT) out[key] = kept;
    }
    return out;
  }
  return doc;
}

/** An extended-JSON value (`{$oid}`, `{$date}`...) is a scalar here: one key starting with `$`. */
function isLiteral(value: Record<string, unknown>): boolean {
  const keys = Object.keys(value);
  return keys.length === 1 && keys[0]!.startsWith('$');
}
