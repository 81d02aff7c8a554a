/**
 * The console's keys page and SPEC §10 in a real Chromium against the built CLI: each key's
 * last 30 days of use as a small chart (admitted and refused requests), and an admin editing a
 * key's own limits, which the proxy then enforces. Scanned with axe-core like the other pages.
 *
 * `OUTRIGGER_SCREENSHOTS=docs/console npx vitest run test/e2e/console/console-key-limits.test.ts` also
 * writes docs/console/keys-limits.png.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { startStandinBackend, type StandinBackend } from '../../../examples/standin-backend/index.js';
import { signInToConsole } from '../../support/clients/browser.js';
import { writeTempFile, type RunningCli } from '../../support/clients/cli.js';
import { call } from '../../support/clients/http-client.js';
import { ALICE, axeSource, type ConsoleStack, ROOT, screenshot, startConsoleStack } from './console-stack.js';

describe('console: key usage and limits (Chromium, built CLI)', { timeout: 90_000 }, () => {
  let backend: StandinBackend;
  let proxy: RunningCli;
  let page: Page;
  let stack: ConsoleStack;
  const pageErrors: string[] = [];

  beforeAll(async () => {
    backend = await startStandinBackend({ data: { shop: { items: [{ _id: 'i1', name: 'oar' }] } } });
    const setup = writeTempFile('setup.yaml', {
      permissions: [
        { _id: 'users-issue-keys', predicate: 'path-prefix(/keys)', roles: ['user'], priority: 10, apiKeys: { roles: ['reader'] } },
        { _id: 'readers-read-shop', predicate: 'method(GET) and path-prefix(/shop)', roles: ['reader'], priority: 5 },
      ],
    });
    stack = await startConsoleStack(
      'e2e-key-limits',
      {
        upstream: { url: backend.url },
        acl: { mode: 'own-routes', bootstrap: setup },
        limits: {
          policies: [
            { name: 'per-key', by: 'key', limit: 4, window: '1d' },
            { name: 'monthly', by: 'key', quota: { limit: 10000, period: 'month' } },
          ],
        },
      },
      { width: 1400, height: 800 },
      pageErrors,
    );
    ({ proxy, page } = stack);
  }, 60_000);

  afterAll(async () => {
    await stack?.stop();
    await backend?.close();
  });

  it("shows 30 days of each key's use as a chart, and edits a key's own limit which the proxy then applies", async () => {
    const issued = await call(proxy.url, '/keys', { method: 'POST', auth: ALICE, body: { name: 'alice laptop', roles: ['reader'] } });
    expect(issued.status).toBe(201);
    const key = `Bearer ${issued.json.key}`;
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await call(proxy.url, '/shop/items', { auth: key })).status);
    expect(statuses).toEqual([200, 200, 200, 200, 429, 429]);
    // The usage is written every few seconds: wait until the admin API shows today's counts.
    await expect
      .poll(async () => (await call(proxy.url, `/_admin/keys/${issued.json._id}/usage`, { auth: ROOT })).json?.at(-1), { timeout: 15_000, interval: 300 })
      .toMatchObject({ requests: 4, refused: 2 });

    await signInToConsole(page, proxy.url, 'root', 'root-password');
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'API keys', exact: true }).click();

    const chart = page.getByRole('img', { name: /Use of alice laptop over the last 30 days: 4 requests admitted, 2 refused/ });
    await chart.waitFor();
    expect(await chart.locator('rect.usage-ok').count()).toBe(30);
    // Today's bar (the last) is the only one with height; the refused part sits on it.
    const heights = await chart.locator('rect.usage-ok').evaluateAll((rects) => rects.map((r) => Number(r.getAttribute('height'))));
    expect(heights.slice(0, 29).every((h) => h === 0)).toBe(true);
    expect(heights[29]).toBeGreaterThan(0);
    expect(Number(await chart.locator('rect.usage-refused').last().getAttribute('height'))).toBeGreaterThan(0);

    await page.getByRole('button', { name: 'Edit limits of alice laptop' }).click();
    const form = page.getByRole('form', { name: 'Limits of alice laptop' });
    await form.getByText('(policy: 4 requests per 1d)').waitFor();
    await form.getByLabel('Override').first().selectOption('window');
    await form.getByLabel('Limit (requests)').fill('7');
    await form.getByLabel('Window').fill('0s');
    await form.getByRole('button', { name: 'Save limits' }).click();
    // A bad window is answered by the API and shown as it says.
    await form.getByText(/limits\.per-key\.window: must be a duration from 1s to 1d/).waitFor();
    await form.getByLabel('Window').fill('1d');
    await form.getByRole('button', { name: 'Save limits' }).click();
    await page.getByText('Saved the limits of "alice laptop".').waitFor();
    await page.getByText('per-key: 7 requests per 1d').waitFor();
    await page.evaluate(axeSource);
    const violations = await page.evaluate(async () => {
      const result = await (window as any).axe.run(document, { resultTypes: ['violations'] });
      return result.violations.filter((v: any) => v.impact === 'serious' || v.impact === 'critical').map((v: any) => v.id);
    });
    expect(violations).toEqual([]);
    await screenshot(page, 'keys-limits');

    const stored = await call(proxy.url, `/_admin/keys/${issued.json._id}`, { auth: ROOT });
    expect(stored.json.limits).toEqual({ 'per-key': { limit: 7, window: '1d' } });
    // The proxy applies it: 4 were used of the day's 7.
    await expect.poll(async () => (await call(proxy.url, '/shop/items', { auth: key })).status, { timeout: 10_000 }).toBe(200);
    expect(pageErrors).toEqual([]);
  });
});
