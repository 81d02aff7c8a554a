import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser } from '../../support/clients/browser.js';
import {
  approveInBrowser,
  codeThroughForms,
  connectMcp,
  finishAuth,
  freePort,
  pkcePair,
  redeem,
  registerClient,
  startCallback,
  startMcpUpstream,
  TestOAuthProvider,
  toolJson,
} from '../../support/clients/agent-sign-in.js';
import { startHttpServer, type TestServer } from '../../support/peers/http-servers.js';
import { basic, startTestOutrigger, staticUsers, type RawConfig } from '../../support/outrigger.js';
import { startTestRedis, type TestRedis } from '../../support/redis/redis.js';

type Running = Awaited<ReturnType<typeof startTestOutrigger>>;

const PERMISSIONS = [
  { _id: 'issue-keys', predicate: 'path-prefix(/keys)', roles: ['user'], priority: 10, apiKeys: { roles: ['reader', 'writer'], 'max-keys-per-user': 5 } },
  { _id: 'issue-one-key', predicate: 'path-prefix(/keys)', roles: ['limited'], priority: 20, apiKeys: { roles: ['reader'], 'max-keys-per-user': 1 } },
  { _id: 'mcp-tools', predicate: 'path-prefix(/mcp)', roles: ['reader', 'writer', 'nobody'], priority: 1 },
];

