import { createHash, randomBytes } from 'node:crypto';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import type { Browser } from 'playwright-core';
import { startHttpServer, type TestServer } from '../peers/http-servers.js';

/** A free loopback port (Outrigger's publicUrl must name its port before it listens). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/**
 * The upstream MCP server, built with the official SDK (stateless streamable HTTP): its tool
 * `whoami` answers the identity Outrigger sent (headers mode), and every request's headers are
 * kept so a test can check that the key itself never arrived.
 */
export async function startMcpUpstream(): Promise<TestServer & { seen: IncomingHttpHeaders[] }> {
  const seen: IncomingHttpHeaders[] = [];
  const server = await startHttpServer((req, res) => {
    seen.push(req.headers);
    const mcp = new McpServer({ name: 'upstream-under-test', version: '1.0.0' });
    mcp.registerTool('whoami', { description: 'Tells who the caller is, as the upstream sees it' }, (extra) => {
      const headers = extra.requestInfo?.headers ?? {};
      const user = headers['x-forwarded-user'];
      const roles = headers['x-forwarded-roles'];
      return { content: [{ type: 'text', text: JSON.stringify({ user: user ?? null, roles: typeof roles === 'string' ? roles.split(',').filter(Boolean) : [] }) }] };
    });
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => {
      void transport.close();
      void mcp.close();
    });
    mcp
      .connect(transport)
      .then(() => transport.handleRequest(req, res))
      .catch(() => {
        if (!res.headersSent) res.writeHead(500).end();
      });
  });
  return Object.assign(server, { seen });
}

/** A loopback callback server: what the agent's redirect URI answers. */
export async function startCallback(): Promise<TestServer & { next(): Promise<URLSearchParams> }> {
  let waiting: ((q: URLSearchParams) => void) | null = null;
  const arrived: URLSearchParams[] = [];
  const server = await startHttpServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    // Browsers also ask for /favicon.ico: only the callback path counts.
    if (url.pathname !== '/callback') return void res.writeHead(404).end();
    const q = url.searchParams;
    res.writeHead(200, { 'content-type': 'text/plain' }).end('You can close this window.');
    if (waiting) {
      waiting(q);
      waiting = null;
    } else arrived.push(q);
  });
  return Object.assign(server, {
    next: () => (arrived.length ? Promise.resolve(arrived.shift()!) : new Promise<URLSearchParams>((resolve) => (waiting = resolve))),
  });
}

/** An in-memory OAuthClientProvider, as an MCP app implements it. */
export class TestOAuthProvider implements OAuthClientProvider {
  client: OAuthClientInformationMixed | undefined;
  saved: OAuthTokens | undefined;
  verifier = '';
  authorizationUrl: URL | null = null;
  lastState = '';

  constructor(
    private readonly callbackUrl: string,
    private readonly name: string,
    preset?: OAuthClientInformationMixed,
  ) {
    this.client = preset;
  }

  get redirectUrl() {
    return this.callbackUrl;
  }
  get clientMetadata(): OAuthClientMetadata {
    return { client_name: this.name, redirect_uris: [this.callbackUrl], grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'none' };
  }
  state() {
    return (this.lastState = randomBytes(12).toString('hex'));
  }
  clientInformation() {
    return this.client;
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.client = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier;
  }
  codeVerifier() {
    return this.verifier;
  }
  invalidateCredentials(scope: 'all' | 'client' | 'tokens' | 'verifier') {
    if (scope === 'all' || scope === 'tokens') this.saved = undefined;
    if (scope === 'all' || scope === 'client') this.client = undefined;
  }
}

