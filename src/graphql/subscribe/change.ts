/**
 * What a change is (SPEC §6.5): a write Outrigger proxied to a collection that the backend
 * answered 2xx, described as `{db, collection, op, _id, document?}`. REST writes and the writes of
 * GraphQL mutations are classified here from the same parts (method, the path a client of
 * Outrigger addresses, the query, the status, `Location`, the bodies), so both roads publish the
 * same change. Bulk updates and deletes by filter (`/*?filter=`) carry no ids and are not changes.
 */
import type { ChangeOp } from '../document/subscriptions.js';
import type { BackendReader, RequestContext } from '../types.js';
import { canonicalKey } from '../values/ejson.js';
import { idFromSegment, lastSegment } from '../writes/answers.js';

export interface Change {
  readonly db: string;
  readonly collection: string;
  readonly op: ChangeOp;
  readonly _id: unknown;
  /**
   * The change's own state (SPEC §6.5, clarified 2026-12-06): an insert's or update's document as
   * the backend held it right after the write, read before the writer got its answer; a GraphQL
   * delete's document as read before deleting it. Never projected: each subscriber's own
   * readFilter and projectResponse decide on it. Absent when it was not captured (the read failed,
   * the document was gone or larger than `CARRIED_DOCUMENT_BYTES`): then each subscriber re-reads.
   */
  readonly document?: unknown;
  /**
   * An update's document as the backend held it just before the write, read before the write was
   * sent (`readBefore`), unprojected and bounded as `document` (SPEC §11.1: a change that takes a
   * document out of a reader's readFilter tells those who could read it). A delete carries its
   * state before as `document`. Absent when nobody was listening, or the read failed or found nothing.
   */
  readonly before?: unknown;
  /**
   * The document (and `before`) was read without backend identity headers (`graphql.backend.auth: service`, or
   * no identity the backend could tell apart), so the backend shows it alike to every subscriber
   * reading without them. Absent: read with the writer's identity, which the backend may show
   * more or less than another identity; such subscribers' own re-read then decides (seen.ts).
   */
  readonly shared?: true;
}

/** The largest document a change carries, as JSON: the feed's entries stay bounded (retention × this). */
export const CARRIED_DOCUMENT_BYTES = 16 * 1024;
/** Ids per capture read. */
const CAPTURE_BATCH = 100;
/** A capture read that takes longer than this is given up (the change is published without its state). */
const CAPTURE_TIMEOUT_MS = 5000;
/** The read of a document's state before a write holds the write back: given up sooner (the change then goes without `before`). */
export const BEFORE_TIMEOUT_MS = 1000;

/** A change as the feed hands it out: its position in the stream (the SSE `id:`). */
export interface FeedChange {
  readonly position: string;
  readonly change: Change;
}

/** The parts of a write that decide its changes. */
export interface WriteParts {
  readonly method: string;
  /** The path as a client of Outrigger addresses it (`/shop/orders/42`), percent-encoded. */
  readonly path: string;
  /** The raw query string, without `?`. */
  readonly query: string;
  readonly status: number;
  readonly location?: string | undefined;
  /** The request body's first non-blank byte: `[` marks a bulk insert. */
  readonly bulk: boolean;
  /** The response body of a bulk insert (its `links`), when it was kept. */
  readonly responseText?: () => string | undefined;
}

/** Where a path names a collection or one of its documents: built from `graphql.backend.collectionPath`. */
export type CollectionTarget = { db: string; collection: string; segment?: string };

