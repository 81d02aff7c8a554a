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
import { z } from 'zod';
import { got, optionalSection } from './fields.js';

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

const ORIGINS_HELP = 'must be echo, none or a list of origins like [https://app.example.com]';

const origin = z.string({ error: (iss) => `must be an origin string ${got(iss.input)}` }).superRefine((item, ctx) => {
  const problem = originProblem(item);
  if (problem) ctx.addIssue({ code: 'custom', message: problem, input: item });
});

export const corsSchema = optionalSection({
  allowOrigins: z
    .union([z.enum(['echo', 'none']), z.array(origin).min(1, { error: 'an empty list admits no origin; write none to turn CORS off' })], {
      error: (iss) => `${ORIGINS_HELP} ${got(iss.input)}`,
    })
    .default('echo'),
});