/** Connects an SDK client with the provider; resolves null when the server asked for a sign-in (the provider holds the URL). */
export async function connectMcp(mcpUrl: string, provider: TestOAuthProvider): Promise<Client | null> {
  const client = new Client({ name: 'outrigger-test-agent', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(mcpUrl), { authProvider: provider });
  try {
    await client.connect(transport);
    return client;
  } catch (error) {
    if ((error as Error).name === 'UnauthorizedError' || /unauthorized/i.test((error as Error).message)) {
      await client.close().catch(() => {});
      return null;
    }
    throw error;
  }
}

export async function finishAuth(mcpUrl: string, provider: TestOAuthProvider, code: string): Promise<void> {
  const transport = new StreamableHTTPClientTransport(new URL(mcpUrl), { authProvider: provider });
  await transport.finishAuth(code);
}

export interface BrowserChoice {
  user: string;
  password: string;
  /** Roles to tick on the consent page (others are unticked); omitted for token consent. */
  roles?: string[];
  /** The lifetime option's visible text, e.g. "30 days". */
  lifetime?: string;
}

/** Drives the sign-in and consent pages by their labels, as a person would; returns the page after Allow. */
export async function approveInBrowser(browser: Browser, authorizationUrl: URL, choice: BrowserChoice): Promise<{ consentText: string }> {
  const context = await browser.newContext();
  try {
    const page = await context.newPage();
    await page.goto(authorizationUrl.href);
    await page.getByLabel('User id').fill(choice.user);
    await page.getByLabel('Password').fill(choice.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('button', { name: 'Allow' }).waitFor();
    const consentText = await page.locator('main').innerText();
    if (choice.roles) {
      for (const box of await page.getByRole('checkbox').all()) {
        const label = (await box.evaluate((el) => (el as HTMLInputElement).labels?.[0]?.textContent ?? '')).trim();
        if (choice.roles.includes(label)) await box.check();
        else await box.uncheck();
      }
    }
    if (choice.lifetime) await page.getByLabel('Key lifetime').selectOption({ label: choice.lifetime });
    await Promise.all([page.waitForURL((url) => !url.pathname.startsWith('/authorize')), page.getByRole('button', { name: 'Allow' }).click()]);
    return { consentText };
  } finally {
    await context.close();
  }
}

/** The text of a tool result's first content item, parsed. */
export function toolJson(result: unknown): any {
  const content = (result as { content: Array<{ type: string; text: string }> }).content;
  return JSON.parse(content[0]!.text);
}

export const pkcePair = () => {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
};

/**
 * The pages driven with plain HTTP (no browser), for the protocol refusals: GET /authorize, sign
 * in, allow; answers the final redirect's query (code, state, iss) or the page that stopped it.
 */
export async function codeThroughForms(
  base: string,
  params: Record<string, string>,
  user: { id: string; password: string },
  allow: Record<string, string | string[]> = {},
): Promise<{ location: URL | null; status: number; html: string; post(form: Record<string, string | string[]>): Promise<Response> }> {
  const start = await fetch(`${base}/authorize?${new URLSearchParams(params)}`, { redirect: 'manual' });
  if (start.status !== 200)
    return {
      location: start.headers.get('location') ? new URL(start.headers.get('location')!) : null,
      status: start.status,
      html: await start.text(),
      post: () => Promise.reject(new Error('no form')),
    };
  const html = await start.text();
  const fields = hiddenFieldsOf(html);
  const cookie = (start.headers.get('set-cookie') ?? '').split(';')[0]!;
  const post = (form: Record<string, string | string[]>) => {
    const body = new URLSearchParams();
    for (const [k, v] of Object.entries({ ...fields, ...form })) for (const one of [v].flat()) body.append(k, one);
    return fetch(`${base}/authorize`, { method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded', cookie }, body });
  };
  const signedIn = await post({ action: 'sign-in', username: user.id, password: user.password });
  const consent = await signedIn.text();
  if (signedIn.status !== 200) return { location: null, status: signedIn.status, html: consent, post };
  const allowed = await post({ action: 'allow', ...allow });
  const location = allowed.headers.get('location');
  return { location: location ? new URL(location) : null, status: allowed.status, html: await allowed.text(), post };
}

export function hiddenFieldsOf(html: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of html.matchAll(/<input type="hidden" name="(request|csrf)" value="([^"]*)">/g)) out[m[1]!] = m[2]!;
  return out;
}

export async function registerClient(base: string, redirectUri: string, name = 'Form Agent'): Promise<string> {
  const res = await fetch(`${base}/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ client_name: name, redirect_uris: [redirectUri] }) });
  if (res.status !== 201) throw new Error(`register: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { client_id: string }).client_id;
}

export async function redeem(base: string, form: Record<string, string>): Promise<{ status: number; json: any; headers: Headers }> {
  const res = await fetch(`${base}/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(form) });
  return { status: res.status, json: await res.json().catch(() => null), headers: res.headers };
}
