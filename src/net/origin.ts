/**
 * Which pages may talk to Outrigger's browser-reachable doors that carry a browser's ambient
 * credentials (cached Basic, cookies) without a CORS preflight: the MCP endpoint and the GraphQL
 * WebSocket upgrade. A browser always sends `Origin` on both; other clients usually send none.
 */

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/** Its own origin (`service.publicUrl`), or a page served from this machine (a local inspector); never another site's. */
export function originAllowed(origin: string, ownOrigin: string): boolean {
  if (origin === ownOrigin) return true;
  try {
    return LOOPBACK_HOSTS.has(new URL(origin).hostname);
  } catch {
    return false;
  }
}
