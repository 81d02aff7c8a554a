/**
 * Mutation mappings at write (SPEC §6.4): every field of the `Mutation` type is mapped to exactly
 * one of `insert` / `update` / `delete` on a collection; `$arg`s name declared arguments (dot
 * paths into input objects); update operators come from the allow-list; `$fk`, other `$`-keys,
 * a plain key or a pipeline at the top of `update` are refused; a single-document update or
 * delete binds `_id` in `find` (else `many: true`); and the field's type is one the table gives
 * for its mapping. Every problem is reported with its path.
 */
import { getNullableType, isListType, isObjectType, type GraphQLField, type GraphQLObjectType, type GraphQLOutputType } from 'graphql';
import { isPlainObject } from '../../util/objects.js';
import { isEjsonLiteral } from '../values/ejson.js';
import { didYouMean as suggest } from '../../util/did-you-mean.js';
import { checkArgRef, checkName, type RefScope } from './references.js';

export const UPDATE_OPERATORS = new Set(['$set', '$unset', '$inc', '$mul', '$min', '$max', '$push', '$pull', '$addToSet', '$currentDate', '$rename']);
/** Query operators a `find` may hold; anything else with a `$` (`$where`, `$function`, `$expr`…) is refused. */
export const FIND_OPERATORS = new Set([
  '$eq',
  '$ne',
  '$gt',
  '$gte',
  '$lt',
  '$lte',
  '$in',
  '$nin',
  '$and',
  '$or',
  '$nor',
  '$not',
  '$exists',
  '$type',
  '$all',
  '$elemMatch',
  '$size',
  '$regex',
  '$options',
  '$mod',
]);
/** Operators `$push` / `$addToSet` / `$pull` values may use. */
const ARRAY_MODIFIERS = new Set(['$each', '$position', '$slice', '$sort']);
const MUTATION_FIELDS = ['db', 'collection', 'insert', 'update', 'delete', 'find', 'many'];
const USER_VALUES = new Set(['@user.id', '@user.roles']);

export type WriteKind = 'insert' | 'insertMany' | 'update' | 'updateMany' | 'delete' | 'deleteMany';

/** The result forms each kind may declare (SPEC §6.4's table). */
const RESULTS: Record<WriteKind, { forms: ReadonlyArray<'object' | 'id' | 'ids' | 'count' | 'boolean'>; say: string }> = {
  insert: { forms: ['object', 'id'], say: 'an object type (the stored document) or ID/String (the new _id)' },
  insertMany: { forms: ['ids', 'count'], say: '[ID] or [String] (the new ids) or Int (how many)' },
  update: { forms: ['object', 'boolean'], say: 'an object type (the document after the update) or Boolean (whether one matched)' },
  updateMany: { forms: ['count'], say: 'Int (documents modified)' },
  delete: { forms: ['object', 'boolean'], say: 'an object type (the document as it was) or Boolean (whether one was deleted)' },
  deleteMany: { forms: ['count'], say: 'Int (documents deleted)' },
};

/** What a field's declared type asks of a write: the document, the id(s), a count or a boolean. */
export function resultForm(type: GraphQLOutputType): 'object' | 'id' | 'ids' | 'count' | 'boolean' | undefined {
  const t = getNullableType(type);
  if (isListType(t)) {
    const inner = getNullableType(t.ofType);
    return !isListType(inner) && (inner.name === 'ID' || inner.name === 'String') ? 'ids' : undefined;
  }
  if (isObjectType(t)) return 'object';
  if (t.name === 'ID' || t.name === 'String') return 'id';
  if (t.name === 'Int') return 'count';
  if (t.name === 'Boolean') return 'boolean';
  return undefined;
}

