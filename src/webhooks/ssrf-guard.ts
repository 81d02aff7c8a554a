/**
 * SSRF guard for outbound webhooks (SPEC §7.1, §7.2.3; notes/webhooks.md §B.5).
 *
 * A webhook URL is written by a user and fetched by Outrigger from inside the network, so it
 * must not become a way to reach loopback, private networks, link-local cloud metadata
 * (169.254.169.254) or other special-purpose addresses. `webhooks.allowPrivateTargets` (CIDRs)
 * opts chosen ranges back in, for self-hosted internal targets.
 *
 * Two checks, same rules:
 * - at write time, `checkWebhookUrlAtWrite` (scheme, no credentials, host resolves, every
 *   resolved address allowed) returns problems for a 400;
 * - at send time, `createGuardedDispatcher` returns an undici Agent whose `connect` hook resolves
 *   the host itself, refuses when ANY resolved address is forbidden, and then connects to an
 *   address it has just checked (never to the name), so a DNS answer that changes between the
 *   check and the connect (DNS rebinding) cannot slip through. For https the TLS server name
 *   (SNI and certificate check) stays the original host, and `Host` is untouched.
 *
 * Redirects are never followed: undici 7's `request`/`dispatch` on this Agent does not follow
 * them unless a redirect interceptor is composed in, which the delivery code must not do (a 3xx
 * answer is a failed delivery, and a redirect would be a second target). (`maxRedirections`
 * is gone from undici 7's request options: the runtime accepts only 0 without the interceptor,
 * and the types no longer list it.) If `fetch` is ever used with this dispatcher, it must pass
 * `redirect: 'manual'`.
 * Even a followed redirect would still go through this connect hook, so it could not reach a
 * forbidden address, but it must not happen.
 *
 * Which addresses are forbidden (every one is named in refusals, with its range):
 * IPv4: 0.0.0.0/8, 10/8, 100.64/10 (CGNAT), 127/8, 169.254/16, 172.16/12, 192.0.0/24,
 * 192.0.2/24, 192.88.99/24 (6to4 relay), 192.168/16, 198.18/15, 198.51.100/24, 203.0.113/24,
 * 224/4 (multicast), 240/4 (reserved, incl. 255.255.255.255).
 * IPv6: everything outside global unicast 2000::/3 (so ::, ::1, ::/96 IPv4-compatible,
 * fc00::/7, fe80::/10, fec0::/10, ff00::/8, 100::/64 ...), and inside it 2001::/23 (IETF
 * special purpose, incl. Teredo 2001::/32), 2001:db8::/32, 3fff::/20 (documentation) and
 * 5f00::/16 (SRv6). IPv4-mapped addresses (::ffff:a.b.c.d) are judged as the IPv4 address;
 * NAT64 64:ff9b::/96 and 6to4 2002::/16 are judged by the IPv4 address they embed (allowed
 * when it is public); local-use NAT64 64:ff9b:1::/48 is forbidden.
 * Host names are not judged by name: `localhost` or `metadata.google.internal` are refused
 * because of what they resolve to.
 */
import { promises as dns } from 'node:dns';
import { Agent, buildConnector } from 'undici';
import { OutriggerError } from '../errors.js';
import {
  addressInCidr,
  formatIp,
  ipInCidrs,
  NO_CIDRS,
  parseCidr,
  parseCidrs,
  parseIp,
  type Cidr,
  type IpAddress,
  type ParsedCidrs,
} from '../net/cidr.js';

// ------------------------------------------------------------------------------------------------
// Address classification

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
// Resolution

export interface ResolvedAddress {
  readonly address: string;
  readonly family?: number;
}

/** Resolves a host name to every address it has (the shape of `dns.promises.lookup(h, {all: true})`). */
export type HostLookup = (hostname: string) => Promise<readonly ResolvedAddress[]>;

/** The system resolver (getaddrinfo, /etc/hosts included), every address, in resolver order. */
export const systemLookup: HostLookup = (hostname) => dns.lookup(hostname, { all: true, verbatim: true });

/** A refused target. `code` is `SSRF_BLOCKED`; the delivery must treat it as final, not retry. */
export class SsrfBlockedError extends OutriggerError {
  readonly hostname: string;
  readonly addresses: readonly AddressClassification[];
  constructor(hostname: string, refused: readonly AddressClassification[]) {
    super(400, 'SSRF_BLOCKED', refusalMessage(hostname, refused));
    this.name = 'SsrfBlockedError';
    this.hostname = hostname;
    this.addresses = refused;
  }
}

/** DNS failure or timeout while resolving a webhook target. Retryable. */
export class TargetResolutionError extends OutriggerError {
  readonly hostname: string;
  constructor(hostname: string, reason: string) {
    super(502, 'WEBHOOK_TARGET_UNRESOLVED', `webhook target host "${hostname}" could not be resolved (${reason}); check the url's host name`);
    this.name = 'TargetResolutionError';
    this.hostname = hostname;
  }
}

