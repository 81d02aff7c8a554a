/**
 * IP addresses and CIDR lists (IPv4 and IPv6), with no dependency beyond the language.
 *
 * Used by `listen.trustedProxies` (client-IP resolution, on every request), by
 * `webhooks.allowPrivateTargets` and by the SSRF guard. Parse a list once with `parseCidrs`
 * (when the config is loaded) and match many times with `ipInCidrs`.
 *
 * Normalisation: an IPv4-mapped IPv6 address (`::ffff:127.0.0.1`, `::ffff:7f00:1`, as a
 * dual-stack socket reports IPv4 peers) IS the IPv4 address, so it is parsed as IPv4. A CIDR
 * written inside the mapped range with a prefix of at least 96 (`::ffff:10.0.0.0/104`) becomes
 * the IPv4 CIDR it denotes (`10.0.0.0/8`). Zone ids (`fe80::1%eth0`) are ignored.
 */
import { ValidationError } from '../errors.js';

export interface IpAddress {
  readonly family: 4 | 6;
  /** 4 bytes for IPv4, 16 for IPv6, network order. */
  readonly bytes: Uint8Array;
}

export interface Cidr extends IpAddress {
  /** Number of leading bits that must match: 0..32 (IPv4) or 0..128 (IPv6). */
  readonly prefix: number;
  /** Canonical text, e.g. `10.0.0.0/8`, `fd00::/8`. */
  readonly text: string;
}

export interface ParsedCidrs {
  readonly v4: readonly Cidr[];
  readonly v6: readonly Cidr[];
}

/** The empty list (nothing trusted / nothing exempt). */
export const NO_CIDRS: ParsedCidrs = Object.freeze({ v4: Object.freeze([]), v6: Object.freeze([]) });

const DIGITS = /^(?:0|[1-9][0-9]{0,2})$/;
const HEXTET = /^[0-9a-fA-F]{1,4}$/;

function parseIpv4Bytes(text: string): Uint8Array | null {
  const parts = text.split('.');
  if (parts.length !== 4) return null;
  const bytes = new Uint8Array(4);
  for (let i = 0; i < 4; i++) {
    const part = parts[i]!;
    if (!DIGITS.test(part)) return null;
    const n = Number(part);
    if (n > 255) return null;
    bytes[i] = n;
  }
  return bytes;
}

function parseIpv6Bytes(input: string): Uint8Array | null {
  let text = input;
  const zone = text.indexOf('%');
  if (zone !== -1) {
    if (zone === text.length - 1) return null;
    text = text.slice(0, zone);
  }
  if (text.length < 2) return null;

  const groups: number[] = [];
  const pushGroups = (part: string, allowV4Tail: boolean): boolean => {
    if (part === '') return true;
    const pieces = part.split(':');
    for (let i = 0; i < pieces.length; i++) {
      const piece = pieces[i]!;
      if (allowV4Tail && i === pieces.length - 1 && piece.includes('.')) {
        const v4 = parseIpv4Bytes(piece);
        if (!v4) return false;
        groups.push((v4[0]! << 8) | v4[1]!, (v4[2]! << 8) | v4[3]!);
      } else {
        if (!HEXTET.test(piece)) return false;
        groups.push(parseInt(piece, 16));
      }
    }
    return true;
  };

  const doubleColon = text.indexOf('::');
  let head: number[];
  let tail: number[];
  if (doubleColon === -1) {
    if (!pushGroups(text, true)) return null;
    if (groups.length !== 8) return null;
    head = groups;
    tail = [];
  } else {
    if (text.indexOf('::', doubleColon + 1) !== -1) return null;
    const left = text.slice(0, doubleColon);
    const right = text.slice(doubleColon + 2);
    if (!pushGroups(left, false)) return null;
    head = groups.splice(0);
    if (!pushGroups(right, true)) return null;
    tail = groups.splice(0);
    // `::` stands for at least one zero group.
    if (head.length + tail.length > 7) return null;
  }
  const bytes = new Uint8Array(16);
  const put = (index: number, value: number) => {
    bytes[index * 2] = value >> 8;
    bytes[index * 2 + 1] = value & 0xff;
  };
  head.forEach((g, i) => put(i, g));
  tail.forEach((g, i) => put(8 - tail.length + i, g));
  return bytes;
}

function isV4MappedBytes(bytes: Uint8Array): boolean {
  for (let i = 0; i < 10; i++) if (bytes[i] !== 0) return false;
  return bytes[10] === 0xff && bytes[11] === 0xff;
}

/**
 * Parses an IPv4 or IPv6 address (IPv6 may be bracketed, may carry a zone id, may end in a
 * dotted quad). IPv4-mapped IPv6 comes back as IPv4. Returns null for anything else.
 */
export function parseIp(input: string): IpAddress | null {
  let text = input.trim();
  if (text.startsWith('[') && text.endsWith(']')) text = text.slice(1, -1);
  if (text.includes(':')) {
    const bytes = parseIpv6Bytes(text);
    if (!bytes) return null;
    if (isV4MappedBytes(bytes)) return { family: 4, bytes: bytes.slice(12) };
    return { family: 6, bytes };
  }
  const bytes = parseIpv4Bytes(text);
  return bytes ? { family: 4, bytes } : null;
}

/** Canonical text of an address: dotted quad, or RFC 5952 IPv6 (lower case, longest zero run as `::`). */
export function formatIp(addr: IpAddress): string {
  const b = addr.bytes;
  if (addr.family === 4) return `${b[0]}.${b[1]}.${b[2]}.${b[3]}`;
  const groups: number[] = [];
  for (let i = 0; i < 8; i++) groups.push((b[i * 2]! << 8) | b[i * 2 + 1]!);
  let bestStart = -1;
  let bestLen = 0;
  for (let i = 0; i < 8;) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen && j - i >= 2) {
      bestStart = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (bestStart === -1) return hex.join(':');
  const left = hex.slice(0, bestStart).join(':');
  const right = hex.slice(bestStart + bestLen).join(':');
  return `${left}::${right}`;
}

