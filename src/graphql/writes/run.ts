/**
 * One mutation field, run (SPEC §6.4): its mapping becomes the backend write a REST client would
 * send, decided first by the ACL as that REST request (FORBIDDEN and no backend request when
 * refused), sent with the caller's identity, observed for the webhooks, and answered by the
 * field's declared type: the document read back (through the read policy: readFilter and
 * projectResponse), the id(s), a count or a boolean.
 */
import { GraphQLError, type GraphQLField } from 'graphql';
import { OutriggerError } from '../../errors.js';
import { idSegmentProblem } from '../../input-limits/path-id.js';
import type { RequestState } from '../reads/request-state.js';
import type { WriteKind } from '../document/mutations.js';
import type { BackendWrite, BackendWriteResponse } from '../types.js';
import { bulkResult, idAsString, idFromSegment, lastSegment, partialWriteError, writeError } from './answers.js';
import { TargetRefusal, writeValue, type Caller } from './values.js';
import { isJsonObject } from '../../util/objects.js';

export interface WriteMapping {
  readonly db?: string;
  readonly collection: string;
  readonly insert?: unknown;
  readonly update?: Record<string, unknown>;
  readonly find?: Record<string, unknown>;
  readonly many?: boolean;
}

export interface CompiledWrite {
  readonly db: string;
  readonly collection: string;
  readonly kind: WriteKind;
  readonly form: 'object' | 'id' | 'ids' | 'count' | 'boolean';
  readonly mapping: WriteMapping;
}

const HEX24 = /^[0-9a-fA-F]{24}$/;
/** A write's `find`: an explicit null for an argument is refused as an omitted one is (it would widen the filter). */
const FIND = { nullIsMissing: true } as const;

/** Runs one mutation field; resolves to its value or throws a field error. */
export async function runWrite(w: CompiledWrite, args: Readonly<Record<string, unknown>>, state: RequestState, field: GraphQLField<unknown, unknown>): Promise<unknown> {
  const p = state.ctx.principal;
  const caller: Caller = { id: p?.id ?? null, roles: p?.roles ?? [] };
  const call: WriteCall = { w, args, caller, state, what: `${w.db}/${w.collection}` };
  switch (w.kind) {
    case 'insert':
      return insertOne(call, field);
    case 'insertMany':
      return insertMany(call);
    case 'update':
    case 'delete':
      return writeDocument(call);
    case 'updateMany':
    case 'deleteMany':
      return writeMany(call);
  }
}

/** One field's write as its kind runs it: the write, its arguments, who asks, the request, `db/collection` for messages. */
interface WriteCall {
  readonly w: CompiledWrite;
  readonly args: Readonly<Record<string, unknown>>;
  readonly caller: Caller;
  readonly state: RequestState;
  readonly what: string;
}

async function insertOne(call: WriteCall, field: GraphQLField<unknown, unknown>): Promise<unknown> {
  const { w, args, caller, state, what } = call;
  const doc = writeValue(w.mapping.insert, args, caller);
  if (!isJsonObject(doc)) throw new GraphQLError(`the document ${field.name} inserts must be an object`, { extensions: { code: 'BAD_USER_INPUT' } });
  // Its _id becomes the path of the read-back and of every later write: the same rules now.
  if (typeof doc._id === 'string') documentTarget(doc._id);
  const response = await send(state, { method: 'POST', db: w.db, collection: w.collection, body: doc });
  if (response.status !== 201 && response.status !== 200) throw writeError(`an insert into ${what}`, response);
  const location = response.headers.location ? lastSegment(response.headers.location) : undefined;
  const id = doc._id !== undefined ? doc._id : location ? idFromSegment(location.segment, location.idType) : undefined;
  if (id === undefined) throw new GraphQLError(`the backend stored the document in ${what} but named no Location for it`, { extensions: { code: 'BACKEND_ERROR' } });
  if (w.form === 'id') return idAsString(id);
  return readBack(state, w, id, true);
}

async function insertMany(call: WriteCall): Promise<unknown> {
  const { w, args, caller, state, what } = call;
  const docs = writeValue(w.mapping.insert, args, caller);
  if (!Array.isArray(docs) || docs.some((d) => !isJsonObject(d))) {
    throw new GraphQLError(`a bulk insert into ${what} needs a list of documents`, { extensions: { code: 'BAD_USER_INPUT' } });
  }
  if (docs.length === 0) return w.form === 'count' ? 0 : [];
  const response = await send(state, { method: 'POST', db: w.db, collection: w.collection, body: docs });
  const result = response.status === 200 || response.status === 207 ? bulkResult(response.body) : undefined;
  if (!result) throw writeError(`a bulk insert into ${what}`, response);
  if (response.status === 207 || result.errors.length > 0) throw partialWriteError(`a bulk insert into ${what}`, result, response.status);
  if (w.form === 'count') return result.inserted;
  return result.links.map((l) => {
    const last = lastSegment(l);
    return last ? idAsString(idFromSegment(last.segment, last.idType)) : null;
  });
}

