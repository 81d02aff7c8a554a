/**
 * What the response cache holds (response-cache.ts keeps them in one byte-bounded LRU): a
 * backend's answer (`CacheEntry`), the marker of an answer that says `Vary`, and a whole GraphQL
 * answer (`AnswerEntry`, SPEC §12 `descriptor.cache`, graphql/serve/answer-cache.ts), which
 * belongs to every collection its reads touched.
 */
import type { CacheScope } from './cache-scope.js';
import { storability } from './freshness.js';

export const ENTRY_OVERHEAD = 256;

export type Headers = Record<string, string | string[] | undefined>;

/** One stored answer: the backend's, as it came. */
export interface CacheEntry {
  readonly kind: 'entry';
  readonly status: number;
  /** The upstream's headers; a 304 that revalidates the entry updates them (RFC 9111 §4.3.4). */
  headers: Headers;
  readonly body: Buffer;
  /** When the answer was stored or last revalidated (ms, Date.now()). */
  storedAt: number;
  lifetimeMs: number;
  /** `no-cache` or a lifetime of 0: stored, but the backend is asked before every use. */
  revalidateEachUse: boolean;
  readonly etag: string | undefined;
  readonly rule: string;
  readonly scope: CacheScope;
  readonly generation: number;
  /** `cache.consistency: strong`: the collection's generations in Redis when the fill began. */
  readonly strong: string | null;
  readonly size: number;
}

/** Under the primary key of an answer that says `Vary`: which request headers pick its variant. */
export interface VaryMarker {
  readonly kind: 'vary';
  readonly vary: readonly string[];
  readonly rule: string;
  readonly scope: CacheScope;
  readonly generation: number;
  readonly size: number;
}

export interface AnswerDecision {
  readonly db: string;
  readonly collection: string;
  readonly aggregation?: string;
  readonly query: string;
  readonly fingerprint: string;
}

/**
 * A whole GraphQL answer (`descriptor.cache`): its serialized body, the scopes its reads touched
 * (a collection per find, the db per aggregation) with the sum of their generations when the
 * reads began, and the read decisions it was made under (re-decided for each caller it serves).
 */
export interface AnswerEntry {
  readonly kind: 'answer';
  readonly body: string;
  readonly storedAt: number;
  readonly lifetimeMs: number;
  /** `graphql:<uri>`. */
  readonly rule: string;
  readonly scopes: readonly CacheScope[];
  readonly generation: number;
  /** `cache.consistency: strong`: the scopes' generations in Redis when their reads began. */
  readonly strong: string | null;
  /** Each distinct read (the equivalent REST GET's collection, aggregation and query) and what the caller's permission said of it (filter, projection). */
  readonly decisions: readonly AnswerDecision[];
  readonly size: number;
}

/**
 * A 304 that revalidated `entry` (RFC 9111 §4.3.4): its headers replace the stored ones of the
 * same name, and the entry is fresh again for the lifetime they now give.
 */
export function refreshEntry(entry: CacheEntry, notModified: Headers, maxAgeSeconds: number, now = Date.now()): void {
  const headers: Headers = { ...entry.headers };
  for (const name in notModified) {
    if (name === 'content-length' || name === 'transfer-encoding' || name === 'connection') continue;
    if (notModified[name] !== undefined) headers[name] = notModified[name];
  }
  const verdict = storability(entry.status, headers, maxAgeSeconds, entry.status === 404);
  entry.headers = headers;
  entry.storedAt = now;
  entry.lifetimeMs = verdict.store ? verdict.lifetimeMs : 0;
  entry.revalidateEachUse = verdict.store ? verdict.revalidateEachUse : true;
}

export function headerBytes(headers: Headers): number {
  let n = 0;
  for (const name in headers) {
    const value = headers[name];
    n += name.length + (Array.isArray(value) ? value.join().length : (value?.length ?? 0));
  }
  return n;
}
