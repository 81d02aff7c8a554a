/**
 * Subscription mappings at write (SPEC §6.5): every field of the `Subscription` type is mapped to
 * the changes of one collection: `{db?, collection, on, find?}`. `on` is a non-empty list from
 * insert, update and delete; `find` values are literals, `{"$arg": ...}` or `"@user.id"` /
 * `"@user.roles"`, with only MongoDB's comparison and logical operators (the subscriber's matcher
 * runs them in the proxy, values/local-match.ts); `sort`, `skip`, `limit`, `stages` and `$fk` have
 * no meaning for a change and are refused; the field's type is an object type, never a list.
 * Every problem is reported with its path.
 */
import { getNullableType, isObjectType, type GraphQLField, type GraphQLObjectType } from 'graphql';
import { isPlainObject } from '../../util/objects.js';
import { isEjsonLiteral } from '../values/ejson.js';
import { didYouMean as suggest } from '../../util/did-you-mean.js';
import { checkArgRef, checkName, type RefScope } from './references.js';

export const SUBSCRIPTION_OPS = ['insert', 'update', 'delete'] as const;
export type ChangeOp = (typeof SUBSCRIPTION_OPS)[number];
/** MongoDB's comparison and logical query operators: what a subscription's find may hold. */
export const SUBSCRIPTION_FIND_OPERATORS = new Set(['$eq', '$ne', '$gt', '$gte', '$lt', '$lte', '$in', '$nin', '$and', '$or', '$nor', '$not']);
const FIELDS = ['db', 'collection', 'on', 'find'];
const REFUSED = ['sort', 'skip', 'limit', 'stages', 'many', 'insert', 'update', 'delete'];
const USER_VALUES = new Set(['@user.id', '@user.roles']);

/** Checks the mappings of the Subscription type: every field mapped, each mapping valid. */
export function checkSubscriptionMappings(path: string, type: GraphQLObjectType, mappings: Record<string, unknown>, problems: string[]): void {
  const fields = type.getFields();
  for (const name of Object.keys(fields)) {
    if (mappings[name] === undefined) problems.push(`${path}.${name}: the subscription field ${name} has no mapping; map it to {collection, on: ["insert", "update", "delete"], find?}`);
  }
  for (const [name, mapping] of Object.entries(mappings)) {
    const field = fields[name];
    if (!field) {
      problems.push(`${path}.${name}: type ${type.name} has no field ${name}${suggest(name, Object.keys(fields))}`);
      continue;
    }
    checkSubscriptionMapping(`${path}.${name}`, mapping, field, problems);
  }
}

function checkSubscriptionMapping(path: string, mapping: unknown, field: GraphQLField<unknown, unknown>, problems: string[]): void {
  if (!isPlainObject(mapping)) {
    problems.push(`${path} must be a subscription mapping {collection, db?, on, find?}`);
    return;
  }
  for (const key of Object.keys(mapping)) {
    if (REFUSED.includes(key)) problems.push(`${path}.${key} has no meaning for a subscription (a change is one document); allowed: ${FIELDS.join(', ')}`);
    else if (!FIELDS.includes(key)) problems.push(`${path}.${key} is not a subscription mapping field (allowed: ${FIELDS.join(', ')})${suggest(key, FIELDS)}`);
  }
  if (mapping.collection === undefined) problems.push(`${path}.collection is required: the collection whose changes the field follows`);
  else checkName(`${path}.collection`, mapping.collection, problems);
  if (mapping.db !== undefined) checkName(`${path}.db`, mapping.db, problems);
  const on = mapping.on;
  if (!Array.isArray(on) || on.length === 0) problems.push(`${path}.on must be a non-empty list from ${SUBSCRIPTION_OPS.map((o) => `"${o}"`).join(', ')}`);
  else
    on.forEach((op, i) => {
      if (typeof op !== 'string' || !(SUBSCRIPTION_OPS as readonly string[]).includes(op)) {
        problems.push(`${path}.on.${i}: ${JSON.stringify(op)} is not an operation (allowed: ${SUBSCRIPTION_OPS.join(', ')})`);
      } else if (on.indexOf(op) !== i) problems.push(`${path}.on.${i}: "${op}" is listed twice`);
    });
  if (mapping.find !== undefined) {
    if (!isPlainObject(mapping.find) || '$arg' in mapping.find) {
      problems.push(`${path}.find must be a query document (an object of field conditions); a whole find taken from an argument could widen it`);
    } else checkFindValue(`${path}.find`, mapping.find, { path, field, isRoot: true, problems });
  }
  const type = getNullableType(field.type);
  if (!isObjectType(type)) {
    problems.push(`${path}: the field returns ${String(field.type)}; a subscription field returns an object type built from the change {op, _id, document} (never a list), e.g. OrderChange`);
  }
}

/** Walks a find: `$arg`s, user values, literals, and only comparison and logical operators. */
function checkFindValue(path: string, value: unknown, scope: RefScope): void {
  if (Array.isArray(value)) {
    value.forEach((v, i) => checkFindValue(`${path}.${i}`, v, scope));
    return;
  }
  if (typeof value === 'string' && value.startsWith('@user.') && !USER_VALUES.has(value)) {
    scope.problems.push(`${path}: "${value}" is not a caller value; use "@user.id" or "@user.roles"`);
    return;
  }
  if (!isPlainObject(value) || isEjsonLiteral(value as unknown)) return;
  if ('$arg' in value) {
    if (Object.keys(value).length !== 1) scope.problems.push(`${path}: an object holding "$arg" must have no other keys`);
    else checkArgRef(path, value.$arg, scope, 'find');
    return;
  }
  if ('$fk' in value) {
    scope.problems.push(`${path}: $fk has no meaning in a subscription (there is no parent document); use {"$arg": ...} or "@user.id"`);
    return;
  }
  for (const [key, v] of Object.entries(value)) {
    const kpath = `${path}.${key}`;
    if (key.startsWith('$') && !SUBSCRIPTION_FIND_OPERATORS.has(key)) {
      scope.problems.push(`${kpath}: the operator ${key} is not allowed in a subscription's find (allowed: ${[...SUBSCRIPTION_FIND_OPERATORS].join(', ')})`);
      continue;
    }
    checkFindValue(kpath, v, scope);
  }
}
