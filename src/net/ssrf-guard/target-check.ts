/**
 * Resolving a target and checking every address it resolves to, and the write-time check of a
 * webhook URL (scheme, credentials, host, addresses) that reports problems for a 400.
 */
import { promises as dns } from 'node:dns';
import { OutriggerError } from '../../errors.js';
import { formatIp, NO_CIDRS, parseCidrs, parseIp, type IpAddress, type ParsedCidrs } from '../cidr.js';
import { forbiddenAddressReason, type AddressClassification } from './address-ranges.js';
import { withTimeout } from '../../util/with-timeout.js';

// Resolution

export interface ResolvedAddress {
  readonly address: string;
  readonly family?: number;
}

/** Resolves a host name to every address it has (the shape of `dns.promises.lookup(h, {all: true})`). */
export type HostLookup = (hostname: string) => Promise<readonly ResolvedAddress[]>;

/** The system resolver (getaddrinfo, /etc/hosts included), every address, in resolver order. */
const systemLookup: HostLookup = (hostname) => dns.lookup(hostname, { all: true, verbatim: true });

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

export interface TargetCheckOptions {
  /** CIDRs exempt from the guard (`webhooks.allowPrivateTargets`), parsed or as strings. */
  readonly allowPrivateTargets?: ParsedCidrs | readonly string[];
  /** Injected resolver (tests; a caching resolver). Defaults to the system resolver. */
  readonly lookup?: HostLookup;
  /** Bound on the DNS lookup, default 5000 ms. */
  readonly lookupTimeoutMs?: number;
}

export function toCidrs(allow: ParsedCidrs | readonly string[] | undefined): ParsedCidrs {
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