/** The kind of a (valid) mutation mapping; `insert` of a list argument is a bulk insert. */
export function writeKind(mapping: Record<string, unknown>, field: GraphQLField<unknown, unknown> | undefined): WriteKind | undefined {
  const many = mapping.many === true;
  if ('update' in mapping) return many ? 'updateMany' : 'update';
  if ('delete' in mapping) return many ? 'deleteMany' : 'delete';
  if (!('insert' in mapping)) return undefined;
  const insert = mapping.insert;
  if (isPlainObject(insert) && typeof insert.$arg === 'string' && Object.keys(insert).length === 1 && field) {
    const first = insert.$arg.split('.')[0];
    const arg = field.args.find((a) => a.name === first);
    if (arg && !insert.$arg.includes('.') && isListType(getNullableType(arg.type))) return 'insertMany';
  }
  return 'insert';
}

/** Checks the mappings of the Mutation type: every field mapped, each mapping valid. */
export function checkMutationMappings(path: string, type: GraphQLObjectType, mappings: Record<string, unknown>, problems: string[]): void {
  const fields = type.getFields();
  for (const name of Object.keys(fields)) {
    if (mappings[name] === undefined) {
      problems.push(`${path}.${name}: the mutation field ${name} has no mapping; map it to {collection, insert | update | delete, find?, many?}`);
    }
  }
  for (const [name, mapping] of Object.entries(mappings)) {
    const field = fields[name];
    if (!field) {
      problems.push(`${path}.${name}: type ${type.name} has no field ${name}${suggest(name, Object.keys(fields))}`);
      continue;
    }
    checkMutationMapping(`${path}.${name}`, mapping, field, problems);
  }
}

function checkMutationMapping(path: string, mapping: unknown, field: GraphQLField<unknown, unknown>, problems: string[]): void {
  if (!isPlainObject(mapping)) {
    problems.push(`${path} must be a write mapping {collection, db?, insert | update | delete, find?, many?}`);
    return;
  }
  for (const key of Object.keys(mapping)) {
    if (!MUTATION_FIELDS.includes(key)) problems.push(`${path}.${key} is not a mutation mapping field (allowed: ${MUTATION_FIELDS.join(', ')})${suggest(key, MUTATION_FIELDS)}`);
  }
  if (mapping.collection === undefined) problems.push(`${path}.collection is required: the collection the field writes`);
  else checkName(`${path}.collection`, mapping.collection, problems);
  if (mapping.db !== undefined) checkName(`${path}.db`, mapping.db, problems);
  const present = ['insert', 'update', 'delete'].filter((k) => k in mapping);
  if (present.length !== 1) {
    problems.push(`${path} must have exactly one of insert, update or delete (it has ${present.length === 0 ? 'none' : present.join(' and ')})`);
    return;
  }
  const scope: RefScope = { path, field, isRoot: true, problems };
  if (mapping.many !== undefined && typeof mapping.many !== 'boolean') problems.push(`${path}.many must be true or false`);
  const many = mapping.many === true;
  if ('insert' in mapping) {
    if (many) problems.push(`${path}.many applies to update and delete; a bulk insert is insert: {"$arg": "<list argument>"}`);
    if (mapping.find !== undefined) problems.push(`${path}.find has no meaning for an insert`);
    const insert = mapping.insert;
    if (!isPlainObject(insert)) problems.push(`${path}.insert must be a document (an object) or {"$arg": "<argument>"}`);
    else checkWriteValue(`${path}.insert`, insert, scope, 'document');
  } else if ('update' in mapping) {
    const update = mapping.update;
    if (Array.isArray(update)) problems.push(`${path}.update: an aggregation pipeline (an array) is not allowed; use update operators such as {"$set": {...}}`);
    else if (!isPlainObject(update) || Object.keys(update).length === 0) problems.push(`${path}.update must be an object of update operators, e.g. {"$set": {"status": {"$arg": "status"}}}`);
    else {
      for (const [op, value] of Object.entries(update)) {
        const opPath = `${path}.update.${op}`;
        if (!op.startsWith('$')) problems.push(`${opPath}: a plain key at the top of update would replace fields silently; put it under "$set"`);
        else if (!UPDATE_OPERATORS.has(op)) problems.push(`${opPath}: the operator ${op} is not allowed (allowed: ${[...UPDATE_OPERATORS].join(', ')})`);
        else if (!isPlainObject(value)) problems.push(`${opPath} must be an object of field paths`);
        else checkWriteValue(opPath, value, scope, op === '$push' || op === '$addToSet' || op === '$pull' ? 'array-update' : 'update');
      }
    }
  } else if (mapping.delete !== true) {
    problems.push(`${path}.delete must be true`);
  }
  if (!('insert' in mapping)) checkFind(path, mapping.find, many, scope);

  const kind = writeKind(mapping, field);
  if (kind === undefined) return;
  const form = resultForm(field.type);
  const allowed = RESULTS[kind];
  if (form === undefined || !allowed.forms.includes(form)) {
    const what = kind === 'insertMany' ? 'a bulk insert' : kind.endsWith('Many') ? `${kind.slice(0, -4)} with many: true` : `a single-document ${kind}`;
    problems.push(`${path}: the field returns ${String(field.type)}, but ${what} returns ${allowed.say}`);
  }
}

