/**
 * Trusted documents (persisted queries): an app may list the only operations it runs, as full
 * query texts and/or as `sha256:<hex>` hashes of texts. A client then sends either a listed text,
 * a text whose hash is listed, or only the hash of a listed text (`documentId: "sha256:<hex>"` as
 * in the GraphQL-over-HTTP persisted-documents proposal, or Apollo's
 * `extensions.persistedQuery.sha256Hash`). Anything else is refused before it is parsed.
 */
import { createHash } from 'node:crypto';

const HASH = /^sha256:([0-9a-f]{64})$/;

export interface TrustedDocuments {
  /** sha256 hex → the text, when the app listed the text. */
  readonly texts: ReadonlyMap<string, string>;
  /** Every trusted sha256 hex (listed hashes and the hashes of listed texts). */
  readonly hashes: ReadonlySet<string>;
}

export function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/** Problems of a descriptor's `trustedDocuments` value (each prefixed with `path`). */
export function checkTrustedDocuments(path: string, value: unknown, problems: string[]): void {
  if (!Array.isArray(value) || value.length === 0) {
    problems.push(`${path} must be a non-empty array of query texts and/or "sha256:<64 hex digits>" hashes`);
    return;
  }
  value.forEach((item, i) => {
    if (typeof item !== 'string' || item.trim() === '') problems.push(`${path}.${i} must be a query text or "sha256:<64 hex digits>"`);
    else if (item.startsWith('sha256:') && !HASH.test(item)) problems.push(`${path}.${i} must be "sha256:" followed by 64 lower-case hex digits`);
  });
}

export function compileTrustedDocuments(list: readonly string[] | undefined): TrustedDocuments | undefined {
  if (!list) return undefined;
  const texts = new Map<string, string>();
  const hashes = new Set<string>();
  for (const item of list) {
    const m = HASH.exec(item);
    if (m) hashes.add(m[1] as string);
    else {
      const h = sha256Hex(item);
      texts.set(h, item);
      hashes.add(h);
    }
  }
  return { texts, hashes };
}

export type TrustedLookup = { ok: true; query: string } | { ok: false; message: string; code: string };

/**
 * The query to run: the client's text when it is trusted, or the listed text its hash names.
 * `trusted` undefined (no list) lets every query through; a hash is then refused (nothing is stored).
 */
export function resolveTrusted(trusted: TrustedDocuments | undefined, query: string | undefined, documentId: string | undefined): TrustedLookup {
  if (documentId !== undefined) {
    const m = HASH.exec(documentId);
    if (!m) return { ok: false, code: 'PERSISTED_QUERY_NOT_SUPPORTED', message: `documentId must be "sha256:<64 hex digits>" (got ${JSON.stringify(documentId.slice(0, 80))})` };
    const hex = m[1] as string;
    if (query !== undefined) {
      if (sha256Hex(query) !== hex) return { ok: false, code: 'BAD_REQUEST', message: 'the query does not match its sha256 hash' };
    } else {
      const text = trusted?.texts.get(hex);
      if (text === undefined) {
        return { ok: false, code: 'PERSISTED_QUERY_NOT_FOUND', message: `no trusted document of this app has the hash sha256:${hex}; send the query text` };
      }
      return { ok: true, query: text };
    }
  }
  if (query === undefined) return { ok: false, code: 'BAD_REQUEST', message: 'the "query" parameter is missing' };
  if (trusted && !trusted.hashes.has(sha256Hex(query))) {
    return { ok: false, code: 'UNTRUSTED_DOCUMENT', message: 'this app runs only its trusted documents, and this query is not one of them' };
  }
  return { ok: true, query };
}
