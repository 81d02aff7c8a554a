/**
 * The console's Backend page (SPEC §13, issue 49) in a real Chromium against the built CLI: while
 * a backend the test slows down is flooded, the page shows the adaptive limit come down with
 * requests in flight and waiting under it; when the backend resets every connection, the breaker
 * opens and the page says so. Scanned with axe-core like the other pages.
 *
 * `OUTRIGGER_SCREENSHOTS=/work/shots npx vitest run test/e2e/console/console-backend.test.ts` also writes
 * protection-console.png there.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { signInToConsole } from '../../support/clients/browser.js';
import { type RunningCli } from '../../support/clients/cli.js';
import { closedLoop, startControlledBackend, type ControlledBackend } from '../../support/peers/controlled-backend.js';
import { call } from '../../support/clients/http-client.js';
import { ALICE, axeSource, type ConsoleStack, ROOT, screenshot, shots, startConsoleStack } from './console-stack.js';

describe('console: the backend page (Chromium, built CLI)', { timeout: 90_000 }, () => {
  let backend: ControlledBackend;
  let proxy: RunningCli;
  let page: Page;
  let stack: ConsoleStack;
  const pageErrors: string[] = [];

  beforeAll(async () => {
    backend = await startControlledBackend();
    backend.delayMs = 40;
    stack = await startConsoleStack(
      'e2e-backend-page',
      {
        // A long wait so the line is seen on the page; a breaker that opens after a few resets.
        upstream: {
          url: backend.url,
          connections: 32,
          queueTimeoutMs: 3000,
          adaptiveConcurrency: { minLimit: 2, sampleWindowMs: 50, minRttPeriodSeconds: 60 },
          breaker: { failures: 4, coolOffSeconds: 30 },
        },
        acl: { mode: 'own-routes' },
      },
      { width: 1280, height: 720, timeoutMs: 15_000 },
      pageErrors,
    );
    ({ proxy, page } = stack);
  }, 60_000);

  afterAll(async () => {
    await stack?.stop();
    await backend?.close();
  });

  it('shows the limit coming down with requests in flight and queued, then the breaker open', async () => {
    const area = await call(proxy.url, '/_admin/backend', { auth: ROOT });
    expect(area.status, area.text).toBe(200);
    expect(area.json.origins).toEqual([expect.objectContaining({ origin: new URL(backend.url).origin, limit: 32, connections: 32, inFlight: 0, queued: 0 })]);
    expect((await call(proxy.url, '/_admin/backend', { auth: ALICE })).status).toBe(403);
    expect((await call(proxy.url, '/_admin/backend', { method: 'POST', auth: ROOT })).status).toBe(405);
    expect((await call(proxy.url, '/_admin/backend/nothing', { auth: ROOT })).status).toBe(404);

    await signInToConsole(page, proxy.url, 'root', 'root-password');
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Backend', exact: true }).click();
    const card = page.getByRole('listitem', { name: new URL(backend.url).origin });
    await card.getByText('Full limit').waitFor();
    await closedLoop(proxy.url, '/healthy', { workers: 4, ms: 600, headers: { authorization: ALICE } });

    // 10× slower under 16 clients: the limit comes down; with a 3 s wait, the rest queue.
    backend.delayMs = 400;
    const flood = closedLoop(proxy.url, '/slow', { workers: 16, ms: 6000, headers: { authorization: ALICE } });
    const bar = card.getByRole('img', { name: /in flight of a limit of \d+ \(upstream\.connections 32\), \d+ waiting/ });
    await bar.waitFor();
    await card.getByText('Limited').waitFor();
    const label = (await bar.getAttribute('aria-label'))!;
    const [, inFlight, limit, queued] = /^(\d+) in flight of a limit of (\d+) .*, (\d+) waiting/.exec(label)!.map(Number);
    expect(limit).toBeLessThan(32);
    // A lowered limit does not cut what was admitted under the higher one (and a critical request may go over it): only the connections bound holds.
    expect(inFlight).toBeLessThanOrEqual(32);
    expect(queued).toBeGreaterThan(0);
    await page.evaluate(axeSource);
    const violations = await page.evaluate(async () => {
      const result = await (window as any).axe.run(document, { resultTypes: ['violations'] });
      return result.violations.filter((v: any) => v.impact === 'serious' || v.impact === 'critical').map((v: any) => v.id);
    });
    expect(violations).toEqual([]);
    await screenshot(page, 'protection-console');
    await flood;

    // Every connection reset: the GETs fail (each retried once) until the breaker opens.
    backend.mode = 'reset';
    for (let i = 0; i < 8; i++) if ((await call(proxy.url, `/reset/${i}`, { auth: ALICE })).status === 503) break;
    await card.getByLabel('Circuit breaker: Open').waitFor();
    await card.getByText(/every request is answered 503 at once, nothing sent\. Probes in \d+ s\./).waitFor();
    if (shots) await page.screenshot({ path: join(shots, 'protection-console-breaker.png'), fullPage: true });
    expect(pageErrors).toEqual([]);
  });
});
