/**
 * GraphQL-shaped refusals (SPEC §15): every error Outrigger answers on `/graphql/<uri>` outside
 * the GraphQL handler (authentication 401, the ACL's 403, rate limits' 429, body bounds' 413 and
 * 429, Redis or buffer 503s, the unknown app's 404, a request the head stage refuses) is a
 * GraphQL response `{"errors": [{"message", "extensions": {"code"}}]}`, so a GraphQL client
 * surfaces the reason as it does its own errors. respond.ts still decides the status, the message
 * and the headers (WWW-Authenticate, Retry-After; failure.ts adds RateLimit and X-Request-Id):
 * this only writes the body and picks its Content-Type. The route names it (routes.ts) unless
 * `graphql.httpProfile` is `restheart`, so other routes pay nothing.
 */
import type { ErrorAnswer, ErrorFormat } from '../../http/respond.js';
import { qualityOf } from './http-handler.js';

const GRAPHQL_RESPONSE_JSON = 'application/graphql-response+json';
const JSON_TYPE = 'application/json';

/**
 * The code a refusal's status carries, in the names GraphQL clients already switch on (Apollo
 * Server's UNAUTHENTICATED and FORBIDDEN). A more precise OutriggerError code (INVALID_API_KEY,
 * RATE_LIMITS_UNAVAILABLE, ...) stays beside it as `extensions.reason`. Other statuses (404
 * APP_NOT_FOUND, 400 BAD_REQUEST, ...) carry the error's own code, as execution errors do.
 */
const CODE_BY_STATUS: Readonly<Record<number, string>> = {
  401: 'UNAUTHENTICATED',
  403: 'FORBIDDEN',
  413: 'PAYLOAD_TOO_LARGE',
  429: 'TOO_MANY_REQUESTS',
  503: 'SERVICE_UNAVAILABLE',
};

export const graphqlRefusal: ErrorFormat = (answer, req) => ({
  body: refusalBody(answer),
  contentType: `${refusalMediaType(req?.headers.accept)}; charset=utf-8`,
});

export function refusalBody({ status, code, message }: ErrorAnswer): string {
  const standard = CODE_BY_STATUS[status];
  const extensions = standard === undefined || standard === code ? { code } : { code: standard, reason: code };
  return JSON.stringify({ errors: [{ message, extensions }] });
}

/**
 * `application/graphql-response+json` whenever Accept allows it (missing, `*\/*`, `application/*`
 * or naming it) and does not rank `application/json` higher; else `application/json`, also when
 * Accept admits neither (a refusal is not turned into a 406). A refusal is never 2xx, and only
 * under this type does a client know a non-2xx body is a GraphQL response (GraphQL-over-HTTP;
 * Apollo Client 4 reads it as GraphQL errors only then). The handler's own answers keep
 * `negotiate` (application/json for `*\/*`, as the GraphQL-over-HTTP audit requires of them).
 */
export function refusalMediaType(accept: string | string[] | undefined): string {
  if (accept === undefined) return GRAPHQL_RESPONSE_JSON;
  const header = Array.isArray(accept) ? accept.join(', ') : accept;
  if (header.trim() === '') return GRAPHQL_RESPONSE_JSON;
  const graphql = qualityOf(header, GRAPHQL_RESPONSE_JSON).q;
  return graphql > 0 && graphql >= qualityOf(header, JSON_TYPE).q ? GRAPHQL_RESPONSE_JSON : JSON_TYPE;
}
