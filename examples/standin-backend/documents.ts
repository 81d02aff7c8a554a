/**
 * Document requests: `POST /{db}/{coll}` and `GET|PUT|PATCH|DELETE /{db}/{coll}/{id}` (a `filter`
 * ANDed with the id on GET, PATCH and DELETE), with RESTHeart's status codes: 201 + Location on create, 200 on replace/update, 204 on delete,
 * 404 for a missing document, 409 for a duplicate `_id`, 412 for a failed If-Match. Write
 * answers have no body, as RESTHeart's do by default; they carry the new ETag.
 */
import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import { update as applyUpdate } from 'mingo';
import { OBJECT_ID_HEX, encodeExtendedJson, idKey, idToPathSegment, newObjectIdHex } from './extended-json.js';
import { HttpProblem, sendEmpty, sendJson } from './http.js';
import { matchDocuments, parseFilters, parseKeys, projectDocuments } from './read-query.js';
import type { Doc, Store } from './store.js';
import { checkIfMatch, etagOf, parseWriteBody, stampEtag, writeMode } from './write-body.js';

export interface DocumentRequest {
  method: string;
  db: string;
  coll: string;
  docs: Doc[];
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
  body: string | undefined;
  /** scheme://host the client used, for the absolute Location header RESTHeart sends. */
  baseUrl: string;
}

/**
 * The `_id` a URL segment names, following `?id_type=` (default STRING_OID: 24 hex digits are an
 * ObjectId, anything else a string — so a string `_id` that looks like an ObjectId needs
 * `?id_type=STRING`, as in RESTHeart).
 */
export function idFromSegment(raw: string, query: URLSearchParams): unknown {
  const idType = (query.get('id_type') ?? 'STRING_OID').trim().toUpperCase();
  switch (idType) {
    case 'STRING_OID':
      return OBJECT_ID_HEX.test(raw) ? { $oid: raw.toLowerCase() } : raw;
    case 'OID':
      if (!OBJECT_ID_HEX.test(raw)) throw new HttpProblem(400, `wrong document id format: not a valid OID: ${raw}`);
      return { $oid: raw.toLowerCase() };
    case 'STRING':
      return raw;
    case 'NUMBER': {
      const n = Number(raw);
      if (raw.trim() === '' || !Number.isFinite(n)) throw new HttpProblem(400, `wrong document id format: not a valid NUMBER: ${raw}`);
      return n;
    }
    default:
      throw new HttpProblem(400, `illegal id_type parameter '${idType}'; the stand-in supports STRING_OID, OID, STRING and NUMBER`);
  }
}

function describeId(id: unknown): string {
  return typeof id === 'string' ? id : JSON.stringify(id);
}

function notFound(req: DocumentRequest, id: unknown): HttpProblem {
  return new HttpProblem(404, `document '${describeId(id)}' does not exist in ${req.db}.${req.coll}`);
}

function locationOf(req: DocumentRequest, id: unknown): string {
  return `${req.baseUrl}/${encodeURIComponent(req.db)}/${encodeURIComponent(req.coll)}/${idToPathSegment(id)}`;
}

export function postDocument(res: ServerResponse, req: DocumentRequest, store: Store): void {
  const body = parseWriteBody(req.headers, req.body);
  const mode = writeMode(req.query, 'insert');
  // MongoDB generates the ObjectId and puts _id first.
  const { _id: givenId, ...fields } = body;
  const id = givenId === undefined ? { $oid: newObjectIdHex() } : givenId;
  const existing = store.findById(req.docs, id);
  if (existing && mode === 'insert') {
    throw new HttpProblem(409, `duplicate key error: a document with _id ${describeId(id)} already exists in ${req.db}.${req.coll}`);
  }
  if (!existing && mode === 'update') throw notFound(req, id);
  const { doc, etag } = stampEtag({ _id: id, ...fields });
  if (existing) {
    checkIfMatch(req.headers, existing.doc);
    req.docs[existing.index] = doc;
    return sendEmpty(res, 200, { etag });
  }
  req.docs.push(doc);
  sendEmpty(res, 201, { etag, location: locationOf(req, id) });
}

export function getDocument(res: ServerResponse, req: DocumentRequest, store: Store, rawId: string): void {
  const id = idFromSegment(rawId, req.query);
  const found = store.findById(req.docs, id);
  if (!found) throw notFound(req, id);
  // RESTHeart ANDs `filter` with the id on document reads too (how a readFilter guards documents).
  const criteria = parseFilters(req.query);
  if (criteria && matchDocuments([found.doc], criteria).length === 0) throw notFound(req, id);
  const projection = parseKeys(req.query);
  const [doc] = projectDocuments([found.doc], projection);
  const etag = etagOf(found.doc);
  sendJson(res, 200, doc, etag ? { etag } : {});
}

