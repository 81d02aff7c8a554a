/**
 * JSON Merge Patch (RFC 7396), used by every PATCH route.
 *
 * `applyMergePatch(target, patch)` returns the patched value and never changes its arguments
 * (unchanged sub-trees of `target` are shared with the result, patch values are deep-copied).
 * - a patch that is not an object replaces the target entirely;
 * - `null` in a patch object removes that member;
 * - an object in the patch is merged recursively (a non-object target member is treated as {});
 * - arrays are replaced whole, never merged.
 * Keys are copied as own data properties, so a `__proto__` member in JSON is data, never a
 * prototype change.
 */

import { isJsonObject } from './objects.js';

type Json = unknown;

function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

/** A patch value as it lands in the result: objects lose their null members (RFC 7396 §2). */
function materialize(value: Json): Json {
  if (Array.isArray(value)) return structuredCloneJson(value);
  if (!isJsonObject(value)) return value;
  return applyMergePatch({}, value);
}

function structuredCloneJson(value: Json): Json {
  if (Array.isArray(value)) return value.map(structuredCloneJson);
  if (isJsonObject(value)) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) setOwn(out, k, structuredCloneJson(v));
    return out;
  }
  return value;
}

export function applyMergePatch(target: Json, patch: Json): Json {
  if (!isJsonObject(patch)) return materialize(patch);
  const result: Record<string, unknown> = {};
  if (isJsonObject(target)) {
    for (const [k, v] of Object.entries(target)) setOwn(result, k, v);
  }
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) {
      delete result[key];
    } else if (isJsonObject(value)) {
      const current = Object.prototype.hasOwnProperty.call(result, key) ? result[key] : undefined;
      setOwn(result, key, applyMergePatch(current, value));
    } else {
      setOwn(result, key, materialize(value));
    }
  }
  return result;
}
