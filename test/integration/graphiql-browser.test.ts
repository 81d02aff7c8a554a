/**
 * GraphiQL in a real browser (headless Chromium): `GET /graphql/<uri>` with a browser's Accept
 * serves the bundled page behind the app's ACL, it loads with no console error and no CSP
 * violation under the strict CSP, and a query typed into it runs against the stand-in backend.
 */
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser } from '../support/browser.js';
import { basic } from '../support/outrigger.js';
import { call, shopApp, shopData } from './graphql-helpers.js';
import { useStack } from '../support/fixtures.js';

describe('GraphiQL', () => {
  const stack = useStack(
    {
      service: 'graphiql',
      jwtIdentity: true,
      backend: { data: shopData() },
      users: { root: ['root'], alice: ['user'], eve: ['guest'] },
      config: { acl: { mode: 'enforce' } },
      permissions: {
        'users-graphql': { predicate: 'path-prefix(/graphql)', roles: ['user'], priority: 1 },
        'users-read-shop': { predicate: 'method(GET) and path-prefix(/shop)', roles: ['user'], priority: 1 },
      },
      apps: { shop: shopApp() },
    },
    60_000,
  );
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchBrowser();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
  });

  const html = { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' };

  it('is served to browsers behind the same ACL, with the strict CSP; API clients still get GraphQL', async () => {
    const page = await call(stack.proxy.url, '/graphql/shop', { auth: basic('alice', 'alice-password'), headers: html });
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(page.headers['content-security-policy']).toContain("script-src 'self'");
    expect(page.text).not.toMatch(/<script>|<script [^>]*>[^<]/);
    expect((await call(stack.proxy.url, '/graphql/shop', { headers: html })).status).toBe(401);
    expect((await call(stack.proxy.url, '/graphql/shop', { auth: basic('eve', 'eve-password'), headers: html })).status).toBe(403);
    expect((await call(stack.proxy.url, '/graphql/nope', { auth: basic('alice', 'alice-password'), headers: html })).status).toBe(404);
    const api = await call(stack.proxy.url, '/graphql/shop?query=%7B__typename%7D', { auth: basic('alice', 'alice-password'), headers: html });
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
      const res = await page.goto(`${stack.proxy.url}/graphql/shop`);
      expect(res?.status()).toBe(200);
      // GraphiQL fetched the schema (introspection) once its editors are up.
      await page.waitForSelector('.graphiql-query-editor .CodeMirror', { timeout: 30_000 });
      await page.waitForFunction(() => document.querySelector('.graphiql-doc-explorer-root, .graphiql-sidebar') !== null, undefined, { timeout: 30_000 });
      stack.backend.clearRequests();
      await page.evaluate(() => {
        const cm = (document.querySelector('.graphiql-query-editor .CodeMirror') as any).CodeMirror;
        cm.setValue('{ order(number: 7) { number total } }');
      });
      await page.click('.graphiql-execute-button');
      await page.waitForFunction(() => (document.querySelector('.result-window')?.textContent ?? '').includes('"total": 70'), undefined, { timeout: 30_000 });
      expect(stack.backend.requests.filter((r) => r.path === '/shop/orders')).toHaveLength(1);
      await page.waitForTimeout(300);
      expect(await page.evaluate(() => (window as any).__csp ?? [])).toEqual([]);
      expect(problems).toEqual([]);
    } finally {
      await context.close();
    }
  }, 90_000);
});
