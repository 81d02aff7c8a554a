/**
 * The mappings of an app document, checked against the schema its SDL builds: every mapped type
 * and field exists (with "did you mean"), mutation fields are write mappings (mutations.ts),
 * subscription fields are change mappings (subscriptions.ts), enum value
 * mappings are literals with one stored value each, unions and interfaces have a `$typeResolver`
 * (type-resolver/), and each field mapping is a dot path or a query mapping whose parts are
 * checked here (aggregation mappings in aggregations.ts; references and names in references.ts).
 */
import { getNamedType, isEnumType, isInterfaceType, isObjectType, isScalarType, isSpecifiedScalarType, isUnionType, type GraphQLField, type GraphQLSchema } from 'graphql';
import { isPlainObject } from '../../util/objects.js';
import { canonicalKey, findOperatorKey } from '../values/ejson.js';
import { didYouMean as suggest } from '../../util/did-you-mean.js';
import { checkAggregationMapping } from './aggregations.js';
import { checkMutationMappings } from './mutations.js';
import { checkSubscriptionMappings } from './subscriptions.js';
import { checkName, checkRefs, DOT_PATH, hasArgKey, type RefScope } from './references.js';
import { abstractTypes, checkTypeResolver } from './type-resolver/index.js';

/** What the mapping checks read of the validation options (validate-app.ts's ValidateAppOptions). */
interface MappingOptions {
  readonly maxLimit: number;
  readonly aggregations?: boolean | undefined;
}

const QUERY_MAPPING_FIELDS = ['db', 'collection', 'find', 'sort', 'skip', 'limit', 'dataLoader'];

/** Checks every type's mappings; reports each problem with its path. */
export function checkMappings(mappings: Record<string, unknown>, schema: GraphQLSchema | undefined, opts: MappingOptions, problems: string[], warnings: string[] = []): void {
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

  const mutationType = schema?.getMutationType();
  if (mutationType && mappings[mutationType.name] === undefined) checkMutationMappings(`mappings.${mutationType.name}`, mutationType, {}, problems);
  const subscriptionType = schema?.getSubscriptionType();
  if (subscriptionType && mappings[subscriptionType.name] === undefined) checkSubscriptionMappings(`mappings.${subscriptionType.name}`, subscriptionType, {}, problems);

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
    if (type && isObjectType(type) && typeName === subscriptionName) {
      checkSubscriptionMappings(path, type, typeMappings, problems);
      continue;
    }
    if (type && isObjectType(type) && typeName === mutationName) {
      checkMutationMappings(path, type, typeMappings, problems);
      continue;
    }
    if (type && isEnumType(type)) {
      checkEnumMappings(
        path,
        type.getValues().map((v) => v.name),
        typeMappings,
        problems,
      );
      continue;
    }
    if (type && schema && (isUnionType(type) || isInterfaceType(type))) {
      checkTypeResolver(path, schema, type, typeMappings, { problems, warnings });
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
      checkFieldMapping(mapping, { path: fpath, field, isRoot }, opts, problems);
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

/** The field a mapping is checked for: where it is in the document, its schema field, whether it is a root field. */
interface MappedField {
  readonly path: string;
  readonly field: GraphQLField<unknown, unknown> | undefined;
  readonly isRoot: boolean;
}

function checkFieldMapping(mapping: unknown, at: MappedField, opts: MappingOptions, problems: string[]): void {
  const { path, field, isRoot } = at;
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
          "as aggregations declared in the collection's metadata (RESTHeart's /{db}/{coll}/_aggrs/{name}), which needs graphql.aggregations: true; " +
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