/** An update or delete of one document (by `_id`, with the rest of the find as a filter). */
async function writeDocument(call: WriteCall): Promise<unknown> {
  const { w, args, caller, state, what } = call;
  const find = writeValue(w.mapping.find, args, caller, FIND) as Record<string, unknown>;
  const { _id: id, ...rest } = find;
  const target = documentTarget(id);
  const filter = Object.keys(rest).length > 0 ? rest : undefined;
  const readKey = { _id: target.filterId, ...(filter ?? {}) };
  let before: unknown = null;
  /** The document before a delete as read (readFilter applied, not projectResponse): its change's state (SPEC §6.5). */
  let unprojected: unknown = null;
  if (w.form === 'object') {
    // The result is the document: the caller's read permission is checked before any write.
    const read = { db: w.db, collection: w.collection, filter: readKey, sort: { _id: 1 }, page: 1, pagesize: 1 };
    const decision = await state.decideRead(read);
    if (!decision.allow) {
      throw new GraphQLError(`${decision.message ?? `you may not read ${what}`}; this mutation returns the document, so it needs the read permission too`, { extensions: { code: 'FORBIDDEN' } });
    }
    if (w.kind === 'delete') {
      unprojected = await readFirst(state, w, target.filterId, filter);
      before = unprojected === null ? null : state.presentOne(unprojected);
    }
  }
  const write: BackendWrite =
    w.kind === 'update'
      ? {
          method: 'PATCH',
          db: w.db,
          collection: w.collection,
          id: target.segment,
          ...(target.idType ? { idType: target.idType } : {}),
          ...(filter ? { filter } : {}),
          body: writeValue(w.mapping.update, args, caller),
        }
      : { method: 'DELETE', db: w.db, collection: w.collection, id: target.segment, ...(target.idType ? { idType: target.idType } : {}), ...(filter ? { filter } : {}) };
  const response = await send(state, write, unprojected);
  if (response.status === 404) return w.form === 'boolean' ? false : null;
  if (response.status < 200 || response.status > 299) throw writeError(`${w.kind === 'update' ? 'an update' : 'a delete'} of a document of ${what}`, response);
  if (w.form === 'boolean') return true;
  // The document after the update, by _id alone: the update may have changed what `filter` looked at.
  return w.kind === 'delete' ? before : readBack(state, w, target.filterId, false);
}

/** A bulk update or delete by filter. */
async function writeMany(call: WriteCall): Promise<unknown> {
  const { w, args, caller, state, what } = call;
  const filter = writeValue(w.mapping.find, args, caller, FIND) as Record<string, unknown>;
  if (!isJsonObject(filter)) throw new GraphQLError(`a bulk write of ${what} needs its filter as an object`, { extensions: { code: 'BAD_USER_INPUT' } });
  const update = w.kind === 'updateMany';
  const response = await send(state, {
    method: update ? 'PATCH' : 'DELETE',
    db: w.db,
    collection: w.collection,
    id: '*',
    filter,
    ...(update ? { body: writeValue(w.mapping.update, args, caller) } : {}),
  });
  const result = response.status === 200 || response.status === 207 ? bulkResult(response.body) : undefined;
  const label = `a bulk ${update ? 'update' : 'delete'} of ${what}`;
  if (!result) throw writeError(label, response);
  if (response.status === 207 || result.errors.length > 0) throw partialWriteError(label, result, response.status);
  return update ? result.modified : result.deleted;
}

/** Who the caller is does not change a target refusal; `@user.id` is given a stand-in while planning. */
const PLANNING: Caller = { id: 'planning', roles: [] };

/**
 * What `runWrite` would refuse about the path or filter of this write, known from its arguments
 * alone (plan.ts asks before the first write of the mutation): an id that is no plain path
 * segment, a null `$arg` in `find`. Other problems (an omitted argument) stay the field's error.
 */
export function targetRefusal(w: CompiledWrite, args: Readonly<Record<string, unknown>>): GraphQLError | undefined {
  try {
    if (w.kind === 'insert') {
      const doc = writeValue(w.mapping.insert, args, PLANNING);
      if (isJsonObject(doc) && typeof doc._id === 'string') documentTarget(doc._id);
    } else if (w.kind !== 'insertMany') {
      const find = writeValue(w.mapping.find, args, PLANNING, FIND);
      if ((w.kind === 'update' || w.kind === 'delete') && isJsonObject(find) && typeof find._id === 'string') documentTarget(find._id);
    }
  } catch (error) {
    if (error instanceof TargetRefusal) return error;
  }
  return undefined;
}

