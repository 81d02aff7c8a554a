import type { IncomingMessage, ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CorsConfig } from '../../../src/config/cors-config.js';
import { OutriggerError } from '../../../src/errors.js';
import { sendError } from '../../../src/http/respond.js';
import type { OwnRoute } from '../../../src/http/route-table.js';
import { ChainRequest } from '../../../src/chain/request.js';
import { Chain } from '../../../src/chain/run.js';
import { ANSWERED, type Stage } from '../../../src/chain/stage.js';
import { corsResponseFilter, corsStage } from '../../../src/chain/stages/cors.js';
import { startHttpServer, type TestServer } from '../../support/peers/http-servers.js';

/**
 * The cors stage on a real HTTP server: a chain of the stage and a last stage that answers 200
 * (or 401 for /refused), with the route the path names (/graphql/<uri> and /_admin are own routes).
 */
const graphqlRoute = { kind: 'graphql', prefix: '/graphql', handle: () => {} } as OwnRoute;
const adminRoute = { kind: 'admin', prefix: '/_admin', handle: () => {} } as OwnRoute;
const reached: string[] = [];
const answer: Stage = {
  name: 'answer',
  run(request) {
    reached.push(`${request.method} ${request.path}`);
    if (request.path === '/refused') throw new OutriggerError(401, 'UNAUTHENTICATED', 'who are you');
    request.res.writeHead(200, { 'content-type': 'text/plain' });
    request.res.end('ok');
    return ANSWERED;
  },
};

function serve(config: CorsConfig): Promise<TestServer> {
  const chain = new Chain([corsStage(config), answer], (request, error) => sendError(request.res, error));
  return startHttpServer((req: IncomingMessage, res: ServerResponse) => {
    const request = new ChainRequest(req, res, '127.0.0.1', false);
    request.route = request.path.startsWith('/graphql/') ? graphqlRoute : request.path.startsWith('/_admin') ? adminRoute : undefined;
    request.fail = (error) => chain.fail(request, error);
    chain.open(request);
    chain.start(request);
  });
}

let echo: TestServer;
let listed: TestServer;
let none: TestServer;
beforeAll(async () => {
  echo = await serve({ allowOrigins: 'echo' });
  listed = await serve({ allowOrigins: ['https://app.example.com', 'null'] });
  none = await serve({ allowOrigins: 'none' });
});
afterAll(async () => {
  await Promise.all([echo?.close(), listed?.close(), none?.close()]);
});

const preflight = (origin: string, method = 'PUT', headers = 'authorization, content-type') => ({
  method: 'OPTIONS',
  headers: { origin, 'access-control-request-method': method, 'access-control-request-headers': headers },
});
const cors = (res: Response) => Object.fromEntries([...res.headers].filter(([name]) => name.startsWith('access-control-') || name === 'vary'));

describe('the cors stage (SPEC §15)', () => {
  it('answers a preflight itself (204, the lists, Max-Age), echoing the Origin without credentials', async () => {
    reached.length = 0;
    const res = await fetch(`${echo.url}/api/orders`, preflight('https://other.example'));
    expect(res.status).toBe(204);
    expect(cors(res)).toEqual({
      'access-control-allow-origin': 'https://other.example',
      'access-control-allow-methods': 'GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS',
      'access-control-allow-headers': expect.stringMatching(/^Authorization, Content-Type, Idempotency-Key, Last-Event-ID\b/),
      'access-control-max-age': '7200',
      vary: 'Origin',
    });
    expect(reached).toEqual([]);
  });

  it('puts the CORS headers on an answer and on a refusal; a listed origin gets credentials', async () => {
    const ok = await fetch(`${listed.url}/api/orders`, { headers: { origin: 'https://app.example.com' } });
    expect(cors(ok)).toEqual({
      'access-control-allow-origin': 'https://app.example.com',
      'access-control-allow-credentials': 'true',
      'access-control-expose-headers': 'Location, ETag, RateLimit, RateLimit-Policy, Retry-After, Cache-Status, Idempotent-Replayed, X-Request-Id',
      vary: 'Origin',
    });
    const refused = await fetch(`${echo.url}/refused`, { headers: { origin: 'https://other.example' } });
    expect(refused.status).toBe(401);
    expect(refused.headers.get('access-control-allow-origin')).toBe('https://other.example');
    expect(refused.headers.get('access-control-allow-credentials')).toBeNull();
  });

  it('refuses an origin not listed, and null unless listed (then without credentials)', async () => {
    const other = await fetch(`${listed.url}/api/orders`, preflight('https://evil.example'));
    expect([other.status, cors(other)]).toEqual([204, { vary: 'Origin' }]);
    const nullEcho = await fetch(`${echo.url}/api/orders`, preflight('null'));
    expect([nullEcho.status, cors(nullEcho)]).toEqual([204, { vary: 'Origin' }]);
    const nullListed = await fetch(`${listed.url}/api/orders`, { headers: { origin: 'null' } });
    expect(nullListed.headers.get('access-control-allow-origin')).toBe('null');
    expect(nullListed.headers.get('access-control-allow-credentials')).toBeNull();
  });

  it('serves /graphql/<uri>, not the other own routes, and nothing with none or without Origin', async () => {
    const gql = await fetch(`${echo.url}/graphql/shop`, preflight('https://other.example', 'POST', 'authorization, content-type'));
    expect([gql.status, gql.headers.get('access-control-allow-origin')]).toEqual([204, 'https://other.example']);
    reached.length = 0;
    const admin = await fetch(`${echo.url}/_admin/acl`, preflight('https://other.example'));
    expect([admin.status, cors(admin)]).toEqual([200, {}]);
    const off = await fetch(`${none.url}/api/orders`, preflight('https://other.example'));
    expect([off.status, cors(off)]).toEqual([200, {}]);
    const plain = await fetch(`${echo.url}/api/orders`);
    expect(cors(plain)).toEqual({});
    expect(reached).toEqual(['OPTIONS /_admin/acl', 'OPTIONS /api/orders', 'GET /api/orders']);
  });

  it('an OPTIONS with a body, or without Access-Control-Request-Method, is not a preflight', async () => {
    reached.length = 0;
    await fetch(`${echo.url}/api/x`, { method: 'OPTIONS', headers: { origin: 'https://other.example' } });
    await fetch(`${echo.url}/api/y`, { method: 'OPTIONS', headers: { origin: 'https://other.example', 'access-control-request-method': 'PUT' }, body: 'x' });
    expect(reached).toEqual(['OPTIONS /api/x', 'OPTIONS /api/y']);
  });
});

describe('corsResponseFilter', () => {
  it("drops the backend's Access-Control-* and keeps Origin in its Vary, composed once per plan filter", () => {
    const plan = (name: string, value: string | string[]) => (name === 'set-cookie' ? undefined : value);
    const filter = corsResponseFilter(plan);
    expect(corsResponseFilter(plan)).toBe(filter);
    expect(filter('access-control-allow-origin', '*')).toBeUndefined();
    expect(filter('access-control-allow-credentials', 'true')).toBeUndefined();
    expect(filter('set-cookie', 'a=b')).toBeUndefined();
    expect(filter('etag', '"1"')).toBe('"1"');
    expect(filter('vary', 'Accept-Encoding')).toBe('Accept-Encoding, Origin');
    expect(filter('vary', 'origin, accept')).toBe('origin, accept');
    expect(filter('vary', '*')).toBe('*');
    expect(corsResponseFilter(undefined)('access-control-expose-headers', 'X')).toBeUndefined();
  });
});
