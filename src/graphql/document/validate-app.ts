/**
 * Write-time validation of a GraphQL app document (SPEC §6.2). Every problem is reported at once,
 * each naming its path (`mappings.Query.orders.limit must be ...`). RESTHeart silently ignores
 * typos in mappings; we refuse them, with a suggestion when a name is close to a real one.
 */
import {
  getNamedType,
  getNullableType,
  isEnumType,
  isInputObjectType,
  isInterfaceType,
  isListType,
  isObjectType,
  isScalarType,
  isSpecifiedScalarType,
  isUnionType,
  type GraphQLField,
  type GraphQLInputType,
  type GraphQLSchema,
} from 'graphql';
import {
  isPlainObject,
  normalizeUri,
  ROOT_DOC_ARG,
  type GraphqlApp,
  type GraphqlAppDescriptor,
  type TypeMappings,
} from '../app-document.js';
import { canonicalKey, findOperatorKey } from '../values/ejson.js';
import { blockedStageOperator } from './aggregations.js';
import { checkMappingLiterals } from './literals.js';
import { buildAppSchema } from '../schema/sdl.js';
import { didYouMean as suggest } from '../../util/did-you-mean.js';
import { checkTrustedDocuments } from './trusted/documents.js';
import { abstractTypes, checkTypeResolver } from './type-resolver/index.js';

export interface ValidateAppOptions {
  /** `graphql.defaultDb`: used when a mapping omits `db` (recorded for messages only). */
  readonly defaultDb: string;
  /** `graphql.maxLimit`: a literal `limit` may not exceed it. */
  readonly maxLimit: number;
  /** `graphql.aggregations`: aggregation mappings are accepted (run as declared aggregations). */
  readonly aggregations?: boolean;
}

export type AppValidation = { ok: true; app: GraphqlApp } | { ok: false; problems: string[] };

const TOP_LEVEL = ['_id', 'descriptor', 'schema', 'mappings'];
/** RESTHeart stores `_etag`; documents copied from it are accepted and the field dropped. */
const TOP_LEVEL_IGNORED = ['_etag'];
const DESCRIPTOR_FIELDS = ['name', 'description', 'enabled', 'uri', 'introspection', 'verbose', 'trustedDocuments', 'maxCost'];
const QUERY_MAPPING_FIELDS = ['db', 'collection', 'find', 'sort', 'skip', 'limit', 'dataLoader'];
const BLOCKED_OPERATORS = new Set(['$where', '$function', '$accumulator']);
const DOT_PATH = /^[^.]+(\.[^.]+)*$/;
const NAME_MAX = 255;

/** Validates an app document and returns it normalised (descriptor defaults, uri without slashes). */
export function validateAppDocument(input: unknown, opts: ValidateAppOptions): AppValidation {
  const result = validateAppWithSchema(input, opts);
  return result.ok ? { ok: true, app: result.app } : result;
}

/** As validateAppDocument, also handing back the schema it built (compileApp reuses it). */
export function validateAppWithSchema(
  input: unknown,
  opts: ValidateAppOptions,
): { ok: true; app: GraphqlApp; schema: GraphQLSchema } | { ok: false; problems: string[] } {
  const problems: string[] = [];
  if (!isPlainObject(input)) {
    return { ok: false, problems: ['a GraphQL app document must be a JSON object {descriptor, schema, mappings}'] };
  }
  for (const key of Object.keys(input)) {
    if (!TOP_LEVEL.includes(key) && !TOP_LEVEL_IGNORED.includes(key)) {
      problems.push(`${key} is not a field of a GraphQL app document (allowed: ${TOP_LEVEL.join(', ')})${suggest(key, TOP_LEVEL)}`);
    }
  }

  const id = input._id;
  if (id !== undefined && (typeof id !== 'string' || id === '')) problems.push('_id must be a non-empty string');

  const descriptor = checkDescriptor(input.descriptor, typeof id === 'string' && id !== '' ? id : undefined, problems);

  let schema: GraphQLSchema | undefined;
  if (typeof input.schema !== 'string' || input.schema.trim() === '') {
    problems.push('schema must be a non-empty string holding the GraphQL SDL of the app (e.g. "type Query { orders: [Order] }")');
  } else {
    const built = buildAppSchema(input.schema);
    if (built.ok) schema = built.schema;
    else problems.push(...built.problems);
  }

  const mappings = input.mappings;
  if (!isPlainObject(mappings)) {
    problems.push('mappings must be an object keyed by type name, with at least the mappings of the Query fields');
  } else {
    checkMappings(mappings, schema, opts, problems);
    checkMappingLiterals(mappings, problems);
  }

  if (problems.length > 0 || !descriptor || schema === undefined || !isPlainObject(mappings)) return { ok: false, problems };
  const app: GraphqlApp = {
    descriptor,
    schema: input.schema as string,
    mappings: mappings as Record<string, TypeMappings>,
  };
  if (typeof id === 'string') app._id = id;
  return { ok: true, app, schema };
}

