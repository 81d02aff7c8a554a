/**
 * The one path every decision is taken on (issue 25): the route table, the backend-token guard,
 * the MCP sign-in challenge, the readFilter shapes, the ACL and webhook conditions, own routes'
 * ids and GraphQL uris. Requests are still forwarded exactly as received; only decisions use it.
 *
 * It is the path as the backend will read it, written back in one percent-encoding, so that two
 * targets the backend reads alike decide alike (`/%74oken`, `/%74%4Fken`… are `/token`):
 * - `;parameters` are cut from the last segment (Undertow, and so RESTHeart, reads the path up
 *   to the first `;`; servlet containers drop each segment's parameters). Parameters before the
 *   last segment are refused: there the two readings give different paths (`/token;x/y` is
 *   `/token` to Undertow and `/token/y` to Tomcat), and a proxy cannot know which one is behind it.
 * - repeated slashes are collapsed (`//token` is `/token` to most backends);
 * - percent-encodings are decoded once, as UTF-8, and re-encoded only where a character could
 *   not stand literally in a path (`%`, `;`, `?`, `#`, controls, spaces, non-ASCII), always in
 *   upper-case hex. A double encoding stays one level deep (`%2574oken` reads `%74oken`, which is
 *   what a backend that decodes once sees). Malformed escapes and invalid UTF-8 are refused;
 * - an encoded `/` or `\` (`%2F`, `%5C`) is refused: decoded, it would move segment boundaries.
 *   A raw `\` is refused the same way (issue 34): some backends read it as `/`, others as a
 *   character of the segment, so it is decided as its encoding is;
 * - a raw `#` is refused: RFC 9112 allows none in a request target, and a backend that parses the
 *   target as a URL would cut the path (and anything appended to the query) there. RequestScope
 *   refuses one in the query the same way.
 * - a target that is no path (`http://host/token`, which Undertow reads as `/token`; `*`) is refused;
 * - a trailing slash is kept (the backend sees it; the route table and the guards match on whole
 *   segments, so `/token/` is under `/token` for them), and dot segments are refused before this
 *   runs (`hasDotSegments`).
 *
 * Cost: a path with no `%`, `;`, `\`, `#` or `//` (nearly every request) is its own canonical
 * form, found with one scan and no allocation.
 */
export class PathProblem {
  constructor(readonly message: string) {}
}

/** The canonical form of a raw (still percent-encoded) path, or why it has none. */
export function canonicalPath(raw: string): string | PathProblem {
  const originForm = raw.charCodeAt(0) === 47; /* / */
  if (originForm && isPlain(raw)) return raw;
  // `GET http://host/token` (absolute form) is `/token` to Undertow: not forwarded undecided.
  if (!originForm) return new PathProblem('the request target must be a path starting with "/"; absolute URLs and "*" are not proxied');
  if (raw.includes('#')) return new PathProblem(RAW_HASH);
  if (raw.includes('\\')) return new PathProblem('the path has a raw "\\", which backends read as "/" or as a character, changing its segments; send the path without it');
  let path = raw;
  const semicolon = path.indexOf(';');
  if (semicolon !== -1) {
    if (path.indexOf('/', semicolon) !== -1)
      return new PathProblem('the path has ";" parameters before its last segment, which backends read differently; encode the ";" as %3B or put the parameters on the last segment');
    path = path.slice(0, semicolon);
  }
  if (path.includes('//')) path = path.replace(/\/{2,}/g, '/');
  if (!path.includes('%')) return path;
  if (/%(?:2f|5c)/i.test(path)) return new PathProblem('the path has an encoded "/" or "\\" (%2F, %5C), which would change its segments; send the path without it');
  let decoded: string;
  try {
    decoded = decodeURIComponent(path);
  } catch {
    return new PathProblem('the path has a malformed percent-encoding or one that is not UTF-8; encode "%" itself as %25');
  }
  return decoded.replace(MUST_ENCODE, encodeURIComponent);
}

/** No `%`, `;`, `\`, `#` and no `//`: the path is its own canonical form. One scan, no allocation. */
function isPlain(raw: string): boolean {
  let previous = 0;
  for (let i = 0; i < raw.length; i++) {
    const c = raw.charCodeAt(i);
    // % ; \ # and a second / in a row
    if (c === 37 || c === 59 || c === 92 || c === 35 || (c === 47 && previous === 47)) return false;
    previous = c;
  }
  return true;
}

/** The 400's message for a raw `#` anywhere in the target (the path here, the query in RequestScope). */
export const RAW_HASH = 'the request target has a raw "#", which HTTP does not allow in a request (RFC 9112 §3.2); encode it as %23';

/** What cannot stand literally in a path segment: `%`, `;`, `?`, `#`, and runs of controls, spaces and non-ASCII. */
const MUST_ENCODE = /[%;?#]|[^\x21-\x7e]+/g;
