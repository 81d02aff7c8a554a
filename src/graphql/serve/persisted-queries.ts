/**
 * Apollo's automatic persisted queries (SPEC §15), as Apollo Server answers them so Apollo
 * Client's persisted-query link works unchanged: `extensions.persistedQuery {version: 1,
 * sha256Hash}` on POST or GET.
 * - The hash alone: the registered text runs; unknown → 200 `PersistedQueryNotFound`
 *   (`PERSISTED_QUERY_NOT_FOUND`), the answer the link retries with the text on.
 * - The hash and the text: sha256(text) must be the hash (else 400 `PERSISTED_QUERY_HASH_MISMATCH`);
 *   the text is registered once it has parsed and validated (execute.ts), so only documents the
 *   app can run take room.
 * - `version` other than 1, or a hash that is not 64 hex digits → 400.
 * Apps with trusted documents are left to document/trusted/: their list is the only store, and a
 * text not on it is refused, registration included.
 */
import type { CompiledApp } from '../compile/compile-app.js';
import { sha256Hex } from '../document/trusted/documents.js';
import { isPlainObject } from '../../util/objects.js';
import type { PersistedQueryStore } from './persisted-query-store.js';

/** What the step decided: run this text (and register it when `register`), or answer at once. */
export type PersistedQueryStep =
  | { readonly kind: 'none' }
  | { readonly kind: 'run'; readonly query: string; readonly register?: () => Promise<void> }
  | { readonly kind: 'answer'; readonly status: number; readonly message: string; readonly code: string };

const HEX64 = /^[0-9a-fA-F]{64}$/;
const NONE: PersistedQueryStep = { kind: 'none' };

/** How the step reaches the store, and where a failed registration is told. */
export interface PersistedQueries {
  readonly store: PersistedQueryStore;
  readonly onError: (error: unknown, what: string) => void;
}

export async function persistedQueryStep(
  app: CompiledApp,
  params: { readonly query?: string; readonly extensions?: Readonly<Record<string, unknown>> | null },
  persisted: PersistedQueries | undefined,
): Promise<PersistedQueryStep> {
  const pq = params.extensions?.persistedQuery;
  if (pq === undefined || app.trusted !== undefined) return NONE;
  if (!isPlainObject(pq)) return bad('extensions.persistedQuery must be an object {"version": 1, "sha256Hash": "<64 hex digits>"}', 'PERSISTED_QUERY_INVALID');
  if (pq.version !== 1) {
    return bad(`extensions.persistedQuery.version ${JSON.stringify(pq.version ?? null)} is not supported; automatic persisted queries speak version 1`, 'PERSISTED_QUERY_VERSION_NOT_SUPPORTED');
  }
  const raw = pq.sha256Hash;
  if (typeof raw !== 'string' || !HEX64.test(raw)) {
    return bad('extensions.persistedQuery.sha256Hash must be the sha256 of the query text as 64 hex digits', 'PERSISTED_QUERY_INVALID');
  }
  const hash = raw.toLowerCase();
  const appId = app.id ?? app.uri;
  if (params.query === undefined) {
    // Without a store (the engine used alone) nothing is ever registered: the link falls back to texts.
    if (persisted === undefined) return { kind: 'answer', status: 200, message: 'PersistedQueryNotSupported', code: 'PERSISTED_QUERY_NOT_SUPPORTED' };
    let text: string | undefined;
    try {
      text = await persisted.store.get(appId, hash);
    } catch (error) {
      // Redis out of reach: the client's retry with the text still runs (unregistered).
      persisted.onError(error, 'reading a persisted query');
    }
    return text === undefined ? { kind: 'answer', status: 200, message: 'PersistedQueryNotFound', code: 'PERSISTED_QUERY_NOT_FOUND' } : { kind: 'run', query: text };
  }
  const actual = sha256Hex(params.query);
  if (actual !== hash) {
    return bad(
      `the query's sha256 is ${actual}, not the extensions.persistedQuery.sha256Hash sent (${hash}); hash the exact query text (UTF-8) or send the query without the extension`,
      'PERSISTED_QUERY_HASH_MISMATCH',
    );
  }
  if (persisted === undefined) return { kind: 'run', query: params.query };
  const query = params.query;
  return {
    kind: 'run',
    query,
    register: async () => {
      try {
        await persisted.store.register(appId, hash, query);
      } catch (error) {
        persisted.onError(error, 'registering a persisted query');
      }
    },
  };
}

function bad(message: string, code: string): PersistedQueryStep {
  return { kind: 'answer', status: 400, message, code };
}