function checkDescriptor(raw: unknown, id: string | undefined, problems: string[]): GraphqlAppDescriptor | undefined {
  if (raw !== undefined && !isPlainObject(raw)) {
    problems.push(`descriptor must be an object {${DESCRIPTOR_FIELDS.map((f) => `${f}?`).join(', ')}}`);
    return undefined;
  }
  const d = raw ?? {};
  let ok = true;
  for (const key of Object.keys(d)) {
    if (!DESCRIPTOR_FIELDS.includes(key)) {
      problems.push(`descriptor.${key} is not a descriptor field (allowed: ${DESCRIPTOR_FIELDS.join(', ')})${suggest(key, DESCRIPTOR_FIELDS)}`);
      ok = false;
    }
  }
  for (const key of ['name', 'description'] as const) {
    if (d[key] !== undefined && typeof d[key] !== 'string') {
      problems.push(`descriptor.${key} must be a string`);
      ok = false;
    }
  }
  if (d.trustedDocuments !== undefined) {
    const before = problems.length;
    checkTrustedDocuments('descriptor.trustedDocuments', d.trustedDocuments, problems);
    if (problems.length > before) ok = false;
  }
  if (d.maxCost !== undefined) {
    const cost = d.maxCost;
    const bad = !isPlainObject(cost) || Object.entries(cost).some(([k, v]) => !['reads', 'documents'].includes(k) || !Number.isSafeInteger(v) || (v as number) < 1);
    if (bad) {
      problems.push('descriptor.maxCost must be an object {reads?, documents?} of positive integers (the largest estimated backend reads and documents of one operation)');
      ok = false;
    }
  }
  for (const key of ['enabled', 'introspection', 'verbose'] as const) {
    if (d[key] !== undefined && typeof d[key] !== 'boolean') {
      problems.push(`descriptor.${key} must be true or false`);
      ok = false;
    }
  }
  let uri: string | undefined;
  if (d.uri !== undefined) {
    if (typeof d.uri !== 'string') {
      problems.push('descriptor.uri must be a string such as "shop" or "shop/v2"');
      ok = false;
    } else {
      const n = normalizeUri(d.uri);
      if (n.ok) uri = n.uri;
      else {
        problems.push(`descriptor.uri ${n.problem}`);
        ok = false;
      }
    }
  } else if (id !== undefined) {
    // RESTHeart v9: without descriptor.uri the app is served at /graphql/<_id>.
    const n = normalizeUri(id);
    if (n.ok) uri = n.uri;
    else {
      problems.push(`descriptor.uri is missing and _id cannot serve as the uri: it ${n.problem}; set descriptor.uri`);
      ok = false;
    }
  } else {
    problems.push('descriptor.uri is required (the app is served at /graphql/<uri>), unless _id is given and is a valid uri');
    ok = false;
  }
  if (!ok || uri === undefined) return undefined;
  const out: GraphqlAppDescriptor = { enabled: d.enabled === undefined ? true : (d.enabled as boolean), uri };
  if (typeof d.name === 'string') out.name = d.name;
  if (typeof d.description === 'string') out.description = d.description;
  if (typeof d.introspection === 'boolean') out.introspection = d.introspection;
  if (typeof d.verbose === 'boolean') out.verbose = d.verbose;
  if (Array.isArray(d.trustedDocuments)) out.trustedDocuments = d.trustedDocuments as string[];
  if (isPlainObject(d.maxCost)) out.maxCost = d.maxCost as { reads?: number; documents?: number };
  return out;
}

