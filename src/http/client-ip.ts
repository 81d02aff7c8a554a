import { ipInCidrs, parseCidrs } from '../net/cidr.js';
import { resolveClientIp } from '../net/client-ip.js';

/** `peerPort`: the socket's remote port, for a wrapper that knows this process's own connections (src/mcp/internal-calls.ts). */
export type ClientIpResolver = (peer: string, xForwardedFor: string | string[] | undefined, peerPort?: number) => { ip: string; peerTrusted: boolean };

/** Built once from `listen.trustedProxies`; with none configured it is a plain read of the socket peer. */
export function createClientIpResolver(trustedProxies: string[]): ClientIpResolver {
  // The socket's own address needs no parsing: only an IPv4-mapped form is rewritten.
  if (trustedProxies.length === 0) return (peer) => ({ ip: peer.startsWith('::ffff:') && peer.includes('.') ? peer.slice(7) : peer, peerTrusted: false });
  const trusted = parseCidrs(trustedProxies, 'listen.trustedProxies');
  return (peer, xff) => {
    const header = Array.isArray(xff) ? xff.join(',') : xff;
    return { ip: resolveClientIp(peer, header, trusted), peerTrusted: ipInCidrs(peer, trusted) };
  };
}
