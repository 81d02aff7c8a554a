import type { Exchange } from '../exchange.js';
import { decodeUrlComponent } from './url-decoding.js';

export type Parameters = ReadonlyMap<string, readonly string[]>;

const NO_PARAMETERS: Parameters = new Map();

/**
 * The request as Undertow's exchange presents it to predicates, derived lazily from an
 * Exchange and cached per Exchange object, so that evaluating fifty webhook conditions on one
 * request decodes the path and parses the query string once.
 */
export class RequestView {
  private relativePathValue: string | undefined;
  private pathParametersValue: Parameters | undefined;
  private queryParametersValue: Parameters | undefined;
  private cookiesValue: ReadonlyMap<string, string> | undefined;

  constructor(private readonly exchange: Exchange) {}

  /**
   * The decoded path up to the first `;` (`%R`). Undertow reads everything after a `;` as path
   * parameters, so `/admin;x=1` is matched as `/admin`, as RESTHeart itself will see it.
   */
  get relativePath(): string {
    if (this.relativePathValue === undefined) {
      const raw = this.exchange.path;
      const semicolon = raw.indexOf(';');
      const beforeParameters = semicolon === -1 ? raw : raw.slice(0, semicolon);
      const decoded = decodeUrlComponent(beforeParameters, true, false);
      this.relativePathValue = decoded.length === 0 ? '/' : decoded;
    }
    return this.relativePathValue;
  }

  /** `;name=value&name2=value2` after the first `;` of the path (`%{p,name}`). */
  get pathParameters(): Parameters {
    if (this.pathParametersValue === undefined) {
      const raw = this.exchange.path;
      const semicolon = raw.indexOf(';');
      this.pathParametersValue = semicolon === -1 ? NO_PARAMETERS : parseParameters(raw.slice(semicolon + 1));
    }
    return this.pathParametersValue;
  }

  /** Decoded query parameters in arrival order (`%{q,name}`, `qparams-*`). */
  get queryParameters(): Parameters {
    if (this.queryParametersValue === undefined) {
      const raw = this.exchange.rawQuery;
      this.queryParametersValue = raw.length === 0 ? NO_PARAMETERS : parseParameters(raw);
    }
    return this.queryParametersValue;
  }

  /** Request cookies by name; the first cookie of a name wins (`%{c,name}`). */
  get cookies(): ReadonlyMap<string, string> {
    if (this.cookiesValue === undefined) {
      const values = this.exchange.requestHeaderValues?.('cookie') ?? optionalList(this.exchange.requestHeader('cookie'));
      const cookies = new Map<string, string>();
      for (const header of values) parseCookieHeader(header, cookies);
      this.cookiesValue = cookies;
    }
    return this.cookiesValue;
  }
}

/**
 * The view lives on the exchange itself (`conditionView`), not in a WeakMap: an exchange is
 * made per request, and per-request weak entries cost the garbage collector on every request.
 */
export function requestViewOf(exchange: Exchange): RequestView {
  return ((exchange as { conditionView?: RequestView }).conditionView ??= new RequestView(exchange));
}

/**
 * Undertow's query/path parameter split: `&` separates, the first `=` splits name from value, a
 * name without `=` has the value `''`, empty parts are skipped, names and values are decoded.
 */
export function parseParameters(raw: string): Parameters {
  const parameters = new Map<string, string[]>();
  for (const part of raw.split('&')) {
    if (part.length === 0) continue;
    const equals = part.indexOf('=');
    const name = decodeUrlComponent(equals === -1 ? part : part.slice(0, equals), false, true);
    const value = equals === -1 ? '' : decodeUrlComponent(part.slice(equals + 1), false, true);
    const values = parameters.get(name);
    if (values === undefined) parameters.set(name, [value]);
    else values.push(value);
  }
  return parameters;
}

/** `a=1; b="2"` into the map, keeping the first value of a repeated name. */
export function parseCookieHeader(header: string, into: Map<string, string>): void {
  for (const part of header.split(';')) {
    const equals = part.indexOf('=');
    if (equals === -1) continue;
    const name = part.slice(0, equals).trim();
    if (name.length === 0 || into.has(name)) continue;
    into.set(name, unquote(part.slice(equals + 1).trim()));
  }
}

/** The `name=value` of a Set-Cookie header, or undefined. */
export function setCookieNameAndValue(header: string): [string, string] | undefined {
  const end = header.indexOf(';');
  const pair = end === -1 ? header : header.slice(0, end);
  const equals = pair.indexOf('=');
  if (equals === -1) return undefined;
  return [pair.slice(0, equals).trim(), unquote(pair.slice(equals + 1).trim())];
}

function unquote(value: string): string {
  return value.length >= 2 && value.startsWith('"') && value.endsWith('"') ? value.slice(1, -1) : value;
}

export function optionalList(value: string | undefined): readonly string[] {
  return value === undefined ? [] : [value];
}