export function putDocument(res: ServerResponse, req: DocumentRequest, store: Store, rawId: string): void {
  const id = idFromSegment(rawId, req.query);
  const body = parseWriteBody(req.headers, req.body);
  const { _id: bodyId, ...fields } = body;
  if (bodyId !== undefined && idKey(bodyId) !== idKey(id)) {
    throw new HttpProblem(406, '_id in json data cannot be different than id in URL');
  }
  const mode = writeMode(req.query, 'update');
  const existing = store.findById(req.docs, id);
  if (existing && mode === 'insert') {
    throw new HttpProblem(409, `duplicate key error: a document with _id ${describeId(id)} already exists in ${req.db}.${req.coll}`);
  }
  if (!existing && mode === 'update') throw notFound(req, id);
  const { doc, etag } = stampEtag({ _id: id, ...fields });
  if (existing) {
    checkIfMatch(req.headers, existing.doc);
    req.docs[existing.index] = doc;
    return sendEmpty(res, 200, { etag });
  }
  req.docs.push(doc);
  sendEmpty(res, 201, { etag, location: locationOf(req, id) });
}

/**
 * PATCH as RESTHeart does it: plain keys are `$set` (dot paths allowed, a nested object replaces
 * the field whole, `null` sets null), and update operators (`$inc`, `$push`, `$unset`,
 * `$currentDate`…) are applied by mingo's updater.
 */
export function patchDocument(res: ServerResponse, req: DocumentRequest, store: Store, rawId: string): void {
  const id = idFromSegment(rawId, req.query);
  if (req.body !== undefined && req.body.trim().startsWith('[')) {
    throw new HttpProblem(400, 'aggregation-pipeline updates (a JSON array body) are not supported by the stand-in; send an object');
  }
  const body = parseWriteBody(req.headers, req.body);
  const { _id: bodyId, ...changes } = body;
  if (bodyId !== undefined && idKey(bodyId) !== idKey(id)) {
    throw new HttpProblem(406, '_id in json data cannot be different than id in URL');
  }
  const mode = writeMode(req.query, 'update');
  const existing = store.findById(req.docs, id);
  if (existing && mode === 'insert') {
    throw new HttpProblem(409, `duplicate key error: a document with _id ${describeId(id)} already exists in ${req.db}.${req.coll}`);
  }
  if (!existing && mode === 'update') throw notFound(req, id);
  if (existing && !matchesFilter(req, existing.doc)) throw notFound(req, id);
  if (existing) checkIfMatch(req.headers, existing.doc);

  const updated = structuredClone(existing?.doc ?? { _id: id }) as Doc;
  const modifier = toModifier(changes);
  if (Object.keys(modifier).length > 0) {
    try {
      applyUpdate(updated, modifier as Parameters<typeof applyUpdate>[1]);
    } catch (err) {
      throw new HttpProblem(400, `invalid update: ${(err as Error).message}`);
    }
  }
  const { doc, etag } = stampEtag(encodeExtendedJson(updated) as Doc);
  if (existing) {
    req.docs[existing.index] = doc;
    return sendEmpty(res, 200, { etag });
  }
  req.docs.push(doc);
  sendEmpty(res, 201, { etag, location: locationOf(req, id) });
}

export function toModifier(changes: Doc): Record<string, Doc> {
  const modifier: Record<string, Doc> = {};
  const set: Doc = {};
  for (const [key, value] of Object.entries(changes)) {
    if (key.startsWith('$')) {
      if (value === null || typeof value !== 'object' || Array.isArray(value)) {
        throw new HttpProblem(400, `invalid update: the operator ${key} needs an object`);
      }
      modifier[key] = { ...(modifier[key] ?? {}), ...(value as Doc) };
    } else {
      set[key] = value;
    }
  }
  if (Object.keys(set).length > 0) modifier.$set = { ...(modifier.$set ?? {}), ...set };
  return modifier;
}

export function deleteDocument(res: ServerResponse, req: DocumentRequest, store: Store, rawId: string): void {
  const id = idFromSegment(rawId, req.query);
  const existing = store.findById(req.docs, id);
  if (!existing || !matchesFilter(req, existing.doc)) throw notFound(req, id);
  checkIfMatch(req.headers, existing.doc);
  req.docs.splice(existing.index, 1);
  sendEmpty(res, 204);
}

/** RESTHeart ANDs a `filter` with the id on document writes too (how a writeFilter guards them): no match is 404. */
function matchesFilter(req: DocumentRequest, doc: Doc): boolean {
  const criteria = parseFilters(req.query);
  return !criteria || matchDocuments([doc], criteria).length > 0;
}
