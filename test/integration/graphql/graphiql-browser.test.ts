/**
 * GraphiQL in a real browser (headless Chromium): `GET /graphql/<uri>` with a browser's Accept
 * serves the bundled page after the app lookup and before the ACL (SPEC §15: a browser holding
 * only an API key must be able to open it), with the app's example only for a caller the ACL
 * allows; it loads with no console error and no CSP violation under the strict CSP, a query typed
 * into it runs against the stand-in backend, and a key typed into its bar runs queries as the
 * key's owner, kept in the tab's memory only.
 */
import { mkdirSync } from 'node:fs';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser } from '../../support/clients/browser.js';
import { basic } from '../../support/outrigger.js';
import { call, shopApp, shopData } from './graphql-helpers.js';
import { useStack } from '../../support/fixtures.js';

describe('GraphiQL', () => {
  const stack = useStack(
    {
      service: 'graphiql',
      jwtIdentity: true,
      backend: { data: shopData() },
      users: { root: ['root'], alice: ['user'], eve: ['guest'] },
      config: { acl: { mode: 'enforce' } },
      permissions: {
        keys: { predicate: 'path-prefix(/keys)', roles: ['user'], priority: 1, apiKeys: { roles: ['user'] } },
        'users-graphql': { predicate: 'path-prefix(/graphql)', roles: ['user'], priority: 1 },
        'users-read-shop': { predicate: 'method(GET) and path-prefix(/shop)', roles: ['user'], priority: 1 },
      },
      apps: { shop: shopApp() },
    },
    60_000,
  );
  let browser: Browser;
  beforeAll(async () => {
    mkdirSync('/work/shots', { recursive: true });
    browser = await launchBrowser();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
  });

  const html = { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' };

  it('is served to browsers with the strict CSP, the example only to callers the ACL allows; API clients still get GraphQL', async () => {
    const page = await call(stack.proxy.url, '/graphql/shop', { auth: basic('alice', 'alice-password'), headers: html });
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(page.headers['content-security-policy']).toContain("script-src 'self'");
    expect(page.text).not.toMatch(/<script>|<script [^>]*>[^<]/);
    expect(page.text).toContain('data-example="');
    // Anonymous and refused callers get the page (public code) without the example, which stays behind the ACL.
    for (const auth of [undefined, basic('eve', 'eve-password')]) {
      const shell = await call(stack.proxy.url, '/graphql/shop', { ...(auth ? { auth } : {}), headers: html });
      expect(shell.status).toBe(200);
      expect(shell.text).not.toContain('data-example');
    }
    expect((await call(stack.proxy.url, '/graphql/shop?graphiql-example', {})).status).toBe(401);
    expect((await call(stack.proxy.url, '/graphql/shop?graphiql-example', { auth: basic('eve', 'eve-password') })).status).toBe(403);
    const example = await call(stack.proxy.url, '/graphql/shop?graphiql-example', { auth: basic('alice', 'alice-password') });
    expect(example.json.query).toMatch(/^query Example \{\n {2}orders\(limit: 5\) \{/);
    // The Basic way in: the browser is asked (401), then sent back to the page.
    expect((await call(stack.proxy.url, '/graphql/shop?graphiql-sign-in', { headers: html })).status).toBe(401);
    const back = await call(stack.proxy.url, '/graphql/shop?graphiql-sign-in', { auth: basic('alice', 'alice-password'), headers: html });
    expect([back.status, back.headers.location]).toEqual([303, '/graphql/shop']);
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
      // The Basic way in: the 401 makes the browser answer with its credentials, then the page opens signed in.
      const res = await page.goto(`${stack.proxy.url}/graphql/shop?graphiql-sign-in`);
      expect(res?.status()).toBe(200);
      expect(page.url()).toBe(`${stack.proxy.url}/graphql/shop`);
      // GraphiQL fetched the schema (introspection) once its editors are up.
      await page.waitForSelector('.graphiql-query-editor .CodeMirror', { timeout: 30_000 });
      await page.waitForFunction(() => document.querySelector('.graphiql-doc-explorer-root, .graphiql-sidebar') !== null, undefined, { timeout: 30_000 });
      stack.backend.clearRequests();
      await page.evaluate(() => {
        const cm = (document.querySelector('.graphiql-query-editor .CodeMirror') as any).CodeMirror;
        cm.setValue('{ order(number: 7) { number total } }');
      });
      // GraphiQL takes the operation's name from the editor after a debounce: a click within it
      // would send the opening example's operationName ("Example") with this text (400).
      await page.waitForTimeout(1000);
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

  it('opens with only an API key typed into its bar, on the app example, runs as the key owner, and stores the key nowhere', async () => {
    const issued = await call(stack.proxy.url, '/keys', { method: 'POST', auth: basic('alice', 'alice-password'), body: { name: 'graphiql', roles: ['user'] } });
    expect(issued.status).toBe(201);
    const key: string = issued.json.key;
    const context = await browser.newContext(); // no credentials of its own: the key is all it has
    const page = await context.newPage();
    const problems: string[] = [];
    page.on('pageerror', (error) => problems.push(`pageerror: ${error.message}`));
    try {
      expect((await page.goto(`${stack.proxy.url}/graphql/shop`))?.status()).toBe(200);
      await page.waitForSelector('#outrigger-key-input', { timeout: 30_000 });
      expect(await page.textContent('.outrigger-key-status')).toMatch(/needs credentials/);
      await page.fill('#outrigger-key-input', key);
      await page.click('.outrigger-key button[type=submit]');
      await page.waitForFunction(() => (document.querySelector('.outrigger-key-status')?.textContent ?? '').includes('Running with the key'), undefined, { timeout: 30_000 });
      // It opens on the app's example, and GraphiQL has the schema (fetched with the key).
      const editorText = () => page.evaluate(() => (document.querySelector('.graphiql-query-editor .CodeMirror') as any).CodeMirror.getValue() as string);
      await page.waitForFunction(() => ((document.querySelector('.graphiql-query-editor .CodeMirror') as any)?.CodeMirror.getValue() ?? '').startsWith('query Example'), undefined, {
        timeout: 30_000,
      });
      expect(await editorText()).toMatch(/^query Example \{\n {2}orders\(limit: 5\) \{\n {4}_id\n {4}number/);
      stack.backend.clearRequests();
      await page.click('.graphiql-execute-button');
      // The whole answer from the result editor (its DOM holds only the lines in view).
      const answer = () => page.evaluate(() => (document.querySelector('.result-window .CodeMirror') as any)?.CodeMirror.getValue() ?? '');
      await page.waitForFunction(() => ((document.querySelector('.result-window .CodeMirror') as any)?.CodeMirror.getValue() ?? '').includes('"data"'), undefined, { timeout: 30_000 });
      expect(JSON.parse(await answer()).data.orders.map((o: { number: number }) => o.number)).toEqual([1, 2, 3, 4, 5]);
      const reads = stack.backend.requests.filter((r) => r.path === '/shop/orders');
      expect(reads).toHaveLength(1);
      expect(reads[0]!.identity?.id).toBe('alice'); // the key's owner, as the stand-in verified it
      // The key lives in the page's memory only: nothing of it in any storage or cookie.
      const stored = await page.evaluate(() => JSON.stringify({ local: { ...localStorage }, session: { ...sessionStorage }, cookie: document.cookie }));
      expect(stored).not.toContain(key);
      expect(stored).not.toContain(key.slice(0, 12));
      expect(await page.inputValue('#outrigger-key-input')).toBe('');
      await page.setViewportSize({ width: 1280, height: 800 });
      await page.screenshot({ path: '/work/shots/graphiql-key.png' });
      // A reload forgets it: the page asks again.
      await page.reload();
      await page.waitForSelector('#outrigger-key-input', { timeout: 30_000 });
      expect(await page.textContent('.outrigger-key-status')).toMatch(/needs credentials/);
      expect(problems).toEqual([]);
    } finally {
      await context.close();
    }
  }, 120_000);

  it('a key the server refuses is said so on the page and dropped', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    try {
      await page.goto(`${stack.proxy.url}/graphql/shop`);
      await page.waitForSelector('#outrigger-key-input', { timeout: 30_000 });
      await page.screenshot({ path: '/work/shots/graphiql-no-key.png' });
      await page.fill('#outrigger-key-input', 'ork_not-a-real-key-000000000000000000');
      await page.click('.outrigger-key button[type=submit]');
      await page
        .waitForFunction(() => (document.querySelector('.outrigger-key-status')?.textContent ?? '').includes('refused'), undefined, { timeout: 15_000 })
        .catch(async (error) => {
          throw new Error(`status: ${await page.textContent('.outrigger-key-status')}; ${error}`);
        });
      expect(await page.textContent('.outrigger-key-status')).toMatch(/The key was refused: .+/);
      expect(await page.locator('text=Forget key').count()).toBe(0);
    } finally {
      await context.close();
    }
  }, 60_000);
});
