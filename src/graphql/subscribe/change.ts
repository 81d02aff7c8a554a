/**
 * What a change is (SPEC §6.5): a write Outrigger proxied to a collection that the backend
 * answered 2xx, described as `{db, collection, op, _id, document?}`. REST writes and the writes of
 * GraphQL mutations are classified here from the same parts (method, the path a client of
 * Outrigger addresses, the query, the status, `Location`, the bodies), so both roads publish the
 * same change. Bulk updates and deletes by filter (`/*?filter=`) carry no ids and are not changes.
 */
import type { ChangeOp } from '../document/subscriptions.js';
import { idFromSegment, lastSegment } from '../writes/answers.js';

export interface Change {
  readonly db: string;
  readonly collection: string;
  readonly op: ChangeOp;
  readonly _id: unknown;
  /** Only for a GraphQL delete, which read the document before deleting it (SPEC §6.4). */
  readonly document?: unknown;
}

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
    return bulkLinks(w.responseText?.()).map((link) => {
      const last = lastSegment(link);
      return { db, collection, op: 'insert' as const, _id: last ? idFromSegment(last.segment, last.idType) : undefined };
    }).filter((c) => c._id !== undefined);
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
