import type { AttributeReader } from '../runtime/evaluation-scope.js';
import {
  commonLogTime,
  obfuscateIp,
  readHostAndPort,
  readQueryString,
  readReasonPhrase,
  readRequestHeader,
  readRequestLine,
  readResponseCookie,
  readResponseHeader,
  readServerName,
  readStatusCode,
  readTransportProtocol,
  renderValues,
  secondsWithMillis,
} from './exchange-readers.js';

/** A known `%x` / `%{NAME}` / `%{x,argument}` attribute. */
export interface AttributeDefinition {
  readonly read: AttributeReader;
  /** True when the value only exists once the response is known (webhook conditions). */
  readonly usesResponse: boolean;
}

const request = (read: AttributeReader): AttributeDefinition => ({ read, usesResponse: false });
const response = (read: AttributeReader): AttributeDefinition => ({ read, usesResponse: true });

const method = request((s) => s.exchange.method);
const requestUrl = request((s) => s.exchange.path);
const relativePath = request((s) => s.view.relativePath);
const queryString = request(readQueryString);
const statusCode = response((s) => readStatusCode(s.exchange));
const remoteIp = request((s) => s.exchange.remoteIp);
const localIp = request((s) => s.exchange.localIp ?? null);
const localPort = request((s) => String(s.exchange.localPort));
const serverName = request((s) => readServerName(s.exchange));
const protocol = request((s) => s.exchange.protocol);
const requestLine = request((s) => readRequestLine(s.exchange));
const dateTime = request((s) => commonLogTime(s.exchange.startTime ?? Date.now()));
const remoteUser = request((s) => s.exchange.user?.id ?? null);
const obfuscatedIp = request((s) => obfuscateIp(s.exchange.remoteIp));
const bytesSent = (dashIfZero: boolean): AttributeDefinition =>
  response((s) => {
    const n = s.exchange.bytesSent ?? 0;
    return dashIfZero && n === 0 ? '-' : String(n);
  });
const bytesRead = (dashIfZero: boolean): AttributeDefinition =>
  request((s) => {
    const n = s.exchange.bytesRead ?? 0;
    return dashIfZero && n === 0 ? '-' : String(n);
  });
const responseTime = (format: (ms: number) => string): AttributeDefinition => response((s) => (s.exchange.responseTimeMs === undefined ? null : format(s.exchange.responseTimeMs)));
const millis = responseTime((ms) => String(Math.floor(ms)));

/**
 * Every attribute token Undertow registers (notes/webhooks.md §A.4), by its exact spelling.
 * The short forms are case-sensitive (`%a` remote IP, `%A` local IP), like Undertow's.
 */
