/**
 * The MongoDB REST namespace, mounted like RESTHeart with `mongo-mounts: {what: "*", where: /}`:
 * `/` lists dbs, `/{db}` lists collections, `/{db}/{coll}` reads or posts documents,
 * `/{db}/{coll}/_size` counts, `/{db}/{coll}/{id}` is a document, `/{db}/{coll}/*?filter=` bulk
 * PATCH and DELETE (bulk.ts), and a POST of an array a bulk insert.
 *
 * A collection exists when it was seeded or created with `PUT /{db}/{coll}`; like RESTHeart,
 * reads and writes on a missing db or collection are 404 (a POST does not create a collection).
 */
import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import { deleteDocument, getDocument, patchDocument, postDocument, putDocument, type DocumentRequest } from './documents.js';
import { bulkDelete, bulkPatch, bulkPost, isBulkBody } from './bulk.js';
import { HttpProblem, sendEmpty, sendJson, type Headers } from './http.js';
import { matchDocuments, parseFilters, parseReadQuery, runRead } from './read-query.js';
import type { Doc, Store } from './store.js';
import { checkAggrs, runDeclaredAggregation } from './aggregations.js';
import type { Identity } from './auth.js';
import { isPlainObject } from './extended-json.js';
import { parseRelaxedJson } from './relaxed-json.js';

function metadataBody(body: string | undefined): Doc {
  if (body === undefined || body.trim() === '') return {};
  let parsed: unknown;
  try {
    parsed = parseRelaxedJson(body);
  } catch (err) {
    throw new HttpProblem(400, `invalid JSON: ${(err as Error).message}`);
  }
  if (!isPlainObject(parsed)) throw new HttpProblem(400, 'the collection metadata must be a JSON object');
  const { _id: _ignored, _etag: _etag, ...meta } = parsed;
  checkAggrs(meta.aggrs);
  return meta;
}

export interface MongoRequest {
  method: string;
  segments: string[];
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
  body: string | undefined;
  baseUrl: string;
  /** Who the backend authenticated (`@user` in declared aggregations). */
  identity?: Identity;
}

