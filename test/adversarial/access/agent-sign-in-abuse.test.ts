import { PassThrough } from 'node:stream';
import type { IncomingHttpHeaders } from 'node:http';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOutrigger } from '../../../src/app.js';
import { createLogger } from '../../../src/observability/logger.js';
import { codeThroughForms, freePort, pkcePair, redeem, registerClient } from '../../support/clients/agent-sign-in.js';
import { startHttpServer, type TestServer } from '../../support/peers/http-servers.js';
import { basic, merge, staticUsers, testConfig, type RawConfig } from '../../support/outrigger.js';
import { startTestRedis, type TestRedis } from '../../support/redis/redis.js';

/**
 * Issue 25 item 8: the abuses of agent sign-in found in review, one row each. Every row failed
 * on b4e34de, the commit before the fix (the two rows that need a new setting failed at start,
 * on the unknown setting), and passes after.
 */
describe('agent sign-in abuse (issue 25)', () => {
  let redis: TestRedis;
  let inspect: Redis;
  let upstream: TestServer & { seen: IncomingHttpHeaders[] };
  let users: RawConfig;
  const running: Array<{ url: string; stop(): Promise<void>; log: () => string }> = [];
  const callback = 'http://127.0.0.1:9/callback';

  /** An Outrigger behind a trusted proxy (the test sends X-Forwarded-For), its log kept. */
  async function start(serviceId: string, mcp: RawConfig = {}) {
    const port = await freePort();
    let text = '';
    const destination = new PassThrough();
    destination.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
    const config = testConfig(
      merge(
        { service: { id: serviceId, publicUrl: `http://127.0.0.1:${port}` }, listen: { port, trustedProxies: ['127.0.0.1/32'] }, upstream: { url: upstream.url }, redis: { url: redis.url }, users },
        { mcp },
      ),
    );
    const r = (await startOutrigger(config, { worker: false, logger: createLogger({ level: 'info', destination }) })) as unknown as { url: string; stop(): Promise<void> };
    const entry = { url: r.url, stop: () => r.stop(), log: () => text };
    running.push(entry);
    const put = (id: string, doc: object) =>
      fetch(`${r.url}/_admin/acl/${id}`, { method: 'PUT', headers: { authorization: basic('root', 'root-password'), 'content-type': 'application/json' }, body: JSON.stringify(doc) });
    await put('keys', { predicate: 'path-prefix(/keys)', roles: ['user'], priority: 1, apiKeys: { roles: ['reader'] } });
    await put('echo', { predicate: 'path-prefix(/echo)', roles: ['user', 'reader'], priority: 2 });
    return entry;
  }

  const authorizeUrl = (base: string, clientId: string, extra: Record<string, string> = {}) =>
    `${base}/authorize?${new URLSearchParams({ response_type: 'code', client_id: clientId, redirect_uri: callback, code_challenge: pkcePair().challenge, code_challenge_method: 'S256', state: 's', ...extra })}`;
  const from = (ip: string) => ({ redirect: 'manual' as const, headers: { 'x-forwarded-for': ip } });
  const pendingRequests = async () => (await inspect.keys('*oauth-request*')).length;

  beforeAll(async () => {
    redis = await startTestRedis();
    inspect = new Redis(redis.url);
    const seen: IncomingHttpHeaders[] = [];
    upstream = Object.assign(
      await startHttpServer((req, res) => {
        seen.push(req.headers);
        res.writeHead(200).end('upstream');
      }),
      { seen },
    );
    users = await staticUsers({ alice: ['user'], root: ['root'], boss: ['root', 'user'] });
  }, 60_000);

  afterAll(async () => {
    for (const r of running) await r.stop();
    inspect?.disconnect();
    await upstream?.close();
    await redis?.close();
  });

  it('caps state and scope: an oversized one gets a 400 page and nothing is stored', async () => {
    const a = await start('abuse-sizes');
    const clientId = await registerClient(a.url, callback);
    const before = await pendingRequests();
    for (const extra of [{ state: 's'.repeat(1025) }, { scope: 'reader '.repeat(200) }] as Array<Record<string, string>>) {
      const res = await fetch(authorizeUrl(a.url, clientId, extra), { redirect: 'manual' });
      expect(res.status).toBe(400);
      expect(res.headers.get('location')).toBeNull();
      expect(await res.text()).toMatch(/too long/);
    }
    expect(await pendingRequests()).toBe(before);
    const ok = await fetch(authorizeUrl(a.url, clientId, { state: 's'.repeat(1024), scope: 'reader' }), { redirect: 'manual' });
    expect(ok.status).toBe(200);
  });

  it('limits authorization requests per address, counting an IPv6 /64 as one address', async () => {
    const a = await start('abuse-rate', { authorizeRequestsPerAddress: 3 });
    const clientId = await registerClient(a.url, callback);
    const statuses: number[] = [];
    for (const ip of ['2001:db8:1:2::1', '2001:db8:1:2::2', '2001:db8:1:2:aaaa::3', '2001:db8:1:2::ffff']) statuses.push((await fetch(authorizeUrl(a.url, clientId), from(ip))).status);
    expect(statuses).toEqual([200, 200, 200, 429]);
    const limited = await fetch(authorizeUrl(a.url, clientId), from('2001:db8:1:2::9'));
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    expect((await fetch(authorizeUrl(a.url, clientId), from('2001:db8:1:3::1'))).status).toBe(200);
    expect((await fetch(authorizeUrl(a.url, clientId), from('198.51.100.7'))).status).toBe(200);
    expect(a.log()).toContain('mcp.authorizeRequestsPerAddress');
  });

  it('bounds authorization requests from all addresses together (issue 34: one /48 holds 65,536 /64s)', async () => {
    const a = await start('abuse-total', { authorizeRequestsPerAddress: 3, authorizeRequestsTotal: 5 });
    const clientId = await registerClient(a.url, callback);
    const statuses: number[] = [];
    // Each from its own /64 of one /48, each under its own limit.
    for (let i = 1; i <= 8; i++) statuses.push((await fetch(authorizeUrl(a.url, clientId), from(`2001:db8:34:${i.toString(16)}::1`))).status);
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429, 429, 429]);
    const limited = await fetch(authorizeUrl(a.url, clientId), from('198.51.100.34'));
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await inspect.keys('outrigger:{abuse-total}:oauth-request:*')).toHaveLength(5);
    expect(a.log()).toContain('mcp.authorizeRequestsTotal');
  });

  it('counts failed /token requests and failed Basic sign-ins of an IPv6 client by its /64 too', async () => {
    const a = await start('abuse-v6-limits');
    // A fresh address of 2001:db8:9:1::/64 for every guess, as one subscriber holding that /64 can send them.
    const guess = (ip: string, i: number) =>
      fetch(`${a.url}/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': ip },
        body: new URLSearchParams({ grant_type: 'authorization_code', code: `guess-${i}`, code_verifier: pkcePair().verifier, redirect_uri: callback, client_id: 'c' }),
      });
    const tokenStatuses: number[] = [];
    for (let i = 1; i <= 21; i++) tokenStatuses.push((await guess(`2001:db8:9:1::${i.toString(16)}`, i)).status);
    expect(tokenStatuses.slice(0, 20)).toEqual(Array(20).fill(400));
    expect(tokenStatuses[20]).toBe(429);
    expect((await guess('2001:db8:9:2::1', 99)).status).toBe(400);

    // Basic: 10 consecutive failures for one user from one /64, each from another address of it.
    const wrong = (ip: string) => fetch(`${a.url}/echo`, { headers: { authorization: basic('alice', 'guess'), 'x-forwarded-for': ip } });
    const basicStatuses: number[] = [];
    for (let i = 1; i <= 11; i++) basicStatuses.push((await wrong(`2001:db8:9:1:${i.toString(16)}::1`)).status);
    expect(basicStatuses.slice(0, 10)).toEqual(Array(10).fill(401));
    expect(basicStatuses[10]).toBe(429);
    expect((await wrong('2001:db8:9:2::1')).status).toBe(401);
    expect(await inspect.get('outrigger:{abuse-v6-limits}:bf:u:alice:2001:db8:9:1::/64')).toBe('10');
  });

  it('never redirects a bad request of a self-registered or metadata-document client before the user acted (RFC 9700 §4.11.2)', async () => {
    const a = await start('abuse-redirect');
    const clientId = await registerClient(a.url, callback);
    for (const extra of [
      { response_type: 'token' },
      { code_challenge: '' },
      { code_challenge_method: 'plain' },
      { resource: 'https://other.example/mcp' },
      { scope: 'a', state: 'b', code_challenge_method: 'S256' },
    ] as Array<Record<string, string>>) {
      const url = new URL(authorizeUrl(a.url, clientId, extra));
      if (extra.scope) url.searchParams.append('scope', 'twice');
      const res = await fetch(url, { redirect: 'manual' });
      expect(res.status, JSON.stringify(extra)).toBe(400);
      expect(res.headers.get('location'), JSON.stringify(extra)).toBeNull();
      expect(res.headers.get('content-type')).toMatch(/text\/html/);
    }
  });

  it('shows generic error pages; the details, with the setting to change, go to the log', async () => {
    const docs = await startHttpServer((_req, res) => res.writeHead(404).end());
    try {
      const a = await start('abuse-generic');
      const probe = await fetch(authorizeUrl(a.url, `https://127.0.0.1:${docs.port}/client.json`), { redirect: 'manual' });
      expect(probe.status).toBe(400);
      const html = await probe.text();
      expect(html).not.toMatch(/127\.0\.0\.1|loopback|private/);
      expect(a.log()).toMatch(/loopback/);
      expect(a.log()).toContain('mcp.clientMetadata.allowPrivateTargets');
      const clientId = await registerClient(a.url, callback);
      const elsewhere = await fetch(authorizeUrl(a.url, clientId, { redirect_uri: 'https://attacker.example/cb' }), { redirect: 'manual' });
      expect(elsewhere.status).toBe(400);
      expect(await elsewhere.text()).not.toContain(callback);
    } finally {
      await docs.close();
    }
  });

  it('never hands an admin role to an agent by default (mcp.adminRoles: refuse)', async () => {
    const a = await start('abuse-admin');
    const clientId = await registerClient(a.url, callback);
    const { verifier, challenge } = pkcePair();
    const params = { response_type: 'code', client_id: clientId, redirect_uri: callback, code_challenge: challenge, code_challenge_method: 'S256', state: 's' };
    // Only admin roles: refused on the page, no code.
    const root = await codeThroughForms(a.url, params, { id: 'root', password: 'root-password' });
    expect(root.status).toBe(403);
    expect(root.location).toBeNull();
    expect(root.html).toContain('admin roles');
    // Admin and other roles: the token carries the others only, and cannot reach the admin routes.
    const boss = await codeThroughForms(a.url, { ...params }, { id: 'boss', password: 'boss-password' });
    expect(boss.status).toBe(303);
    const got = await redeem(a.url, { grant_type: 'authorization_code', code: boss.location!.searchParams.get('code')!, code_verifier: verifier, redirect_uri: callback, client_id: clientId });
    expect(got.status).toBe(200);
    expect(got.json.scope.split(' ')).not.toContain('root');
    const admin = await fetch(`${a.url}/_admin/acl`, { headers: { authorization: `Bearer ${got.json.access_token}` } });
    expect(admin.status).toBe(403);
  });

  it('marks a self-registered client as unverified on the consent page and shows its client_id', async () => {
    const a = await start('abuse-unverified');
    const clientId = await registerClient(a.url, callback, 'Claude Desktop');
    const { challenge } = pkcePair();
    const params = { response_type: 'code', client_id: clientId, redirect_uri: callback, code_challenge: challenge, code_challenge_method: 'S256' };
    const got = await codeThroughForms(a.url, params, { id: 'alice', password: 'alice-password' }, { action: 'none' });
    const start2 = await fetch(authorizeUrl(a.url, clientId), { redirect: 'manual' });
    for (const html of [got.html, await start2.text()]) {
      expect(html).toMatch(/[Uu]nverified/);
      expect(html).toContain(clientId);
    }
  });

  it('caps registrations from all addresses together, and counts an IPv6 /64 as one address', async () => {
    const a = await start('abuse-reg-total', { registrationsPerDay: 3, registrationsPerHour: 100 });
    const reg = (ip: string) =>
      fetch(`${a.url}/register`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-forwarded-for': ip }, body: JSON.stringify({ redirect_uris: [callback] }) });
    const total: number[] = [];
    for (let i = 1; i <= 4; i++) total.push((await reg(`198.51.100.${i}`)).status);
    expect(total).toEqual([201, 201, 201, 429]);
    expect(a.log()).toContain('mcp.registrationsPerDay');
    const b = await start('abuse-reg-v6', { registrationsPerHour: 2 });
    const reg6 = (ip: string) =>
      fetch(`${b.url}/register`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-forwarded-for': ip }, body: JSON.stringify({ redirect_uris: [callback] }) });
    const v6: number[] = [];
    for (const ip of ['2001:db8:5:6::1', '2001:db8:5:6::2', '2001:db8:5:6:1:2:3:4', '2001:db8:5:7::1']) v6.push((await reg6(ip)).status);
    expect(v6).toEqual([201, 201, 429, 201]);
  });

  it("never forwards Outrigger's own sign-in cookie to the backend, and keeps the others", async () => {
    const a = await start('abuse-cookie');
    const send = async (cookie: string) => {
      upstream.seen.length = 0;
      const res = await fetch(`${a.url}/echo/x`, { headers: { authorization: basic('alice', 'alice-password'), cookie } });
      expect(res.status).toBe(200);
      return upstream.seen[0]!.cookie;
    };
    expect(await send('outrigger-signin-abc=one; theme=dark; __Host-outrigger-signin-def=two')).toBe('theme=dark');
    expect(await send('__Host-outrigger-signin-def=two')).toBeUndefined();
    expect(await send('theme=dark; session=s1')).toBe('theme=dark; session=s1');
  });

  it('accepts only digits as a key lifetime', async () => {
    const a = await start('abuse-lifetime');
    const clientId = await registerClient(a.url, callback);
    const params = () => ({ response_type: 'code', client_id: clientId, redirect_uri: callback, code_challenge: pkcePair().challenge, code_challenge_method: 'S256' });
    for (const lifetime of ['1e1', ' 7', '0x10', '7.0', '+7']) {
      const got = await codeThroughForms(a.url, params(), { id: 'alice', password: 'alice-password' }, { roles: 'reader', lifetime });
      expect(got.status, lifetime).toBe(400);
      expect(got.location, lifetime).toBeNull();
    }
    const ok = await codeThroughForms(a.url, params(), { id: 'alice', password: 'alice-password' }, { roles: 'reader', lifetime: '7' });
    expect(ok.status).toBe(303);
  });
});
