/**
 * RESTHeart's declared aggregations: a collection's metadata holds `aggrs`
 * (`[{type: "pipeline", uri, stages, allowDiskUse?}]`), written with `PUT`/`PATCH /{db}/{coll}`
 * and read back at `GET /{db}/{coll}/_meta`; `GET /{db}/{coll}/_aggrs/{uri}?avars={...}` runs one.
 * Stages are interpolated as RESTHeart's StagesInterpolator does: `{"$var": "name"}` or
 * `{"$var": ["name", default]}`, `{"$ifvar": [vars, then, else?]}`, and the reserved variables
 * `@user` / `@user.<prop>` (the authenticated caller), `@page`, `@pagesize`, `@limit`, `@skip`,
 * which a client's avars may not set. The pipeline runs with mingo's aggregation, scripts off;
 * results are paged by `page`/`pagesize` like a collection read.
 */
import type { ServerResponse } from 'node:http';
import { aggregate } from 'mingo';
import type { Identity } from './auth.js';
import { decodeExtendedJson, encodeExtendedJson, isPlainObject } from './extended-json.js';
import { HttpProblem, sendJson } from './http.js';
import { DEFAULT_PAGESIZE, MAX_PAGESIZE } from './read-query.js';
import { parseRelaxedJson } from './relaxed-json.js';
import type { Doc } from './store.js';

const BLOCKED_STAGES_OPERATORS = new Set(['$where', '$function', '$accumulator', '$out', '$merge']);

/** Checks `aggrs` as RESTHeart's metadata checker does; throws a 400 naming the problem. */
export function checkAggrs(aggrs: unknown): void {
  if (aggrs === undefined) return;
  if (!Array.isArray(aggrs)) throw new HttpProblem(400, 'wrong aggregation definition: aggrs must be an array');
  const uris = new Set<string>();
  aggrs.forEach((a, i) => {
    if (!isPlainObject(a)) throw new HttpProblem(400, `wrong aggregation definition at index ${i}: not an object`);
    if (a.type !== 'pipeline') throw new HttpProblem(400, `wrong aggregation definition at index ${i}: type must be "pipeline" (mapReduce is not supported here)`);
    if (typeof a.uri !== 'string' || a.uri === '') throw new HttpProblem(400, `wrong aggregation definition at index ${i}: missing uri`);
    if (uris.has(a.uri)) throw new HttpProblem(400, `wrong aggregation definition: uri ${a.uri} is declared twice`);
    uris.add(a.uri);
    if (!Array.isArray(a.stages)) throw new HttpProblem(400, `wrong aggregation definition ${a.uri}: stages must be an array`);
    if (a.allowDiskUse !== undefined && typeof a.allowDiskUse !== 'boolean') throw new HttpProblem(400, `wrong aggregation definition ${a.uri}: allowDiskUse must be a boolean`);
  });
}

function blocked(value: unknown): string | undefined {
  if (Array.isArray(value)) return value.map(blocked).find((v) => v !== undefined);
  if (!isPlainObject(value)) return undefined;
  for (const [k, v] of Object.entries(value)) {
    if (BLOCKED_STAGES_OPERATORS.has(k)) return k;
    const inner = blocked(v);
    if (inner) return inner;
  }
  return undefined;
}

function interpolate(value: unknown, vars: Map<string, unknown>, missing: Set<string>): unknown {
  if (Array.isArray(value)) {
    const out: unknown[] = [];
    for (const item of value) {
      if (isPlainObject(item) && '$ifvar' in item) {
        const chosen = ifvar(item.$ifvar, vars, missing);
        if (chosen !== undefined) out.push(chosen);
      } else out.push(interpolate(item, vars, missing));
    }
    return out;
  }
  if (!isPlainObject(value)) return value;
  if ('$var' in value && Object.keys(value).length === 1) {
    const spec = value.$var;
    const [name, fallback, hasDefault] = Array.isArray(spec) && spec.length === 2 ? [String(spec[0]), spec[1], true] : [String(spec), undefined, false];
    if (vars.has(name)) return vars.get(name);
    if (hasDefault) return fallback;
    missing.add(name);
    return null;
  }
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = interpolate(v, vars, missing);
  return out;
}

function ifvar(spec: unknown, vars: Map<string, unknown>, missing: Set<string>): unknown {
  if (!Array.isArray(spec) || spec.length < 2 || spec.length > 3) throw new HttpProblem(400, 'wrong $ifvar: it must be [vars, then, else?]');
  const names = Array.isArray(spec[0]) ? spec[0].map(String) : [String(spec[0])];
  const branch = names.every((n) => vars.has(n)) ? spec[1] : spec[2];
  return branch === undefined ? undefined : interpolate(branch, vars, missing);
}

export function runDeclaredAggregation(res: ServerResponse, meta: Doc | undefined, docs: readonly Doc[], name: string, query: URLSearchParams, identity: Identity | undefined): void {
  const aggrs = Array.isArray(meta?.aggrs) ? (meta.aggrs as Doc[]) : [];
  const aggr = aggrs.find((a) => a.uri === name);
  if (!aggr) throw new HttpProblem(404, `aggregation ${name} does not exist`);
  let avars: Record<string, unknown> = {};
  const raw = query.get('avars');
  if (raw !== null) {
    let parsed: unknown;
    try {
      parsed = parseRelaxedJson(raw);
    } catch (err) {
      throw new HttpProblem(400, `illegal avars parameter: ${(err as Error).message}`);
    }
    if (!isPlainObject(parsed)) throw new HttpProblem(400, 'illegal avars parameter: it must be a JSON object');
    avars = parsed;
  }
  for (const key of Object.keys(avars)) {
    if (key.startsWith('@')) throw new HttpProblem(400, `illegal avars parameter: the variable ${key} is reserved`);
  }
  const page = Number(query.get('page') ?? 1);
  const pagesize = Number(query.get('pagesize') ?? DEFAULT_PAGESIZE);
  if (!Number.isInteger(page) || page < 1) throw new HttpProblem(400, 'illegal page parameter, it must be an integer >= 1');
  if (!Number.isInteger(pagesize) || pagesize < 0 || pagesize > MAX_PAGESIZE) throw new HttpProblem(400, `illegal pagesize parameter, it must be an integer between 0 and ${MAX_PAGESIZE}`);
  const vars = new Map<string, unknown>(Object.entries(avars));
  const user = identity?.id !== undefined ? { _id: identity.id, roles: identity.roles ?? [] } : null;
  vars.set('@user', user);
  if (user) for (const [k, v] of Object.entries(user)) vars.set(`@user.${k}`, v);
  vars.set('@page', page);
  vars.set('@pagesize', pagesize);
  vars.set('@limit', pagesize);
  vars.set('@skip', (page - 1) * pagesize);
  const missing = new Set<string>();
  const stages = interpolate(aggr.stages, vars, missing) as Doc[];
  if (missing.size > 0) throw new HttpProblem(400, `wrong aggregation: unbound variables ${[...missing].join(', ')}; pass them in avars`);
  const op = blocked(stages);
  if (op) throw new HttpProblem(400, `wrong aggregation: the operator ${op} is not allowed`);
  let results: unknown[];
  try {
    results = aggregate(
      docs.map((d) => decodeExtendedJson(d) as Doc),
      decodeExtendedJson(stages) as Doc[],
      { scriptEnabled: false },
    );
  } catch (err) {
    throw new HttpProblem(400, `wrong aggregation: ${(err as Error).message}`);
  }
  const start = (page - 1) * pagesize;
  sendJson(res, 200, results.slice(start, start + pagesize).map(encodeExtendedJson));
}
