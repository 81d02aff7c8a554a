import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { validateConfig } from '../../../../src/config/validate.js';
import { OutriggerError, forbidden, notFound, payloadTooLarge, serviceUnavailable, tooManyRequests, unauthorized } from '../../../../src/errors.js';
import { sendError, type ErrorFormat } from '../../../../src/http/respond.js';
import { graphqlRefusal, refusalBody, refusalMediaType } from '../../../../src/graphql/serve/refusal.js';
import { fakeResponse } from '../../../support/peers/fake-response.js';

const GQL = 'application/graphql-response+json';
const JSON_TYPE = 'application/json';

/** A response as sendError writes it, for a request with this Accept (complete: nothing left unread). */
function answer(error: unknown, accept?: string, format: ErrorFormat | null = graphqlRefusal) {
  const req = { headers: accept === undefined ? {} : { accept }, complete: true } as unknown as IncomingMessage;
  const { res, sent } = fakeResponse(req);
  sendError(res, error, undefined, { format: format ?? undefined });
  return { status: sent.status!, headers: sent.headers!, json: JSON.parse(sent.body!) };
}

describe('GraphQL-shaped refusals (SPEC §15): the body', () => {
  it.each([
    [unauthorized('authentication required', { 'www-authenticate': 'Basic realm="x"' }), 401, { code: 'UNAUTHENTICATED' }, { 'www-authenticate': 'Basic realm="x"' }],
    [unauthorized('the API key is not valid', { 'www-authenticate': 'Bearer error="invalid_token"' }, 'INVALID_API_KEY'), 401, { code: 'UNAUTHENTICATED', reason: 'INVALID_API_KEY' }, {}],
    [forbidden('no permission allows GET /graphql/shop'), 403, { code: 'FORBIDDEN' }, {}],
    [tooManyRequests("rate limit 'per-key': 2 requests per 60 s; retry in 5 s", 5), 429, { code: 'TOO_MANY_REQUESTS' }, { 'retry-after': '5' }],
    [payloadTooLarge('the request body is larger than 1048576 bytes'), 413, { code: 'PAYLOAD_TOO_LARGE' }, {}],
    [
      new OutriggerError(503, 'RATE_LIMITS_UNAVAILABLE', 'rate limits cannot be checked', { 'retry-after': '2' }),
      503,
      { code: 'SERVICE_UNAVAILABLE', reason: 'RATE_LIMITS_UNAVAILABLE' },
      { 'retry-after': '2' },
    ],
    [serviceUnavailable('busy', 'SERVICE_UNAVAILABLE'), 503, { code: 'SERVICE_UNAVAILABLE' }, {}],
    [notFound('no GraphQL app is served at /graphql/nope', 'APP_NOT_FOUND'), 404, { code: 'APP_NOT_FOUND' }, {}],
    [new OutriggerError(400, 'BAD_REQUEST', 'the path contains "." segments'), 400, { code: 'BAD_REQUEST' }, {}],
  ])('%s', (error, status, extensions, headers) => {
    const out = answer(error, GQL);
    expect(out.status).toBe(status);
    expect(out.json).toEqual({ errors: [{ message: (error as Error).message, extensions }] });
    expect(out.headers).toMatchObject({ ...headers, 'content-type': `${GQL}; charset=utf-8`, 'cache-control': 'no-store' });
    expect(out.headers['content-length']).toBe(Buffer.byteLength(JSON.stringify(out.json)));
  });

  it('a Redis refusal is 503 SERVICE_UNAVAILABLE with Retry-After; an unknown error 500 INTERNAL_SERVER_ERROR, nothing internal said', () => {
    const redis = answer(new Error('Connection is closed.'), GQL);
    expect(redis.status).toBe(503);
    expect(Number(redis.headers['retry-after'])).toBeGreaterThan(0);
    expect(redis.json.errors[0].extensions).toEqual({ code: 'SERVICE_UNAVAILABLE' });
    expect(redis.json.errors[0].message).toMatch(/unreachable/);
    const bug = answer(new Error('x is undefined at secret.ts:12'), GQL);
    expect(bug.status).toBe(500);
    expect(bug.json.errors[0]).toEqual({ message: expect.stringMatching(/^internal error; the request id/), extensions: { code: 'INTERNAL_SERVER_ERROR' } });
  });

  it('the message is JSON-escaped, whatever it holds', () => {
    const body = refusalBody({ status: 403, code: 'FORBIDDEN', message: 'no "permission" \\ </script>\n\u2028' });
    expect(JSON.parse(body)).toEqual({ errors: [{ message: 'no "permission" \\ </script>\n\u2028', extensions: { code: 'FORBIDDEN' } }] });
  });

  it('without a format (other routes, httpProfile: restheart) the body stays RESTHeart-shaped', () => {
    const out = answer(forbidden('no'), GQL, null);
    expect(out.json).toEqual({ 'http status code': 403, 'http status description': 'Forbidden', message: 'no' });
    expect(out.headers['content-type']).toBe('application/json; charset=utf-8');
  });
});

