/**
 * `cors:` (SPEC §15): which browser pages on other origins may call the proxied API and the
 * GraphQL apps through Outrigger.
 *
 *   allowOrigins  `echo` (the default, RESTHeart's behaviour: the request's `Origin` is echoed,
 *                 with `Vary: Origin`, never with credentials), a list of origins
 *                 (`https://app.example.com`; the literal `null` admits pages whose origin is
 *                 opaque), answered with `Access-Control-Allow-Credentials: true` except for
 *                 `null`, or `none` (no CORS answers; the backend's are removed too).
 */
import type { SectionReader } from './reader.js';

export interface CorsConfig {
  allowOrigins: 'echo' | 'none' | readonly string[];
}

export const CORS_DEFAULTS: CorsConfig = { allowOrigins: 'echo' };

/** An origin as a browser serializes it (scheme, host, port; lowercase; no path), or a problem. */
export function originProblem(value: string): string | null {
  if (value === 'null') return null;
  if (value === '*') return 'must be an origin like https://app.example.com; "*" is not accepted (use `echo` to answer every origin, without credentials)';
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return `must be an origin like https://app.example.com (got ${JSON.stringify(value)})`;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return `must be an http:// or https:// origin (got ${JSON.stringify(value)})`;
  if (url.origin !== value)
    return `must be written as the browser sends it, ${JSON.stringify(url.origin)} (scheme, lowercase host, port only when not the default, no path or trailing /; got ${JSON.stringify(value)})`;
  return null;
}

export function readCors(section: SectionReader): CorsConfig {
  const value = section.raw('allowOrigins');
  section.finish();
  if (value === undefined || value === null || value === 'echo') return { allowOrigins: 'echo' };
  if (value === 'none') return { allowOrigins: 'none' };
  const at = `${section.path}.allowOrigins`;
  if (!Array.isArray(value)) {
    section.problems.push(`${at}: must be echo, none or a list of origins like [https://app.example.com] (got ${JSON.stringify(value)})`);
    return CORS_DEFAULTS;
  }
  const origins: string[] = [];
  value.forEach((item: unknown, i) => {
    const problem = typeof item === 'string' ? originProblem(item) : `must be an origin string (got ${JSON.stringify(item)})`;
    if (problem) section.problems.push(`${at}[${i}]: ${problem}`);
    else origins.push(item as string);
  });
  if (origins.length === 0 && value.length === 0) section.problems.push(`${at}: an empty list admits no origin; write none to turn CORS off`);
  return { allowOrigins: origins };
}