describe('agent sign-in: an MCP SDK client gets a key through the browser', () => {
  let redis: TestRedis;
  let upstream: Awaited<ReturnType<typeof startMcpUpstream>>;
  let callback: Awaited<ReturnType<typeof startCallback>>;
  let metadataHost: TestServer;
  let browser: Browser;
  let users: RawConfig;
  const running: Running[] = [];
  let a: Running;

  async function start(serviceId: string, mcp: RawConfig = {}): Promise<Running> {
    const port = await freePort();
    const r = await startTestOutrigger({
      service: { id: serviceId, publicUrl: `http://127.0.0.1:${port}` },
      listen: { port },
      upstream: { url: upstream.url, identity: { mode: 'headers' } },
      redis: { url: redis.url },
      users,
      acl: { mode: 'enforce' },
      mcp: { clientMetadata: { allowPrivateTargets: ['127.0.0.0/8'] }, ...mcp },
    });
    running.push(r);
    for (const doc of PERMISSIONS) {
      const res = await fetch(`${r.url}/_admin/acl/${doc._id}`, {
        method: 'PUT',
        headers: { authorization: basic('root', 'root-password'), 'content-type': 'application/json' },
        body: JSON.stringify(doc),
      });
      expect(res.status).toBeLessThan(300);
    }
    return r;
  }

  /** One whole SDK sign-in: 401 → discovery → (registration) → browser → code → token; returns a connected client. */
  async function sdkSignIn(base: string, provider: TestOAuthProvider, choice: Parameters<typeof approveInBrowser>[2]) {
    expect(await connectMcp(`${base}/mcp`, provider)).toBeNull();
    expect(provider.authorizationUrl).not.toBeNull();
    const { consentText } = await approveInBrowser(browser, provider.authorizationUrl!, choice);
    const query = await callback.next();
    expect(query.get('state')).toBe(provider.lastState);
    expect(query.get('iss')).toBe(base);
    await finishAuth(`${base}/mcp`, provider, query.get('code')!);
    const client = await connectMcp(`${base}/mcp`, provider);
    expect(client).not.toBeNull();
    return { client: client!, consentText };
  }

  beforeAll(async () => {
    redis = await startTestRedis();
    upstream = await startMcpUpstream();
    callback = await startCallback();
    users = await staticUsers({ alice: ['user'], bob: ['limited'], nora: ['nobody'], root: ['root'] });
    metadataHost = await startHttpServer((req, res) => {
      const doc = { client_id: `${metadataHost.url}/agent/client.json`, client_name: 'Metadata Agent', redirect_uris: [`${callback.url}/callback`], token_endpoint_auth_method: 'none' };
      if (req.url === '/agent/client.json') res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(doc));
      else res.writeHead(404).end();
    });
    browser = await launchBrowser();
    a = await start('signin-a');
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    for (const r of running) await r.stop();
    await Promise.all([upstream?.close(), callback?.close(), metadataHost?.close()]);
    await redis?.close();
  });

  it('publishes protected-resource metadata (path-aware and root) and authorization-server metadata (RFC 8414 and OpenID paths)', async () => {
    for (const path of ['/.well-known/oauth-protected-resource/mcp', '/.well-known/oauth-protected-resource']) {
      const res = await fetch(`${a.url}${path}`);
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({ resource: `${a.url}/mcp`, authorization_servers: [a.url], bearer_methods_supported: ['header'] });
    }
    for (const path of ['/.well-known/oauth-authorization-server', '/.well-known/openid-configuration']) {
      const res = await fetch(`${a.url}${path}`);
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({
        issuer: a.url,
        authorization_endpoint: `${a.url}/authorize`,
        token_endpoint: `${a.url}/token`,
        registration_endpoint: `${a.url}/register`,
        response_types_supported: ['code'],
        grant_types_supported: ['authorization_code'],
        code_challenge_methods_supported: ['S256'],
        token_endpoint_auth_methods_supported: ['none'],
        client_id_metadata_document_supported: true,
        authorization_response_iss_parameter_supported: true,
      });
    }
  });

  it('answers /mcp without a key 401 with a Bearer resource_metadata challenge, and a bad key with error="invalid_token"', async () => {
    const none = await fetch(`${a.url}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toBe(`Bearer resource_metadata="${a.url}/.well-known/oauth-protected-resource/mcp"`);
    const bad = await fetch(`${a.url}/mcp`, { headers: { authorization: `Bearer rig_${'A'.repeat(49)}` } });
    expect(bad.status).toBe(401);
    expect(bad.headers.get('www-authenticate')).toMatch(/^Bearer resource_metadata="[^"]+\/mcp", error="invalid_token"/);
    const foreign = await fetch(`${a.url}/mcp`, { headers: { authorization: 'Bearer some-other-issuer-token' } });
    expect(foreign.status).toBe(401);
    expect(foreign.headers.get('www-authenticate')).toContain('error="invalid_token"');
    expect(upstream.seen.some((h) => h.authorization === 'Bearer some-other-issuer-token')).toBe(false);
  });

  it('dynamic registration: the SDK signs alice in through Chromium; the tool sees alice with the key roles only; the key is listed via oauth; revoking it gives 401; a new sign-in works', async () => {
    const provider = new TestOAuthProvider(`${callback.url}/callback`, 'Registered Agent');
    const { client, consentText } = await sdkSignIn(a.url, provider, { user: 'alice', password: 'alice-password', roles: ['reader'], lifetime: '30 days' });
    expect(provider.client?.client_id).toBeTruthy();
    expect(consentText).toContain('Registered Agent');
    expect(consentText).toContain(new URL(callback.url).host);
    expect(consentText).toMatch(/reader[\s\S]*writer/);
    expect(consentText).toContain('Unverified application');
    expect(consentText).toContain(String(provider.client?.client_id));
    // Where the user manages the key afterwards (SPEC §15): the console's own-keys page, or the API.
    expect(consentText).toContain('You can revoke or rotate it at any time on your keys page in the console (sign in with the same user id and password), or with DELETE /keys/<id>.');
    expect(provider.saved?.token_type).toBe('Bearer');
    expect(provider.saved?.refresh_token).toBeUndefined();
    expect(provider.saved?.expires_in).toBeGreaterThan(29 * 86_400);

    const seenBefore = upstream.seen.length;
    expect(toolJson(await client.callTool({ name: 'whoami', arguments: {} }))).toEqual({ user: 'alice', roles: ['reader'] });
    // The key is Outrigger's credential: the upstream never receives it.
    expect(upstream.seen.slice(seenBefore).every((h) => !String(h.authorization ?? '').includes(provider.saved!.access_token))).toBe(true);

    const keys = (await (await fetch(`${a.url}/keys`, { headers: { authorization: basic('alice', 'alice-password') } })).json()) as any[];
    const key = keys.find((k) => k.client === 'Registered Agent');
    expect(key).toMatchObject({ via: 'oauth', client: 'Registered Agent', roles: ['reader'] });

    const revoked = await fetch(`${a.url}/keys/${key._id}`, { method: 'DELETE', headers: { authorization: basic('alice', 'alice-password') } });
    expect(revoked.status).toBe(204);
    const after = await fetch(`${a.url}/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${provider.saved!.access_token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'whoami', arguments: {} } }),
    });
    expect(after.status).toBe(401);
    expect(after.headers.get('www-authenticate')).toContain('error="invalid_token"');
    await expect(client.callTool({ name: 'whoami', arguments: {} })).rejects.toThrow();
    await client.close();

    // A new sign-in issues a new key (the SDK drops the refused token and starts over).
    provider.saved = undefined;
    const again = await sdkSignIn(a.url, provider, { user: 'alice', password: 'alice-password', roles: ['reader', 'writer'] });
    expect(toolJson(await again.client.callTool({ name: 'whoami', arguments: {} }))).toEqual({ user: 'alice', roles: ['reader', 'writer'] });
    await again.client.close();
    const keysAfter = (await (await fetch(`${a.url}/keys`, { headers: { authorization: basic('alice', 'alice-password') } })).json()) as any[];
    expect(keysAfter.filter((k) => k.client === 'Registered Agent').map((k) => k._id)).not.toContain(key._id);
  }, 60_000);

  it('the consent page marks a self-registered client unverified with its client_id; root is refused on the page by default (mcp.adminRoles: refuse)', async () => {
    const params = await authorizeParams(a.url, `${callback.url}/callback`);
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      for (const who of ['alice', 'root']) {
        await page.goto(`${a.url}/authorize?${new URLSearchParams(params)}`);
        await page.getByLabel('User id').fill(who);
        await page.getByLabel('Password').fill(`${who}-password`);
        await page.getByRole('button', { name: 'Sign in' }).click();
        const main = page.locator('main');
        if (who === 'alice') {
          await page.getByRole('button', { name: 'Allow' }).waitFor();
          const text = await main.innerText();
          expect(text).toContain('Unverified application');
          expect(text).toContain(params.client_id);
          await page.screenshot({ path: process.env.OUTRIGGER_CONSENT_SCREENSHOT ?? '/tmp/agent-sign-in-consent-unverified.png', fullPage: true });
        } else {
          await page.getByRole('button', { name: /Return to/ }).waitFor();
          const text = await main.innerText();
          expect(text).toContain('never gives admin roles to agents');
          expect(await page.getByRole('button', { name: 'Allow' }).count()).toBe(0);
        }
      }
    } finally {
      await context.close();
    }
  }, 60_000);

  it("client metadata document: the client id is a URL the test serves over loopback; the key names the document's client", async () => {
    const provider = new TestOAuthProvider(`${callback.url}/callback`, 'ignored', { client_id: `${metadataHost.url}/agent/client.json` });
    const { client, consentText } = await sdkSignIn(a.url, provider, { user: 'alice', password: 'alice-password', roles: ['writer'] });
    expect(consentText).toContain('Metadata Agent');
    expect(toolJson(await client.callTool({ name: 'whoami', arguments: {} }))).toEqual({ user: 'alice', roles: ['writer'] });
    await client.close();
    const admin = (await (await fetch(`${a.url}/_admin/keys?client=Metadata%20Agent`, { headers: { authorization: basic('root', 'root-password') } })).json()) as any[];
    expect(admin).toHaveLength(1);
    expect(admin[0]).toMatchObject({ owner: 'alice', via: 'oauth', client: 'Metadata Agent', roles: ['writer'] });
  }, 60_000);

  it('a user at the key limit sees the message, revokes a key on the page, then can allow', async () => {
    const issued = await fetch(`${a.url}/keys`, {
      method: 'POST',
      headers: { authorization: basic('bob', 'bob-password'), 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'laptop', roles: ['reader'] }),
    });
    expect(issued.status).toBe(201);
    const provider = new TestOAuthProvider(`${callback.url}/callback`, 'Limit Agent');
    expect(await connectMcp(`${a.url}/mcp`, provider)).toBeNull();
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(provider.authorizationUrl!.href);
    await page.getByLabel('User id').fill('bob');
    await page.getByLabel('Password').fill('bob-password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Key limit reached' }).waitFor();
    expect(await page.locator('main').innerText()).toMatch(/you already hold 1 unexpired API keys and the limit is 1: revoke a key first/);
    await page.getByRole('button', { name: 'Revoke' }).click();
    await page.getByRole('button', { name: 'Allow' }).waitFor();
    await Promise.all([page.waitForURL((url) => url.pathname === '/callback'), page.getByRole('button', { name: 'Allow' }).click()]);
    await context.close();
    const query = await callback.next();
    await finishAuth(`${a.url}/mcp`, provider, query.get('code')!);
    const client = await connectMcp(`${a.url}/mcp`, provider);
    expect(toolJson(await client!.callTool({ name: 'whoami', arguments: {} }))).toEqual({ user: 'bob', roles: ['reader'] });
    await client!.close();
  }, 60_000);

  it('with mcp.adminRoles: allow, root gets its own short-lived token (all its roles), listed with kind token on the admin list, not on GET /keys, and revocable', async () => {
    const a = await start('signin-admin-allow', { adminRoles: 'allow' });
    const provider = new TestOAuthProvider(`${callback.url}/callback`, 'Admin Agent');
    const { client, consentText } = await sdkSignIn(a.url, provider, { user: 'root', password: 'root-password' });
    expect(consentText).toMatch(/all your roles[\s\S]*root[\s\S]*60 minutes/);
    expect(provider.saved?.expires_in).toBeGreaterThan(59 * 60);
    expect(provider.saved?.expires_in).toBeLessThanOrEqual(60 * 60);
    expect(toolJson(await client.callTool({ name: 'whoami', arguments: {} }))).toEqual({ user: 'root', roles: ['root'] });
    const admin = (await (await fetch(`${a.url}/_admin/keys?client=Admin%20Agent`, { headers: { authorization: basic('root', 'root-password') } })).json()) as any[];
    expect(admin).toHaveLength(1);
    expect(admin[0]).toMatchObject({ owner: 'root', kind: 'token', via: 'oauth', roles: ['root'] });
    const own = (await (await fetch(`${a.url}/keys`, { headers: { authorization: basic('root', 'root-password') } })).json()) as any[];
    expect(own).toEqual([]);
    expect((await fetch(`${a.url}/_admin/keys/${admin[0]._id}`, { method: 'DELETE', headers: { authorization: basic('root', 'root-password') } })).status).toBe(204);
    await expect(client.callTool({ name: 'whoami', arguments: {} })).rejects.toThrow();
    await client.close();
  }, 60_000);

  it('a user without an apiKeys block gets their own token under key-or-token, and a token-only service gives alice a token too', async () => {
    const callbackUrl = `${callback.url}/callback`;
    const nora = await codeThroughForms(a.url, await authorizeParams(a.url, callbackUrl), { id: 'nora', password: 'nora-password' });
    expect(nora.status).toBe(303);
    const t = await startTokenOnly();
    const alice = await codeThroughForms(t.url, await authorizeParams(t.url, callbackUrl), { id: 'alice', password: 'alice-password' });
    expect(alice.status).toBe(303);
    for (const [base, got] of [
      [a.url, nora],
      [t.url, alice],
    ] as const) {
      const params = pending.get(base)!;
      const res = await redeem(base, {
        grant_type: 'authorization_code',
        code: got.location!.searchParams.get('code')!,
        code_verifier: params.verifier,
        redirect_uri: callbackUrl,
        client_id: params.clientId,
      });
      expect(res.status).toBe(200);
      const listed = (await (await fetch(`${base}/_admin/keys`, { headers: { authorization: basic('root', 'root-password') } })).json()) as any[];
      expect(listed.find((k) => k.owner === (base === a.url ? 'nora' : 'alice') && k.kind === 'token')).toBeTruthy();
    }
  });

  const pending = new Map<string, { verifier: string; clientId: string }>();
  async function authorizeParams(base: string, redirectUri: string, extra: Record<string, string> = {}) {
    const clientId = await registerClient(base, redirectUri);
    const { verifier, challenge } = pkcePair();
    pending.set(base, { verifier, clientId });
    return { response_type: 'code', client_id: clientId, redirect_uri: redirectUri, code_challenge: challenge, code_challenge_method: 'S256', state: 'st-123', resource: `${base}/mcp`, ...extra };
  }
  let tokenOnly: Running | null = null;
  async function startTokenOnly() {
    return (tokenOnly ??= await start('signin-token-only', { signIn: 'token-only' }));
  }

  describe('protocol refusals', () => {
    const redirectUri = () => `${callback.url}/callback`;

    it('refuses PKCE plain and a missing challenge at /authorize on an error page, never redirecting (RFC 9700 §4.11.2)', async () => {
      for (const extra of [{ code_challenge_method: 'plain' }, { code_challenge: '' }] as Array<Record<string, string>>) {
        const params = await authorizeParams(a.url, redirectUri(), extra);
        const res = await fetch(`${a.url}/authorize?${new URLSearchParams(params)}`, { redirect: 'manual' });
        expect(res.status).toBe(400);
        expect(res.headers.get('location')).toBeNull();
        expect(await res.text()).toContain('Sign-in request not valid');
      }
    });

    it('echoes state and iss with the code; a wrong verifier is refused and burns the code; a reused code is refused and its key revoked', async () => {
      const params = await authorizeParams(a.url, redirectUri());
      const { verifier, clientId } = pending.get(a.url)!;
      const first = await codeThroughForms(a.url, params, { id: 'alice', password: 'alice-password' }, { roles: 'reader', lifetime: '7' });
      expect(first.status).toBe(303);
      expect(first.location!.searchParams.get('state')).toBe('st-123');
      expect(first.location!.searchParams.get('iss')).toBe(a.url);
      const code = first.location!.searchParams.get('code')!;
      const wrong = await redeem(a.url, { grant_type: 'authorization_code', code, code_verifier: pkcePair().verifier, redirect_uri: redirectUri(), client_id: clientId });
      expect(wrong.status).toBe(400);
      expect(wrong.json).toEqual({ error: 'invalid_grant', error_description: expect.stringContaining('code_verifier') });
      const burnt = await redeem(a.url, { grant_type: 'authorization_code', code, code_verifier: verifier, redirect_uri: redirectUri(), client_id: clientId });
      expect(burnt.json.error).toBe('invalid_grant');

      const second = await codeThroughForms(a.url, await authorizeParams(a.url, redirectUri()), { id: 'alice', password: 'alice-password' }, { roles: 'reader' });
      const p2 = pending.get(a.url)!;
      const code2 = second.location!.searchParams.get('code')!;
      const ok = await redeem(a.url, { grant_type: 'authorization_code', code: code2, code_verifier: p2.verifier, redirect_uri: redirectUri(), client_id: p2.clientId, resource: `${a.url}/mcp` });
      expect(ok.status).toBe(200);
      expect(ok.headers.get('cache-control')).toBe('no-store');
      expect(ok.json).toMatchObject({ token_type: 'Bearer', scope: 'reader' });
      expect(ok.json.refresh_token).toBeUndefined();
      const reuse = await redeem(a.url, { grant_type: 'authorization_code', code: code2, code_verifier: p2.verifier, redirect_uri: redirectUri(), client_id: p2.clientId });
      expect(reuse.status).toBe(400);
      expect(reuse.json.error).toBe('invalid_grant');
      expect(reuse.json.error_description).toMatch(/already used; the key it gave has been revoked/);
      const use = await fetch(`${a.url}/mcp`, { headers: { authorization: `Bearer ${ok.json.access_token}` } });
      expect(use.status).toBe(401);
    });

    it('never redirects to an unregistered redirect URI: an error page instead', async () => {
      const params = await authorizeParams(a.url, redirectUri());
      for (const other of [`${callback.url}/elsewhere`, 'https://attacker.example/callback', `${redirectUri()}?x=1`]) {
        const res = await fetch(`${a.url}/authorize?${new URLSearchParams({ ...params, redirect_uri: other })}`, { redirect: 'manual' });
        expect(res.status).toBe(400);
        expect(res.headers.get('location')).toBeNull();
        expect(res.headers.get('content-type')).toMatch(/text\/html/);
        expect(await res.text()).toContain('Unregistered redirect URI');
      }
      // RFC 8252 §7.3: the same loopback callback on another port is the same client.
      const otherPort = redirectUri().replace(/:(\d+)\//, (_m, p) => `:${Number(p) === 65535 ? 65534 : Number(p) + 1}/`);
      const res = await fetch(`${a.url}/authorize?${new URLSearchParams({ ...params, redirect_uri: otherPort })}`, { redirect: 'manual' });
      expect(res.status).toBe(200);
    });

    it('refuses a resource for another server at /authorize and at /token', async () => {
      const params = await authorizeParams(a.url, redirectUri(), { resource: 'https://other.example/mcp' });
      const res = await fetch(`${a.url}/authorize?${new URLSearchParams(params)}`, { redirect: 'manual' });
      expect(res.status).toBe(400);
      expect(res.headers.get('location')).toBeNull();
      const good = await codeThroughForms(a.url, await authorizeParams(a.url, redirectUri()), { id: 'alice', password: 'alice-password' }, { roles: 'reader' });
      const p = pending.get(a.url)!;
      const token = await redeem(a.url, {
        grant_type: 'authorization_code',
        code: good.location!.searchParams.get('code')!,
        code_verifier: p.verifier,
        redirect_uri: redirectUri(),
        client_id: p.clientId,
        resource: 'https://other.example/mcp',
      });
      expect(token.status).toBe(400);
      expect(token.json.error).toBe('invalid_target');
    });

    it('answers RFC 6749 errors for a refresh token grant and for client credentials', async () => {
      const refresh = await redeem(a.url, { grant_type: 'refresh_token', refresh_token: 'x' });
      expect(refresh.json).toEqual({ error: 'unsupported_grant_type', error_description: expect.stringContaining('no refresh tokens') });
      const secret = await redeem(a.url, { grant_type: 'authorization_code', code: 'x', code_verifier: 'y', redirect_uri: 'z', client_id: 'c', client_secret: 's' });
      expect(secret.status).toBe(401);
      expect(secret.json.error).toBe('invalid_client');
    });
  });

  describe('mcp.signIn settings', () => {
    it('key-only refuses root (the page says why; Return gives access_denied) and nora without an apiKeys block', async () => {
      const k = await start('signin-key-only', { signIn: 'key-only' });
      for (const who of ['root', 'nora']) {
        const got = await codeThroughForms(k.url, await authorizeParams(k.url, `${callback.url}/callback`), { id: who, password: `${who}-password` });
        expect(got.status).toBe(403);
        expect(got.html).toContain(who === 'root' ? 'Admin roles (root) never get API keys' : 'No API key can be issued to you');
        const back = await got.post({ action: 'deny' });
        const to = new URL(back.headers.get('location')!);
        expect(to.searchParams.get('error')).toBe('access_denied');
        expect(to.searchParams.get('state')).toBe('st-123');
      }
      const alice = await codeThroughForms(k.url, await authorizeParams(k.url, `${callback.url}/callback`), { id: 'alice', password: 'alice-password' }, { roles: 'reader' });
      expect(alice.status).toBe(303);
    });

    it('off: every OAuth route answers 404 and /mcp has no sign-in challenge', async () => {
      const off = await start('signin-off', { signIn: 'off' });
      for (const path of [
        '/.well-known/oauth-protected-resource/mcp',
        '/.well-known/oauth-protected-resource',
        '/.well-known/oauth-authorization-server',
        '/.well-known/openid-configuration',
        '/authorize',
        '/token',
        '/register',
      ]) {
        const res = await fetch(`${off.url}${path}`, { method: path === '/token' || path === '/register' ? 'POST' : 'GET' });
        expect(res.status, path).toBe(404);
      }
      const mcp = await fetch(`${off.url}/mcp`);
      expect(mcp.headers.get('www-authenticate') ?? '').not.toContain('resource_metadata');
    });
  });
});
