import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpServer, type TestServer } from '../../support/peers/http-servers.js';
import { basic, startTestOutrigger, staticUsers } from '../../support/outrigger.js';
import { startTestRedis, type TestRedis } from '../../support/redis/redis.js';
import { rawClient, readUntilClosed } from '../support.js';

/**
 * Issue 34 items 5, 7 and 9 (the request head): what a request target or a repeated header can
 * slip past the decisions. Each row is sent byte for byte and must be refused with 400 in the
 * error format before anything reaches the backend:
 * - a raw `#` (RFC 9112 allows none in a target): `/token#x` reached the backend's token
 *   endpoint, and a readFilter appended to `/shop/orders#` landed in the fragment;
 * - a raw `\`, decided as `%5C` is (refused): `/secret\x` passed an ACL that keeps `/secret`;
 * - two Authorization headers: Outrigger decided on the first (a bad Bearer: anonymous) and the
 *   backend checked the second (a Basic password nobody counted);
 * - two Host headers: the upstream call failed as "unreachable".
 */
const ALICE = basic('alice', 'alice-password');

let redis: TestRedis;
let upstream: TestServer & { reached: string[] };
let proxy: Awaited<ReturnType<typeof startTestOutrigger>>;

beforeAll(async () => {
  redis = await startTestRedis();
  const reached: string[] = [];
  upstream = Object.assign(
    await startHttpServer((req, res) => {
      reached.push(`${req.method} ${req.url} ${JSON.stringify(req.rawHeaders)}`);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(req.url?.startsWith('/token') ? '{"access_token":"backend-jwt"}' : '[]');
    }),
    { reached },
  );
  proxy = await startTestOutrigger({
    service: { id: 'request-head' },
    upstream: { url: upstream.url },
    redis: { url: redis.url },
    users: await staticUsers({ root: ['root'], alice: ['user'], bob: ['filtered'] }),
    acl: { mode: 'enforce' },
    // The backend's own token endpoint stays at /token (Outrigger's is moved), as in issue 34's report.
    routes: { oauth: { token: '/oauth/token' } },
  });
  const put = async (path: string, doc: unknown) => {
    const res = await fetch(`${proxy.url}${path}`, { method: 'PUT', headers: { authorization: basic('root', 'root-password'), 'content-type': 'application/json' }, body: JSON.stringify(doc) });
    if (res.status >= 300) throw new Error(`PUT ${path}: ${res.status} ${await res.text()}`);
  };
  await put('/_admin/acl/all-but-secret', { predicate: "not path-prefix('/secret')", roles: ['user', '$unauthenticated'], priority: 1 });
  await put('/_admin/acl/filtered', { predicate: "path-prefix('/shop/orders')", roles: ['filtered'], mongo: { readFilter: { owner: '@user.id' } } });
}, 30_000);
afterAll(async () => {
  await proxy?.stop();
  await upstream?.close();
  await redis?.close();
});

/** Sends `GET target` with the given header lines, byte for byte; answers the status and body. */
async function send(target: string, headerLines: string[]): Promise<{ status: number; body: string }> {
  const head = [`GET ${target} HTTP/1.1`, ...(headerLines.some((h) => /^host:/i.test(h)) ? [] : ['Host: outrigger.test']), ...headerLines, 'Connection: close', '', ''].join('\r\n');
  const socket = await rawClient(proxy.url, head);
  const { text } = await readUntilClosed(socket, 5000);
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0);
  return { status, body: text.slice(text.indexOf('\r\n\r\n') + 4) };
}

describe('the request target: raw # and \\ (issue 34 item 5)', () => {
  it.each([
    ['/token#x', []],
    ['/shop/orders#', [`Authorization: ${basic('bob', 'bob-password')}`]],
    ['/shop/orders?page=1#x', [`Authorization: ${basic('bob', 'bob-password')}`]],
    ['/secret#', [`Authorization: ${ALICE}`]],
  ])('%s is refused with 400 and never reaches the backend', async (target, headers) => {
    const before = upstream.reached.length;
    const res = await send(target, headers);
    expect(res.status).toBe(400);
    expect(JSON.parse(res.body)).toMatchObject({ 'http status code': 400, message: expect.stringMatching(/raw "#"/) });
    expect(upstream.reached.slice(before)).toEqual([]);
  });

  it.each(['/secret\\x', '/secret\\', '/x\\..\\secret', '/shop\\orders'])('%s is refused with 400 as its encoded spelling is, and never reaches the backend', async (target) => {
    const before = upstream.reached.length;
    const res = await send(target, [`Authorization: ${ALICE}`]);
    expect(res.status).toBe(400);
    expect(upstream.reached.slice(before)).toEqual([]);
    expect((await send(target.replaceAll('\\', '%5C'), [`Authorization: ${ALICE}`])).status).toBe(400);
  });

  it('a plain path and a %23 in the query still reach the backend', async () => {
    const before = upstream.reached.length;
    expect((await send('/things?tag=%23x', [`Authorization: ${ALICE}`])).status).toBe(200);
    expect(upstream.reached.slice(before)).toHaveLength(1);
  });
});

describe('repeated Authorization or Host headers (issue 34 items 7 and 9)', () => {
  it.each([
    ['a bad Bearer then a Basic password', ['Authorization: Bearer not-a-key', `Authorization: ${basic('root', 'guess-1')}`]],
    ['an empty Authorization then a Basic password', ['Authorization:', `Authorization: ${basic('root', 'guess-2')}`]],
    ['a valid Basic then another', [`Authorization: ${ALICE}`, `authorization: ${basic('root', 'guess-3')}`]],
  ])('%s: 400, and no credential reaches the backend', async (_, headers) => {
    const before = upstream.reached.length;
    const res = await send('/things', headers);
    expect(res.status).toBe(400);
    expect(JSON.parse(res.body)).toMatchObject({ 'http status code': 400, message: expect.stringMatching(/more than one Authorization header/) });
    expect(upstream.reached.slice(before)).toEqual([]);
  });

  it('two Host headers: 400 naming the header, not a 502', async () => {
    const before = upstream.reached.length;
    const res = await send('/things', ['Host: a.test', 'host: b.test', `Authorization: ${ALICE}`]);
    expect(res.status).toBe(400);
    expect(JSON.parse(res.body)).toMatchObject({ message: expect.stringMatching(/more than one Host header/) });
    expect(upstream.reached.slice(before)).toEqual([]);
  });

  it.each([
    ['Digest', 'Digest username="root", realm="r", nonce="n", uri="/things", response="guess"'],
    ['Basic with a tab', `Basic\t${Buffer.from('root:guess-4').toString('base64')}`],
    ['a scheme of its own', 'Token root:guess-5'],
  ])('an Authorization of a scheme Outrigger does not verify (%s) is anonymous and never reaches the backend', async (_, value) => {
    const before = upstream.reached.length;
    const res = await send('/things', [`Authorization: ${value}`]);
    expect(res.status).toBe(200);
    const reached = upstream.reached.slice(before);
    expect(reached).toHaveLength(1);
    expect(reached[0]).not.toMatch(/authorization/i);
  });

  it('a foreign Bearer token still passes to the backend (SPEC §3.3)', async () => {
    const before = upstream.reached.length;
    expect((await send('/things', ['Authorization: Bearer backend-issued-token'])).status).toBe(200);
    expect(upstream.reached.slice(before)[0]).toContain('Bearer backend-issued-token');
  });

  it('one Authorization and one Host still pass', async () => {
    expect((await send('/things', [`Authorization: ${ALICE}`])).status).toBe(200);
  });
});