function checkMappings(
  mappings: Record<string, unknown>,
  schema: GraphQLSchema | undefined,
  opts: ValidateAppOptions,
  problems: string[],
): void {
  const queryName = schema?.getQueryType()?.name ?? 'Query';
  const mutationName = schema?.getMutationType()?.name;
  const subscriptionName = schema?.getSubscriptionType()?.name;
  const rootNames = new Set([queryName, mutationName, subscriptionName].filter((n): n is string => n !== undefined));

  const queryMappings = mappings[queryName];
  if (!isPlainObject(queryMappings) || Object.keys(queryMappings).length === 0) {
    problems.push(`mappings.${queryName} must map at least one field of the ${queryName} type to a collection query`);
  }

  if (schema) {
    for (const type of abstractTypes(schema)) {
      if (mappings[type.name] === undefined) {
        const kind = isUnionType(type) ? 'union' : 'interface';
        problems.push(`mappings.${type.name}: missing $typeResolver for ${kind} ${type.name}: without it no ${type.name} value can be resolved to one of its types`);
      }
    }
  }

  for (const [typeName, typeMappings] of Object.entries(mappings)) {
    const path = `mappings.${typeName}`;
    if (!isPlainObject(typeMappings)) {
      problems.push(`${path} must be an object keyed by field name`);
      continue;
    }
    const type = schema?.getType(typeName);
    if (schema && !type) {
      const names = Object.keys(schema.getTypeMap()).filter((n) => !n.startsWith('__'));
      problems.push(`${path}: the schema has no type named ${typeName}${suggest(typeName, names)}`);
    }
    if (type && (typeName === mutationName || typeName === subscriptionName)) {
      problems.push(`${path}: GraphQL apps are read-only; mutations and subscriptions cannot be mapped`);
      continue;
    }
    if (type && isEnumType(type)) {
      checkEnumMappings(path, type.getValues().map((v) => v.name), typeMappings, problems);
      continue;
    }
    if (type && schema && (isUnionType(type) || isInterfaceType(type))) {
      checkTypeResolver(path, schema, type, typeMappings, problems);
      continue;
    }
    if (type && !isObjectType(type)) {
      problems.push(`${path}: only object types (field mappings) and enum types (value mappings) can be mapped; ${typeName} is not one`);
      continue;
    }
    const fields = type && isObjectType(type) ? type.getFields() : undefined;
    const isRoot = rootNames.has(typeName);
    for (const [fieldName, mapping] of Object.entries(typeMappings)) {
      const fpath = `${path}.${fieldName}`;
      const field = fields?.[fieldName];
      if (fields && !field) {
        problems.push(`${fpath}: type ${typeName} has no field ${fieldName}${suggest(fieldName, Object.keys(fields))}`);
        continue;
      }
      checkFieldMapping(fpath, mapping, field, isRoot, opts, problems);
    }
  }
}

function checkEnumMappings(path: string, values: string[], mappings: Record<string, unknown>, problems: string[]): void {
  const seen = new Map<string, string>();
  for (const [name, value] of Object.entries(mappings)) {
    if (!values.includes(name)) {
      problems.push(`${path}.${name}: the enum has no value ${name}${suggest(name, values)}`);
      continue;
    }
    if (value === undefined || value === null) {
      problems.push(`${path}.${name} must be the stored value of ${name} (a string, number, boolean or extended-JSON literal)`);
      continue;
    }
    const op = findOperatorKey(value);
    if (op !== undefined) {
      problems.push(`${path}.${name} must be a literal value; "${op}" is an operator`);
      continue;
    }
    const key = canonicalKey(value);
    const other = seen.get(key);
    if (other !== undefined) problems.push(`${path}.${name} maps to the same stored value as ${other}; each enum value needs its own`);
    else seen.set(key, name);
  }
}