function describe(c: AddressClassification): string {
  return `${c.address} (${c.description}, ${c.range})`;
}

function suggestion(c: AddressClassification): string {
  const addr = parseIp(c.embeddedIpv4 ?? c.address);
  if (!addr) return '';
  return `${formatIp(addr)}/${addr.family === 4 ? 32 : 128}`;
}

function refusalMessage(hostname: string, refused: readonly AddressClassification[]): string {
  const isLiteral = refused.length === 1 && refused[0]!.address === formatIpOrSelf(hostname);
  const what = isLiteral ? `webhook target ${describe(refused[0]!)}` : `webhook target host "${hostname}" resolves to ${refused.map(describe).join(', ')}`;
  const examples = [...new Set(refused.map(suggestion).filter((s) => s !== ''))].join(', ');
  return (
    `${what}, which webhooks may not reach: only public addresses are allowed. ` +
    `If this internal target is intended, add its range to webhooks.allowPrivateTargets` +
    (examples ? ` (e.g. ${examples})` : '')
  );
}

function formatIpOrSelf(text: string): string {
  const addr = parseIp(text);
  return addr ? formatIp(addr) : text;
}

function withTimeout<T>(promise: Promise<T>, ms: number, onTimeout: () => Error): Promise<T> {
  if (!(ms > 0) || !Number.isFinite(ms)) return promise;
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(onTimeout()), ms);
    timer.unref?.();
    promise.then(
      (v) => {
        clearTimeout(timer);
        resolve(v);
      },
      (e: unknown) => {
        clearTimeout(timer);
        reject(e instanceof Error ? e : new Error(String(e)));
      },
    );
  });
}

export interface TargetCheckOptions {
  /** CIDRs exempt from the guard (`webhooks.allowPrivateTargets`), parsed or as strings. */
  readonly allowPrivateTargets?: ParsedCidrs | readonly string[];
  /** Injected resolver (tests; a caching resolver). Defaults to the system resolver. */
  readonly lookup?: HostLookup;
  /** Bound on the DNS lookup, default 5000 ms. */
  readonly lookupTimeoutMs?: number;
}

function toCidrs(allow: ParsedCidrs | readonly string[] | undefined): ParsedCidrs {
  if (allow === undefined) return NO_CIDRS;
  if (Array.isArray(allow)) return parseCidrs(allow as readonly string[], 'webhooks.allowPrivateTargets');
  return allow as ParsedCidrs;
}

/**
 * Resolves `hostname` (an IP literal is used as is, brackets allowed) and checks every address.
 * Returns the addresses (canonical text, resolver order, duplicates removed) when all are
 * allowed. Throws SsrfBlockedError naming every refused address, or TargetResolutionError.
 */
export async function resolveAllowedAddresses(hostname: string, options: TargetCheckOptions = {}): Promise<string[]> {
  const allow = toCidrs(options.allowPrivateTargets);
  const bare = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
  const literal = parseIp(bare);
  let candidates: IpAddress[];
  if (literal) {
    candidates = [literal];
  } else {
    const lookup = options.lookup ?? systemLookup;
    let results: readonly ResolvedAddress[];
    try {
      results = await withTimeout(
        Promise.resolve().then(() => lookup(bare)),
        options.lookupTimeoutMs ?? 5000,
        () => new Error(`timed out after ${options.lookupTimeoutMs ?? 5000} ms`),
      );
    } catch (err) {
      const e = err as NodeJS.ErrnoException;
      throw new TargetResolutionError(bare, e.code ?? e.message ?? String(err));
    }
    if (!Array.isArray(results) || results.length === 0) throw new TargetResolutionError(bare, 'no addresses');
    candidates = [];
    for (const r of results) {
      const addr = parseIp(String(r?.address ?? ''));
      if (!addr) throw new TargetResolutionError(bare, `resolver returned "${String(r?.address)}", which is not an IP address`);
      candidates.push(addr);
    }
  }
  const refused: AddressClassification[] = [];
  const seen = new Set<string>();
  const allowed: string[] = [];
  for (const addr of candidates) {
    const text = formatIp(addr);
    if (seen.has(text)) continue;
    seen.add(text);
    const reason = forbiddenAddressReason(addr, allow);
    if (reason) refused.push(reason);
    else allowed.push(text);
  }
  if (refused.length > 0) throw new SsrfBlockedError(bare, refused);
  return allowed;
}

// ------------------------------------------------------------------------------------------------
// Write time

export interface WriteCheckOptions extends TargetCheckOptions {
  /** Field name used in problems, default `url`. */
  readonly field?: string;
  /** Resolve host names (default true). When false only IP-literal hosts are checked. */
  readonly resolveNames?: boolean;
}

/**
 * Write-time check of a webhook URL: http/https only, no credentials, a host that resolves,
 * and every resolved address allowed. Returns problems (empty = fine), each naming the field.
 */
