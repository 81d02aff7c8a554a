/**
 * Bulk writes as RESTHeart answers them (shared/notes/restheart-writes.md §2): `POST /{db}/{coll}`
 * with a JSON array is an unordered bulk insert; `PATCH /{db}/{coll}/*?filter=` updates every
 * match (plain keys are `$set`, no upsert, `_etag` not refreshed); `DELETE /{db}/{coll}/*?filter=`
 * deletes every match. The answer is 200 `{"inserted", "links", "deleted", "modified", "matched"}`
 * (links are relative document paths), or 207 with the same counts and `errors` when part of a
 * bulk insert failed (a duplicate `_id` is `{"index", "httpStatus": 409, "message"}`). A bulk
 * PATCH or DELETE without a filter is 400, as in RESTHeart.
 */
import type { ServerResponse } from 'node:http';
import { update as applyUpdate } from 'mingo';
import { encodeExtendedJson, idKey, idToPathSegment, isPlainObject, newObjectIdHex } from './extended-json.js';
import { HttpProblem, isJsonContentType, sendJson } from './http.js';
import { matchDocuments, parseFilters } from './read-query.js';
import { parseRelaxedJson } from './relaxed-json.js';
import type { Doc } from './store.js';
import { stampEtag } from './write-body.js';
import { toModifier, type DocumentRequest } from './documents.js';

interface BulkAnswer {
  inserted: number;
  links: string[];
  deleted: number;
  modified: number;
  matched: number;
  errors?: Array<{ index: number; httpStatus: number; message: string }>;
}

const answer = (): BulkAnswer => ({ inserted: 0, links: [], deleted: 0, modified: 0, matched: 0 });

function linkOf(req: DocumentRequest, id: unknown): string {
  const link = `/${encodeURIComponent(req.db)}/${encodeURIComponent(req.coll)}/${idToPathSegment(id)}`;
  return typeof id === 'number' ? `${link}?id_type=NUMBER` : link;
}

/** True when the body is a JSON array: a bulk insert. */
export function isBulkBody(body: string | undefined): boolean {
  return body !== undefined && body.trimStart().startsWith('[');
}

export function bulkPost(res: ServerResponse, req: DocumentRequest): void {
  if (!isJsonContentType(req.headers['content-type'])) throw new HttpProblem(415, 'Content-Type must be application/json; send the documents as a JSON array');
  let parsed: unknown;
  try {
    parsed = parseRelaxedJson(req.body as string);
  } catch (err) {
    throw new HttpProblem(400, `Invalid JSON in the request body: ${(err as Error).message}`);
  }
  if (!Array.isArray(parsed) || parsed.some((d) => !isPlainObject(d))) throw new HttpProblem(400, 'a bulk insert must be a JSON array of documents');
  const out = answer();
  const errors: NonNullable<BulkAnswer['errors']> = [];
  const seen = new Set(req.docs.map((d) => idKey(d._id)));
  (parsed as Doc[]).forEach((body, index) => {
    if (Object.keys(body).some((k) => k.startsWith('$') && k !== '$currentDate')) {
      errors.push({ index, httpStatus: 400, message: 'update operators cannot be used on POST' });
      return;
    }
    const { _id: givenId, ...fields } = body;
    const id = givenId === undefined ? { $oid: newObjectIdHex() } : givenId;
    if (seen.has(idKey(id))) {
      errors.push({ index, httpStatus: 409, message: `E11000 duplicate key error: _id ${JSON.stringify(id)} already exists in ${req.db}.${req.coll}` });
      return;
    }
    seen.add(idKey(id));
    req.docs.push(stampEtag({ _id: id, ...fields }).doc);
    out.inserted++;
    out.links.push(linkOf(req, id));
  });
  if (errors.length > 0) return sendJson(res, 207, { ...out, errors });
  sendJson(res, 200, out);
}

function bulkFilter(req: DocumentRequest): Record<string, unknown> {
  const filter = parseFilters(req.query);
  if (!filter) throw new HttpProblem(400, 'filter parameter is mandatory for bulk write requests');
  return filter;
}

export function bulkPatch(res: ServerResponse, req: DocumentRequest): void {
  const filter = bulkFilter(req);
  if (req.body === undefined || req.body.trim() === '') throw new HttpProblem(400, 'no data provided');
  let parsed: unknown;
  try {
    parsed = parseRelaxedJson(req.body);
  } catch (err) {
    throw new HttpProblem(400, `Invalid JSON in the request body: ${(err as Error).message}`);
  }
  if (!isPlainObject(parsed)) throw new HttpProblem(400, 'a bulk update must be a JSON object (update operators or fields to set)');
  const { _id: _ignored, ...changes } = parsed;
  const modifier = toModifier(changes);
  const out = answer();
  const matches = new Set(matchDocuments(req.docs, filter));
  req.docs.forEach((doc, index) => {
    if (!matches.has(doc)) return;
    out.matched++;
    const updated = structuredClone(doc);
    try {
      applyUpdate(updated, modifier as Parameters<typeof applyUpdate>[1]);
    } catch (err) {
      throw new HttpProblem(400, `invalid update: ${(err as Error).message}`);
    }
    const encoded = encodeExtendedJson(updated) as Doc;
    if (JSON.stringify(encoded) === JSON.stringify(doc)) return;
    req.docs[index] = encoded;
    out.modified++;
  });
  sendJson(res, 200, out);
}

export function bulkDelete(res: ServerResponse, req: DocumentRequest): void {
  const filter = bulkFilter(req);
  const matches = new Set(matchDocuments(req.docs, filter));
  const out = answer();
  for (let i = req.docs.length - 1; i >= 0; i--) {
    if (matches.has(req.docs[i] as Doc)) {
      req.docs.splice(i, 1);
      out.deleted++;
    }
  }
  sendJson(res, 200, out);
}