function checkFieldMapping(
  path: string,
  mapping: unknown,
  field: GraphQLField<unknown, unknown> | undefined,
  isRoot: boolean,
  opts: ValidateAppOptions,
  problems: string[],
): void {
  if (typeof mapping === 'string') {
    if (!DOT_PATH.test(mapping)) {
      problems.push(`${path} must be a dot path into the source document such as "name", "contacts.phone" or "emails.0"`);
    } else if (isRoot) {
      problems.push(`${path}: a root field has no parent document to read "${mapping}" from; map it to a collection query {collection, find, ...}`);
    }
    return;
  }
  if (!isPlainObject(mapping)) {
    problems.push(`${path} must be a dot path string or a query mapping object {collection, db?, find?, sort?, skip?, limit?}`);
    return;
  }
  if ('stages' in mapping) {
    if (!opts.aggregations) {
      problems.push(
        `${path}.stages: aggregation mappings are turned off: the HTTP backend cannot run ad-hoc pipelines, and Outrigger runs them only ` +
          'as aggregations declared in the collection\'s metadata (RESTHeart\'s /{db}/{coll}/_aggrs/{name}), which needs graphql.aggregations: true; ' +
          'or map the field to a collection query (collection, find, sort, skip, limit)',
      );
      return;
    }
    checkAggregationMapping(path, mapping, field, isRoot, problems);
    return;
  }
  for (const key of Object.keys(mapping)) {
    if (!QUERY_MAPPING_FIELDS.includes(key)) {
      problems.push(`${path}.${key} is not a query mapping field (allowed: ${QUERY_MAPPING_FIELDS.join(', ')})${suggest(key, QUERY_MAPPING_FIELDS)}`);
    }
  }
  if (mapping.collection === undefined) problems.push(`${path}.collection is required: the collection the field reads`);
  else checkName(`${path}.collection`, mapping.collection, problems);
  if (mapping.db !== undefined) checkName(`${path}.db`, mapping.db, problems);
  if (mapping.dataLoader !== undefined && !isPlainObject(mapping.dataLoader)) {
    problems.push(`${path}.dataLoader must be an object (it is accepted for RESTHeart compatibility; joins are always batched)`);
  }

  if (field) {
    const named = getNamedType(field.type);
    if (isEnumType(named) || (isScalarType(named) && isSpecifiedScalarType(named))) {
      problems.push(`${path}: the field returns ${named.name}, but a query mapping returns documents; give the field an object type (or a list of one)`);
    }
  }

  const scope: RefScope = { path, field, isRoot, problems };
  if (mapping.find !== undefined) {
    if (!isPlainObject(mapping.find)) problems.push(`${path}.find must be an object (a MongoDB query document)`);
    else checkRefs(`${path}.find`, mapping.find, scope, 'find');
  }
  if (mapping.sort !== undefined) {
    if (!isPlainObject(mapping.sort)) problems.push(`${path}.sort must be an object such as {"createdAt": -1}`);
    else if (!hasArgKey(mapping.sort)) {
      for (const [key, value] of Object.entries(mapping.sort)) {
        if (value === 1 || value === -1) continue;
        if (isPlainObject(value) && hasArgKey(value)) checkRefs(`${path}.sort.${key}`, value, scope, 'sort');
        else problems.push(`${path}.sort.${key} must be 1, -1 or {"$arg": ...}`);
      }
    } else checkRefs(`${path}.sort`, mapping.sort, scope, 'sort');
  }
  for (const key of ['skip', 'limit'] as const) {
    const value = mapping[key];
    if (value === undefined) continue;
    const kpath = `${path}.${key}`;
    if (typeof value === 'number') {
      if (!Number.isInteger(value) || value < 0) problems.push(`${kpath} must be an integer of at least 0 or {"$arg": ...}`);
      else if (key === 'limit' && value > opts.maxLimit) problems.push(`${kpath} must be at most ${opts.maxLimit} (graphql.maxLimit)`);
    } else if (isPlainObject(value) && hasArgKey(value)) {
      checkRefs(kpath, value, scope, key);
    } else {
      problems.push(`${kpath} must be an integer of at least 0 or {"$arg": "name"} / {"$arg": ["name", default]}`);
    }
  }
}

