import { isPlainObject } from '../util/objects.js';
/**
 * The GraphQL app document (SPEC §6.1): `{_id, descriptor, schema, mappings}` and the small
 * syntax helpers (`$arg`, `$fk`, uri segments) that validation, compilation and translation share.
 */

export interface GraphqlAppDescriptor {
  /** Free text; RESTHeart v9 ignores it too. */
  name?: string;
  description?: string;
  /** Disabled apps answer 404. Default true. */
  enabled: boolean;
  /** Normalised: no leading or trailing `/`, segments of `[A-Za-z0-9._~-]`. */
  uri: string;
  /** Turns introspection off for this app when false; absent = the service setting. */
  introspection?: boolean;
  /** Reports backend reads and batching in `extensions` (absent = `graphql.verbose`). */
  verbose?: boolean;
  /** The only operations the app runs: query texts and/or `sha256:<hex>` hashes (absent = any). */
  trustedDocuments?: string[];
  /** Largest estimated cost of one operation (absent entries = `graphql.maxCost`). */
  maxCost?: { reads?: number; documents?: number };
  /** Whole query answers kept in the response cache for this long at most (SPEC §12), dropped by writes to what they read. */
  cache?: { maxAgeSeconds: number };
}

/** `{"$arg": "name"}` or `{"$arg": ["name", default]}`. */
export interface ArgRef {
  $arg: string | [string, unknown];
}

/** `{"$fk": "path.in.parent"}`. */
export interface FkRef {
  $fk: string;
}

export interface QueryMapping {
  /** Default: `graphql.defaultDb` at compile time. */
  db?: string;
  collection: string;
  find?: Record<string, unknown>;
  sort?: Record<string, unknown>;
  skip?: number | ArgRef;
  limit?: number | ArgRef;
  /** Accepted for RESTHeart compatibility and ignored: joins are always batched per request. */
  dataLoader?: Record<string, unknown>;
}

/** A dot path into the source document (rename, nested, array index) or a collection query. */
export type FieldMapping = string | QueryMapping;

/** Field mappings of an object type, or value mappings of an enum type. */
export type TypeMappings = Record<string, FieldMapping | unknown>;

export interface GraphqlApp {
  _id?: string;
  descriptor: GraphqlAppDescriptor;
  schema: string;
  mappings: Record<string, TypeMappings>;
  /** Tools for agents (SPEC §11): curated operations Outrigger's MCP server offers. */
  mcp?: McpToolsBlock;
}

/** One tool: a name agents call, what it does, and the one GraphQL operation it runs. */
export interface McpToolDefinition {
  name: string;
  description: string;
  query: string;
}

/** One of RESTHeart's examples: a request body an agent may copy. */
export interface McpExample {
  description?: string;
  args: { body: { query: string; variables?: Record<string, unknown> | null; operationName?: string | null } };
}

/** RESTHeart's keys of the block (SPEC §11.1): with `enabled: true` the app is one read-only `<uri>_query` tool. */
export interface McpRestheartKeys {
  enabled?: boolean;
  description?: string;
  examples?: McpExample[];
}

/** An app's `mcp` block, Outrigger's keys and RESTHeart's in one; mutation operations are tools only with `mutations: true`. */
export interface McpToolsBlock extends McpRestheartKeys {
  mutations?: boolean;
  tools?: McpToolDefinition[];
}

const URI_SEGMENT = /^[A-Za-z0-9._~-]+$/;

/**
 * Normalises an app uri: one leading and one trailing `/` are dropped; what is left must be one or
 * more `/`-separated segments of `[A-Za-z0-9._~-]` (and no `.` or `..` segment, which URL parsers
 * would fold away). Returns the normalised uri or a sentence saying what is wrong.
 */
export function normalizeUri(raw: string): { ok: true; uri: string } | { ok: false; problem: string } {
  let uri = raw;
  if (uri.startsWith('/')) uri = uri.slice(1);
  if (uri.endsWith('/')) uri = uri.slice(0, -1);
  if (uri === '') return { ok: false, problem: 'must name at least one path segment, e.g. "shop" or "shop/v2"' };
  for (const segment of uri.split('/')) {
    if (segment === '') return { ok: false, problem: `must not contain empty segments ("${raw}")` };
    if (segment === '.' || segment === '..') return { ok: false, problem: `must not contain "." or ".." segments ("${raw}")` };
    if (!URI_SEGMENT.test(segment)) {
      return { ok: false, problem: `segment "${segment}" may only contain letters, digits and . _ ~ -` };
    }
  }
  return { ok: true, uri };
}

/**
 * The uri an app must have to be served at `path`, the part of the request path after the GraphQL
 * route (`/shop/v2/` → `shop/v2`): the key of an exact lookup. An app is served on its own path
 * only (issue 53): `/graphql/shop/x` is no path of `shop`, so every decision taken on the request
 * path (ACL, rate-limit policies, webhook conditions) sees the path the app answers on. One
 * trailing `/` is allowed: the path predicates read `/graphql/shop/` as `/graphql/shop`
 * (Undertow's normalisation), and RESTHeart's GraphQL service looks an app up the same way.
 */
export function appUriOf(path: string): string {
  const start = path.startsWith('/') ? 1 : 0;
  const end = path.length > start && path.endsWith('/') ? path.length - 1 : path.length;
  return path.slice(start, end);
}

/** True for `{"$arg": ...}` (exactly that one key). */
export function isArgRef(value: unknown): value is ArgRef {
  return isPlainObject(value) && '$arg' in value && Object.keys(value).length === 1;
}

/** True for `{"$fk": ...}` (exactly that one key). */
export function isFkRef(value: unknown): value is FkRef {
  return isPlainObject(value) && '$fk' in value && Object.keys(value).length === 1;
}

/** The argument path and default of an `$arg` reference (the caller has validated its shape). */
export function argRefParts(ref: ArgRef): { path: string; hasDefault: boolean; defaultValue: unknown } {
  const spec = ref.$arg;
  if (Array.isArray(spec)) return { path: spec[0], hasDefault: true, defaultValue: spec[1] };
  return { path: spec, hasDefault: false, defaultValue: undefined };
}

/** Root operation type names never hold `$fk` (they have no parent document). */
export const ROOT_DOC_ARG = 'rootDoc';
