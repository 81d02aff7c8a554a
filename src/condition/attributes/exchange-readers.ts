import { STATUS_CODES } from 'node:http';
import { isIPv4, isIPv6 } from 'node:net';
import type { Exchange } from '../exchange.js';
import type { EvaluationScope } from '../runtime/evaluation-scope.js';
import { setCookieNameAndValue } from '../runtime/request-view.js';

/** Undertow renders a multi-valued header or parameter as `[a, b]` and a single one as itself. */
export function renderValues(values: readonly string[] | undefined): string | null {
  if (values === undefined || values.length === 0) return null;
  if (values.length === 1) return values[0]!;
  return `[${values.join(', ')}]`;
}

export function readRequestHeader(exchange: Exchange, lowerCaseName: string): string | null {
  if (exchange.requestHeaderValues !== undefined) return renderValues(exchange.requestHeaderValues(lowerCaseName));
  return exchange.requestHeader(lowerCaseName) ?? null;
}

export function readResponseHeader(exchange: Exchange, lowerCaseName: string): string | null {
  if (exchange.responseHeaderValues !== undefined) return renderValues(exchange.responseHeaderValues(lowerCaseName));
  return exchange.responseHeader?.(lowerCaseName) ?? null;
}

export function readResponseCookie(exchange: Exchange, name: string): string | null {
  const headers = exchange.responseHeaderValues?.('set-cookie') ?? (exchange.responseHeader?.('set-cookie') !== undefined ? [exchange.responseHeader('set-cookie')!] : []);
  for (const header of headers) {
    const cookie = setCookieNameAndValue(header);
    if (cookie !== undefined && cookie[0] === name) return cookie[1];
  }
  return null;
}

export const readQueryString = (scope: EvaluationScope): string => (scope.exchange.rawQuery.length === 0 ? '' : `?${scope.exchange.rawQuery}`);

export function readHostHeader(exchange: Exchange): string | undefined {
  return exchange.host ?? exchange.requestHeader('host');
}

/** `%v`: the Host header without its port, else the local address. */
export function readServerName(exchange: Exchange): string | null {
  const host = readHostHeader(exchange);
  if (host === undefined || host.length === 0) return exchange.localIp ?? null;
  if (host.startsWith('[')) {
    const close = host.indexOf(']');
    return close === -1 ? host : host.slice(0, close + 1);
  }
  const colon = host.indexOf(':');
  return colon === -1 ? host : host.slice(0, colon);
}

/** `%{HOST_AND_PORT}`: the Host header, else the local address with a non-default port. */
export function readHostAndPort(exchange: Exchange): string | null {
  const host = readHostHeader(exchange);
  if (host !== undefined && host.length > 0) return host;
  if (exchange.localIp === undefined) return null;
  const address = isIPv6(exchange.localIp) ? `[${exchange.localIp}]` : exchange.localIp;
  const defaultPort = exchange.secure ? 443 : 80;
  return exchange.localPort === defaultPort ? address : `${address}:${exchange.localPort}`;
}

export function readStatusCode(exchange: Exchange): string | null {
  return exchange.statusCode === undefined ? null : String(exchange.statusCode);
}

export function readReasonPhrase(exchange: Exchange): string | null {
  if (exchange.statusMessage !== undefined) return exchange.statusMessage;
  if (exchange.statusCode === undefined) return null;
  return STATUS_CODES[exchange.statusCode] ?? null;
}

/** `%r`: `GET /path?query HTTP/1.1`, with the path as received. */
export function readRequestLine(exchange: Exchange): string {
  const query = exchange.rawQuery.length === 0 ? '' : `?${exchange.rawQuery}`;
  return `${exchange.method} ${exchange.path}${query} ${exchange.protocol}`;
}

/** ALPN-style name of the protocol (`%{TRANSPORT_PROTOCOL}`). */
export function readTransportProtocol(exchange: Exchange): string {
  if (exchange.protocol.startsWith('HTTP/2')) return 'h2';
  return exchange.protocol.toLowerCase();
}

/** `%o`: the client address with its host part dropped (the last IPv4 octet, IPv6 after /48). */
export function obfuscateIp(ip: string): string | null {
  const mapped = ip.startsWith('::ffff:') && isIPv4(ip.slice(7)) ? ip.slice(7) : ip;
  if (isIPv4(mapped)) return mapped.slice(0, mapped.lastIndexOf('.') + 1);
  if (isIPv6(mapped)) return `${mapped.split(':').slice(0, 3).join(':')}:`;
  return null;
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const twoDigits = (n: number): string => (n < 10 ? `0${n}` : String(n));

/** `%t`: the request time in Common Log Format, in UTC: `[10/Oct/2000:13:55:36 +0000]`. */
export function commonLogTime(epochMs: number): string {
  const d = new Date(epochMs);
  return `[${twoDigits(d.getUTCDate())}/${MONTHS[d.getUTCMonth()]}/${d.getUTCFullYear()}:${twoDigits(d.getUTCHours())}:${twoDigits(d.getUTCMinutes())}:${twoDigits(d.getUTCSeconds())} +0000]`;
}

/** `%T`: seconds with three decimals, as Undertow formats it. */
export function secondsWithMillis(ms: number): string {
  const whole = Math.floor(ms);
  const remainder = whole % 1000;
  return `${Math.floor(whole / 1000)}.${String(remainder).padStart(3, '0')}`;
}
