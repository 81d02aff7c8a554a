/**
 * Write-time validation of a GraphQL app document (SPEC §6.2). Every problem is reported at once,
 * each naming its path (`mappings.Query.orders.limit must be ...`). RESTHeart silently ignores
 * typos in mappings; we refuse them, with a suggestion when a name is close to a real one.
 * This file checks the document's shape and descriptor and builds the schema; the mappings are
 * checked in mappings.ts (aggregation mappings in aggregations.ts, `$arg`/`$fk` references and
 * names in references.ts) and their extended-JSON literals in literals.ts.
 */
import type { GraphQLSchema } from 'graphql';
import { normalizeUri, type GraphqlApp, type GraphqlAppDescriptor, type TypeMappings } from '../app-document.js';
import { isPlainObject } from '../../util/objects.js';
import { buildAppSchema } from '../schema/sdl.js';
import { didYouMean as suggest } from '../../util/did-you-mean.js';
import { checkMappingLiterals } from './literals.js';
import { checkMappings } from './mappings.js';
import { checkMcpBlock, ownToolNameProblems } from './mcp-tools.js';
import { checkTrustedDocuments } from './trusted/documents.js';

export interface ValidateAppOptions {
  /** `graphql.defaultDb`: used when a mapping omits `db` (recorded for messages only). */
  readonly defaultDb: string;
  /** `graphql.maxLimit`: a literal `limit` may not exceed it. */
  readonly maxLimit: number;
  /** `graphql.aggregations`: aggregation mappings are accepted (run as declared aggregations). */
  readonly aggregations?: boolean;
}

/** `warnings`: what is accepted but worth saying (a `$typeResolver` overlap and the type that wins it). */
export type AppValidation = { ok: true; app: GraphqlApp; warnings: string[] } | { ok: false; problems: string[] };

const TOP_LEVEL = ['_id', 'descriptor', 'schema', 'mappings', 'mcp'];
/** RESTHeart stores `_etag`; documents copied from it are accepted and the field dropped. */
const TOP_LEVEL_IGNORED = ['_etag'];
const DESCRIPTOR_FIELDS = ['name', 'description', 'enabled', 'uri', 'introspection', 'verbose', 'trustedDocuments', 'maxCost', 'cache'];
/** As `cache.rules[].maxAgeSeconds`: a day at most. */
const MAX_ANSWER_AGE = 86_400;

/** Validates an app document and returns it normalised (descriptor defaults, uri without slashes). */
export function validateAppDocument(input: unknown, opts: ValidateAppOptions): AppValidation {
  const result = validateAppWithSchema(input, opts);
  return result.ok ? { ok: true, app: result.app, warnings: result.warnings } : result;
}

/** As validateAppDocument, also handing back the schema it built (compileApp reuses it). */
export function validateAppWithSchema(input: unknown, opts: ValidateAppOptions): { ok: true; app: GraphqlApp; schema: GraphQLSchema; warnings: string[] } | { ok: false; problems: string[] } {
  const problems: string[] = [];
  const warnings: string[] = [];
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
    checkMappings(mappings, schema, opts, problems, warnings);
    checkMappingLiterals(mappings, problems);
  }
  // Tools for agents (SPEC §11): checked against the schema built above.
  const mcp = input.mcp === undefined ? undefined : checkMcpBlock(input.mcp, schema, problems, warnings);
  if (mcp && descriptor) problems.push(...ownToolNameProblems({ descriptor, schema: '', mappings: {}, mcp }));

  if (problems.length > 0 || !descriptor || schema === undefined || !isPlainObject(mappings)) return { ok: false, problems };
  const app: GraphqlApp = {
    descriptor,
    schema: input.schema as string,
    mappings: mappings as Record<string, TypeMappings>,
  };
  if (typeof id === 'string') app._id = id;
  if (mcp) app.mcp = mcp;
  return { ok: true, app, schema, warnings };
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
  if (d.cache !== undefined && !checkAnswerCache(d.cache, problems)) ok = false;
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
  if (isPlainObject(d.cache)) out.cache = { maxAgeSeconds: d.cache.maxAgeSeconds as number };
  return out;
}

/** `descriptor.cache: {maxAgeSeconds}` (SPEC §12): whole query answers kept that long at most; false when a problem was added. */
function checkAnswerCache(cache: unknown, problems: string[]): boolean {
  const example = 'such as {"maxAgeSeconds": 30}';
  if (!isPlainObject(cache)) {
    problems.push(`descriptor.cache must be an object {maxAgeSeconds} ${example} (how long a whole query answer may be served from memory)`);
    return false;
  }
  const before = problems.length;
  for (const key of Object.keys(cache)) {
    if (key !== 'maxAgeSeconds') problems.push(`descriptor.cache.${key} is not a field of descriptor.cache (allowed: maxAgeSeconds)${suggest(key, ['maxAgeSeconds'])}`);
  }
  const age = cache.maxAgeSeconds;
  if (age === undefined) problems.push(`descriptor.cache.maxAgeSeconds is required, ${example}`);
  else if (!Number.isSafeInteger(age) || (age as number) < 1 || (age as number) > MAX_ANSWER_AGE)
    problems.push(`descriptor.cache.maxAgeSeconds must be an integer from 1 to ${MAX_ANSWER_AGE} (got ${String(JSON.stringify(age)).slice(0, 40)})`);
  return problems.length === before;
}
