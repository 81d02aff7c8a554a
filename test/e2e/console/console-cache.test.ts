/**
 * The console's cache page (SPEC §12 "the console shows the hit ratio per rule") in a real
 * Chromium against the built CLI: per rule (REST rules and a GraphQL app's whole answers) the
 * hits, misses, hit ratio and bytes this replica counted, as GET /_admin/cache serves them.
 * Scanned with axe-core like the other pages.
 *
 * `OUTRIGGER_SCREENSHOTS=/work/shots npx vitest run test/e2e/console/console-cache.test.ts` also writes
 * cache-console.png there.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { startStandinBackend, type StandinBackend } from '../../../examples/standin-backend/index.js';
import { signInToConsole } from '../../support/clients/browser.js';
import { writeTempFile, type RunningCli } from '../../support/clients/cli.js';
import { call } from '../../support/clients/http-client.js';
import { axeSource, type ConsoleStack, ROOT, screenshot, startConsoleStack } from './console-stack.js';

const APP = {
  _id: 'shop',
  descriptor: { uri: 'shop', cache: { maxAgeSeconds: 60 } },
  schema: 'type Item { name: String } type Query { items: [Item] }',
  mappings: { Query: { items: { db: 'shop', collection: 'items' } } },
};

describe('console: the response cache per rule (Chromium, built CLI)', { timeout: 90_000 }, () => {
  let backend: StandinBackend;
  let proxy: RunningCli;
  let page: Page;
  let stack: ConsoleStack;
  const pageErrors: string[] = [];

  beforeAll(async () => {
    backend = await startStandinBackend({ data: { shop: { items: [{ _id: 'i1', name: 'oar' }], users: [{ _id: 'u1', name: 'ann' }] } } });
    const setup = writeTempFile('setup.yaml', { apps: [APP] });
    stack = await startConsoleStack(
      'e2e-cache-console',
      {
        upstream: { url: backend.url },
        acl: { mode: 'own-routes', bootstrap: setup },
        graphql: { backend: { url: backend.url } },
        cache: {
          rules: [
            { name: 'items', when: 'path-prefix(/shop/items)', maxAgeSeconds: 60 },
            { name: 'users', when: 'path-prefix(/shop/users)', maxAgeSeconds: 30 },
          ],
        },
      },
      { width: 1300, height: 760 },
      pageErrors,
    );
    ({ proxy, page } = stack);
  }, 60_000);

  afterAll(async () => {
    await stack?.stop();
    await backend?.close();
  });

  it('shows hits, misses, the hit ratio and bytes of each rule, whole GraphQL answers included', async () => {
    // items: 1 miss then 3 hits, and the app's one executed read of items (its own query string) a miss: 60 %;
    // users: 2 distinct queries, 2 misses (0 %); the app's whole answers: 1 miss, 2 hits.
    for (let i = 0; i < 4; i++) expect((await call(proxy.url, '/shop/items', { auth: ROOT })).status).toBe(200);
    for (const n of [1, 2]) expect((await call(proxy.url, `/shop/users?page=${n}`, { auth: ROOT })).status).toBe(200);
    const statuses: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await call(proxy.url, '/graphql/shop', { method: 'POST', auth: ROOT, body: { query: '{ items { name } }' } });
      expect(res.status, res.text).toBe(200);
      statuses.push(String(res.headers['cache-status']));
    }
    expect(statuses).toEqual(['Outrigger;fwd=miss;stored', expect.stringMatching(/hit/), expect.stringMatching(/hit/)]);
    const state = (await call(proxy.url, '/_admin/cache', { auth: ROOT })).json;
    expect(state.byRule.map((r: { rule: string; hits: number; misses: number }) => [r.rule, r.hits, r.misses])).toEqual([
      ['items', 3, 2],
      ['users', 0, 2],
      ['graphql:shop', 2, 1],
    ]);

    await signInToConsole(page, proxy.url, 'root', 'root-password');
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Cache', exact: true }).click();
    const table = page.getByRole('table', { name: 'Hits, misses, hit ratio and bytes per cache rule' });
    await table.waitFor();
    const rows = await table.locator('tbody tr').evaluateAll((trs) => trs.map((tr) => [...tr.children].map((c) => (c.textContent ?? '').replace(/\s+/g, ' ').trim())));
    expect(rows.map((r) => r.slice(1, 4))).toEqual([
      ['3', '2', '60%'],
      ['0', '2', '0%'],
      ['2', '1', '66.7%'],
    ]);
    expect(rows[0]![0]).toMatch(/^items 60 s$/);
    expect(rows[2]![0]).toMatch(/^graphql:shop whole GraphQL answers$/);
    for (const r of rows) expect(r[4]).toMatch(/^\d+(\.\d)? (B|KiB)$/);
    expect(rows[1]![4]).not.toBe('0 B');
    await page.evaluate(axeSource);
    const violations = await page.evaluate(async () => {
      const result = await (window as any).axe.run(document, { resultTypes: ['violations'] });
      return result.violations.filter((v: any) => v.impact === 'serious' || v.impact === 'critical').map((v: any) => v.id);
    });
    expect(violations).toEqual([]);
    await screenshot(page, 'cache-console');

    // Purge from the page: every entry dropped, the counts kept.
    await page.getByRole('button', { name: 'Purge all' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Purge' }).click();
    await expect.poll(async () => (await call(proxy.url, '/_admin/cache', { auth: ROOT })).json.entries).toBe(0);
    expect(pageErrors).toEqual([]);
  });
});