/** `/{db}/{collection}` → a matcher of `/db/coll` and `/db/coll/<id>` (no deeper path). */
export function collectionPathMatcher(collectionPath: string): (path: string) => CollectionTarget | undefined {
  const order: Array<'db' | 'collection'> = [];
  const escaped = collectionPath
    .split(/(\{db\}|\{collection\})/)
    .map((part) => {
      if (part === '{db}' || part === '{collection}') {
        order.push(part === '{db}' ? 'db' : 'collection');
        return '([^/]+)';
      }
      return part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    })
    .join('');
  const re = new RegExp(`^${escaped.replace(/\/$/, '')}(?:/([^/]+))?/?$`);
  return (path) => {
    const m = re.exec(path);
    if (!m) return undefined;
    const out: Partial<Record<'db' | 'collection', string>> = {};
    try {
      const decode = (part: string) => (part.includes('%') ? decodeURIComponent(part) : part);
      order.forEach((name, i) => (out[name] = decode(m[i + 1]!)));
      const segment = m[order.length + 1];
      if (out.db === undefined || out.collection === undefined) return undefined;
      // RESTHeart's reserved resources (`_meta`, `_aggrs`, `_indexes`, `_size`...) are not documents.
      if (out.collection.startsWith('_') || (segment !== undefined && segment.startsWith('_'))) return undefined;
      return { db: out.db, collection: out.collection, ...(segment !== undefined ? { segment: decode(segment) } : {}) };
    } catch {
      return undefined;
    }
  };
}

/** Is this request a candidate for a change (a write method), before anything else is looked at? */
export function isWriteMethod(method: string): boolean {
  return method === 'POST' || method === 'PUT' || method === 'PATCH' || method === 'DELETE';
}

/** The changes a finished write made; empty when it made none a subscriber could see. */
export function changesOf(target: CollectionTarget, w: WriteParts): Change[] {
  if (w.status < 200 || w.status > 299) return [];
  const { db, collection, segment } = target;
  const idType = new URLSearchParams(w.query).get('id_type');
  if (segment === undefined) {
    if (w.method !== 'POST') return [];
    if (!w.bulk) {
      const last = w.location ? lastSegment(w.location) : undefined;
      return last ? [{ db, collection, op: 'insert', _id: idFromSegment(last.segment, last.idType) }] : [];
    }
    return bulkLinks(w.responseText?.())
      .map((link) => {
        const last = lastSegment(link);
        return { db, collection, op: 'insert' as const, _id: last ? idFromSegment(last.segment, last.idType) : undefined };
      })
      .filter((c) => c._id !== undefined);
  }
  if (segment === '*') return []; // bulk by filter: no ids (documented)
  const _id = idFromSegment(segment, idType);
  if (w.method === 'DELETE') return [{ db, collection, op: 'delete', _id }];
  if (w.method === 'PUT' || w.method === 'PATCH') return [{ db, collection, op: w.status === 201 ? 'insert' : 'update', _id }];
  return [];
}

function bulkLinks(text: string | undefined): string[] {
  if (!text) return [];
  try {
    const body = JSON.parse(text) as { links?: unknown };
    return Array.isArray(body.links) ? body.links.filter((l): l is string => typeof l === 'string') : [];
  } catch {
    return [];
  }
}

/** Bounded: a larger document is not carried (an insert's or update's change is then re-read by each subscriber; a delete's reaches only `_id` finds). */
export function carriable(doc: unknown): boolean {
  return JSON.stringify(doc).length <= CARRIED_DOCUMENT_BYTES;
}

/** Does this context read the backend without identity headers (as every such subscriber does)? */
export function readsShared(ctx: RequestContext): boolean {
  const headers = ctx.backendHeaders;
  if (!headers) return true;
  for (const _ in headers) return false;
  return true;
}

/**
 * Each insert's and update's document as the backend holds it now, read by `_id` (one `$in` read)
 * with the writer's backend identity and no readFilter or projection: called right after the write,
 * before the writer's answer, so a writer's next write cannot come first. Deletes, changes that
 * already carry a document, documents not found and documents over `CARRIED_DOCUMENT_BYTES` are
 * left as they are (published without state, re-read by each subscriber). Never rejects: a failed
 * read publishes the changes without state.
 */
