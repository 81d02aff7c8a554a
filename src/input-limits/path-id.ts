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
