/**
 * Operators a declared aggregation may not hold, anywhere in its stages (inside `$facet`, and in
 * the pipeline of a stage, too), each with the reason given at write:
 * - server-side JavaScript (`$where`, `$function`, `$accumulator`), as RESTHeart's
 *   `aggregationSecurity` blocks it;
 * - writes (`$out`, `$merge`): apps are read-only;
 * - reads of other collections (`$lookup`, `$graphLookup`, `$unionWith`; issue 25): the caller's
 *   permission is decided for the collection the aggregation runs on, so a stage that reads another
 *   collection would bypass that collection's readFilter and projectResponse. RESTHeart blocks the
 *   same stages by default.
 */
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
