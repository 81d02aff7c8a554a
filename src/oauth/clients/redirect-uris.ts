const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost']);
/** Schemes that must never be redirected to, whatever a client registers. */
const DANGEROUS_SCHEMES = new Set(['javascript:', 'data:', 'vbscript:', 'file:', 'blob:', 'about:']);

/**
 * Why a client may not register `uri` as a redirect URI, or null. Allowed: https, http on a
 * loopback host (RFC 8252 §7.3), and private-use schemes in reverse-domain form (RFC 8252 §7.1,
 * `com.example.app:/cb`); never a fragment, credentials, or a script-like scheme.
 */
export function redirectUriProblem(uri: unknown): string | null {
  if (typeof uri !== 'string' || uri === '') return 'must be a non-empty string';
  if (uri.length > 2000) return 'must be at most 2000 characters';
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return `${JSON.stringify(uri)} is not an absolute URI`;
  }
  if (url.hash !== '' || uri.includes('#')) return `${JSON.stringify(uri)} must not contain a fragment (#)`;
  if (url.username !== '' || url.password !== '') return `${JSON.stringify(uri)} must not contain credentials`;
  if (DANGEROUS_SCHEMES.has(url.protocol)) return `${JSON.stringify(uri)} uses the scheme ${url.protocol}, which is never a redirect target`;
  if (url.protocol === 'https:') return url.hostname ? null : `${JSON.stringify(uri)} has no host`;
  if (url.protocol === 'http:')
    return LOOPBACK_HOSTS.has(url.hostname) ? null : `${JSON.stringify(uri)} uses http on a host that is not loopback; use https, or http://127.0.0.1:<port>/... for a native app`;
  return url.protocol.includes('.') ? null : `${JSON.stringify(uri)} must be https, loopback http, or a private-use scheme in reverse-domain form (com.example.app:/callback)`;
}

/**
 * Exact match against a registered URI, except that a loopback http URI matches on any port
 * (RFC 8252 §7.3: native apps listen on a port the OS gives them).
 */
export function redirectUriMatches(registered: readonly string[], requested: string): boolean {
  if (registered.includes(requested)) return true;
  let asked: URL;
  try {
    asked = new URL(requested);
  } catch {
    return false;
  }
  if (asked.protocol !== 'http:' || !LOOPBACK_HOSTS.has(asked.hostname) || asked.hash !== '' || asked.username !== '' || asked.password !== '') return false;
  return registered.some((text) => {
    try {
      const r = new URL(text);
      return r.protocol === 'http:' && r.hostname === asked.hostname && r.pathname === asked.pathname && r.search === asked.search;
    } catch {
      return false;
    }
  });
}
