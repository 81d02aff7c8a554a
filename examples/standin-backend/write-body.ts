/**
 * Request bodies of writes and the pieces every write shares: the write mode, the `_etag`, the
 * `If-Match` check.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { isPlainObject, newObjectIdHex } from './extended-json.js';
import { HttpProblem, isJsonContentType } from './http.js';
import { parseRelaxedJson } from './relaxed-json.js';
import type { Doc } from './store.js';

export type WriteMode = 'insert' | 'update' | 'upsert';

/**
 * The JSON body as an object. No body is an empty document (RESTHeart treats it so). A body that is
 * not JSON is 415; unparseable JSON 400; a JSON array 400 (bulk writes are not implemented here);
 * any other non-object 406, RESTHeart's "data must be a json object".
 */
export function parseWriteBody(headers: IncomingHttpHeaders, body: string | undefined): Doc {
  if (body === undefined || body.trim() === '') return {};
  if (!isJsonContentType(headers['content-type'])) {
    throw new HttpProblem(415, `Content-Type must be application/json (got ${headers['content-type'] ?? 'none'}); send the document as JSON`);
  }
  let parsed: unknown;
  try {
    parsed = parseRelaxedJson(body);
  } catch (err) {
    throw new HttpProblem(400, `Invalid JSON in the request body: ${(err as Error).message}`);
  }
  if (Array.isArray(parsed)) {
    throw new HttpProblem(400, 'bulk writes (a JSON array body) are not supported by the stand-in; send one document per request');
  }
  if (!isPlainObject(parsed)) throw new HttpProblem(406, 'data must be a json object');
  return parsed;
}

/**
 * `?wm=` as in RESTHeart 7+: defaults are POST insert, PUT update, PATCH update, so PUT or PATCH
 * of a missing document is 404 unless `wm=upsert` (or `wm=insert` for PUT) is given.
 */
export function writeMode(query: URLSearchParams, fallback: WriteMode): WriteMode {
  const raw = query.get('wm');
  if (raw === null || raw === '') return fallback;
  const mode = raw.trim().toLowerCase();
  if (mode !== 'insert' && mode !== 'update' && mode !== 'upsert') {
    throw new HttpProblem(400, `illegal wm parameter '${raw}'; use insert, update or upsert`);
  }
  return mode;
}

/** RESTHeart stamps every written document with a fresh `_etag` ObjectId. */
export function stampEtag(doc: Doc): { doc: Doc; etag: string } {
  const etag = newObjectIdHex();
  const { _etag: _previous, ...rest } = doc;
  return { doc: { ...rest, _etag: { $oid: etag } }, etag };
}

export function etagOf(doc: Doc): string | undefined {
  const etag = doc._etag;
  if (isPlainObject(etag) && typeof etag.$oid === 'string') return etag.$oid;
  return typeof etag === 'string' ? etag : undefined;
}

/** Documents' etag check policy is OPTIONAL in RESTHeart: checked only when If-Match is sent. */
export function checkIfMatch(headers: IncomingHttpHeaders, existing: Doc): void {
  const ifMatch = headers['if-match'];
  if (ifMatch === undefined) return;
  const wanted = ifMatch.split(',').map((t) => t.trim().replace(/^W\//, '').replace(/^"|"$/g, ''));
  const current = etagOf(existing);
  if (wanted.includes('*') || (current !== undefined && wanted.includes(current))) return;
  throw new HttpProblem(412, "The document's ETag does not match If-Match; read the document again and retry");
}