/** How a document's `_id` is addressed: its path segment (RESTHeart's STRING_OID rule), and as a filter value. */
function documentTarget(id: unknown): { segment: string; idType?: 'STRING' | 'NUMBER'; filterId: unknown } {
  if (typeof id === 'string') {
    // The id becomes a path segment: the canonical-path rules of a REST path (issue 34), so the
    // write policy decides on the path the backend acts on (no "..", ".", "..;x", "/", "_…", "*").
    const problem = idSegmentProblem(id);
    if (problem !== undefined)
      throw new TargetRefusal(`the _id this mutation writes ${problem}; it must be an ObjectId, a string that is one plain path segment, or a number`, { extensions: { code: 'BAD_USER_INPUT' } });
    // A 24-hex string is an ObjectId to RESTHeart, as in a REST client's /orders/<hex>.
    return { segment: id, filterId: HEX24.test(id) ? { $oid: id.toLowerCase() } : id };
  }
  if (typeof id === 'number' && Number.isFinite(id)) return { segment: String(id), idType: 'NUMBER', filterId: id };
  if (isJsonObject(id) && typeof id.$oid === 'string' && HEX24.test(id.$oid) && Object.keys(id).length === 1) return { segment: id.$oid.toLowerCase(), filterId: id };
  throw new GraphQLError('the _id this mutation writes must be an ObjectId, a string (not starting with "_" and not "*") or a number', { extensions: { code: 'BAD_USER_INPUT' } });
}

/** The document by `_id` as the caller may read it: through the read policy and its projection; null when hidden. */
async function readBack(state: RequestState, w: CompiledWrite, id: unknown, nullWhenRefused: boolean): Promise<unknown> {
  try {
    const doc = await readFirst(state, w, id);
    return doc === null ? null : state.presentOne(doc);
  } catch (error) {
    if (nullWhenRefused && error instanceof GraphQLError && error.extensions.code === 'FORBIDDEN') return null;
    throw error;
  }
}

/** The document by `_id` (and the delete's extra `find` keys) under the caller's readFilter, not yet projected; null when none. */
async function readFirst(state: RequestState, w: CompiledWrite, id: unknown, filter?: Record<string, unknown>): Promise<unknown> {
  const docs = await state.read({ db: w.db, collection: w.collection, filter: { _id: id, ...(filter ?? {}) }, sort: { _id: 1 }, page: 1, pagesize: 1 });
  return docs.length > 0 ? docs[0] : null;
}

/**
 * One backend write: counted, decided by the write policy, sent, and observed. `before`: a
 * delete's document as read first, unprojected (its subscription change's state, SPEC §6.5);
 * otherwise `beforeWrite` may read a single document's state first (SPEC §11.1). The observer
 * may make the answer wait (subscriptions read the written document back first).
 */
async function send(state: RequestState, write: BackendWrite, before?: unknown): Promise<BackendWriteResponse> {
  const { writer, writePolicy, onWrite, limits } = state.settings;
  if (!writer) throw new GraphQLError('this server has no backend to write to (graphql.backend.url)', { extensions: { code: 'BACKEND_UNAVAILABLE' } });
  const { path, query } = writer.target(write);
  if (writePolicy) {
    const decision = writePolicy({ method: write.method, path, query, body: write.body }, state.ctx);
    if (!decision.allow) throw new GraphQLError(decision.message, { extensions: { code: 'FORBIDDEN' } });
  }
  if (state.writes >= limits.maxBackendWrites) {
    throw new GraphQLError(`this mutation needs more than ${limits.maxBackendWrites} backend writes (graphql.maxBackendWrites)`, { extensions: { code: 'TOO_MANY_BACKEND_WRITES' } });
  }
  state.writes++;
  // A single document's state before the write, when a delete did not read it already and someone listens to its collection.
  const prior = before ?? (write.id !== undefined && write.id !== '*' ? await state.settings.beforeWrite?.({ method: write.method, path, query }, state.ctx) : undefined);
  let response: BackendWriteResponse | undefined;
  let failure: unknown;
  try {
    response = await writer.send(write, state.ctx);
  } catch (error) {
    failure = error;
  }
  const observed = onWrite?.(
    {
      method: write.method,
      path,
      query,
      body: write.body,
      response,
      operationName: state.operationName,
      app: state.settings.appUri ?? '',
      ...(prior !== undefined && prior !== null ? { before: prior } : {}),
    },
    state.ctx,
  );
  if (observed) await observed.catch(() => undefined);
  if (response) return response;
  if (failure instanceof OutriggerError) throw new GraphQLError(failure.message, { originalError: failure, extensions: { code: failure.code } });
  throw failure;
}