const ILLEGAL_DB_NAME = /[/\\. "$*<>:|?\0]/;

function methodNotAllowed(method: string, allowed: string[]): HttpProblem {
  return new HttpProblem(405, `method ${method} is not allowed here; use ${allowed.join(', ')}`, { allow: allowed.join(', ') });
}

function isRead(method: string): boolean {
  return method === 'GET' || method === 'HEAD';
}

export function handleMongo(res: ServerResponse, req: MongoRequest, store: Store): void {
  const [db, coll, id, ...rest] = req.segments;
  if (db !== undefined && coll !== undefined && id === '_aggrs' && rest.length === 1) {
    if (!isRead(req.method)) throw methodNotAllowed(req.method, ['GET']);
    return runDeclaredAggregation(res, store.metadata(db, coll), existingCollection(store, db, coll), rest[0] as string, req.query, req.identity);
  }
  if (rest.length > 0) throw new HttpProblem(404, `no resource at ${req.segments.join('/')}: paths are /{db}/{collection}/{id}`);
  if (db === undefined) {
    if (!isRead(req.method)) throw methodNotAllowed(req.method, ['GET']);
    return sendJson(res, 200, store.dbNames());
  }
  if (ILLEGAL_DB_NAME.test(db)) throw new HttpProblem(400, `illegal database name '${db}'`);
  if (coll === undefined) return handleDb(res, req, store, db);
  if (coll.includes('$') || coll.startsWith('system.')) throw new HttpProblem(400, `illegal collection name '${coll}'`);
  if (id === undefined) return handleCollection(res, req, store, db, coll);

  const docs = existingCollection(store, db, coll);
  const docReq: DocumentRequest = { ...req, db, coll, docs };
  if (id === '_meta') {
    if (!isRead(req.method)) throw methodNotAllowed(req.method, ['GET']);
    return sendJson(res, 200, { _id: '_meta', ...(store.metadata(db, coll) ?? {}) });
  }
  if (id === '_size') {
    if (!isRead(req.method)) throw methodNotAllowed(req.method, ['GET']);
    const size = matchDocuments(docs, parseFilters(req.query)).length;
    return sendJson(res, 200, { _size: size }, { 'x-count-strategy': 'exact' });
  }
  if (id === '*') {
    if (req.method === 'PATCH') return bulkPatch(res, docReq);
    if (req.method === 'DELETE') return bulkDelete(res, docReq);
    throw methodNotAllowed(req.method, ['PATCH', 'DELETE']);
  }
  switch (req.method) {
    case 'GET':
    case 'HEAD':
      return getDocument(res, docReq, store, id);
    case 'PUT':
      return putDocument(res, docReq, store, id);
    case 'PATCH':
      return patchDocument(res, docReq, store, id);
    case 'DELETE':
      return deleteDocument(res, docReq, store, id);
    default:
      throw methodNotAllowed(req.method, ['GET', 'PUT', 'PATCH', 'DELETE']);
  }
}

function existingCollection(store: Store, db: string, coll: string): Doc[] {
  if (!store.hasDb(db)) throw new HttpProblem(404, `Db '${db}' does not exist`);
  const docs = store.documents(db, coll);
  if (!docs) throw new HttpProblem(404, `Collection '${db}.${coll}' does not exist; create it with PUT /${db}/${coll}`);
  return docs;
}

function handleDb(res: ServerResponse, req: MongoRequest, store: Store, db: string): void {
  switch (req.method) {
    case 'GET':
    case 'HEAD':
      if (!store.hasDb(db)) throw new HttpProblem(404, `Db '${db}' does not exist`);
      return sendJson(res, 200, store.collectionNames(db));
    case 'PUT':
      return sendEmpty(res, store.createDb(db) ? 201 : 200);
    case 'DELETE':
      if (!store.dropDb(db)) throw new HttpProblem(404, `Db '${db}' does not exist`);
      return sendEmpty(res, 204);
    default:
      throw methodNotAllowed(req.method, ['GET', 'PUT', 'DELETE']);
  }
}

function handleCollection(res: ServerResponse, req: MongoRequest, store: Store, db: string, coll: string): void {
  switch (req.method) {
    case 'GET':
    case 'HEAD':
      return readCollection(res, req, existingCollection(store, db, coll));
    case 'POST': {
      const docReq: DocumentRequest = { ...req, db, coll, docs: existingCollection(store, db, coll) };
      return isBulkBody(req.body) ? bulkPost(res, docReq) : postDocument(res, docReq, store);
    }
    case 'PUT': {
      // The body is the collection's metadata (RESTHeart: PUT replaces it, PATCH merges into it).
      const meta = metadataBody(req.body);
      const created = store.createCollection(db, coll);
      store.setMetadata(db, coll, meta);
      return sendEmpty(res, created ? 201 : 200);
    }
    case 'PATCH': {
      existingCollection(store, db, coll);
      store.setMetadata(db, coll, { ...(store.metadata(db, coll) ?? {}), ...metadataBody(req.body) });
      return sendEmpty(res, 200);
    }
    case 'DELETE':
      existingCollection(store, db, coll);
      store.dropCollection(db, coll);
      return sendEmpty(res, 204);
    default:
      throw methodNotAllowed(req.method, ['GET', 'POST', 'PUT', 'PATCH', 'DELETE']);
  }
}

/**
 * STANDARD representation: the page as a plain JSON array. `count` adds `X-Count-Strategy` (the
 * total itself only appears in the body with `rep=hal`, as `_size` and `_total_pages`).
 */
function readCollection(res: ServerResponse, req: MongoRequest, docs: Doc[]): void {
  const query = parseReadQuery(req.query);
  const { documents, total } = runRead(docs, query);
  const headers: Headers = query.count ? { 'x-count-strategy': query.count } : {};
  if (!query.hal) return sendJson(res, 200, documents, headers);
  const body: Record<string, unknown> = { _embedded: { 'rh:doc': documents }, _returned: documents.length };
  if (query.count) {
    body._size = total;
    body._total_pages = query.pagesize === 0 ? 0 : Math.ceil(total / query.pagesize);
  }
  sendJson(res, 200, body, headers);
}
