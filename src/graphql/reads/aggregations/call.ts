/**
 * Calling an aggregation mapping: the declared aggregation (declared.ts) with this call's
 * variables as avars: `arg.<path>` for each argument the stages use (omitted ones are left out,
 * so `$var` defaults and `$ifvar` apply), `fk.<path>` for each parent value. Equal calls in one
 * request share one read. Results: one page of up to 1000 documents.
 */
import { canonicalKey, findOperatorKey } from '../../values/ejson.js';
import { foreignValueError } from '../../values/interpolate.js';
import { readPath } from '../../values/paths.js';
import type { RequestState } from '../request-state.js';
import { BACKEND_MAX_PAGESIZE } from '../../types.js';
import { ARG_PREFIX, declaredName, declareStages, FK_PREFIX, type AggregationMapping } from './declared.js';

export type AggregationCall = (source: unknown, args: Record<string, unknown>, state: RequestState) => Promise<unknown[]>;

export function aggregationCall(appId: string, typeName: string, fieldName: string, mapping: AggregationMapping, defaultDb: string): AggregationCall {
  const name = declaredName(appId, typeName, fieldName);
  const { vars } = declareStages(mapping.stages);
  const db = mapping.db ?? defaultDb;
  const args = [...vars.args];
  const fks = [...vars.fks];
  return (source, callArgs, state) => {
    const avars: Record<string, unknown> = {};
    for (const path of args) {
      const v = readPath(callArgs, path);
      if (v !== undefined && v !== null) avars[`${ARG_PREFIX}${path}`] = v;
    }
    for (const path of fks) {
      const v = readPath(source, path);
      if (v === undefined) continue;
      const op = v !== null && typeof v === 'object' ? findOperatorKey(v) : undefined;
      if (op !== undefined) return Promise.reject(foreignValueError(path, op));
      avars[`${FK_PREFIX}${path}`] = v;
    }
    const key = `${db}\u0000${mapping.collection}\u0000${name}\u0000${canonicalKey(avars)}`;
    let pending = state.aggregationCalls.get(key);
    if (!pending) {
      pending = state.read({ db, collection: mapping.collection, page: 1, pagesize: BACKEND_MAX_PAGESIZE, aggregation: { name, avars } });
      state.aggregationCalls.set(key, pending);
    }
    return pending;
  };
}
