import { badRequest } from '../errors.js';

/**
 * A percent-encoded path segment (a document id, a key id) decoded, or 400 naming it: a
 * malformed escape such as `%E0%A4%A` is the client's mistake, not a URIError for a 500.
 */
export function decodePathSegment(raw: string, what: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    throw badRequest(`the ${what} in the path is not valid percent-encoding (${JSON.stringify(raw.slice(0, 200))}); encode it as UTF-8 with %XX escapes`);
  }
}

/**
 * Why a document id cannot be one path segment that every backend reads as that id, or undefined
 * (issue 34): the rules of the one canonical path (http/canonical-path.ts) applied to an id that
 * becomes a segment (a GraphQL mutation's `/{collection}/{id}`), so that the path a write is
 * authorized on is the path the backend acts on.
 * - `.` and `..` are dot segments: the backend would act on the collection or its parent (`/shop`);
 * - `;` starts path parameters, which Undertow (RESTHeart) cuts from the segment: `..;x` is `..`
 *   to it, `a;b` is `a`; sent encoded (%3B) it is the same to a backend that decodes first;
 * - `/` and `\` would move segment boundaries (refused encoded, as %2F and %5C, in a REST path);
 * - an empty id names the collection itself;
 * - `_` starts RESTHeart's reserved resources and ids (`_size`, `_meta`, `_null`, `_true`…) and
 *   `*` its bulk address: neither is a document.
 */
export function idSegmentProblem(id: string): string | undefined {
  if (id === '') return 'is empty, which names the collection itself';
  if (id === '.' || id === '..') return `is the dot segment "${id}", which the backend reads as the collection or its parent`;
  if (id.includes(';')) return 'holds ";", which starts path parameters the backend cuts from the id ("..;x" is "..")';
  if (id.includes('/') || id.includes('\\')) return 'holds "/" or "\\", which would change the path\'s segments';
  if (id.startsWith('_')) return 'starts with "_", which names the backend\'s reserved resources (_size, _meta, _null…)';
  if (id.startsWith('*')) return 'starts with "*", the backend\'s bulk address';
  return undefined;
}