const NAMED: ReadonlyMap<string, AttributeDefinition> = new Map([
  ['%m', method],
  ['%{METHOD}', method],
  ['%U', requestUrl],
  ['%{REQUEST_URL}', requestUrl],
  ['%R', relativePath],
  ['%{RELATIVE_PATH}', relativePath],
  ['%{REQUEST_PATH}', relativePath],
  // Outrigger serves at the root, where Undertow's resolved (mount) path is empty.
  ['%{RESOLVED_PATH}', request(() => '')],
  ['%q', queryString],
  ['%{QUERY_STRING}', queryString],
  ['%{BARE_QUERY_STRING}', request((s) => s.exchange.rawQuery)],
  ['%s', statusCode],
  ['%{RESPONSE_CODE}', statusCode],
  ['%{RESPONSE_REASON_PHRASE}', response((s) => readReasonPhrase(s.exchange))],
  ['%D', millis],
  ['%{RESPONSE_TIME}', millis],
  ['%T', responseTime(secondsWithMillis)],
  ['%{RESPONSE_TIME_MICROS}', responseTime((ms) => String(Math.floor(ms * 1000)))],
  ['%{RESPONSE_TIME_NANOS}', responseTime((ms) => String(Math.floor(ms * 1_000_000)))],
  ['%b', bytesSent(true)],
  ['%B', bytesSent(false)],
  ['%{BYTES_SENT}', bytesSent(false)],
  ['%x', bytesRead(true)],
  ['%X', bytesRead(false)],
  ['%{BYTES_READ}', bytesRead(false)],
  ['%a', remoteIp],
  ['%{REMOTE_IP}', remoteIp],
  // No reverse DNS on the request path: the remote host is the remote address.
  ['%h', remoteIp],
  ['%{REMOTE_HOST}', remoteIp],
  ['%o', obfuscatedIp],
  ['%{REMOTE_OBFUSCATED_IP}', obfuscatedIp],
  ['%A', localIp],
  ['%{LOCAL_IP}', localIp],
  ['%p', localPort],
  ['%{LOCAL_PORT}', localPort],
  ['%v', serverName],
  ['%{LOCAL_SERVER_NAME}', serverName],
  ['%{HOST_AND_PORT}', request((s) => readHostAndPort(s.exchange))],
  ['%H', protocol],
  ['%{PROTOCOL}', protocol],
  ['%{SCHEME}', request((s) => (s.exchange.secure ? 'https' : 'http'))],
  ['%{SECURE}', request((s) => String(s.exchange.secure))],
  ['%{TRANSPORT_PROTOCOL}', request((s) => readTransportProtocol(s.exchange))],
  ['%r', requestLine],
  ['%{REQUEST_LINE}', requestLine],
  ['%t', dateTime],
  ['%{DATE_TIME}', dateTime],
  ['%u', remoteUser],
  ['%{REMOTE_USER}', remoteUser],
  ['%{AUTHENTICATION_TYPE}', request((s) => s.exchange.authenticationType ?? null)],
  // Ident lookups (RFC 1413) are never performed.
  ['%l', request(() => null)],
  ['%{SSL_CIPHER}', request((s) => s.exchange.tls?.cipher ?? null)],
  ['%{SSL_SESSION_ID}', request((s) => s.exchange.tls?.sessionId ?? null)],
  ['%{SSL_CLIENT_CERT}', request((s) => s.exchange.tls?.clientCertificate ?? null)],
  ['%{SECURE_PROTOCOL}', request((s) => s.exchange.tls?.protocol ?? null)],
  ['%{STORED_RESPONSE}', response((s) => s.exchange.storedResponse?.() ?? null)],
  // Node serves every request on its one main thread.
  ['%I', request(() => 'main')],
  ['%{THREAD_NAME}', request(() => 'main')],
  ['%{NULL}', request(() => null)],
]);

/** `%{x,argument}` attributes, by the part before the comma. */
const WITH_ARGUMENT: ReadonlyMap<string, (argument: string) => AttributeDefinition> = new Map([
  [
    'i',
    (name: string) => {
      const lower = name.toLowerCase();
      return request((s) => readRequestHeader(s.exchange, lower));
    },
  ],
  [
    'o',
    (name: string) => {
      const lower = name.toLowerCase();
      return response((s) => readResponseHeader(s.exchange, lower));
    },
  ],
  ['q', (name: string) => request((s) => renderValues(s.view.queryParameters.get(name)))],
  ['p', (name: string) => request((s) => renderValues(s.view.pathParameters.get(name)))],
  ['c', (name: string) => request((s) => s.view.cookies.get(name) ?? null)],
  ['req-cookie', (name: string) => request((s) => s.view.cookies.get(name) ?? null)],
  ['resp-cookie', (name: string) => response((s) => readResponseCookie(s.exchange, name))],
]);

/** Attributes Undertow knows that Outrigger deliberately does not offer, with the reason. */
const UNSUPPORTED_WITH_ARGUMENT: ReadonlyMap<string, string> = new Map([['time', 'formatted request times (%{time,...}) are not supported in conditions; use %t']]);

export type AttributeLookup = { readonly found: AttributeDefinition } | { readonly unsupported: string } | { readonly unknown: true };

/** Resolves one `%...` token (already split out of a value). */
export function lookupAttribute(token: string): AttributeLookup {
  const named = NAMED.get(token);
  if (named !== undefined) return { found: named };
  if (token.startsWith('%{') && token.endsWith('}')) {
    const inner = token.slice(2, -1);
    const comma = inner.indexOf(',');
    if (comma !== -1) {
      const kind = inner.slice(0, comma);
      const argument = inner.slice(comma + 1);
      const build = WITH_ARGUMENT.get(kind);
      if (build !== undefined) return { found: build(argument) };
      const reason = UNSUPPORTED_WITH_ARGUMENT.get(kind);
      if (reason !== undefined) return { unsupported: reason };
    }
  }
  return { unknown: true };
}
