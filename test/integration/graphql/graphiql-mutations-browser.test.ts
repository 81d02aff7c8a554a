/**
 * GraphiQL shows mutations (issue 27 item 6): in headless Chromium, the documentation explorer of
 * an app with a Mutation type lists it, and a mutation typed into the editor runs: one
 * `POST /shop/orders` reaches the stand-in as the signed-in user, and the new id is shown.
 */
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser } from '../../support/clients/browser.js';
import { ROOT, useStack } from '../../support/fixtures.js';
import { mutationApp, mutationData, putMutationPermissions } from './graphql-mutations-helpers.js';
import { call } from './graphql-helpers.js';

describe('GraphiQL and mutations', () => {
  const stack = useStack(
    { service: 'graphiql-mutations', jwtIdentity: true, backend: { data: mutationData() }, users: { root: ['root'], alice: ['writer'] }, config: { acl: { mode: 'enforce' } } },
    60_000,
  );
  let browser: Browser;
  beforeAll(async () => {
    await putMutationPermissions(stack.proxy.url, ROOT);
    expect((await call(stack.proxy.url, '/gql-apps/writes', { method: 'PUT', auth: ROOT, body: mutationApp() })).status).toBe(201);
    browser = await launchBrowser();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
  });

  it('lists the Mutation type in the docs and runs a mutation as the signed-in user', async () => {
    const context = await browser.newContext({ httpCredentials: { username: 'alice', password: 'alice-password' } });
    const page = await context.newPage();
    const problems: string[] = [];
    page.on('pageerror', (error) => problems.push(`pageerror: ${error.message}`));
    try {
      expect((await page.goto(`${stack.proxy.url}/graphql/writes?graphiql-sign-in`))?.status()).toBe(200);
      await page.waitForSelector('.graphiql-query-editor .CodeMirror', { timeout: 30_000 });
      await page.click('button[aria-label="Show Documentation Explorer"]');
      await page.waitForFunction(() => (document.querySelector('.graphiql-doc-explorer')?.textContent ?? '').includes('Mutation'), undefined, { timeout: 30_000 });
      stack.backend.clearRequests();
      await page.evaluate(() => {
        const cm = (document.querySelector('.graphiql-query-editor .CodeMirror') as any).CodeMirror;
        cm.setValue('mutation { createOrderId(number: 4242, total: 1) }');
      });
      // GraphiQL takes the operation's name from the editor after a debounce: a click within it
      // would send the opening example's operationName ("Example") with this text (400).
      await page.waitForTimeout(1000);
      await page.click('.graphiql-execute-button');
      await page.waitForFunction(() => /"createOrderId": "[0-9a-f]{24}"/.test(document.querySelector('.result-window')?.textContent ?? ''), undefined, { timeout: 30_000 });
      const posts = stack.backend.requests.filter((r) => r.method === 'POST');
      expect(posts).toHaveLength(1);
      expect(posts[0]).toMatchObject({ path: '/shop/orders', identity: { id: 'alice' } });
      expect(problems).toEqual([]);
    } finally {
      await context.close();
    }
  }, 90_000);
});
