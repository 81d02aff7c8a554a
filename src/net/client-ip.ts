/**
 * Client IP resolution (SPEC §0): the socket peer, or, when the peer is inside
 * `listen.trustedProxies`, the right-most `X-Forwarded-For` address that is not itself trusted.
 *
 * Walking from the right is what makes this safe: every entry to the right of the answer was
 * appended by a proxy we trust, while anything to the left of it may have been written by the
 * client and is ignored. Decisions where the header is odd:
 * - empty entries (`a, , b`) are skipped;
 * - entries may carry a port (`1.2.3.4:5678`, `[2001:db8::1]:443`), which is dropped;
 * - an entry that is not an IP address (`unknown`, garbage) stops the walk: it was not written by
 *   a trusted hop, so the answer is the nearest trusted hop to its right (the socket peer when it
 *   is the last entry);
 * - when every entry is trusted, the answer is the left-most one (the furthest known hop);
 * - the answer is always canonical text (IPv4-mapped IPv6 becomes IPv4).
 */
import { ipInCidrs, normalizeIp, parseIp, type ParsedCidrs, formatIp } from './cidr.js';

/** Strips an optional port (and brackets) from one X-Forwarded-For entry. */
function forwardedEntryToIp(entry: string): string | null {
  const text = entry.trim();
  if (text === '') return null;
  if (text.startsWith('[')) {
    const close = text.indexOf(']');
    if (close === -1) return null;
    const rest = text.slice(close + 1);
    if (rest !== '' && !/^:[0-9]{1,5}$/.test(rest)) return null;
    return normalizeIp(text.slice(1, close));
  }
  const direct = normalizeIp(text);
  if (direct) return direct;
  // IPv4 with a port; a bare IPv6 address with a port is ambiguous and not accepted.
  const m = /^([0-9.]+):[0-9]{1,5}$/.exec(text);
  return m ? normalizeIp(m[1]!) : null;
}

export function resolveClientIp(socketPeer: string, xForwardedFor: string | readonly string[] | undefined, trusted: ParsedCidrs): string {
  const peerAddr = parseIp(socketPeer);
  const peer = peerAddr ? formatIp(peerAddr) : socketPeer;
  if (!peerAddr || (trusted.v4.length === 0 && trusted.v6.length === 0)) return peer;
  if (!ipInCidrs(peerAddr, trusted)) return peer;
  if (xForwardedFor === undefined) return peer;
  const joined = typeof xForwardedFor === 'string' ? xForwardedFor : xForwardedFor.join(',');
  if (joined.trim() === '') return peer;

  const entries = joined.split(',');
  let nearestTrusted = peer;
  for (let i = entries.length - 1; i >= 0; i--) {
    const entry = entries[i]!;
    if (entry.trim() === '') continue; // `a,,b` from a sloppy join
    const ip = forwardedEntryToIp(entry);
    if (ip === null) return nearestTrusted;
    if (!ipInCidrs(ip, trusted)) return ip;
    nearestTrusted = ip;
  }
  return nearestTrusted;
}
