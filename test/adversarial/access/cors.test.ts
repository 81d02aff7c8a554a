import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpServer, type TestServer } from '../../support/peers/http-servers.js';
import { basic, startTestOutrigger, staticUsers } from '../../support/outrigger.js';
import { startTestRedis, type TestRedis } from '../../support/redis/redis.js';
import { rawClient, readUntilClosed } from '../support.js';

/**
 * CORS as a door (SPEC §15, issue 48): what a page on another origin, or a client that forges its
 * Origin, can get out of the CORS answers. A preflight for a method or header outside the lists
 * is answered so the browser refuses it; `Origin: null` and malformed or doubled origins are not
 * echoed; a forged Origin on an own route gets no CORS header; the backend's `*` (with
 * credentials) never reaches the page; a body-carrying OPTIONS is not taken for a preflight.
 */
const ROOT = basic('root', 'root-password');
const PAGE = 'http://page.localhost:4000';

let redis: TestRedis;
let upstream: TestServer & { reached: string[] };
let proxy: Awaited<ReturnType<typeof startTestOutrigger>>;

beforeAll(async () => {
  redis = await startTestRedis();
  const reached: string[] = [];
  upstream = Object.assign(
    await startHttpServer((req, res) => {
      reached.push(`${req.method} ${req.url}`);
      req.resume();
      res.writeHead(200, { 'content-type': 'application/json', 'access-control-allow-origin': '*', 'access-control-allow-credentials': 'true', 'access-control-allow-methods': 'TRACE, PROPFIND' });
      res.end('[]');
    }),
    { reached },
  );
  proxy = await startTestOutrigger({
    service: { id: 'cors-doors' },
    upstream: { url: upstream.url },
    redis: { url: redis.url },
    users: await staticUsers({ root: ['root'], alice: ['user'] }),
    acl: { mode: 'own-routes' },
    mcp: { server: 'outrigger' },
  });
}, 30_000);
afterAll(async () => {
  await proxy?.stop();
  await upstream?.close();
  await redis?.close();
});

const corsOf = (res: Response) => Object.fromEntries([...res.headers].filter(([name]) => name.startsWith('access-control-')));
const preflight = (path: string, origin: string, method: string, headers = '') =>
  fetch(`${proxy.url}${path}`, { method: 'OPTIONS', headers: { origin, 'access-control-request-method': method, ...(headers && { 'access-control-request-headers': headers }) } });

describe('preflights the browser must refuse', () => {
  it.each(['PROPFIND', 'TRACE', 'CONNECT', 'X-EVIL'])('a preflight for %s: 204, the fixed methods (it is not among them), never forwarded', async (method) => {
    const before = upstream.reached.length;
    const res = await preflight('/api/orders', PAGE, method);
    expect(res.status).toBe(204);
    const allowed = res.headers.get('access-control-allow-methods')!.split(', ');
    expect(allowed).not.toContain(method);
    expect(upstream.reached.length).toBe(before);
  });

  it('a preflight for a header outside the list (X-Outrigger-Admin, Cookie): not among the allowed headers', async () => {
    const res = await preflight('/api/orders', PAGE, 'POST', 'x-outrigger-admin, cookie');
    expect(res.status).toBe(204);
    const allowed = res.headers.get('access-control-allow-headers')!.toLowerCase().split(', ');
    expect(allowed).not.toContain('x-outrigger-admin');
    expect(allowed).not.toContain('cookie');
    expect(allowed).toContain('authorization');
  });

  it.each([
    ['null', 'null'],
    ['a path in the origin', 'https://evil.example/x'],
    ['a scheme browsers never send', 'javascript:alert(1)'],
    ['an uppercase host', 'https://EVIL.example'],
  ])('Origin %s: no Access-Control-Allow-Origin on the preflight nor on the answer', async (_what, origin) => {
    const res = await preflight('/api/orders', origin, 'PUT', 'authorization');
    expect([res.status, corsOf(res)]).toEqual([204, {}]);
    const answer = await fetch(`${proxy.url}/api/orders`, { headers: { origin } });
    expect(corsOf(answer)).toEqual({});
  });

  it('two Origin headers are not echoed (Node joins them; no origin has a comma)', async () => {
    const head = ['GET /api/orders HTTP/1.1', 'Host: outrigger.test', `Origin: ${PAGE}`, 'Origin: https://evil.example', 'Connection: close', '', ''].join('\r\n');
    const { text } = await readUntilClosed(await rawClient(proxy.url, head), 5000);
    expect(text).toMatch(/^HTTP\/1\.1 200/);
    expect(text.toLowerCase()).not.toContain('access-control-');
  });

  it('an OPTIONS with a body is not a preflight: it goes the way of any request (forwarded, the backend answers)', async () => {
    const before = upstream.reached.length;
    const res = await fetch(`${proxy.url}/api/orders`, { method: 'OPTIONS', headers: { origin: PAGE, 'access-control-request-method': 'PUT', 'content-type': 'text/plain' }, body: 'x' });
    expect(res.status).toBe(200);
    expect(upstream.reached.slice(before)).toEqual(['OPTIONS /api/orders']);
    expect(res.headers.get('access-control-allow-methods')).toBeNull(); // the backend's TRACE, PROPFIND is gone
  });
});

describe("the backend's CORS headers never reach a page", () => {
  it('its `*` with credentials is replaced by the echoed origin, without credentials', async () => {
    const res = await fetch(`${proxy.url}/api/orders`, { headers: { origin: PAGE } });
    expect(res.headers.get('access-control-allow-origin')).toBe(PAGE);
    expect(res.headers.get('access-control-allow-credentials')).toBeNull();
    expect(res.headers.get('access-control-allow-methods')).toBeNull();
  });
});

// The OAuth metadata, /register and /token answer their own `*` (docs/agents.md), as before issue 48.
describe('own routes keep the same-origin policy under a forged Origin', () => {
  it.each(['/_admin/', '/_admin/acl', '/keys', '/gql-apps', '/mcp', '/_health/ready', '/_metrics', '/authorize'])('%s: no CORS header on the answer or the preflight', async (path) => {
    const answer = await fetch(`${proxy.url}${path}`, { headers: { origin: PAGE, authorization: ROOT } });
    expect(corsOf(answer)).toEqual({});
    const pre = await preflight(path, PAGE, 'POST', 'authorization, content-type');
    expect(pre.status).not.toBe(204);
    expect(corsOf(pre)).toEqual({});
  });
});
