/**
 * Which addresses webhooks may not reach, each with the range and reason a refusal names (the
 * list is in index.ts), and the exemptions of `webhooks.allowPrivateTargets`.
 */
import { addressInCidr, formatIp, ipInCidrs, NO_CIDRS, parseCidr, parseIp, type Cidr, type IpAddress, type ParsedCidrs } from '../cidr.js';

interface SpecialRange {
  cidr: Cidr;
  description: string;
}

function range(text: string, description: string): SpecialRange {
  const cidr = parseCidr(text);
  if (typeof cidr === 'string') throw new Error(`bad built-in range ${text}: ${cidr}`);
  return { cidr, description };
}

const FORBIDDEN_V4: readonly SpecialRange[] = [
  range('0.0.0.0/8', '"this network"'),
  range('10.0.0.0/8', 'private'),
  range('100.64.0.0/10', 'shared address space (carrier-grade NAT)'),
  range('127.0.0.0/8', 'loopback'),
  range('169.254.0.0/16', 'link-local (where cloud metadata services live)'),
  range('172.16.0.0/12', 'private'),
  range('192.0.0.0/24', 'IETF protocol assignments'),
  range('192.0.2.0/24', 'documentation (TEST-NET-1)'),
  range('192.88.99.0/24', '6to4 relay anycast'),
  range('192.168.0.0/16', 'private'),
  range('198.18.0.0/15', 'benchmarking'),
  range('198.51.100.0/24', 'documentation (TEST-NET-2)'),
  range('203.0.113.0/24', 'documentation (TEST-NET-3)'),
  range('224.0.0.0/4', 'multicast'),
  range('240.0.0.0/4', 'reserved (incl. broadcast)'),
];

const FORBIDDEN_V6: readonly SpecialRange[] = [
  range('::/128', 'unspecified'),
  range('::1/128', 'loopback'),
  range('::/96', 'IPv4-compatible (deprecated)'),
  range('::ffff:0:0:0/96', 'IPv4-translated'),
  range('64:ff9b:1::/48', 'local-use NAT64'),
  range('100::/64', 'discard-only'),
  range('2001:db8::/32', 'documentation'),
  range('2001::/32', 'Teredo tunnelling'),
  range('2001::/23', 'IETF protocol assignments'),
  range('3fff::/20', 'documentation'),
  range('5f00::/16', 'segment routing (SRv6)'),
  range('fc00::/7', 'unique local (private)'),
  range('fe80::/10', 'link-local'),
  range('fec0::/10', 'site-local (deprecated)'),
  range('ff00::/8', 'multicast'),
];

const GLOBAL_UNICAST_V6 = range('2000::/3', 'global unicast');
const NAT64_WELL_KNOWN = range('64:ff9b::/96', 'NAT64');
const SIX_TO_FOUR = range('2002::/16', '6to4');

export interface AddressClassification {
  /** Canonical address text. */
  readonly address: string;
  /** The special-purpose range it falls in, e.g. `10.0.0.0/8`. */
  readonly range: string;
  /** What the range is, e.g. `private`, `loopback`. */
  readonly description: string;
  /** For NAT64/6to4 addresses: the embedded IPv4 address that was judged. */
  readonly embeddedIpv4?: string;
}

function v4FromBytes(bytes: Uint8Array, offset: number): IpAddress {
  return { family: 4, bytes: bytes.slice(offset, offset + 4) };
}

/** The IPv4 address embedded in a NAT64 (64:ff9b::/96) or 6to4 (2002::/16) address, if any. */
function embeddedIpv4(addr: IpAddress): IpAddress | null {
  if (addr.family !== 6) return null;
  if (addressInCidr(addr, NAT64_WELL_KNOWN.cidr)) return v4FromBytes(addr.bytes, 12);
  if (addressInCidr(addr, SIX_TO_FOUR.cidr)) return v4FromBytes(addr.bytes, 2);
  return null;
}

function classifyParsed(addr: IpAddress): AddressClassification | null {
  const address = formatIp(addr);
  if (addr.family === 4) {
    for (const r of FORBIDDEN_V4) {
      if (addressInCidr(addr, r.cidr)) return { address, range: r.cidr.text, description: r.description };
    }
    return null;
  }
  const embedded = embeddedIpv4(addr);
  if (embedded) {
    const inner = classifyParsed(embedded);
    if (!inner) return null;
    const outer = addressInCidr(addr, NAT64_WELL_KNOWN.cidr) ? NAT64_WELL_KNOWN : SIX_TO_FOUR;
    return {
      address,
      range: outer.cidr.text,
      description: `${outer.description} address embedding ${inner.address}, which is ${inner.description} (${inner.range})`,
      embeddedIpv4: inner.address,
    };
  }
  for (const r of FORBIDDEN_V6) {
    if (addressInCidr(addr, r.cidr)) return { address, range: r.cidr.text, description: r.description };
  }
  if (!addressInCidr(addr, GLOBAL_UNICAST_V6.cidr)) {
    return { address, range: '2000::/3', description: 'not global unicast (outside 2000::/3)' };
  }
  return null;
}

/**
 * The special-purpose range an address falls in, or null when it is an ordinary public address.
 * A string that is not an IP address is classified as `invalid`.
 */
export function classifyAddress(ip: string | IpAddress): AddressClassification | null {
  const addr = typeof ip === 'string' ? parseIp(ip) : ip;
  if (!addr) return { address: String(ip), range: 'invalid', description: 'not an IP address' };
  return classifyParsed(addr);
}

function isExempt(addr: IpAddress, allow: ParsedCidrs): boolean {
  if (ipInCidrs(addr, allow)) return true;
  const embedded = embeddedIpv4(addr);
  return embedded !== null && ipInCidrs(embedded, allow);
}

/**
 * Why webhooks may not reach `ip`, or null when they may (a public address, or one inside
 * `allowPrivateTargets`).
 */
export function forbiddenAddressReason(ip: string | IpAddress, allowPrivateTargets: ParsedCidrs = NO_CIDRS): AddressClassification | null {
  const addr = typeof ip === 'string' ? parseIp(ip) : ip;
  if (!addr) return classifyAddress(String(ip));
  const c = classifyParsed(addr);
  if (!c) return null;
  return isExempt(addr, allowPrivateTargets) ? null : c;
}

/** True when webhooks may not reach `ip` (unparsable text is forbidden too). */
export function isForbiddenAddress(ip: string | IpAddress, allowPrivateTargets: ParsedCidrs = NO_CIDRS): boolean {
  return forbiddenAddressReason(ip, allowPrivateTargets) !== null;
}

// ------------------------------------------------------------------------------------------------
