import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { codeThroughForms, freePort, hiddenFieldsOf, pkcePair, redeem, registerClient } from '../../support/clients/agent-sign-in.js';
import { ClientMetadataFetcher } from '../../../src/oauth/clients/client-metadata-document.js';
import { startHttpServer, type TestServer } from '../../support/peers/http-servers.js';
import { basic, startTestOutrigger, staticUsers, type RawConfig } from '../../support/outrigger.js';
import { startTestRedis, type TestRedis } from '../../support/redis/redis.js';

type Running = Awaited<ReturnType<typeof startTestOutrigger>>;

/** The new doors of agent sign-in, attacked: forms, registration, redirects, the token endpoint, metadata documents. */
describe('agent sign-in under attack', () => {
  let redis: TestRedis;
  let upstream: TestServer;
  let documents: TestServer & { connections: number; goodFetches: number };
  let users: RawConfig;
  const running: Running[] = [];
  let a: Running;
  const callback = 'http://127.0.0.1:9/callback';

  async function start(serviceId: string, mcp: RawConfig = {}): Promise<Running> {
    const port = await freePort();
    const r = await startTestOutrigger({
      service: { id: serviceId, publicUrl: `http://127.0.0.1:${port}` },
      listen: { port },
      upstream: { url: upstream.url },
      redis: { url: redis.url },
      users,
      mcp,
    });
    running.push(r);
    const doc = { predicate: 'path-prefix(/keys)', roles: ['user'], priority: 1, apiKeys: { roles: ['reader'] } };
    await fetch(`${r.url}/_admin/acl/issue`, { method: 'PUT', headers: { authorization: basic('root', 'root-password'), 'content-type': 'application/json' }, body: JSON.stringify(doc) });
    return r;
  }

  async function authorizeParams(base: string, extra: Record<string, string> = {}) {
    const clientId = await registerClient(base, callback);
    const { verifier, challenge } = pkcePair();
    return { params: { response_type: 'code', client_id: clientId, redirect_uri: callback, code_challenge: challenge, code_challenge_method: 'S256', state: 's', ...extra }, verifier, clientId };
  }

  /** GET /authorize; returns the page's hidden fields and cookie. */
  async function openSignIn(base: string) {
    const { params } = await authorizeParams(base);
    const res = await fetch(`${base}/authorize?${new URLSearchParams(params)}`, { redirect: 'manual' });
    expect(res.status).toBe(200);
    const html = await res.text();
    return { res, html, fields: hiddenFieldsOf(html), cookie: (res.headers.get('set-cookie') ?? '').split(';')[0]! };
  }

  const postForm = (base: string, form: Record<string, string>, cookie?: string) =>
    fetch(`${base}/authorize`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...(cookie ? { cookie } : {}) },
      body: new URLSearchParams(form),
    });

  beforeAll(async () => {
    redis = await startTestRedis();
    upstream = await startHttpServer((_req, res) => res.writeHead(200).end('upstream'));
    let connections = 0;
    let goodFetches = 0;
    const docs = await startHttpServer((req, res) => {
      const self = `http://127.0.0.1:${docs.port}`;
      if (req.url === '/big.json')
        return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ client_id: `${self}/big.json`, redirect_uris: [callback], pad: 'x'.repeat(5000) }));
      if (req.url === '/slow.json') return; // never answers
      if (req.url === '/good.json') {
        goodFetches++;
        return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ client_id: `${self}/good.json`, client_name: 'Good', redirect_uris: [callback] }));
      }
      if (req.url === '/mismatch.json') return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ client_id: `${self}/other.json`, redirect_uris: [callback] }));
      if (req.url === '/redirect.json') return void res.writeHead(302, { location: `${self}/mismatch.json` }).end();
      if (req.url === '/secret.json')
        return void res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ client_id: `${self}/secret.json`, redirect_uris: [callback], token_endpoint_auth_method: 'client_secret_basic' }));
      res.writeHead(404).end();
    });
    docs.server.on('connection', () => connections++);
    documents = Object.defineProperty(Object.defineProperty(docs, 'connections', { get: () => connections }), 'goodFetches', { get: () => goodFetches }) as TestServer & {
      connections: number;
      goodFetches: number;
    };
    users = await staticUsers({ alice: ['user'], root: ['root'] });
    a = await start('oauth-adv-a', { clientMetadata: { allowPrivateTargets: ['127.0.0.0/8'], maxBytes: 1024, timeoutMs: 600 } });
  }, 60_000);

  afterAll(async () => {
    for (const r of running) await r.stop();
    await Promise.all([upstream?.close(), documents?.close()]);
    await redis?.close();
  });

  describe('pages', () => {
    it('are never framed, run no script, load nothing from elsewhere, and escape what clients chose', async () => {
      const clientId = await (async () => {
        const res = await fetch(`${a.url}/register`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ client_name: '<script>alert(1)</script>', redirect_uris: [callback] }),
        });
        return ((await res.json()) as { client_id: string }).client_id;
      })();
      const res = await fetch(
        `${a.url}/authorize?${new URLSearchParams({ response_type: 'code', client_id: clientId, redirect_uri: callback, code_challenge: pkcePair().challenge, code_challenge_method: 'S256' })}`,
      );
      const csp = res.headers.get('content-security-policy')!;
      expect(csp).toContain("frame-ancestors 'none'");
      expect(csp).toContain("default-src 'none'");
      expect(csp).not.toMatch(/unsafe-inline|unsafe-eval|script-src/);
      expect(res.headers.get('x-frame-options')).toBe('DENY');
      expect(res.headers.get('cache-control')).toBe('no-store');
      const html = await res.text();
      expect(html).not.toMatch(/<script/i);
      expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
      expect(html).not.toMatch(/(src|href)="https?:/);
      expect(html).toMatch(/<label for="username">User id<\/label>/);
      expect(html).toMatch(/<label for="password">Password<\/label>/);
    });
  });

  describe('CSRF', () => {
    it("refuses a form without the token, with a wrong token, without the browser cookie, or with another request's cookie", async () => {
      const one = await openSignIn(a.url);
      const two = await openSignIn(a.url);
      const creds = { action: 'sign-in', username: 'alice', password: 'alice-password' };
      const attempts = [
        postForm(a.url, { request: one.fields.request!, ...creds }, one.cookie),
        postForm(a.url, { ...one.fields, csrf: 'A'.repeat(32), ...creds }, one.cookie),
        postForm(a.url, { ...one.fields, ...creds }),
        postForm(a.url, { ...one.fields, ...creds }, two.cookie.replace(two.fields.request!, one.fields.request!)),
        postForm(a.url, { ...one.fields, csrf: two.fields.csrf!, ...creds }, one.cookie),
      ];
      for (const res of await Promise.all(attempts)) {
        expect(res.status).toBe(403);
        const html = await res.text();
        expect(html).toContain('Form not accepted');
        expect(html).not.toContain('Allow');
      }
      // The same form with both is accepted.
      const ok = await postForm(a.url, { ...one.fields, ...creds }, one.cookie);
      expect(ok.status).toBe(200);
      expect(await ok.text()).toContain('Allow');
    });

    it('refuses an unknown or expired request id, and an allow before sign-in', async () => {
      const unknown = await postForm(a.url, { request: 'x'.repeat(22), csrf: 'y', action: 'allow' });
      expect(unknown.status).toBe(400);
      const page = await openSignIn(a.url);
      const early = await postForm(a.url, { ...page.fields, action: 'allow', roles: 'reader' }, page.cookie);
      expect(early.status).toBe(200);
      expect(early.headers.get('location')).toBeNull();
      expect(await early.text()).toContain('Sign in first');
    });

    it('locks out password guessing on the sign-in page (the Basic brute-force guard)', async () => {
      const page = await openSignIn(a.url);
      const statuses: number[] = [];
      for (let i = 0; i < 11; i++) statuses.push((await postForm(a.url, { ...page.fields, action: 'sign-in', username: 'root', password: `guess-${i}` }, page.cookie)).status);
      expect(statuses.slice(0, 10)).toEqual(Array(10).fill(401));
      expect(statuses[10]).toBe(429);
    });
  });

  describe('dynamic registration', () => {
    const register = (body: string, type = 'application/json') => fetch(`${a.url}/register`, { method: 'POST', headers: { 'content-type': type }, body });

    it('refuses oversized and malformed bodies with RFC 7591 errors, never a 500', async () => {
      const big = await register(JSON.stringify({ client_name: 'x', redirect_uris: [callback], pad: 'x'.repeat(70_000) }));
      expect(big.status).toBe(413);
      expect(((await big.json()) as any).error).toBe('invalid_client_metadata');
      for (const body of ['{', '[]', 'null', '"x"', '{}']) {
        const res = await register(body);
        expect(res.status, body).toBe(400);
        expect(((await res.json()) as any).error).toMatch(/^invalid_(client_metadata|redirect_uri)$/);
      }
      expect((await register('client_name=x', 'application/x-www-form-urlencoded')).status).toBe(415);
    });

    it('accepts public clients with safe redirect URIs only', async () => {
      const bad: Array<[unknown, string]> = [
        [{ redirect_uris: ['javascript:alert(1)'] }, 'invalid_redirect_uri'],
        [{ redirect_uris: ['data:text/html,hi'] }, 'invalid_redirect_uri'],
        [{ redirect_uris: ['http://evil.example/cb'] }, 'invalid_redirect_uri'],
        [{ redirect_uris: ['https://good.example/cb#frag'] }, 'invalid_redirect_uri'],
        [{ redirect_uris: ['https://user:pw@good.example/cb'] }, 'invalid_redirect_uri'],
        [{ redirect_uris: ['myapp:/cb'] }, 'invalid_redirect_uri'],
        [{ redirect_uris: Array.from({ length: 11 }, (_, i) => `https://good.example/${i}`) }, 'invalid_redirect_uri'],
        [{ redirect_uris: [callback], token_endpoint_auth_method: 'client_secret_basic' }, 'invalid_client_metadata'],
        [{ redirect_uris: [callback], grant_types: ['client_credentials'] }, 'invalid_client_metadata'],
        [{ redirect_uris: [callback], client_name: 'n'.repeat(101) }, 'invalid_client_metadata'],
        [{ redirect_uris: [callback], response_types: ['token'] }, 'invalid_client_metadata'],
      ];
      for (const [body, error] of bad) {
        const res = await register(JSON.stringify(body));
        expect(res.status, JSON.stringify(body).slice(0, 80)).toBe(400);
        expect(((await res.json()) as any).error).toBe(error);
      }
      const ok = await register(JSON.stringify({ client_name: 'Native', redirect_uris: ['com.example.app:/cb', 'https://good.example/cb', 'http://[::1]/cb'] }));
      expect(ok.status).toBe(201);
      expect(await ok.json()).toMatchObject({ token_endpoint_auth_method: 'none', grant_types: ['authorization_code'] });
    });

    it('is rate-limited per address', async () => {
      const limited = await start('oauth-adv-rate', { registrationsPerHour: 3 });
      const statuses: number[] = [];
      for (let i = 0; i < 5; i++)
        statuses.push((await fetch(`${limited.url}/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ redirect_uris: [callback] }) })).status);
      expect(statuses).toEqual([201, 201, 201, 429, 429]);
    });
  });

  describe('open redirects', () => {
    it('sends nobody to a URI the client did not register, nor for an unknown client', async () => {
      const { params } = await authorizeParams(a.url);
      const attempts = [
        'http://127.0.0.1:9/callback/../evil',
        'http://127.0.0.1.evil.example/callback',
        'http://evil@127.0.0.1:9/callback',
        '//evil.example/callback',
        'https://127.0.0.1:9/callback',
        'http://localhost:9/callback',
        'http://127.0.0.1:9/callbackx',
        'http://127.0.0.1:9/callback?next=https://evil.example',
        'https://evil.example/callback',
        'javascript:alert(1)',
      ];
      for (const redirectUri of attempts) {
        // With an otherwise broken request too: the error must not be redirected either.
        for (const extra of [{}, { response_type: 'token' }]) {
          const res = await fetch(`${a.url}/authorize?${new URLSearchParams({ ...params, ...extra, redirect_uri: redirectUri })}`, { redirect: 'manual' });
          expect(res.status, redirectUri).toBe(400);
          expect(res.headers.get('location'), redirectUri).toBeNull();
        }
      }
      for (const clientId of ['unknown-client', 'http://127.0.0.1:9/no-such-client.json']) {
        const res = await fetch(`${a.url}/authorize?${new URLSearchParams({ ...params, client_id: clientId, redirect_uri: 'https://evil.example/cb' })}`, { redirect: 'manual' });
        expect(res.status).toBe(400);
        expect(res.headers.get('location')).toBeNull();
      }
    });
  });

  describe('/token', () => {
    it('binds a code to its client and redirect URI', async () => {
      const first = await authorizeParams(a.url);
      const got = await codeThroughForms(a.url, first.params, { id: 'alice', password: 'alice-password' }, { roles: 'reader' });
      const code = got.location!.searchParams.get('code')!;
      const otherClient = await registerClient(a.url, callback);
      const wrongClient = await redeem(a.url, { grant_type: 'authorization_code', code, code_verifier: first.verifier, redirect_uri: callback, client_id: otherClient });
      expect(wrongClient.json.error).toBe('invalid_grant');
      const second = await authorizeParams(a.url);
      const got2 = await codeThroughForms(a.url, second.params, { id: 'alice', password: 'alice-password' }, { roles: 'reader' });
      const wrongUri = await redeem(a.url, {
        grant_type: 'authorization_code',
        code: got2.location!.searchParams.get('code')!,
        code_verifier: second.verifier,
        redirect_uri: 'http://127.0.0.1:9/other',
        client_id: second.clientId,
      });
      expect(wrongUri.json.error).toBe('invalid_grant');
    });

    it('answers 429 after 20 failed guesses from one address, and malformed requests 400 with RFC 6749 bodies', async () => {
      const t = await start('oauth-adv-token');
      for (const form of [{}, { grant_type: 'authorization_code' }, { grant_type: 'password', username: 'a', password: 'b' }]) {
        const res = await redeem(t.url, form as Record<string, string>);
        expect(res.status).toBe(400);
        expect(Object.keys(res.json).sort()).toEqual(['error', 'error_description']);
      }
      const json = await fetch(`${t.url}/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"grant_type":"authorization_code"}' });
      expect(json.status).toBe(415);
      expect(((await json.json()) as any).error).toBe('invalid_request');
      const statuses: number[] = [];
      for (let i = 0; i < 22; i++)
        statuses.push((await redeem(t.url, { grant_type: 'authorization_code', code: `guess-${i}`, code_verifier: pkcePair().verifier, redirect_uri: callback, client_id: 'c' })).status);
      expect(statuses.slice(0, 20)).toEqual(Array(20).fill(400));
      expect(statuses.slice(20)).toEqual([429, 429]);
      const locked = await redeem(t.url, { grant_type: 'authorization_code', code: 'x', code_verifier: pkcePair().verifier, redirect_uri: callback, client_id: 'c' });
      expect(Number(locked.headers.get('retry-after'))).toBeGreaterThan(0);
    });
  });

  describe('client metadata documents', () => {
    const tryClient = async (base: string, clientId: string) => {
      const res = await fetch(
        `${base}/authorize?${new URLSearchParams({ response_type: 'code', client_id: clientId, redirect_uri: callback, code_challenge: pkcePair().challenge, code_challenge_method: 'S256' })}`,
        { redirect: 'manual' },
      );
      expect(res.headers.get('location')).toBeNull();
      return { status: res.status, html: await res.text() };
    };

    /** Why a document is refused, as the log gets it (the page stays generic: it must not help a prober). */
    const reason = async (options: Partial<ConstructorParameters<typeof ClientMetadataFetcher>[0]>, clientId: string) => {
      const fetcher = new ClientMetadataFetcher({ allowPrivateTargets: [], timeoutMs: 600, maxBytes: 1024, cacheSeconds: 0, ...options });
      try {
        await fetcher.resolve(clientId);
        return 'accepted';
      } catch (error) {
        return (error as Error).message;
      } finally {
        await fetcher.close();
      }
    };
    const generic = (got: { status: number; html: string }) => {
      expect(got.status).toBe(400);
      expect(got.html).toContain('could not be identified');
      expect(got.html).not.toMatch(/127\.0\.0\.1|169\.254|loopback|link-local|bytes|within/);
    };

    it('never fetches a loopback or private address the guard does not allow, and never over http outside the allowlist', async () => {
      const strict = await start('oauth-adv-ssrf');
      const before = documents.connections;
      const https = `https://127.0.0.1:${documents.port}/client.json`;
      const http = `http://127.0.0.1:${documents.port}/client.json`;
      const metadata = 'https://169.254.169.254/latest/meta-data.json';
      for (const clientId of [https, http, metadata]) generic(await tryClient(strict.url, clientId));
      expect(await reason({}, https)).toMatch(/127\.0\.0\.1.*loopback/);
      expect(await reason({}, http)).toContain('must use https');
      expect(await reason({}, metadata)).toMatch(/link-local/);
      expect(documents.connections).toBe(before);
    });

    it('fetches a good document once and serves the next sign-ins from the cache', async () => {
      const self = `http://127.0.0.1:${documents.port}`;
      for (let i = 0; i < 3; i++) {
        const got = await tryClient(a.url, `${self}/good.json`);
        expect(got.status).toBe(200);
        expect(got.html).toContain('Sign in to connect Good');
      }
      expect(documents.goodFetches).toBe(1);
    });

    it('refuses documents that are too big, too slow, redirected, for another client id, or for a confidential client', async () => {
      const self = `http://127.0.0.1:${documents.port}`;
      const lab = { allowPrivateTargets: ['127.0.0.0/8'] };
      const cases: Array<[string, string]> = [
        ['big.json', 'larger than 1024 bytes'],
        ['slow.json', 'did not arrive within 600 ms'],
        ['redirect.json', 'redirects are not followed'],
        ['mismatch.json', 'must equal the URL it was fetched from'],
        ['secret.json', 'public clients only'],
        ['', 'must have a path'],
        ['a/../big.json', 'canonical form'],
      ];
      for (const [path, why] of cases) {
        generic(await tryClient(a.url, `${self}/${path}`));
        expect(await reason(lab, `${self}/${path}`)).toContain(why);
      }
    });
  });
});