/** Canonical text of an IP address (IPv4-mapped IPv6 → IPv4), or null when `text` is not one. */
export function normalizeIp(text: string): string | null {
  const addr = parseIp(text);
  return addr ? formatIp(addr) : null;
}

function maskBytes(bytes: Uint8Array, prefix: number): Uint8Array {
  const out = new Uint8Array(bytes.length);
  for (let i = 0; i < bytes.length; i++) {
    const bitsHere = Math.max(0, Math.min(8, prefix - i * 8));
    out[i] = bitsHere === 0 ? 0 : bytes[i]! & ((0xff << (8 - bitsHere)) & 0xff);
  }
  return out;
}

/**
 * Parses one CIDR (`10.0.0.0/8`, `fd00::/8`, `::ffff:10.0.0.0/104`) or a bare address (a /32 or
 * /128). Host bits are cleared (`10.1.2.3/8` means `10.0.0.0/8`). Returns the reason as a string
 * when the text is not a CIDR.
 */
export function parseCidr(input: string): Cidr | string {
  if (typeof input !== 'string') return 'must be a string such as 10.0.0.0/8 or fd00::/8';
  const text = input.trim();
  if (text === '') return 'is empty; write a CIDR such as 10.0.0.0/8 or fd00::/8';
  const slash = text.indexOf('/');
  const addrText = slash === -1 ? text : text.slice(0, slash);
  const prefixText = slash === -1 ? null : text.slice(slash + 1);
  const isV6Text = addrText.includes(':');
  const bytes = isV6Text ? parseIpv6Bytes(addrText) : parseIpv4Bytes(addrText);
  if (!bytes) return `"${addrText}" is not an IPv4 or IPv6 address`;
  if (isV6Text && addrText.includes('%')) return 'a CIDR cannot carry a zone id (%...)';
  const max = isV6Text ? 128 : 32;
  let prefix = max;
  if (prefixText !== null) {
    if (!/^(?:0|[1-9][0-9]{0,2})$/.test(prefixText) || Number(prefixText) > max) {
      return `prefix length "/${prefixText}" must be an integer from 0 to ${max}`;
    }
    prefix = Number(prefixText);
  }
  let family: 4 | 6 = isV6Text ? 6 : 4;
  let addrBytes = bytes;
  if (family === 6 && prefix >= 96 && isV4MappedBytes(bytes)) {
    family = 4;
    addrBytes = bytes.slice(12);
    prefix -= 96;
  }
  const masked = maskBytes(addrBytes, prefix);
  return { family, bytes: masked, prefix, text: `${formatIp({ family, bytes: masked })}/${prefix}` };
}

/** One `path[i]: ...` problem per entry of `list` that is not a CIDR (empty when all are fine). */
export function cidrProblems(list: unknown, path: string): string[] {
  if (!Array.isArray(list)) return [`${path} must be an array of CIDR strings such as ["10.0.0.0/8", "fd00::/8"]`];
  const problems: string[] = [];
  list.forEach((entry, i) => {
    if (typeof entry !== 'string') {
      problems.push(`${path}[${i}] must be a string such as "10.0.0.0/8" or "fd00::/8"`);
      return;
    }
    const parsed = parseCidr(entry);
    if (typeof parsed === 'string') {
      problems.push(`${path}[${i}] "${entry}" is not a valid CIDR: ${parsed} (write it like 10.0.0.0/8, 192.168.1.7/32 or fd00::/8)`);
    }
  });
  return problems;
}

/**
 * Parses a CIDR list. Throws a ValidationError listing every invalid entry by `path[index]`.
 * Duplicates are kept (harmless); order does not matter.
 */
export function parseCidrs(list: readonly string[], path = 'cidrs'): ParsedCidrs {
  const problems = cidrProblems(list, path);
  if (problems.length > 0) throw new ValidationError(problems);
  const v4: Cidr[] = [];
  const v6: Cidr[] = [];
  for (const entry of list) {
    const cidr = parseCidr(entry) as Cidr;
    (cidr.family === 4 ? v4 : v6).push(cidr);
  }
  return Object.freeze({ v4: Object.freeze(v4), v6: Object.freeze(v6) });
}

/** True when `addr` lies inside `cidr` (same family only). */
export function addressInCidr(addr: IpAddress, cidr: Cidr): boolean {
  if (addr.family !== cidr.family) return false;
  const full = cidr.prefix >> 3;
  for (let i = 0; i < full; i++) if (addr.bytes[i] !== cidr.bytes[i]) return false;
  const rest = cidr.prefix & 7;
  if (rest === 0) return true;
  const mask = (0xff << (8 - rest)) & 0xff;
  return (addr.bytes[full]! & mask) === cidr.bytes[full];
}

/**
 * True when `ip` (text or parsed) lies inside any CIDR of the list. An unparsable address is in
 * no list. IPv4-mapped IPv6 text matches IPv4 CIDRs.
 */
export function ipInCidrs(ip: string | IpAddress, cidrs: ParsedCidrs): boolean {
  const addr = typeof ip === 'string' ? parseIp(ip) : ip;
  if (!addr) return false;
  const list = addr.family === 4 ? cidrs.v4 : cidrs.v6;
  for (const cidr of list) if (addressInCidr(addr, cidr)) return true;
  return false;
}

/** The canonical texts of a parsed list (for messages and `check` output). */
export function cidrsToStrings(cidrs: ParsedCidrs): string[] {
  return [...cidrs.v4, ...cidrs.v6].map((c) => c.text);
}
