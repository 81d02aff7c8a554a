/**
 * Aggregation mappings (`{db?, collection, stages, allowDiskUse?}`, with `graphql.aggregations`)
 * at write: their fields, the `$arg`/`$fk`/`$ifarg` references in their stages, and the operators
 * a declared aggregation may not hold anywhere in its stages (inside `$facet`, and in the
 * pipeline of a stage, too), each with the reason given at write:
 * - server-side JavaScript (`$where`, `$function`, `$accumulator`), as RESTHeart's
 *   `aggregationSecurity` blocks it;
 * - writes (`$out`, `$merge`): apps are read-only;
 * - reads of other collections (`$lookup`, `$graphLookup`, `$unionWith`; issue 25): the caller's
 *   permission is decided for the collection the aggregation runs on, so a stage that reads another
 *   collection would bypass that collection's readFilter and projectResponse. RESTHeart blocks the
 *   same stages by default.
 */
import { getNamedType, isEnumType, isScalarType, isSpecifiedScalarType, type GraphQLField } from 'graphql';
import { isPlainObject } from '../../util/objects.js';
import { didYouMean as suggest } from '../../util/did-you-mean.js';
import { checkArgRef, checkName, checkRefs, type RefScope } from './references.js';

const BLOCKED: ReadonlyMap<string, string> = new Map([
  ['$where', 'server-side JavaScript'],
  ['$function', 'server-side JavaScript'],
  ['$accumulator', 'server-side JavaScript'],
  ['$out', 'a write'],
  ['$merge', 'a write'],
  ['$lookup', "it reads another collection, which would bypass that collection's readFilter; map a join field ($fk) instead"],
  ['$graphLookup', "it reads another collection, which would bypass that collection's readFilter; map a join field ($fk) instead"],
  ['$unionWith', "it reads another collection, which would bypass that collection's readFilter; map another field instead"],
]);

/** Why `key` is not allowed in a declared aggregation, or undefined when it is. */
export function blockedStageOperator(key: string): string | undefined {
  return BLOCKED.get(key);
}

const AGGREGATION_MAPPING_FIELDS = ['db', 'collection', 'stages', 'allowDiskUse', 'dataLoader'];

/** Checks one aggregation mapping (the caller has checked that `graphql.aggregations` is on). */
export function checkAggregationMapping(path: string, mapping: Record<string, unknown>, field: GraphQLField<unknown, unknown> | undefined, isRoot: boolean, problems: string[]): void {
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