const AGGREGATION_MAPPING_FIELDS = ['db', 'collection', 'stages', 'allowDiskUse', 'dataLoader'];

function checkAggregationMapping(
  path: string,
  mapping: Record<string, unknown>,
  field: GraphQLField<unknown, unknown> | undefined,
  isRoot: boolean,
  problems: string[],
): void {
  for (const key of Object.keys(mapping)) {
    if (!AGGREGATION_MAPPING_FIELDS.includes(key)) {
      problems.push(`${path}.${key} is not an aggregation mapping field (allowed: ${AGGREGATION_MAPPING_FIELDS.join(', ')})${suggest(key, AGGREGATION_MAPPING_FIELDS)}`);
    }
  }
  if (mapping.collection === undefined) problems.push(`${path}.collection is required: the collection the aggregation runs on`);
  else checkName(`${path}.collection`, mapping.collection, problems);
  if (mapping.db !== undefined) checkName(`${path}.db`, mapping.db, problems);
  if (mapping.allowDiskUse !== undefined && typeof mapping.allowDiskUse !== 'boolean') problems.push(`${path}.allowDiskUse must be true or false`);
  if (mapping.dataLoader !== undefined && !isPlainObject(mapping.dataLoader)) problems.push(`${path}.dataLoader must be an object`);
  if (!Array.isArray(mapping.stages) || mapping.stages.some((st) => !isPlainObject(st))) {
    problems.push(`${path}.stages must be an array of aggregation stages (objects such as {"$match": {...}})`);
    return;
  }
  if (field) {
    const named = getNamedType(field.type);
    if (isEnumType(named) || (isScalarType(named) && isSpecifiedScalarType(named))) {
      problems.push(`${path}: the field returns ${named.name}, but an aggregation returns documents; give the field an object type (or a list of one)`);
    }
  }
  const scope: RefScope = { path, field, isRoot, problems };
  const walk = (p: string, value: unknown): void => {
    if (Array.isArray(value)) return value.forEach((v, i) => walk(`${p}.${i}`, v));
    if (!isPlainObject(value)) return;
    if ('$ifarg' in value) {
      const spec = value.$ifarg;
      if (Object.keys(value).length !== 1 || !Array.isArray(spec) || spec.length < 2 || spec.length > 3) {
        problems.push(`${p}.$ifarg must be [args, stage if all given, stage otherwise?]`);
        return;
      }
      for (const name of Array.isArray(spec[0]) ? spec[0] : [spec[0]]) checkArgRef(`${p}.$ifarg`, name, scope, 'stages');
      spec.slice(1).forEach((v, i) => walk(`${p}.$ifarg.${i + 1}`, v));
      return;
    }
    for (const [k, v] of Object.entries(value)) {
      if (blockedStageOperator(k) !== undefined) {
        problems.push(`${p}.${k}: the operator ${k} is not allowed in a declared aggregation (${blockedStageOperator(k)})`);
        continue;
      }
      if (k === '$arg' || k === '$fk') checkRefs(p, value, scope, 'stages');
      else walk(`${p}.${k}`, v);
    }
  };
  walk(`${path}.stages`, mapping.stages);
}

function checkName(path: string, value: unknown, problems: string[]): void {
  if (typeof value !== 'string' || value === '' || value.length > NAME_MAX || /[/$\0\\?#]/.test(value)) {
    problems.push(`${path} must be a non-empty name without "/", "\\", "$", "?" or "#"`);
  }
}

function hasArgKey(value: Record<string, unknown>): boolean {
  return '$arg' in value;
}

interface RefScope {
  path: string;
  field: GraphQLField<unknown, unknown> | undefined;
  isRoot: boolean;
  problems: string[];
}

type RefPlace = 'find' | 'sort' | 'skip' | 'limit' | 'stages';

/** Walks a find/sort/skip/limit value and checks every `$arg`, `$fk` and operator in it. */
function checkRefs(path: string, value: unknown, scope: RefScope, place: RefPlace): void {
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

function checkArgRef(path: string, spec: unknown, scope: RefScope, place: RefPlace): void {
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
