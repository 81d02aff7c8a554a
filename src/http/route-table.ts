import type { ErrorFormat } from './respond.js';
import type { RequestScope, RouteKind } from './scope.js';

export interface OwnRoute {
  kind: RouteKind;
  /** Path prefix, matched on whole segments (`/keys` matches `/keys` and `/keys/x`, not `/keysx`). */
  prefix: string;
  /** Answered before authentication (health, metrics, OAuth metadata): never behind the ACL. */
  public?: boolean;
  /** Not seen by webhooks or recordings (SPEC §7.1: /_admin, /_health, /_metrics). */
  unobserved?: boolean;
  /**
   * How this route's errors are written, whichever stage refused (respond.ts sendError): GraphQL's
   * `{"errors": [...]}` on `/graphql/<uri>` (SPEC §15). Absent: Outrigger's (RESTHeart's) error body.
   */
  errorFormat?: ErrorFormat;
  handle(scope: RequestScope): Promise<void> | void;
}

/**
 * The one table of what Outrigger answers itself; everything else is proxied. Prefixes come
 * from `routes.*` in the config so a deployment can move any of them off a backend path.
 */
export class RouteTable {
  private readonly routes: OwnRoute[];

  constructor(routes: OwnRoute[]) {
    // Longest prefix first, so /_admin/webhooks can be its own route beside /_admin.
    this.routes = [...routes].sort((a, b) => b.prefix.length - a.prefix.length);
  }

  match(path: string): OwnRoute | undefined {
    for (const route of this.routes) {
      if (path === route.prefix) return route;
      if (path.startsWith(route.prefix) && (path.charCodeAt(route.prefix.length) === 47 /* / */ || route.prefix === '/')) return route;
    }
    return undefined;
  }

  list(): readonly OwnRoute[] {
    return this.routes;
  }
}

/**
 * Percent-encodings that can hide a dot segment: `%2e` (.), `%2f` (/), `%5c` (\\), `%3b` (;), and
 * `%25` so that a backend which decodes once more still sees no dot segment.
 */
const HIDING_ENCODINGS = /%(?:2e|2f|5c|3b|25)/gi;
const DECODED: Record<string, string> = { '2e': '.', '2f': '/', '5c': '\\', '3b': ';', '25': '%' };
/**
 * A segment that is `.` or `..`, alone or with path parameters after `;` (`..;`, `.;x`): servlet
 * containers (RESTHeart's Undertow, Tomcat) drop the parameters and then normalise the dots.
 */
const DOT_SEGMENT = /(?:^|[/\\])\.\.?(?:;[^/\\]*)?(?:[/\\]|$)/;

/**
 * `/a/./b`, `/a/../b`, `/a/..;/b`, `/a/.;x/b` and their percent-encoded forms (decoded up to
 * three times): an ACL on `/public` must not let `/public/../private` through.
 */
export function hasDotSegments(path: string): boolean {
  let decoded = path;
  for (let round = 0; round < 3 && decoded.includes('%'); round++) {
    const next = decoded.replace(HIDING_ENCODINGS, (m) => DECODED[m.slice(1).toLowerCase()]!);
    if (next === decoded) break;
    decoded = next;
  }
  return DOT_SEGMENT.test(decoded);
}
