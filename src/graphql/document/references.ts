/**
 * What a mapping names and refers to, checked at write: collection and db names, dot paths, and
 * every `{"$arg": ...}` (an argument of the field, or a path into an input object, with the type
 * skip and limit need; `rootDoc.<path>` below the root fields), `{"$fk": ...}` (non-root types
 * only) and blocked operator in a find, sort, skip, limit or aggregation stage.
 */
import { getNamedType, getNullableType, isInputObjectType, isListType, isScalarType, isSpecifiedScalarType, type GraphQLField, type GraphQLInputType } from 'graphql';
import { ROOT_DOC_ARG } from '../app-document.js';
import { isPlainObject } from '../../util/objects.js';
import { findOperatorKey } from '../values/ejson.js';
import { didYouMean as suggest } from '../../util/did-you-mean.js';

const BLOCKED_OPERATORS = new Set(['$where', '$function', '$accumulator']);
export const DOT_PATH = /^[^.]+(\.[^.]+)*$/;
const NAME_MAX = 255;

export function checkName(path: string, value: unknown, problems: string[]): void {
  if (typeof value !== 'string' || value === '' || value.length > NAME_MAX || /[/$\0\\?#]/.test(value)) {
    problems.push(`${path} must be a non-empty name without "/", "\\", "$", "?" or "#"`);
  }
}

export function hasArgKey(value: Record<string, unknown>): boolean {
  return '$arg' in value;
}

export interface RefScope {
  path: string;
  field: GraphQLField<unknown, unknown> | undefined;
  isRoot: boolean;
  problems: string[];
}

type RefPlace = 'find' | 'sort' | 'skip' | 'limit' | 'stages';

/** Walks a find/sort/skip/limit value and checks every `$arg`, `$fk` and operator in it. */
export function checkRefs(path: string, value: unknown, scope: RefScope, place: RefPlace): void {
  if (Array.isArray(value)) {
    value.forEach((v, i) => checkRefs(`${path}.${i}`, v, scope, place));
    return;
  }
  if (!isPlainObject(value)) return;
  if ('$arg' in value) {
    if (Object.keys(value).length !== 1) {
      scope.problems.push(`${path}: an object holding "$arg" must have no other keys`);
      return;
    }
    checkArgRef(path, value.$arg, scope, place);
    return;
  }
  if ('$fk' in value) {
    if (Object.keys(value).length !== 1) {
      scope.problems.push(`${path}: an object holding "$fk" must have no other keys`);
      return;
    }
    if (typeof value.$fk !== 'string' || !DOT_PATH.test(value.$fk)) {
      scope.problems.push(`${path}.$fk must be a dot path into the parent document, such as "userId" or "items.productId"`);
    } else if (scope.isRoot) {
      scope.problems.push(`${path}: $fk is only allowed in mappings of non-root types (a root field has no parent document to take "${value.$fk}" from)`);
    }
    return;
  }
  for (const [key, v] of Object.entries(value)) {
    if (BLOCKED_OPERATORS.has(key)) {
      scope.problems.push(`${path}.${key}: the operator ${key} runs server-side JavaScript and is blocked by the backend; express the condition with query operators`);
      continue;
    }
    checkRefs(`${path}.${key}`, v, scope, place);
  }
}

export function checkArgRef(path: string, spec: unknown, scope: RefScope, place: RefPlace): void {
  let name: unknown = spec;
  let defaultValue: unknown;
  let hasDefault = false;
  if (Array.isArray(spec)) {
    if (spec.length !== 2 || typeof spec[0] !== 'string') {
      scope.problems.push(`${path}.$arg must be "name" or ["name", default] (an array of exactly two items)`);
      return;
    }
    [name, defaultValue] = spec;
    hasDefault = true;
  }
  if (typeof name !== 'string' || !DOT_PATH.test(name)) {
    scope.problems.push(`${path}.$arg must name an argument of the field ("name", or "input.field" into an input object)`);
    return;
  }
  if (hasDefault) {
    const op = findOperatorKey(defaultValue);
    if (op !== undefined) scope.problems.push(`${path}.$arg default must be a literal value; "${op}" is an operator`);
    if ((place === 'skip' || place === 'limit') && !(Number.isInteger(defaultValue) && (defaultValue as number) >= 0)) {
      scope.problems.push(`${path}.$arg default must be an integer of at least 0`);
    }
  }
  const segments = name.split('.');
  const first = segments[0] as string;
  // RESTHeart's @user in aggregation stages: the backend fills it from the identity it authenticated.
  if (place === 'stages' && first === '@user') return;
  if (first === ROOT_DOC_ARG) {
    if (scope.isRoot) scope.problems.push(`${path}.$arg: "${ROOT_DOC_ARG}" is only available below the root fields (it is the document a root field returned)`);
    else if (segments.length < 2) scope.problems.push(`${path}.$arg: "${ROOT_DOC_ARG}" needs a field path, e.g. "${ROOT_DOC_ARG}._id"`);
    return;
  }
  if (!scope.field) return; // the field itself was reported
  const arg = scope.field.args.find((a) => a.name === first);
  if (!arg) {
    const names = scope.field.args.map((a) => a.name);
    const declared = names.length ? `it declares ${names.join(', ')}` : 'it declares no arguments';
    scope.problems.push(`${path}.$arg: the field ${scope.field.name} has no argument "${first}" (${declared})${suggest(first, names)}`);
    return;
  }
  let type: GraphQLInputType = arg.type;
  for (let i = 1; i < segments.length; i++) {
    const seg = segments[i] as string;
    const t = getNullableType(type);
    if (isListType(t)) {
      if (!/^\d+$/.test(seg)) {
        scope.problems.push(`${path}.$arg: "${segments.slice(0, i).join('.')}" is a list; index it with a number, not "${seg}"`);
        return;
      }
      type = t.ofType;
    } else if (isInputObjectType(t)) {
      const f = t.getFields()[seg];
      if (!f) {
        const names = Object.keys(t.getFields());
        scope.problems.push(`${path}.$arg: input type ${t.name} has no field "${seg}"${suggest(seg, names)}`);
        return;
      }
      type = f.type;
    } else if (isScalarType(t) && !isSpecifiedScalarType(t)) {
      return; // free-form scalar: any path inside
    } else {
      scope.problems.push(`${path}.$arg: "${segments.slice(0, i).join('.')}" is a ${String(t)}; there is nothing inside it to reach with "${seg}"`);
      return;
    }
  }
  if (place === 'skip' || place === 'limit') {
    const named = getNamedType(type);
    if (!(named.name === 'Int' || named.name === 'Long' || (isScalarType(named) && !isSpecifiedScalarType(named)))) {
      scope.problems.push(`${path}.$arg: argument "${name}" is a ${String(type)}; ${place} needs an Int`);
    }
  }
}
