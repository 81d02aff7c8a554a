/**
 * Aggregation mappings (`{db, collection, stages, allowDiskUse?}`) as RESTHeart declares them: an
 * HTTP backend runs no ad-hoc pipeline, but it runs the aggregations a collection's metadata
 * declares (`aggrs`, called as `/{db}/{coll}/_aggrs/{uri}?avars={...}`). Each mapping becomes one
 * declared aggregation whose stages are the mapping's, with `$arg`, `$fk` and `$ifarg` turned into
 * RESTHeart's aggregation variables: `{"$arg": "x"}` → `{"$var": "arg.x"}` (a default kept as
 * `{"$var": ["arg.x", d]}`), `{"$fk": "p"}` → `{"$var": "fk.p"}`, `{"$ifarg": [a, t, e]}` →
 * `{"$ifvar": ["arg.a", t, e]}`, and `{"$arg": "@user.id"}` → `{"$var": "@user.id"}`, which the
 * backend fills from the identity it authenticated (the caller with `graphql.backend.auth: caller`).
 */
import { createHash } from 'node:crypto';
import { isPlainObject } from '../../../util/objects.js';

export interface AggregationMapping {
  readonly db?: string;
  readonly collection: string;
  readonly stages: unknown[];
  readonly allowDiskUse?: boolean;
  readonly dataLoader?: Record<string, unknown>;
}

/** One entry of a collection's `aggrs` metadata, as RESTHeart stores it. */
export interface DeclaredAggregation {
  readonly type: 'pipeline';
  readonly uri: string;
  readonly stages: unknown[];
  readonly allowDiskUse: boolean;
}

/** What a call needs: the arguments and parent values to send as avars. */
export interface AggregationVars {
  /** Argument paths used (`status`, `range.min`), without `@user` ones (the backend fills those). */
  readonly args: ReadonlySet<string>;
  /** Parent-document paths used by `$fk`. */
  readonly fks: ReadonlySet<string>;
}

export const ARG_PREFIX = 'arg.';
export const FK_PREFIX = 'fk.';
/** Every declared aggregation Outrigger writes starts with this, so it never touches the others. */
const DECLARED_PREFIX = 'gql-';

/** `gql-<app>-<Type>-<field>` (non-name characters replaced), plus a short hash against collisions. */
export function declaredName(appId: string, typeName: string, fieldName: string): string {
  const clean = (s: string) => s.replace(/[^A-Za-z0-9_-]/g, '_');
  const hash = createHash('sha256').update(`${appId}\u0000${typeName}\u0000${fieldName}`).digest('hex').slice(0, 8);
  return `${DECLARED_PREFIX}${clean(appId)}-${clean(typeName)}-${clean(fieldName)}-${hash}`;
}

function varOf(spec: unknown, collect: { args: Set<string> }): unknown {
  const [name, fallback, hasDefault] = Array.isArray(spec) ? [String(spec[0]), spec[1], true] : [String(spec), undefined, false];
  const v = name.startsWith('@user') ? name : `${ARG_PREFIX}${name}`;
  if (!name.startsWith('@user')) collect.args.add(name);
  return { $var: hasDefault ? [v, fallback] : v };
}

/** The declared stages of a mapping, and the variables its calls send. */
export function declareStages(stages: readonly unknown[]): { stages: unknown[]; vars: AggregationVars } {
  const args = new Set<string>();
  const fks = new Set<string>();
  const walk = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(walk);
    if (!isPlainObject(value)) return value;
    const keys = Object.keys(value);
    if (keys.length === 1 && keys[0] === '$arg') return varOf(value.$arg, { args });
    if (keys.length === 1 && keys[0] === '$fk') {
      fks.add(String(value.$fk));
      return { $var: `${FK_PREFIX}${String(value.$fk)}` };
    }
    if (keys.length === 1 && keys[0] === '$ifarg' && Array.isArray(value.$ifarg)) {
      const [names, then, otherwise] = value.$ifarg as unknown[];
      const list = (Array.isArray(names) ? names : [names]).map(String);
      list.forEach((n) => args.add(n));
      const vars = list.map((n) => `${ARG_PREFIX}${n}`);
      return { $ifvar: [vars.length === 1 ? vars[0] : vars, walk(then), ...(otherwise === undefined ? [] : [walk(otherwise)])] };
    }
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = walk(v);
    return out;
  };
  return { stages: walk(stages) as unknown[], vars: { args, fks } };
}

export function declare(appId: string, typeName: string, fieldName: string, mapping: AggregationMapping): DeclaredAggregation {
  return { type: 'pipeline', uri: declaredName(appId, typeName, fieldName), stages: declareStages(mapping.stages).stages, allowDiskUse: mapping.allowDiskUse === true };
}

/** Every aggregation mapping of an app, by target collection. */
export function declaredAggregationsOf(
  app: { _id?: string; descriptor: { uri: string }; mappings: Record<string, Record<string, unknown>> },
  defaultDb: string,
): Map<string, { db: string; collection: string; aggrs: DeclaredAggregation[] }> {
  const appId = app._id ?? app.descriptor.uri;
  const out = new Map<string, { db: string; collection: string; aggrs: DeclaredAggregation[] }>();
  for (const [typeName, fields] of Object.entries(app.mappings)) {
    for (const [fieldName, mapping] of Object.entries(fields ?? {})) {
      if (!isPlainObject(mapping) || !('stages' in mapping)) continue;
      const m = mapping as unknown as AggregationMapping;
      const db = m.db ?? defaultDb;
      const key = `${db}\u0000${m.collection}`;
      const entry = out.get(key) ?? { db, collection: m.collection, aggrs: [] };
      entry.aggrs.push(declare(appId, typeName, fieldName, m));
      out.set(key, entry);
    }
  }
  return out;
}
