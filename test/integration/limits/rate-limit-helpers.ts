/** Shared by the rate-limit tests (SPEC §10): the IETF headers parsed as RFC 9651 Structured Fields. */
import { parseList } from 'structured-headers';
import type { CallResult } from '../../support/clients/http-client.js';

/** `RateLimit-Policy` and `RateLimit` parsed (Lists of Strings with parameters), with a real SF parser. */
export function rateLimitHeaders(res: Pick<CallResult, 'headers'>) {
  const items = (value: unknown) => (typeof value === 'string' ? parseList(value).map(([name, params]) => ({ name: name as string, ...Object.fromEntries(params) }) as Record<string, any>) : []);
  return { policies: items(res.headers['ratelimit-policy']), limit: items(res.headers['ratelimit'])[0] as { name: string; r: number; t: number } | undefined };
}
