import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';

/** RFC 9110 §7.6.1 hop-by-hop headers plus the proxy-only ones the spec names (SPEC §2). */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'proxy-authorization', 'proxy-authenticate']);

/** Node and undici handle these themselves; forwarding them would confuse the next hop. */
const REQUEST_ONLY_DROP = new Set(['expect', 'http2-settings']);

/**
 * Outrigger's own cookies (agent sign-in's per-request cookie, `[__Host-]outrigger-signin-<id>`,
 * src/oauth/authorize.ts): they bind a sign-in to a browser and mean nothing to the backend, so
 * they never reach it. A plain substring test first keeps every other Cookie header untouched.
 */
const OWN_COOKIE_MARK = 'outrigger-signin-';
const OWN_COOKIE = /^(__Host-)?outrigger-signin-/;

/** A Cookie header without Outrigger's own cookies, or '' when none is left. */
export function withoutOwnCookies(header: string): string {
  return header
    .split(';')
    .map((pair) => pair.trim())
    .filter((pair) => pair !== '' && !OWN_COOKIE.test(pair))
    .join('; ');
}

/**
 * Headers a request may carry once (issue 34). Node keeps only the first of each in
 * `req.headers`, which every decision reads, while the raw list (what is forwarded) keeps them
 * all: a second `Authorization` would reach the backend undecided (a bad Bearer, then a Basic
 * password the backend checks and Outrigger never counted), and a second `Host` makes the
 * upstream call fail. Such a request is refused with 400. Answers the first repeated name.
 */
export function repeatedSingleHeader(rawHeaders: string[]): 'authorization' | 'host' | undefined {
  let hosts = 0;
  let authorizations = 0;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!;
    // Only names of the right length are compared, the usual spellings first (no lowercase copy).
    if (name.length === 4) {
      if ((name === 'Host' || name === 'host' || name.toLowerCase() === 'host') && ++hosts > 1) return 'host';
    } else if (name.length === 13 && (name === 'Authorization' || name === 'authorization' || name.toLowerCase() === 'authorization') && ++authorizations > 1) return 'authorization';
  }
  return undefined;
}

/** Header names listed in `Connection` are hop-by-hop too. */
function connectionTokens(value: string | string[] | undefined): Set<string> | null {
  if (!value) return null;
  // Nearly every message says just one of these, and both name no other header.
  if (value === 'keep-alive' || value === 'close' || value === 'Keep-Alive') return null;
  const text = Array.isArray(value) ? value.join(',') : value;
  const tokens = new Set<string>();
  for (const token of text.split(',')) {
    const t = token.trim().toLowerCase();
    if (t) tokens.add(t);
  }
  return tokens;
}

export interface UpstreamRequestHeaderOptions {
  clientIp: string;
  /** Whether the socket peer is a trusted proxy: then its X-Forwarded-* are kept and extended. */
  peerTrusted: boolean;
  proto: 'http' | 'https';
  /** Lowercase names to drop (identity headers, the client's Authorization when Outrigger speaks for it). */
  remove?: ReadonlySet<string>;
  /** Headers to set (identity propagation), lowercase names. */
  set?: Record<string, string>;
}

/**
 * Builds the headers sent upstream from Node's parsed request headers, as a flat
 * [name, value, name, value...] array so repeated headers keep their order and count.
 */
export function upstreamRequestHeaders(incoming: IncomingHttpHeaders, rawHeaders: string[], o: UpstreamRequestHeaderOptions): string[] {
  const named = connectionTokens(incoming.connection);
  const out: string[] = [];
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!;
    const lower = name.toLowerCase();
    if (HOP_BY_HOP.has(lower) || REQUEST_ONLY_DROP.has(lower) || named?.has(lower) || o.remove?.has(lower)) continue;
    if (lower === 'x-forwarded-for' || lower === 'x-forwarded-proto' || lower === 'x-forwarded-host') continue;
    if (o.set && lower in o.set) continue;
    if (lower.includes('_') && isUnderscoreSpelling(lower, o)) continue;
    const value = rawHeaders[i + 1]!;
    if (lower === 'cookie' && value.includes(OWN_COOKIE_MARK)) {
      const kept = withoutOwnCookies(value);
      if (kept) out.push(name, kept);
      continue;
    }
    out.push(name, value);
  }
  // From an untrusted peer, client-supplied X-Forwarded-* are spoofable: replace them with what
  // this proxy saw. Behind a trusted proxy, extend the chain as that proxy reported it.
  const priorFor = o.peerTrusted ? joined(incoming['x-forwarded-for']) : undefined;
  out.push('x-forwarded-for', priorFor ? `${priorFor}, ${o.clientIp}` : o.clientIp);
  const proto = o.peerTrusted ? first(incoming['x-forwarded-proto']) : undefined;
  out.push('x-forwarded-proto', proto ?? o.proto);
  const host = (o.peerTrusted ? first(incoming['x-forwarded-host']) : undefined) ?? incoming.host;
  if (host) out.push('x-forwarded-host', host);
  if (o.set) for (const [name, value] of Object.entries(o.set)) out.push(name, value);
  return out;
}

/**
 * `X_Forwarded_User` for `X-Forwarded-User` (issue 34): CGI-style servers and gateways (WSGI,
 * PHP-FPM, nginx with `underscores_in_headers`) read `_` and `-` alike, so a spelling with
 * underscores of a header Outrigger removes or sets would reach the backend as that header.
 * It is removed as the dashed one is. Only names with a `_` get here.
 */
function isUnderscoreSpelling(lower: string, o: UpstreamRequestHeaderOptions): boolean {
  const dashed = lower.replaceAll('_', '-');
  return o.remove?.has(dashed) === true || (o.set !== undefined && dashed in o.set) || dashed === 'x-forwarded-for' || dashed === 'x-forwarded-proto' || dashed === 'x-forwarded-host';
}

function joined(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(', ') : value;
}
function first(value: string | string[] | undefined): string | undefined {
  const v = Array.isArray(value) ? value[0] : value;
  return v?.split(',')[0]?.trim() || undefined;
}

/** Rewrites or (by returning undefined) removes one response header. */
export type ResponseHeaderFilter = (lowerName: string, value: string | string[]) => string | string[] | undefined;

/** Response headers from undici to Node's writeHead, minus hop-by-hop ones, through an optional filter. */
export function clientResponseHeaders(upstream: Record<string, string | string[] | undefined>, filter?: ResponseHeaderFilter): OutgoingHttpHeaders {
  const named = connectionTokens(upstream.connection);
  const out: OutgoingHttpHeaders = {};
  for (const name in upstream) {
    const value = upstream[name];
    if (value === undefined) continue;
    const lower = name.toLowerCase();
    if (HOP_BY_HOP.has(lower) || named?.has(lower)) continue;
    const kept = filter ? filter(lower, value) : value;
    if (kept !== undefined) out[lower] = kept;
  }
  return out;
}
