/**
 * The JSON document helpers RESTHeart's `bson-request-*` predicates rely on (`BsonUtils`),
 * applied to a request body parsed with JSON.parse.
 */

export type JsonDocument = Record<string, unknown>;

export function isDocument(value: unknown): value is JsonDocument {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const UPDATE_OPERATORS: ReadonlySet<string> = new Set([
  '$inc',
  '$mul',
  '$rename',
  '$setOnInsert',
  '$set',
  '$unset',
  '$min',
  '$max',
  '$currentDate',
  '$',
  '$[]',
  '$addToSet',
  '$pop',
  '$pullAll',
  '$pull',
  '$pushAll',
  '$push',
  '$each',
  '$position',
  '$slice',
  '$sort',
  '$bit',
  '$isolated',
]);

export const isUpdateOperator = (key: string): boolean => UPDATE_OPERATORS.has(key);

/** `{"a.b": 1}` → `{"a": {"b": 1}}`, recursively. */
export function unflatten(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(unflatten);
  if (!isDocument(value)) return value;
  const result: JsonDocument = {};
  for (const [key, child] of Object.entries(value)) {
    const path = key.startsWith('$') ? [key] : key.split('.');
    let target = result;
    for (const segment of path.slice(0, -1)) {
      const next = target[segment];
      target = isDocument(next) ? next : (target[segment] = {});
    }
    const last = path[path.length - 1]!;
    const unflattened = unflatten(child);
    const existing = target[last];
    target[last] = isDocument(existing) && isDocument(unflattened) ? { ...existing, ...unflattened } : unflattened;
  }
  return result;
}

/**
 * `BsonUtils.containsKeys`: whether a document (or every/any document of an array) contains
 * all (or any) of the keys, which may use dot notation and may sit inside update operators.
 */
export function containsKeys(value: unknown, keys: readonly string[], all: boolean): boolean {
  if (Array.isArray(value)) {
    if (value.length === 0) return false;
    return all ? value.every((item) => containsKeys(item, keys, all)) : value.some((item) => containsKeys(item, keys, all));
  }
  if (!isDocument(value)) return false;
  const document = unflatten(value) as JsonDocument;
  return all ? keys.every((key) => containsKey(document, key, all)) : keys.some((key) => containsKey(document, key, all));
}

function containsKey(document: JsonDocument, key: string, all: boolean): boolean {
  if (Object.keys(document).some(isUpdateOperator)) {
    for (const operator of Object.keys(document)) {
      if (!operator.startsWith('$')) continue;
      const operand = unflatten(document[operator]);
      if (isDocument(operand) && containsKey(operand, key, all)) return true;
    }
  }
  const dot = key.indexOf('.');
  if (dot === -1) return key.length > 0 && Object.prototype.hasOwnProperty.call(document, key);
  const first = key.slice(0, dot);
  const rest = key.slice(dot + 1);
  if (first.length === 0 || !Object.prototype.hasOwnProperty.call(document, first)) return false;
  const child = document[first];
  if (isDocument(child)) return containsKey(child, rest, all);
  if (Array.isArray(child)) return containsKeys(child, [rest], all);
  return false;
}

/**
 * The leaf keys RESTHeart checks against a whitelist: dot paths of every non-document value
 * (arrays are leaves), plus the fields named inside update operators, minus the operators.
 */
export function leafKeys(document: JsonDocument): Set<string> {
  const keys = new Set<string>();
  const plainKeys = Object.keys(document).filter((key) => !isUpdateOperator(key));
  if (plainKeys.length === 0) {
    for (const key of Object.keys(document)) keys.add(key);
  } else {
    for (const key of Object.keys(document)) if (isUpdateOperator(key)) keys.add(key);
    for (const key of plainKeys) collectLeaves(key, document[key], keys);
  }
  for (const key of Object.keys(document)) {
    if (!isUpdateOperator(key)) continue;
    const operand = document[key];
    if (isDocument(operand)) for (const field of Object.keys(operand)) keys.add(field);
  }
  for (const key of Object.keys(document)) if (isUpdateOperator(key)) keys.delete(key);
  return keys;
}

function collectLeaves(prefix: string, value: unknown, into: Set<string>): void {
  if (isDocument(value)) {
    for (const [key, child] of Object.entries(value)) collectLeaves(`${prefix}.${key}`, child, into);
  } else {
    into.add(prefix);
  }
}

const ABSENT = Symbol('absent');

/**
 * `BsonUtils.get`: the value at `path`, an exact key first, else dot notation with `[n]`
 * array indexes and `['a.b']` quoted keys. Returns ABSENT when nothing is there.
 */
export function valueAtPath(document: JsonDocument, path: string): unknown {
  if (Object.prototype.hasOwnProperty.call(document, path)) return document[path];
  let current: unknown = document;
  for (const segment of splitPath(path)) {
    if (typeof segment === 'number') {
      if (!Array.isArray(current) || segment >= current.length) return ABSENT;
      current = current[segment];
    } else {
      if (!isDocument(current) || !Object.prototype.hasOwnProperty.call(current, segment)) return ABSENT;
      current = current[segment];
    }
  }
  return current;
}

export const isAbsent = (value: unknown): boolean => value === ABSENT;

function splitPath(path: string): Array<string | number> {
  const segments: Array<string | number> = [];
  const pattern = /\['([^']*)'\]|\[(\d+)\]|([^.[\]]+)/g;
  for (let match = pattern.exec(path); match !== null; match = pattern.exec(path)) {
    if (match[1] !== undefined) segments.push(match[1]);
    else if (match[2] !== undefined) segments.push(Number(match[2]));
    else segments.push(match[3]!);
  }
  return segments;
}

/** Structural equality; object key order does not matter, array order does. */
export function jsonEquals(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((item, i) => jsonEquals(item, b[i]));
  if (isDocument(a)) {
    if (!isDocument(b)) return false;
    const keys = Object.keys(a);
    return keys.length === Object.keys(b).length && keys.every((key) => Object.prototype.hasOwnProperty.call(b, key) && jsonEquals(a[key], b[key]));
  }
  return false;
}

/**
 * `BsonUtils.parse` of the expected value: JSON, or a single-quoted string as the Java driver's
 * relaxed reader accepts. Undefined when blank or not parseable (the predicate is then false).
 */
export function parseExpectedJson(text: string | null): { value: unknown } | undefined {
  if (text === null || text.trim().length === 0) return undefined;
  try {
    return { value: JSON.parse(text) as unknown };
  } catch {
    const single = /^\s*'((?:[^'\\]|\\.)*)'\s*$/.exec(text);
    return single === null ? undefined : { value: single[1]!.replace(/\\(.)/g, '$1') };
  }
}
