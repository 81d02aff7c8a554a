/**
 * RFC 9111 as a shared cache (SPEC §12 "The backend's word is stricter than a rule, never
 * looser"): whether an answer may be stored, and for how long it is fresh. The rule's
 * `maxAgeSeconds` stands for the `s-maxage` the backend did not send (RESTHeart sends none);
 * what the backend does say wins where it is stricter.
 */

type Headers = Record<string, string | string[] | undefined>;

/** Cache-Control directives, lowercase names; a directive without a value is `true`. */
export function cacheControl(value: string | string[] | undefined): Map<string, string | true> {
  const out = new Map<string, string | true>();
  if (value === undefined) return out;
  for (const part of (Array.isArray(value) ? value.join(',') : value).split(',')) {
    const eq = part.indexOf('=');
    const name = (eq === -1 ? part : part.slice(0, eq)).trim().toLowerCase();
    if (!name) continue;
    const raw = eq === -1 ? true : part.slice(eq + 1).trim();
    out.set(name, typeof raw === 'string' && raw.startsWith('"') && raw.endsWith('"') && raw.length >= 2 ? raw.slice(1, -1) : raw);
  }
  return out;
}

/** A delta-seconds value (RFC 9111 §1.2.2), or undefined when it is not one. */
function seconds(value: string | true | undefined): number | undefined {
  if (typeof value !== 'string' || !/^\d+$/.test(value)) return undefined;
  return Math.min(Number(value), 2 ** 31);
}

function one(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

export type Storability =
  { readonly store: false; readonly reason: string } | { readonly store: true; readonly lifetimeMs: number; readonly revalidateEachUse: boolean; readonly vary: readonly string[] };

/**
 * May this answer be stored, and its freshness lifetime (RFC 9111 §3, §4.2.1). `single`: the
 * read names one document, whose 404 is an answer worth keeping (a list's 404 is not).
 */
export function storability(status: number, headers: Headers, maxAgeSeconds: number, single: boolean, now = Date.now()): Storability {
  if (status !== 200 && !(status === 404 && single)) return { store: false, reason: `status ${status}` };
  if (headers['set-cookie'] !== undefined) return { store: false, reason: 'set-cookie' };
  const cc = cacheControl(headers['cache-control']);
  if (cc.has('no-store')) return { store: false, reason: 'no-store' };
  if (cc.has('private')) return { store: false, reason: 'private' };
  const vary = varyNames(headers.vary);
  if (vary === '*') return { store: false, reason: 'vary-star' };
  let lifetime = maxAgeSeconds;
  const stated = seconds(cc.get('s-maxage')) ?? seconds(cc.get('max-age')) ?? expiresIn(headers, now);
  if (stated !== undefined && stated < lifetime) lifetime = stated;
  // An answer already aged upstream (another cache in between) has that much less left.
  const age = seconds(one(headers.age));
  if (age !== undefined) lifetime = Math.max(0, lifetime - age);
  const revalidateEachUse = cc.has('no-cache') || lifetime === 0;
  return { store: true, lifetimeMs: lifetime * 1000, revalidateEachUse, vary };
}

/** Expires relative to the answer's Date (RFC 9111 §4.2.1); an invalid date means already expired. */
function expiresIn(headers: Headers, now: number): number | undefined {
  const expires = one(headers.expires);
  if (expires === undefined) return undefined;
  const at = Date.parse(expires);
  if (Number.isNaN(at)) return 0;
  const date = Date.parse(one(headers.date) ?? '');
  return Math.max(0, Math.floor((at - (Number.isNaN(date) ? now : date)) / 1000));
}

/** The request headers an answer varies by (lowercase, sorted), or `*`. */
export function varyNames(value: string | string[] | undefined): readonly string[] | '*' {
  if (value === undefined) return [];
  const names = new Set<string>();
  for (const part of (Array.isArray(value) ? value.join(',') : value).split(',')) {
    const name = part.trim().toLowerCase();
    if (name === '*') return '*';
    if (name) names.add(name);
  }
  return [...names].sort();
}

/** What the client's own Cache-Control (and Pragma) asks of the cache (SPEC §12). */
export type ClientDirective = 'use' | 'revalidate' | 'bypass';

export function clientDirective(cacheControlHeader: string | undefined, pragma: string | undefined): ClientDirective {
  if (cacheControlHeader === undefined) return pragma !== undefined && /no-cache/i.test(pragma) ? 'revalidate' : 'use';
  const cc = cacheControl(cacheControlHeader);
  if (cc.has('no-store')) return 'bypass';
  if (cc.has('no-cache') || seconds(cc.get('max-age')) === 0) return 'revalidate';
  return 'use';
}

/** Does an If-None-Match list match this ETag (weak comparison, RFC 9110 §13.1.2)? */
export function etagMatches(ifNoneMatch: string, etag: string): boolean {
  if (ifNoneMatch.trim() === '*') return true;
  const bare = (tag: string) => tag.trim().replace(/^W\//, '');
  const want = bare(etag);
  return ifNoneMatch.split(',').some((tag) => bare(tag) === want);
}
