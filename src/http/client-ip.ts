import { ipInCidrs, normalizeIp, parseCidrs } from '../net/cidr.js';
import { resolveClientIp } from '../net/client-ip.js';

export type ClientIpResolver = (peer: string, xForwardedFor: string | string[] | undefined) => { ip: string; peerTrusted: boolean };

/** Built once from `listen.trustedProxies`; with none configured it is a plain read of the socket peer. */
export function createClientIpResolver(trustedProxies: string[]): ClientIpResolver {
  if (trustedProxies.length === 0) return (peer) => ({ ip: normalizeIp(peer) ?? peer, peerTrusted: false });
  const trusted = parseCidrs(trustedProxies, 'listen.trustedProxies');
  return (peer, xff) => {
    const header = Array.isArray(xff) ? xff.join(',') : xff;
    return { ip: resolveClientIp(peer, header, trusted), peerTrusted: ipInCidrs(peer, trusted) };
  };
}
