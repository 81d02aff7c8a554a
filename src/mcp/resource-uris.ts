/**
 * MCP resource URIs (SPEC §11.1): `outrigger://<db>/<coll>` (with `?filter,sort,pagesize,page`)
 * and `outrigger://<db>/<coll>/<id>`, mapped to the REST path of the same read through
 * `collectionPath` (§1). The mapping is strict because the path it makes is requested from this
 * server with the agent's credentials: another scheme or authority, a `..` or `.` segment, an
 * encoded separator (`%2F`, `%5C`), a control character, a name starting with `_` (RESTHeart's
 * own resources, Outrigger's `/_admin`), a fourth segment, a query parameter other than the four,
 * or a malformed `filter`/`sort` is refused with a sentence naming the URI. What the path then
 * shows is decided by the REST door (the ACL, `readFilter`), never here.
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
/** RESTHeart's own bound on `pagesize`. */
const MAX_PAGESIZE = 1000;

export interface ResourceTarget {
  readonly uri: string;
  readonly db: string;
  readonly collection: string;
  readonly id: string | null;
  /** The REST path of the same read, with its query (`/shop/orders?filter=…`). */
  readonly restPath: string;
  /** The path alone, as conditions and the ACL see it. */
  readonly pathOnly: string;
}

export type ParsedUri = { ok: true; target: ResourceTarget } | { ok: false; problem: string };

export function collectionUri(db: string, collection: string): string {
  return `${SCHEME}${db}/${collection}`;
}

export function documentUri(db: string, collection: string, id: string): string {
  return `${SCHEME}${db}/${collection}/${encodeURIComponent(id)}`;
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
  if (query !== null && query !== '') {
    if (id !== null) return no('names a document and carries a query; a query reads a collection');
    const built = restQueryOf(query);
    if (typeof built !== 'string' || built.startsWith('!')) return no(typeof built === 'string' ? built.slice(1) : 'has a query that cannot be read');
    restQuery = built;
  }
  return { ok: true, target: { uri, db, collection, id, restPath: pathOnly + restQuery, pathOnly } };
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
