/**
 * Extended-JSON literals in an app document, checked at write (issue 25): what a mapping sends
 * the backend as a value must be a value. Types that are not plain values (`$code`, `$scope`,
 * `$dbPointer`, `$symbol`) are refused; a literal type (`$oid`, `$date`, `$numberLong`, ...) must
 * have exactly its content's shape (`{"$oid": {"$ne": null}}` is an operator wearing a literal's
 * name); `$regularExpression` must be `{pattern, options}` with known options. `$arg` defaults and
 * enum values are checked by references.ts and mappings.ts (through `findOperatorKey`, which
 * accepts only the well-formed literals of values/ejson.ts).
 */
import { isFkRef } from '../app-document.js';
import { isPlainObject } from '../../util/objects.js';
import { isEjsonLiteral, LITERAL_KEYS, UNSAFE_EJSON_KEYS } from '../values/ejson.js';

const QUERY_PARTS = ['find', 'sort', 'skip', 'limit', 'stages'] as const;

/** Checks the query and aggregation mappings of every type; reports each problem with its path. */
export function checkMappingLiterals(mappings: Record<string, unknown>, problems: string[]): void {
  for (const [typeName, fields] of Object.entries(mappings)) {
    if (!isPlainObject(fields)) continue;
    for (const [fieldName, mapping] of Object.entries(fields)) {
      if (fieldName.startsWith('$') || !isPlainObject(mapping)) continue;
      for (const part of QUERY_PARTS) {
        if (mapping[part] !== undefined) checkLiterals(`mappings.${typeName}.${fieldName}.${part}`, mapping[part], problems);
      }
    }
  }
}

function checkLiterals(path: string, value: unknown, problems: string[]): void {
  if (Array.isArray(value)) {
    value.forEach((v, i) => checkLiterals(`${path}.${i}`, v, problems));
    return;
  }
  if (!isPlainObject(value) || '$arg' in value || isFkRef(value)) return;
  for (const [key, v] of Object.entries(value)) {
    const p = `${path}.${key}`;
    if (key === '$regularExpression') {
      if (!isRegexLiteral(value)) problems.push(`${p} must be the whole value {"$regularExpression": {"pattern": "<text>", "options": "<of imsxu>"}}`);
    } else if (UNSAFE_EJSON_KEYS.has(key)) {
      problems.push(`${p}: a ${key} value is not a plain value (JavaScript, or a reference to another collection) and is not sent to the backend`);
    } else if (LITERAL_KEYS.has(key)) {
      if (!isEjsonLiteral(value)) problems.push(`${p} is not a well-formed extended-JSON literal: it must be the object's only key and hold a ${key} value (for example {"$oid": "<24 hex digits>"})`);
    } else {
      checkLiterals(p, v, problems);
      continue;
    }
    return; // a literal (well-formed or reported) is not walked further
  }
}

function isRegexLiteral(value: Record<string, unknown>): boolean {
  const inner = value.$regularExpression;
  return (
    Object.keys(value).length === 1 &&
    isPlainObject(inner) &&
    Object.keys(inner).length === 2 &&
    typeof inner.pattern === 'string' &&
    typeof inner.options === 'string' &&
    /^[imsxu]*$/.test(inner.options)
  );
}
