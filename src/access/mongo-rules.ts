import type { Principal } from '../principal/principal.js';
import { isJsonObject } from '../util/objects.js';

export type CollectionShape = 'collection' | 'document' | 'other';

/**
 * Classifies a backend path against `graphql.backend.collectionPath` (default
 * `/{db}/{collection}`): the collection itself, one document of it, or anything deeper or
 * special (`/_size`, `/_aggrs/x`, `/_indexes`: counts and aggregations a readFilter cannot narrow).
 */
export function createShapeClassifier(collectionPath: string): (path: string) => CollectionShape | null {
  const depth = collectionPath.split('/').filter(Boolean).length;
  return (path) => {
    const segments = path.split('/').filter(Boolean);
    if (segments.length < depth) return null;
    if (segments.length === depth) return 'collection';
    if (segments.length === depth + 1 && !segments[depth]!.startsWith('_')) return 'document';
    return 'other';
  };
}

/** `"@user.id"` and `"@user.roles"` values in a readFilter become the caller's id and roles. */
export function interpolateUserVariables(value: unknown, principal: Principal): unknown {
  if (typeof value === 'string') {
    if (value === '@user.id' || value === '@user._id') return principal.id;
    if (value === '@user.roles') return [...principal.roles];
    return value;
  }
  if (Array.isArray(value)) return value.map((v) => interpolateUserVariables(v, principal));
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = interpolateUserVariables(v, principal);
    return out;
  }
  return value;
}

/**
 * RESTHeart's projectResponse (not a Mongo projection): if the first key's value is 1 only the
 * listed paths are kept, otherwise the listed paths are removed. Applied to a document or to
 * each element of an array.
 */
export function projectResponse(body: unknown, projection: Record<string, 0 | 1>): unknown {
  const paths = Object.keys(projection).map((p) => p.split('.'));
  const keep = Object.values(projection)[0] === 1;
  const one = (doc: unknown) => (isJsonObject(doc) ? (keep ? keepPaths(doc, paths) : removePaths(doc, paths)) : doc);
  return Array.isArray(body) ? body.map(one) : one(body);
}

function keepPaths(doc: Record<string, unknown>, paths: string[][]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const path of paths) {
    let source: unknown = doc;
    let target = out;
    for (let i = 0; i < path.length; i++) {
      if (!isJsonObject(source) || !Object.hasOwn(source, path[i]!)) break;
      const value: unknown = source[path[i]!];
      if (i === path.length - 1) target[path[i]!] = value;
      else {
        if (!isJsonObject(target[path[i]!])) target[path[i]!] = {};
        target = target[path[i]!] as Record<string, unknown>;
        source = value;
      }
    }
  }
  return out;
}

function removePaths(doc: Record<string, unknown>, paths: string[][]): Record<string, unknown> {
  const out = structuredClone(doc);
  for (const path of paths) {
    let target: unknown = out;
    for (let i = 0; i < path.length - 1 && isJsonObject(target); i++) target = target[path[i]!];
    if (isJsonObject(target)) delete target[path[path.length - 1]!];
  }
  return out;
}

/**
 * Which field paths a projectResponse hides from the caller, as a test on a dot path (issue 25:
 * GraphQL refuses filters, sorts and join keys on them, so a query cannot probe hidden values).
 * With an exclusion, a path is hidden when it lies inside an excluded path or holds one
 * (`a` holds `a.b`); with an inclusion, when no included path holds it whole. Array indexes
 * (`items.0.sku`) are ignored, as MongoDB's dot paths reach into arrays without them.
 */
export function projectionHides(projection: Record<string, 0 | 1>): (path: string) => boolean {
  const listed = Object.keys(projection).map(fieldSegments);
  const keep = Object.values(projection)[0] === 1;
  return (path) => {
    const p = fieldSegments(path);
    return keep ? !listed.some((i) => startsWith(p, i)) : listed.some((e) => startsWith(p, e) || startsWith(e, p));
  };
}

function fieldSegments(path: string): string[] {
  return path.split('.').filter((s) => s !== '' && !/^\d+$/.test(s));
}

function startsWith(path: readonly string[], prefix: readonly string[]): boolean {
  return prefix.length <= path.length && prefix.every((s, i) => path[i] === s);
}
