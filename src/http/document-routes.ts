import { randomBytes } from 'node:crypto';
import { badRequest, methodNotAllowed, notFound, ValidationError } from '../errors.js';
import type { DocumentStore, StoredDocument } from '../store/document-store.js';
import { applyMergePatch } from '../util/merge-patch.js';
import { decodePathSegment } from '../input-limits/path-id.js';
import { readJsonBody } from './body.js';
import { isJsonObject } from '../util/objects.js';
import { pageOf, readPaging } from './paging.js';
import { sendJson, sendNoContent } from './respond.js';
import type { RequestScope } from './scope.js';

export type Validation<T> = { ok: true; doc: T } | { ok: false; problems: string[] };

export interface DocumentRoutesOptions<T extends StoredDocument> {
  store: DocumentStore<T>;
  /** What one document is called in messages ("permission", "webhook", "app"). */
  noun: string;
  /** Full validation of a candidate document (every problem at once); fills defaults. */
  validate(candidate: Record<string, unknown>, existing: T | undefined): Promise<Validation<T>> | Validation<T>;
  /** Checks against the other documents (uri collisions → 409); throws. */
  checkAgainstOthers?(doc: T): void | Promise<void>;
  /** Shapes a stored document for the caller (hides secrets from non-admins). */
  present?(doc: T, scope: RequestScope): unknown;
  /** `?search=` over the fields a person would search. */
  matchesSearch?(doc: T, term: string): boolean;
  /** Sort order of lists; default by _id. */
  compare?(a: T, b: T): number;
}

const ID_PATTERN = /^[A-Za-z0-9._~:@-]{1,128}$/;

export function newDocumentId(): string {
  return randomBytes(12).toString('hex');
}

/**
 * The CRUD every stored kind shares (SPEC §0): list with paging and X-Total-Count, POST → 201,
 * GET/PUT/PATCH (JSON merge patch, the merged result validated whole)/DELETE on `<prefix>/<id>`.
 */
export function createDocumentRoutes<T extends StoredDocument>(o: DocumentRoutesOptions<T>) {
  const present = (doc: T, scope: RequestScope) => (o.present ? o.present(doc, scope) : doc);

  async function validated(candidate: Record<string, unknown>, existing: T | undefined): Promise<T> {
    const result = await o.validate(candidate, existing);
    if (!result.ok) throw new ValidationError(result.problems);
    await o.checkAgainstOthers?.(result.doc);
    return result.doc;
  }

  return async function handle(scope: RequestScope, subPath: string): Promise<void> {
    const { res, method } = scope;
    if (subPath === '' || subPath === '/') {
      if (method === 'GET') {
        const paging = readPaging(scope.query);
        const term = scope.query.get('search')?.toLowerCase();
        let docs = await o.store.fetchAll();
        if (term && o.matchesSearch) docs = docs.filter((d) => o.matchesSearch!(d, term));
        docs.sort(o.compare ?? ((a, b) => (a._id < b._id ? -1 : a._id > b._id ? 1 : 0)));
        return sendJson(
          res,
          200,
          pageOf(docs, paging).map((d) => present(d, scope)),
          { 'x-total-count': docs.length },
        );
      }
      if (method === 'POST') {
        const body = await readJsonBody(scope);
        if (!isJsonObject(body)) throw badRequest(`the body must be a JSON object describing one ${o.noun}`);
        const id = body._id === undefined ? newDocumentId() : body._id;
        if (typeof id !== 'string' || !ID_PATTERN.test(id)) throw badRequest(`_id must be a string of 1-128 letters, digits or ._~:@- characters`);
        if (await o.store.fetch(id)) throw new ValidationError([`a ${o.noun} with _id ${JSON.stringify(id)} already exists; use PUT to replace it`], 409);
        const doc = await validated({ ...body, _id: id }, undefined);
        await o.store.put(doc);
        return sendJson(res, 201, present(doc, scope), { location: `${scope.path.replace(/\/$/, '')}/${encodeURIComponent(id)}` });
      }
      throw methodNotAllowed(['GET', 'POST']);
    }

    const id = decodePathSegment(subPath.slice(1), `${o.noun} _id`);
    if (!ID_PATTERN.test(id)) throw notFound(`no ${o.noun} with _id ${JSON.stringify(id)}`);
    const existing = await o.store.fetch(id);
    switch (method) {
      case 'GET':
        if (!existing) throw notFound(`no ${o.noun} with _id ${JSON.stringify(id)}`);
        return sendJson(res, 200, present(existing, scope));
      case 'PUT': {
        const body = await readJsonBody(scope);
        if (!isJsonObject(body)) throw badRequest(`the body must be a JSON object describing one ${o.noun}`);
        if (body._id !== undefined && body._id !== id) throw badRequest(`_id in the body (${JSON.stringify(body._id)}) differs from the one in the path`);
        const doc = await validated({ ...body, _id: id }, existing);
        const { created } = await o.store.put(doc);
        return sendJson(res, created ? 201 : 200, present(doc, scope));
      }
      case 'PATCH': {
        if (!existing) throw notFound(`no ${o.noun} with _id ${JSON.stringify(id)}`);
        const patch = await readJsonBody(scope);
        if (!isJsonObject(patch)) throw badRequest('a merge patch must be a JSON object (RFC 7396)');
        if (patch._id !== undefined && patch._id !== id) throw badRequest('_id cannot be changed by a patch');
        const merged = applyMergePatch(existing, patch) as Record<string, unknown>;
        const doc = await validated({ ...merged, _id: id }, existing);
        await o.store.put(doc);
        return sendJson(res, 200, present(doc, scope));
      }
      case 'DELETE':
        if (!(await o.store.delete(id))) throw notFound(`no ${o.noun} with _id ${JSON.stringify(id)}`);
        return sendNoContent(res);
      default:
        throw methodNotAllowed(['GET', 'PUT', 'PATCH', 'DELETE']);
    }
  };
}