export async function captureStates(reader: BackendReader, ctx: RequestContext, changes: readonly Change[], onError: (error: unknown, what: string) => void): Promise<Change[]> {
  const wanted = changes.filter((c) => c.op !== 'delete' && c.document === undefined);
  if (wanted.length === 0) return [...changes];
  const { db, collection } = wanted[0]!;
  const ids = [...new Map(wanted.map((c) => [canonicalKey(c._id), c._id])).values()];
  let docs: unknown[];
  try {
    const signal = AbortSignal.timeout(CAPTURE_TIMEOUT_MS);
    // A bulk insert's ids in reads of CAPTURE_BATCH (the URL stays a few KiB; RESTHeart's pagesize allows 1,000).
    const reads: Array<Promise<unknown[]>> = [];
    for (let at = 0; at < ids.length; at += CAPTURE_BATCH) {
      const chunk = ids.slice(at, at + CAPTURE_BATCH);
      const filter = chunk.length === 1 ? { _id: chunk[0] } : { _id: { $in: chunk } };
      reads.push(reader.find({ db, collection, filter, page: 1, pagesize: chunk.length }, { ...ctx, signal }));
    }
    docs = (await Promise.all(reads)).flat();
  } catch (error) {
    onError(error, 'reading the state of a change for subscribers');
    return [...changes];
  }
  const byId = new Map<string, unknown>();
  for (const doc of docs) {
    const id = doc !== null && typeof doc === 'object' ? (doc as { _id?: unknown })._id : undefined;
    if (id === undefined) continue;
    if (carriable(doc)) byId.set(canonicalKey(id), doc);
  }
  const shared = readsShared(ctx);
  return changes.map((c) => {
    if (c.op === 'delete' || c.document !== undefined) return c;
    const doc = byId.get(canonicalKey(c._id));
    return doc === undefined ? c : { ...c, document: doc, ...(shared ? { shared: true as const } : {}) };
  });
}

/** The document one write addresses (`PUT`, `PATCH` or `DELETE` of `/db/coll/<id>`), whose state before it is worth reading; undefined for any other write. */
export function documentWritten(target: CollectionTarget, method: string, query: string): { db: string; collection: string; _id: unknown } | undefined {
  const { segment } = target;
  if (segment === undefined || segment === '*' || (method !== 'PUT' && method !== 'PATCH' && method !== 'DELETE')) return undefined;
  const idType = query === '' ? null : new URLSearchParams(query).get('id_type');
  return { db: target.db, collection: target.collection, _id: idFromSegment(segment, idType) };
}

/**
 * The document as the backend holds it before a write of it is sent: read by `_id` with the
 * writer's backend identity (as `captureStates` reads its state after), no readFilter or
 * projection, within BEFORE_TIMEOUT_MS. Undefined when not found, over `CARRIED_DOCUMENT_BYTES`, or
 * when the read failed (the change then goes without it, as before this existed). Never rejects.
 */
export async function readBefore(reader: BackendReader, ctx: RequestContext, doc: { db: string; collection: string; _id: unknown }, onError: (error: unknown, what: string) => void): Promise<unknown> {
  try {
    const signal = AbortSignal.timeout(BEFORE_TIMEOUT_MS);
    const [found] = await reader.find({ db: doc.db, collection: doc.collection, filter: { _id: doc._id }, page: 1, pagesize: 1 }, { ...ctx, signal });
    return found !== null && typeof found === 'object' && carriable(found) ? found : undefined;
  } catch (error) {
    onError(error, 'reading the state of a document before its write, for listeners');
    return undefined;
  }
}

/** The changes with the state read before their write: a delete's as its `document` (unless it has one), an update's as `before`. */
export function withBefore(changes: readonly Change[], before: unknown, shared: boolean): Change[] {
  if (before === undefined || before === null) return [...changes];
  const flag = shared ? { shared: true as const } : {};
  return changes.map((c) => {
    if (c.op === 'delete') return c.document === undefined ? { ...c, document: before, ...flag } : c;
    return c.op === 'update' ? { ...c, before, ...flag } : c;
  });
}