function checkFind(path: string, find: unknown, many: boolean, scope: RefScope): void {
  if (find === undefined) {
    scope.problems.push(
      many ? `${path}.find is required: a bulk write needs a filter (RESTHeart refuses one without)` : `${path}.find is required and must bind _id (or set many: true with a filter)`,
    );
    return;
  }
  if (!isPlainObject(find) || Object.keys(find).length === 0) {
    scope.problems.push(`${path}.find must be a non-empty object (a MongoDB query document)`);
    return;
  }
  if (!many && !('_id' in find)) scope.problems.push(`${path}.find must bind _id for a single-document write; to write every match set many: true`);
  else if (!many && isPlainObject(find._id) && !('$arg' in find._id) && !isEjsonLiteral(find._id as unknown)) {
    scope.problems.push(`${path}.find._id must be one id (a value, "@user.id" or {"$arg": ...}) for a single-document write; to write several set many: true`);
  }
  checkWriteValue(`${path}.find`, find, scope, 'find');
}

type Place = 'document' | 'update' | 'array-update' | 'find';

/** Walks a write value: `$arg`s, user values, literals, and the operators each place allows. */
function checkWriteValue(path: string, value: unknown, scope: RefScope, place: Place): void {
  if (Array.isArray(value)) {
    value.forEach((v, i) => checkWriteValue(`${path}.${i}`, v, scope, place));
    return;
  }
  if (typeof value === 'string' && value.startsWith('@user.') && !USER_VALUES.has(value)) {
    scope.problems.push(`${path}: "${value}" is not a caller value; use "@user.id" or "@user.roles"`);
    return;
  }
  if (!isPlainObject(value)) return;
  if (isEjsonLiteral(value as unknown)) return;
  if ('$arg' in value) {
    if (Object.keys(value).length !== 1) scope.problems.push(`${path}: an object holding "$arg" must have no other keys`);
    else checkArgRef(path, value.$arg, scope, 'find');
    return;
  }
  if ('$fk' in value) {
    scope.problems.push(`${path}: $fk has no meaning in a mutation (there is no parent document); use {"$arg": ...} or "@user.id"`);
    return;
  }
  for (const [key, v] of Object.entries(value)) {
    const kpath = `${path}.${key}`;
    if (key.startsWith('$')) {
      const ok = place === 'find' ? FIND_OPERATORS.has(key) : place === 'array-update' && ARRAY_MODIFIERS.has(key);
      if (!ok) {
        scope.problems.push(
          place === 'find'
            ? `${kpath}: the operator ${key} is not allowed in a mutation's find (allowed: ${[...FIND_OPERATORS].join(', ')})`
            : `${kpath}: "${key}" is an operator; a written value may not hold one (update operators belong at the top of update)`,
        );
        continue;
      }
    }
    checkWriteValue(kpath, v, scope, place);
  }
}
