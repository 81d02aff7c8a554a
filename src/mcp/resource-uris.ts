/**
 * MCP resource URIs (SPEC §11.1): `outrigger://<db>/<coll>` (with `?filter,sort,pagesize,page`)
 * and `outrigger://<db>/<coll>/<id>`, mapped to the REST path of the same read through
 * `collectionPath` (§1). The mapping is strict because the path it makes is requested from this
 * server with the agent's credentials: another scheme or authority, a `..` or `.` segment, an
 * encoded separator (`%2F`, `%5C`), a control character, a name starting with `_` (RESTHeart's
 * own resources, Outrigger's `/_admin`), a fourth segment, a query parameter other than the four,
 * or a malformed `filter`/`sort` is refused with a sentence naming the URI. What the path then
 * shows is decided by the REST door (the ACL, `readFilter`), never here.
 *
 * A document's `_id` that is not a string (or an ObjectId, 24 hex digits) is named as RESTHeart's
 * REST path names it: `outrigger://shop/orders/1?id_type=NUMBER` is the number 1,
 * `outrigger://shop/orders/1` the string "1" (`STRING_OID`: 24 hex digits are an ObjectId, anything
 * else a string; `STRING` for a string of 24 hex digits, `OID` for an ObjectId alone). The REST
 * path carries the same `id_type`, so a read, a listen and a notification agree on one document;
 * a number must be written as JSON writes it (`1`, not `01`, `1.0` or `1e0`), so one number has
 * one URI.
 */
import { collectionPathOf } from '../graphql/backend/collection-path.js';
import { parseBoundedJson } from '../input-limits/json-depth.js';
import { isJsonObject } from '../util/objects.js';

export const SCHEME = 'outrigger://';
/** A database or collection name: what RESTHeart accepts, less names starting with `_` (its own resources). */
const NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;
const MAX_URI_CHARS = 4096;
const MAX_ID_CHARS = 1024;
const QUERY_KEYS = ['filter', 'sort', 'pagesize', 'page'];
/** RESTHeart's `id_type` values the URIs take (the stand-in's; `STRING_OID` is the default). */
const ID_TYPES = ['STRING_OID', 'OID', 'STRING', 'NUMBER'] as const;
export type IdType = (typeof ID_TYPES)[number];
const HEX24 = /^[0-9a-fA-F]{24}$/;
/** RESTHeart's own bound on `pagesize`. */
const MAX_PAGESIZE = 1000;

export interface ResourceTarget {
  readonly uri: string;
  readonly db: string;
  readonly collection: string;
  readonly id: string | null;
  /** The id's `id_type` when the URI names one (`?id_type=NUMBER`), else null (`STRING_OID`). */
  readonly idType: IdType | null;
  /** The REST path of the same read, with its query (`/shop/orders?filter=…`, `/shop/orders/1?id_type=NUMBER`). */
  readonly restPath: string;
  /** The path alone, as conditions and the ACL see it. */
  readonly pathOnly: string;
}

export type ParsedUri = { ok: true; target: ResourceTarget } | { ok: false; problem: string };

export function collectionUri(db: string, collection: string): string {
  return `${SCHEME}${db}/${collection}`;
}

/** The URI of the document whose `_id` is `id` (a string, `{$oid}` or a number), as parseResourceUri reads it back. */
export function documentUri(db: string, collection: string, id: unknown): string {
  const base = `${SCHEME}${db}/${collection}/`;
  if (typeof id === 'number') return `${base}${JSON.stringify(id)}?id_type=NUMBER`;
  if (id !== null && typeof id === 'object' && typeof (id as { $oid?: unknown }).$oid === 'string') return base + (id as { $oid: string }).$oid;
  const text = String(id);
  return `${base}${encodeURIComponent(text)}${HEX24.test(text) ? '?id_type=STRING' : ''}`;
}

/** The REST target of a resource URI, or why it is refused. */
export function parseResourceUri(uri: string, collectionPath: string): ParsedUri {
  const no = (why: string): ParsedUri => ({ ok: false, problem: `the resource ${JSON.stringify(uri.slice(0, 200))} ${why}` });
  if (uri.length > MAX_URI_CHARS) return no(`is longer than ${MAX_URI_CHARS} characters`);
  if (!uri.startsWith(SCHEME)) return no(`is not one of this service's resources (they are ${SCHEME}<db>/<collection>[/<id>])`);
  if (uri.includes('#')) return no('carries a fragment');
  const rest = uri.slice(SCHEME.length);
  const q = rest.indexOf('?');
  const path = q < 0 ? rest : rest.slice(0, q);
  const query = q < 0 ? null : rest.slice(q + 1);
  const segments = path.split('/');
  if (segments.length < 2 || segments.length > 3) return no('must name a collection (<db>/<collection>) or a document (<db>/<collection>/<id>)');
  const [db, collection, rawId] = segments as [string, string, string | undefined];
  for (const [what, name] of [
    ['database', db],
    ['collection', collection],
  ] as const) {
    if (!NAME.test(name)) return no(`names the ${what} ${JSON.stringify(name)}: a name is letters, digits, _ . - and starts with a letter or digit (no encoded characters)`);
  }
  let id: string | null = null;
  if (rawId !== undefined) {
    const decoded = decodeSegment(rawId);
    if (decoded === null) return no('has an id that is not valid percent-encoding');
    if (decoded === '' || decoded === '.' || decoded === '..') return no(`has the id ${JSON.stringify(decoded)}, which is not a document`);
    if (/[/\\]/.test(decoded)) return no('has an id holding a path separator (/ or \\, encoded or not)');
    // eslint-disable-next-line no-control-regex
    if (/[\u0000-\u001f\u007f]/.test(decoded)) return no('has an id holding a control character');
    if (decoded.startsWith('_')) return no(`has the id ${JSON.stringify(decoded)}: ids starting with _ name RESTHeart's own resources, not documents`);
    if (decoded.length > MAX_ID_CHARS) return no(`has an id longer than ${MAX_ID_CHARS} characters`);
    id = decoded;
  }
  const pathOnly = collectionPathOf(collectionPath, db, collection) + (id === null ? '' : `/${encodeURIComponent(id)}`);
  let restQuery = '';
  let idType: IdType | null = null;
  if (query !== null && query !== '' && id !== null) {
    const typed = idTypeOf(query, id);
    if (typeof typed !== 'string' || typed.startsWith('!'))
      return no(typed === null ? 'names a document and carries a query; a query reads a collection (a document URI takes id_type alone)' : typed.slice(1));
    idType = typed as IdType;
    restQuery = `?id_type=${idType}`;
  } else if (query !== null && query !== '') {
    const built = restQueryOf(query);
    if (typeof built !== 'string' || built.startsWith('!')) return no(typeof built === 'string' ? built.slice(1) : 'has a query that cannot be read');
    restQuery = built;
  }
  return { ok: true, target: { uri, db, collection, id, idType, restPath: pathOnly + restQuery, pathOnly } };
}

