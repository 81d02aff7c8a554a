/**
 * Dot paths into documents. `readPath` follows RESTHeart's field mappings (a numeric segment
 * indexes an array, another segment applied to an array maps over its elements, missing → undefined);
 * `candidateValues` follows MongoDB's query semantics for the same path (what `{"a.b": v}` compares
 * `v` against), used to split batched results back per parent.
 */
import { isPlainObject } from '../app-document.js';

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
