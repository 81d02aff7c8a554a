/**
 * SPEC §15 "Keys for their owners" in a real Chromium against the built CLI: a user WITHOUT an
 * admin role signs in to the console and gets only their own keys page, on the keys route the
 * config names (`routes.keys: /api-keys` here, which the page learns from the console route).
 * They see each key's name, start, created, last use and use; issue a key (the secret shown
 * once, and it works); rotate it with a grace they choose (both keys work, the old one marked);
 * and revoke one (it stops working). Scanned with axe-core like the other pages.
 *
 * Screenshots go to $OUTRIGGER_SCREENSHOTS (keys-*.png) when it is set.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { startStandinBackend, type StandinBackend } from '../../../examples/standin-backend/index.js';
import { signInToConsole } from '../../support/clients/browser.js';
import { writeTempFile, type RunningCli } from '../../support/clients/cli.js';
import { call } from '../../support/clients/http-client.js';
import { ALICE, axeSource, type ConsoleStack, screenshot, startConsoleStack } from './console-stack.js';

const HOUR = 3_600_000;

describe("console: a key owner's own keys page (Chromium, built CLI, a user without admin roles)", { timeout: 120_000 }, () => {
  let backend: StandinBackend;
  let proxy: RunningCli;
  let page: Page;
  let stack: ConsoleStack;
  const pageErrors: string[] = [];
  const works = async (key: string) => (await call(proxy.url, '/shop/items', { auth: `Bearer ${key}` })).status;
  const shoot = async (name: string) => {
    await screenshot(page, `keys-${name}`);
  };

  beforeAll(async () => {
    backend = await startStandinBackend({ data: { shop: { items: [{ _id: 'i1', name: 'oar' }] } } });
    const setup = writeTempFile('setup.yaml', {
      permissions: [
        { _id: 'users-issue-keys', predicate: 'path-prefix(/api-keys)', roles: ['user'], priority: 10, apiKeys: { roles: ['reader'], 'max-keys-per-user': 3 } },
        { _id: 'readers-read-shop', predicate: 'method(GET) and path-prefix(/shop)', roles: ['reader'], priority: 5 },
      ],
    });
    stack = await startConsoleStack(
      'e2e-own-keys',
      {
        upstream: { url: backend.url },
        routes: { keys: '/api-keys' },
        acl: { mode: 'own-routes', bootstrap: setup },
      },
      { width: 1280, height: 800 },
      pageErrors,
    );
    ({ proxy, page } = stack);
  }, 90_000);

  afterAll(async () => {
    await stack?.stop();
    await backend?.close();
  });

  it('lists, issues (secret once), rotates with a chosen grace, and revokes; every step as the API sees it', async () => {
    // A key issued before, and used once: its row shows a last use and a day of use.
    const laptop = await call(proxy.url, '/api-keys', { method: 'POST', auth: ALICE, body: { name: 'laptop', roles: ['reader'] } });
    expect(laptop.status).toBe(201);
    expect(await works(laptop.json.key)).toBe(200);
    await expect.poll(async () => (await call(proxy.url, `/api-keys/${laptop.json._id}`, { auth: ALICE })).json.lastUsedAt, { timeout: 10_000 }).toBeTruthy();

    await signInToConsole(page, proxy.url, 'alice', 'alice-password');
    await page.getByRole('heading', { name: 'Your API keys', level: 1 }).waitFor();
    // Only their own page: none of the admin pages is offered.
    const nav = page.getByRole('navigation', { name: 'Main' });
    expect(await nav.getByRole('link').allTextContents()).toEqual(['Your API keys']);

    const laptopRow = page.locator(`tr[data-key-id="${laptop.json._id}"]`);
    await laptopRow.getByText(`${laptop.json.key.slice(0, 12)}…`).waitFor();
    expect(await laptopRow.locator('td').nth(4).innerText()).not.toBe('never');
    await page.getByRole('img', { name: /Use of laptop over the last 30 days: 1 requests admitted/ }).waitFor({ timeout: 15_000 });
    await shoot('list');

    // Issue: the secret is shown once, in full, and it works.
    await page.getByLabel('Name', { exact: true }).fill('ci-deploy');
    await page.getByLabel('Roles', { exact: true }).fill('reader');
    await page.getByLabel('Expires in (days)').fill('30');
    await page.getByRole('button', { name: 'Issue key' }).click();
    await page.getByRole('heading', { name: 'Copy your new key now' }).waitFor();
    const issuedKey = await page.getByRole('textbox', { name: 'Your new key' }).inputValue();
    expect(issuedKey).toMatch(/^rig_[0-9A-Za-z]{49}$/);
    expect(await works(issuedKey)).toBe(200);
    await shoot('issued');
    await page.getByRole('button', { name: 'Done' }).click();
    expect(await page.getByRole('textbox', { name: 'Your new key' }).count()).toBe(0);
    // Nowhere on the page any more: the list shows only its start.
    expect(await page.content()).not.toContain(issuedKey);
    const listed = (await call(proxy.url, '/api-keys', { auth: ALICE })).json as Array<Record<string, any>>;
    const ci = listed.find((k) => k.name === 'ci-deploy')!;
    await page
      .locator(`tr[data-key-id="${ci._id}"]`)
      .getByText(`${issuedKey.slice(0, 12)}…`)
      .waitFor();

    // Rotate with a grace of 2 hours: a new secret; the old key still works and is marked.
    await page.getByRole('button', { name: 'Rotate ci-deploy' }).click();
    const rotateForm = page.getByRole('form', { name: 'Rotate ci-deploy' });
    await rotateForm.getByLabel('Old key keeps working for (hours)').fill('2');
    const before = Date.now();
    await rotateForm.getByRole('button', { name: 'Rotate' }).click();
    await page.getByRole('heading', { name: 'Copy your new key now' }).waitFor();
    const rotatedKey = await page.getByRole('textbox', { name: 'Your new key' }).inputValue();
    expect(rotatedKey).not.toBe(issuedKey);
    expect(await works(rotatedKey)).toBe(200);
    expect(await works(issuedKey)).toBe(200);
    await page.locator(`tr[data-key-id="${ci._id}"]`).getByText('rotated').waitFor();
    await shoot('rotated');
    const old = ((await call(proxy.url, '/api-keys', { auth: ALICE })).json as Array<Record<string, any>>).find((k) => k._id === ci._id)!;
    expect(old.expiresAt.$date).toBeGreaterThanOrEqual(before + 2 * HOUR - 1000);
    expect(old.expiresAt.$date).toBeLessThanOrEqual(Date.now() + 2 * HOUR);
    // A rotated key offers no second rotation.
    expect(await page.getByRole('button', { name: 'Rotate ci-deploy' }).count()).toBe(1);
    await page.getByRole('button', { name: 'Done' }).click();

    // Revoke the laptop key, after a confirmation: it stops working.
    await laptopRow.getByRole('button', { name: 'Revoke laptop' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Revoke' }).click();
    await page.getByText('Revoked "laptop".').waitFor();
    await laptopRow.waitFor({ state: 'detached' });
    await expect.poll(() => works(laptop.json.key), { timeout: 5000 }).toBe(401);
    await shoot('revoked');

    await page.evaluate(axeSource);
    const violations = await page.evaluate(async () => {
      const result = await (window as any).axe.run(document, { resultTypes: ['violations'] });
      return result.violations.filter((v: any) => v.impact === 'serious' || v.impact === 'critical').map((v: any) => v.id);
    });
    expect(violations).toEqual([]);
    expect(pageErrors).toEqual([]);
  });

  it("shows the server's refusal as it words it (roles not offered), and the page reads on a phone (the table scrolls sideways, as the admin's does)", async () => {
    await page.getByLabel('Name', { exact: true }).fill('too much');
    await page.getByLabel('Roles', { exact: true }).fill('admin-ish');
    await page.getByRole('button', { name: 'Issue key' }).click();
    await page.getByText(/this role is not available for your API keys: "admin-ish" \(available: reader\)/).waitFor();
    await page.setViewportSize({ width: 390, height: 844 });
    await page.getByRole('button', { name: 'Issue key' }).waitFor();
    await shoot('phone');
    await page.setViewportSize({ width: 1280, height: 800 });
    expect(pageErrors).toEqual([]);
  });
});
