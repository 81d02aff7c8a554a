import { isIPv4, isIPv6 } from 'node:net';
import type { PredicateDefinition } from '../compile/parameters.js';

interface Ipv4Rule {
  readonly mask: number;
  readonly prefix: number;
  readonly deny: boolean;
}

interface Ipv6Rule {
  readonly mask: Uint8Array;
  readonly prefix: Uint8Array;
  readonly deny: boolean;
}

class IpRules {
  readonly v4: Ipv4Rule[] = [];
  readonly v6: Ipv6Rule[] = [];

  constructor(readonly defaultAllow: boolean) {}

  /** First matching rule of the address family decides; otherwise the default. */
  allows(ip: string): boolean {
    const v4 = ipv4Number(ip);
    if (v4 !== undefined) {
      for (const rule of this.v4) if ((v4 & rule.mask) >>> 0 === rule.prefix) return !rule.deny;
      return this.defaultAllow;
    }
    const v6 = ipv6Bytes(ip);
    if (v6 !== undefined) {
      for (const rule of this.v6) if (rule.mask.every((m, i) => (v6[i]! & m) === rule.prefix[i])) return !rule.deny;
    }
    return this.defaultAllow;
  }
}

const IP4_EXACT = /^(?:\d{1,3}\.){3}\d{1,3}$/;
const IP4_WILDCARD = /^(?:(?:\d{1,3}|\*)\.){3}(?:\d{1,3}|\*)$/;
const IP4_SLASH = /^(?:\d{1,3}\.){3}\d{1,3}\/\d\d?$/;
const IP6_WILDCARD = /^(?:(?:[a-zA-Z0-9]{1,4}|\*):){7}(?:[a-zA-Z0-9]{1,4}|\*)$/;
const IP6_SLASH = /^(?:[a-zA-Z0-9]{1,4}:){7}[a-zA-Z0-9]{1,4}\/\d{1,3}$/;

/**
 * Adds one `"<peer> allow|deny"` rule, with Undertow's `IPMatchBase` forms: exact IPv4/IPv6,
 * `*` per octet or group, or `/bits` (IPv6 prefixes must be written in full, eight groups).
 * Octets are combined as Undertow does (an octet above 255 overflows into its neighbour).
 */
function addRule(rules: IpRules, rule: string): void {
  const parts = rule.split(' ');
  while (parts.length > 0 && parts[parts.length - 1] === '') parts.pop();
  if (parts.length !== 2) throw new Error(`invalid rule '${rule}': write '<address> allow' or '<address> deny'`);
  const peer = parts[0]!.trim();
  const action = parts[1]!.trim();
  if (action !== 'allow' && action !== 'deny') throw new Error(`invalid rule '${rule}': the action must be allow or deny`);
  const deny = action === 'deny';

  if (IP4_EXACT.test(peer)) {
    rules.v4.push({ mask: 0xffffffff, prefix: octetsToNumber(peer.split('.').map((o) => Number(o) & 0xff)), deny });
  } else if (IP4_WILDCARD.test(peer)) {
    let mask = 0;
    let prefix = 0;
    for (const part of peer.split('.')) {
      mask = (mask << 8) | 0;
      prefix = (prefix << 8) | 0;
      if (part !== '*') {
        mask |= 0xff;
        prefix |= Number(part);
      }
    }
    rules.v4.push({ mask: mask >>> 0, prefix: prefix >>> 0, deny });
  } else if (IP4_SLASH.test(peer)) {
    const [address, bits] = peer.split('/') as [string, string];
    const maskLength = Number(bits);
    if (maskLength > 32) throw new Error(`invalid rule '${rule}': an IPv4 prefix has at most 32 bits`);
    const mask = maskLength === 0 ? 0 : (0xffffffff << (32 - maskLength)) >>> 0;
    let prefix = 0;
    for (const part of address.split('.')) prefix = (prefix << 8) | Number(part);
    rules.v4.push({ mask, prefix: (prefix & mask) >>> 0, deny });
  } else if (isIPv6(peer)) {
    rules.v6.push({ mask: new Uint8Array(16).fill(0xff), prefix: ipv6Bytes(peer)!, deny });
  } else if (IP6_WILDCARD.test(peer)) {
    const mask = new Uint8Array(16);
    const prefix = new Uint8Array(16);
    peer.split(':').forEach((part, i) => {
      if (part === '*') return;
      const value = hexGroup(part, rule);
      prefix[i * 2] = value >> 8;
      prefix[i * 2 + 1] = value & 0xff;
      mask[i * 2] = 0xff;
      mask[i * 2 + 1] = 0xff;
    });
    rules.v6.push({ mask, prefix, deny });
  } else if (IP6_SLASH.test(peer)) {
    const [address, bits] = peer.split('/') as [string, string];
    let maskLength = Number(bits);
    if (maskLength > 128) throw new Error(`invalid rule '${rule}': an IPv6 prefix has at most 128 bits`);
    const prefix = new Uint8Array(16);
    address.split(':').forEach((part, i) => {
      const value = hexGroup(part, rule);
      prefix[i * 2] = value >> 8;
      prefix[i * 2 + 1] = value & 0xff;
    });
    const mask = new Uint8Array(16);
    for (let i = 0; i < 16 && maskLength > 0; i++) {
      const bitsHere = Math.min(8, maskLength);
      mask[i] = (0xff << (8 - bitsHere)) & 0xff;
      maskLength -= bitsHere;
    }
    rules.v6.push({ mask, prefix, deny });
  } else {
    throw new Error(`invalid rule '${rule}': '${peer}' is not an IP address, a wildcard (10.0.*.*) or a prefix (10.0.0.0/8)`);
  }
}

