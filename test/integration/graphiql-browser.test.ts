/**
 * GraphiQL in a real browser (headless Chromium): `GET /graphql/<uri>` with a browser's Accept
 * serves the bundled page behind the app's ACL, it loads with no console error and no CSP
 * violation under the strict CSP, and a query typed into it runs against the stand-in backend.
 */
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStandinBackend, type StandinBackend } from '../../examples/standin-backend/index.js';
import { launchBrowser } from '../support/browser.js';
import { startTestRedis, type TestRedis } from '../support/redis.js';
import { basic, startTestOutrigger, staticUsers } from '../support/outrigger.js';
import { call, shopApp, shopData } from './graphql-helpers.js';

const JWT_SECRET = 'a-test-secret-that-is-at-least-32-characters-long';
const ROOT = basic('root', 'root-password');

describe('GraphiQL', () => {
  let redis: TestRedis;
  let backend: StandinBackend;
  let proxy: Awaited<ReturnType<typeof startTestOutrigger>>;
  let browser: Browser;
  beforeAll(async () => {
    redis = await startTestRedis();
    backend = await startStandinBackend({ data: shopData(), jwt: { secret: JWT_SECRET } });
    proxy = await startTestOutrigger({
      service: { id: 'graphiql' },
      upstream: { url: backend.url, identity: { mode: 'jwt', jwt: { secret: JWT_SECRET } } },
      redis: { url: redis.url },
      users: await staticUsers({ root: ['root'], alice: ['user'], eve: ['guest'] }),
      acl: { mode: 'enforce' },
    });
    await call(proxy.url, '/_admin/acl/users-graphql', { method: 'PUT', auth: ROOT, body: { predicate: 'path-prefix(/graphql)', roles: ['user'], priority: 1 } });
    await call(proxy.url, '/_admin/acl/users-read-shop', { method: 'PUT', auth: ROOT, body: { predicate: 'method(GET) and path-prefix(/shop)', roles: ['user'], priority: 1 } });
    expect((await call(proxy.url, '/gql-apps/shop', { method: 'PUT', auth: ROOT, body: shopApp() })).status).toBe(201);
    browser = await launchBrowser();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await proxy?.stop();
    await backend?.close();
    await redis?.close();
  });

  const html = { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' };

  it('is served to browsers behind the same ACL, with the strict CSP; API clients still get GraphQL', async () => {
    const page = await call(proxy.url, '/graphql/shop', { auth: basic('alice', 'alice-password'), headers: html });
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(page.headers['content-security-policy']).toContain("script-src 'self'");
    expect(page.text).not.toMatch(/<script>|<script [^>]*>[^<]/);
    expect((await call(proxy.url, '/graphql/shop', { headers: html })).status).toBe(401);
    expect((await call(proxy.url, '/graphql/shop', { auth: basic('eve', 'eve-password'), headers: html })).status).toBe(403);
    expect((await call(proxy.url, '/graphql/nope', { auth: basic('alice', 'alice-password'), headers: html })).status).toBe(404);
    const api = await call(proxy.url, '/graphql/shop?query=%7B__typename%7D', { auth: basic('alice', 'alice-password'), headers: html });
    expect(api.json).toEqual({ data: { __typename: 'Query' } });
  });

  it('loads in Chromium with no console error and no CSP violation, and runs a query', async () => {
    const context = await browser.newContext({ httpCredentials: { username: 'alice', password: 'alice-password' } });
    const page = await context.newPage();
    const problems: string[] = [];
    page.on('console', (msg) => {
      if (msg.type() === 'error') problems.push(`console: ${msg.text()}`);
    });
    page.on('pageerror', (error) => problems.push(`pageerror: ${error.message}`));
    await page.addInitScript(() => {
      document.addEventListener('securitypolicyviolation', (e) => {
        (window as any).__csp = [...((window as any).__csp ?? []), `${e.violatedDirective} ${e.blockedURI}`];
      });
    });
    try {
      const res = await page.goto(`${proxy.url}/graphql/shop`);
      expect(res?.status()).toBe(200);
      // GraphiQL fetched the schema (introspection) once its editors are up.
      await page.waitForSelector('.graphiql-query-editor .CodeMirror', { timeout: 30_000 });
      await page.waitForFunction(() => document.querySelector('.graphiql-doc-explorer-root, .graphiql-sidebar') !== null, undefined, { timeout: 30_000 });
      backend.clearRequests();
      await page.evaluate(() => {
        const cm = (document.querySelector('.graphiql-query-editor .CodeMirror') as any).CodeMirror;
        cm.setValue('{ order(number: 7) { number total } }');
      });
      await page.click('.graphiql-execute-button');
      await page.waitForFunction(() => (document.querySelector('.result-window')?.textContent ?? '').includes('"total": 70'), undefined, { timeout: 30_000 });
      expect(backend.requests.filter((r) => r.path === '/shop/orders')).toHaveLength(1);
      await page.waitForTimeout(300);
      expect(await page.evaluate(() => (window as any).__csp ?? [])).toEqual([]);
      expect(problems).toEqual([]);
    } finally {
      await context.close();
    }
  }, 90_000);
});