/**
 * A document URI's query: `id_type=<type>` alone, and the id written as that type reads it (a
 * number as JSON writes it, an ObjectId as 24 hex digits). The type, `!` and why it is refused,
 * or null when the query is not `id_type` (a query on a document).
 */
function idTypeOf(query: string, id: string): string | null {
  const pairs = query.split('&').filter((p) => p !== '');
  if (!pairs.every((p) => p.startsWith('id_type='))) return null;
  if (pairs.length > 1) return '!gives id_type twice';
  const value = decodeSegment(pairs[0]!.slice('id_type='.length));
  const type = ID_TYPES.find((t) => t === value);
  if (type === undefined) return `!has id_type=${JSON.stringify((value ?? '').slice(0, 20))}; it is one of ${ID_TYPES.join(', ')} (RESTHeart's), and is left out for STRING_OID`;
  if (type === 'NUMBER' && !(Number.isFinite(Number(id)) && JSON.stringify(Number(id)) === id)) {
    const n = id.trim() === '' ? NaN : Number(id);
    const form = Number.isFinite(n) ? `this one is ${JSON.stringify(n)}` : 'as 42 or -1.5';
    return `!has the id ${JSON.stringify(id.slice(0, 40))} with id_type=NUMBER: a number is written as JSON writes it (${form}), so each number has one URI`;
  }
  if (type === 'OID' && !HEX24.test(id)) return `!has the id ${JSON.stringify(id.slice(0, 40))} with id_type=OID: an ObjectId is 24 hex digits`;
  return type;
}

function decodeSegment(segment: string): string | null {
  try {
    return decodeURIComponent(segment);
  } catch {
    return null;
  }
}

/** `?filter=…&sort=…&pagesize=…&page=…` as RESTHeart reads it, or `!` and why it is refused. */
function restQueryOf(query: string): string {
  const params = new URLSearchParams();
  const seen = new Set<string>();
  for (const pair of query.split('&')) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    const key = decodeSegment(eq < 0 ? pair : pair.slice(0, eq));
    const value = decodeSegment(eq < 0 ? '' : pair.slice(eq + 1).replaceAll('+', ' '));
    if (key === null || value === null) return '!has a query that is not valid percent-encoding';
    if (!QUERY_KEYS.includes(key)) return `!has the query parameter ${JSON.stringify(key)}; the template takes ${QUERY_KEYS.join(', ')}`;
    if (seen.has(key)) return `!gives ${key} twice`;
    seen.add(key);
    if (key === 'filter' || key === 'sort') {
      const parsed = parseBoundedJson(value);
      if (!parsed.ok || !isJsonObject(parsed.value)) return `!has a ${key} that is not a JSON object`;
    } else {
      const n = /^[0-9]{1,7}$/.test(value) ? Number(value) : NaN;
      const max = key === 'pagesize' ? MAX_PAGESIZE : 1_000_000;
      if (!(n >= 1 && n <= max)) return `!has ${key}=${JSON.stringify(value.slice(0, 20))}; it must be a whole number from 1 to ${max}`;
    }
    params.set(key, value);
  }
  const text = params.toString();
  return text === '' ? '' : `?${text}`;
}

/**
 * The collection a condition names literally, `path-prefix('/<db>/<coll>')` (quoted or not), under
 * `collectionPath`: what `resources/list` lists. Any other condition exposes only what the
 * templates address.
 */
export function literalCollection(condition: string, collectionPath: string): { db: string; collection: string } | null {
  const m = /^\s*path-prefix\(\s*(?:'([^']*)'|"([^"]*)"|([^\s'"()]+))\s*\)\s*$/.exec(condition);
  const path = m ? (m[1] ?? m[2] ?? m[3])! : null;
  if (path === null) return null;
  const escaped = collectionPath
    .replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
    .replace('\\{db\\}', '(?<db>[^/]+)')
    .replace('\\{collection\\}', '(?<coll>[^/]+)');
  const match = new RegExp(`^${escaped}/?$`).exec(path);
  const db = match?.groups?.db;
  const collection = match?.groups?.coll;
  return db && collection && NAME.test(db) && NAME.test(collection) ? { db, collection } : null;
}