export async function checkWebhookUrlAtWrite(url: unknown, options: WriteCheckOptions = {}): Promise<string[]> {
  const field = options.field ?? 'url';
  if (typeof url !== 'string' || url.trim() === '') return [`${field} is required: an absolute http:// or https:// URL`];
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return [`${field} is not a valid absolute URL (expected e.g. https://hooks.example.com/outrigger)`];
  }
  const problems: string[] = [];
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    problems.push(`${field} must use http or https (got "${parsed.protocol.replace(/:$/, '')}")`);
  }
  if (parsed.username !== '' || parsed.password !== '') {
    problems.push(`${field} must not contain credentials (user:password@); send them in headers instead, e.g. Authorization`);
  }
  if (parsed.hostname === '') problems.push(`${field} has no host`);
  if (problems.length > 0) return problems;
  if (options.resolveNames === false && !parseIp(parsed.hostname)) return problems;
  try {
    await resolveAllowedAddresses(parsed.hostname, options);
  } catch (err) {
    if (err instanceof SsrfBlockedError || err instanceof TargetResolutionError) {
      problems.push(`${field}: ${err.message}`);
    } else {
      throw err;
    }
  }
  return problems;
}

// ------------------------------------------------------------------------------------------------
// Send time

export interface GuardedDispatcherOptions extends TargetCheckOptions {
  /** TCP (+TLS) connect timeout per address tried, default 10000 ms. */
  readonly connectTimeoutMs?: number;
  /** Extra TLS options for https targets (e.g. `ca` in tests). `servername` is always the URL host. */
  readonly tls?: { readonly ca?: string | Buffer | Array<string | Buffer>; readonly rejectUnauthorized?: boolean };
  /** Agent options other than `connect` (keep-alive, pipelining...). */
  readonly agentOptions?: Omit<Agent.Options, 'connect'>;
  /**
   * The connector that opens the socket once an address has passed, called with `hostname` set
   * to that IP address. Defaults to undici's `buildConnector`. Tests wrap it to observe (and
   * deny) every connect attempt.
   */
  readonly socketConnector?: buildConnector.connector;
  /** At most this many allowed addresses are tried in order when connecting fails, default 3. */
  readonly maxAddressesTried?: number;
}

/**
 * An undici connector that resolves and checks before connecting, then connects to the checked
 * IP address itself. Exposed for composition; most callers want `createGuardedDispatcher`.
 */
export function createGuardedConnector(options: GuardedDispatcherOptions = {}): buildConnector.connector {
  const allow = toCidrs(options.allowPrivateTargets);
  const checkOptions: TargetCheckOptions = {
    allowPrivateTargets: allow,
    lookup: options.lookup,
    lookupTimeoutMs: options.lookupTimeoutMs ?? options.connectTimeoutMs ?? 5000,
  };
  const base =
    options.socketConnector ??
    buildConnector({
      timeout: options.connectTimeoutMs ?? 10_000,
      ...(options.tls?.ca !== undefined ? { ca: options.tls.ca } : {}),
      ...(options.tls?.rejectUnauthorized !== undefined ? { rejectUnauthorized: options.tls.rejectUnauthorized } : {}),
    });
  const maxTried = Math.max(1, options.maxAddressesTried ?? 3);

  return function guardedConnect(connectOptions, callback) {
    const originalHost = connectOptions.hostname;
    const bare = originalHost.startsWith('[') ? originalHost.slice(1, -1) : originalHost;
    // SNI and certificate check against the name in the URL (never an IP: SNI forbids it).
    const servername = connectOptions.servername || (parseIp(bare) ? undefined : bare);

    resolveAllowedAddresses(bare, checkOptions).then(
      (addresses) => {
        const tried = addresses.slice(0, maxTried);
        const attempt = (index: number, lastError: Error | null): void => {
          const address = tried[index];
          if (address === undefined) {
            callback(lastError ?? new Error(`no address to connect to for ${bare}`), null);
            return;
          }
          try {
            base({ ...connectOptions, hostname: address, ...(servername ? { servername } : {}) }, (err, socket) => {
              if (err) attempt(index + 1, err);
              else callback(null, socket!);
            });
          } catch (err) {
            attempt(index + 1, err instanceof Error ? err : new Error(String(err)));
          }
        };
        attempt(0, null);
      },
      (err: unknown) => callback(err instanceof Error ? err : new Error(String(err)), null),
    );
  };
}

/**
 * The dispatcher every webhook delivery (real and test sends) must use. Send with
 * `dispatcher.request({...})` or `undici.request(url, { dispatcher })`; never compose a redirect
 * interceptor (see the file comment). Close it (`await dispatcher.close()`) on shutdown.
 */
export function createGuardedDispatcher(options: GuardedDispatcherOptions = {}): Agent {
  return new Agent({ ...(options.agentOptions ?? {}), connect: createGuardedConnector(options) });
}