describe('GraphQL-shaped refusals: the Content-Type', () => {
  it.each([
    [undefined, GQL],
    ['', GQL],
    ['*/*', GQL],
    ['application/*', GQL],
    [GQL, GQL],
    [`${GQL}, ${JSON_TYPE};q=0.9`, GQL], // Apollo Client 4, graphql-request
    [`${JSON_TYPE}, ${GQL}`, GQL], // a tie: the type that says a non-2xx body is GraphQL
    [`${GQL};q=0.5, ${JSON_TYPE}`, JSON_TYPE], // the client ranks application/json higher
    [JSON_TYPE, JSON_TYPE],
    [`${JSON_TYPE}, */*;q=0.1`, JSON_TYPE],
    [`${GQL};q=0, */*`, JSON_TYPE],
    ['text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8', GQL], // a browser
    ['text/event-stream', JSON_TYPE], // admits neither: still answered, as JSON
    ['text/html', JSON_TYPE],
  ])('Accept %j → %s', (accept, type) => {
    expect(refusalMediaType(accept)).toBe(type);
    expect(answer(forbidden('no'), accept).headers['content-type']).toBe(`${type}; charset=utf-8`);
  });

  it('repeated Accept headers are read as one list', () => {
    expect(refusalMediaType([JSON_TYPE, `${GQL};q=0.1`])).toBe(JSON_TYPE);
    expect(refusalMediaType(['text/html', GQL])).toBe(GQL);
  });
});

describe('graphql.httpProfile in the config', () => {
  const base = { service: { id: 'svc' }, upstream: { url: 'http://127.0.0.1:1' } };
  it('defaults to graphql-over-http; takes graphql (SPEC §15’s name for it) and restheart', () => {
    expect(validateConfig(base).config.graphql.httpProfile).toBe('graphql-over-http');
    expect(validateConfig({ ...base, graphql: { httpProfile: 'graphql' } }).config.graphql.httpProfile).toBe('graphql-over-http');
    expect(validateConfig({ ...base, graphql: { httpProfile: 'graphql-over-http' } }).config.graphql.httpProfile).toBe('graphql-over-http');
    const restheart = validateConfig({ ...base, graphql: { httpProfile: 'restheart' } });
    expect(restheart.problems).toEqual([]);
    expect(restheart.config.graphql.httpProfile).toBe('restheart');
  });

  it('refuses anything else, naming the path and the values', () => {
    for (const value of ['apollo', 'RESTHEART', 1, true]) {
      expect(validateConfig({ ...base, graphql: { httpProfile: value } }).problems).toEqual([
        `graphql.httpProfile: must be one of graphql-over-http, graphql, restheart (got ${JSON.stringify(value)})`,
      ]);
    }
  });
});
