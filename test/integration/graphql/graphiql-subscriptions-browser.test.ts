/**
 * GraphiQL runs subscriptions (SPEC §6.5, over SSE): in headless Chromium, a subscription typed
 * into the editor starts, an order written through the proxy arrives in the result pane.
 */
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser } from '../../support/clients/browser.js';
import { ROOT, useStack } from '../../support/fixtures.js';
import { until } from '../../support/wait.js';
import { call } from './graphql-helpers.js';
import { openSubscriptions, putSubscriptionPermissions, subscriptionApp } from '../subscriptions/graphql-subscriptions-helpers.js';

describe('GraphiQL and subscriptions', () => {
  const stack = useStack(
    { service: 'graphiql-subscriptions', jwtIdentity: true, backend: { data: { shop: { orders: [] } } }, users: { root: ['root'], carol: ['everything'] }, config: { acl: { mode: 'enforce' } } },
    60_000,
  );
  let browser: Browser;
  beforeAll(async () => {
    await putSubscriptionPermissions(stack.proxy.url, ROOT);
    expect((await call(stack.proxy.url, '/gql-apps/subs', { method: 'PUT', auth: ROOT, body: subscriptionApp() })).status).toBe(201);
    browser = await launchBrowser();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
  });

  it('runs a subscription over SSE and shows a change written through the proxy', async () => {
    const context = await browser.newContext({ httpCredentials: { username: 'carol', password: 'carol-password' } });
    const page = await context.newPage();
    const problems: string[] = [];
    page.on('pageerror', (error) => problems.push(`pageerror: ${error.message}`));
    try {
      expect((await page.goto(`${stack.proxy.url}/graphql/subs?graphiql-sign-in`))?.status()).toBe(200);
      await page.waitForSelector('.graphiql-query-editor .CodeMirror', { timeout: 30_000 });
      await page.evaluate(() => {
        const cm = (document.querySelector('.graphiql-query-editor .CodeMirror') as any).CodeMirror;
        cm.setValue('subscription { orderChanged { op document { number } } }');
      });
      // GraphiQL takes the operation's name from the editor after a debounce: a click within it
      // would send the opening example's operationName ("Example") with this text (400).
      await page.waitForTimeout(1000);
      await page.click('.graphiql-execute-button');
      await until(async () => (await openSubscriptions(stack.proxy.url)) === 1, 'the page subscribed');
      const res = await call(stack.proxy.url, '/shop/orders', { method: 'POST', auth: ROOT, body: { number: 4343, owner: 'carol' } });
      expect(res.status).toBe(201);
      await page.waitForFunction(() => /"number": 4343/.test(document.querySelector('.result-window')?.textContent ?? ''), undefined, { timeout: 30_000 });
      expect(problems).toEqual([]);
    } finally {
      await context.close();
    }
  }, 90_000);
});
