import { formatIp, parseIp } from './cidr.js';

/**
 * The unit every per-address limit counts by (sign-in, /token, Basic and API-key failures): an
 * IPv4 address, or the /64 an IPv6 address lies in.
 * One IPv6 subscriber usually holds a whole /64 (often far more), so counting single IPv6
 * addresses would give each attacker 2^64 fresh allowances.
 */
export function clientAddressBucket(ip: string): string {
  const addr = parseIp(ip);
  if (!addr) return ip;
  if (addr.family === 4) return formatIp(addr);
  const bytes = new Uint8Array(16);
  bytes.set(addr.bytes.subarray(0, 8));
  return `${formatIp({ family: 6, bytes })}/64`;
}