function hexGroup(part: string, rule: string): number {
  if (!/^[0-9a-fA-F]{1,4}$/.test(part)) throw new Error(`invalid rule '${rule}': '${part}' is not a hexadecimal group`);
  return parseInt(part, 16);
}

function octetsToNumber(octets: readonly number[]): number {
  return ((octets[0]! << 24) | (octets[1]! << 16) | (octets[2]! << 8) | octets[3]!) >>> 0;
}

/** An IPv4 address (also IPv4-mapped IPv6, as Java resolves it) as an unsigned number. */
function ipv4Number(ip: string): number | undefined {
  const plain = ip.toLowerCase().startsWith('::ffff:') && isIPv4(ip.slice(7)) ? ip.slice(7) : ip;
  if (!isIPv4(plain)) return undefined;
  return octetsToNumber(plain.split('.').map(Number));
}

/** The 16 bytes of an IPv6 address (zone id ignored), or undefined. */
export function ipv6Bytes(ip: string): Uint8Array | undefined {
  const address = ip.split('%')[0]!;
  if (!isIPv6(address)) return undefined;
  let groups: string[];
  const [head, tail] = address.split('::') as [string, string | undefined];
  const expand = (text: string): string[] => {
    if (text === '') return [];
    const parts = text.split(':');
    const last = parts[parts.length - 1]!;
    if (isIPv4(last)) {
      const o = last.split('.').map(Number);
      parts.splice(parts.length - 1, 1, ((o[0]! << 8) | o[1]!).toString(16), ((o[2]! << 8) | o[3]!).toString(16));
    }
    return parts;
  };
  if (tail === undefined) {
    groups = expand(head);
  } else {
    const left = expand(head);
    const right = expand(tail);
    groups = [...left, ...new Array<string>(8 - left.length - right.length).fill('0'), ...right];
  }
  const bytes = new Uint8Array(16);
  groups.forEach((group, i) => {
    const value = parseInt(group, 16);
    bytes[i * 2] = value >> 8;
    bytes[i * 2 + 1] = value & 0xff;
  });
  return bytes;
}

export const ipMatchPredicate: PredicateDefinition = {
  name: 'ip-match',
  parameters: { acl: 'string[]', 'default-allow': 'boolean' },
  defaultParameter: 'acl',
  required: ['acl'],
  build: (args, context) => {
    const acl = args.list('acl');
    if (acl.fixed === undefined) throw context.error('rules cannot come from @user variables', 'acl');
    const rules = new IpRules(args.boolean('default-allow', false));
    for (const rule of acl.fixed) {
      try {
        addRule(rules, rule);
      } catch (error) {
        throw context.error((error as Error).message, 'acl');
      }
    }
    return (scope) => rules.allows(scope.exchange.remoteIp);
  },
};
