/**
 * The admin console in a real Chromium (Debian's package, driven by playwright-core), against the
 * built CLI (`outrigger start`) with a real Redis, the stand-in backend and a local webhook
 * target. One browser and one page for the whole file; steps run in order and build on each
 * other, as a person would use the console. Every page is scanned with axe-core.
 *
 * `OUTRIGGER_SCREENSHOTS=docs/console npx vitest run test/e2e/console/console.test.ts` also writes the
 * screenshots shown in the README.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { startStandinBackend, type StandinBackend } from '../../../examples/standin-backend/index.js';
import { ApiKeyIssuer } from '../../../src/keys/issuer.js';
import { ApiKeyStore } from '../../../src/keys/key-store.js';
import { createLogger } from '../../../src/observability/logger.js';
import type { ChangeBus } from '../../../src/store/change-bus.js';
import { redisKeys } from '../../../src/store/keys.js';
import { STRICT_CSP } from '../../../src/http/static-assets.js';
import { writeTempFile, type RunningCli } from '../../support/clients/cli.js';
import { call } from '../../support/clients/http-client.js';
import { type TestRedis } from '../../support/redis/redis.js';
import { startTarget, waitFor, type Target } from '../../integration/webhooks/webhooks-helpers.js';
import { ALICE, axeSource, type ConsoleStack, ROOT, screenshot, startConsoleStack } from './console-stack.js';

const SERVICE = 'e2e-console';

describe('admin console (Chromium, built CLI)', { timeout: 90_000 }, () => {
  let redis: TestRedis;
  let backend: StandinBackend;
  let target: Target;
  let proxy: RunningCli;
  let page: Page;
  let stack: ConsoleStack;
  let base: string;
  const foreignRequests: string[] = [];
  const pageErrors: string[] = [];
  let targetStatus = 200;
  const suiteStarted = Date.now();

  /** axe-core injected through the DevTools protocol (the page's CSP forbids inline scripts, rightly). */
  async function expectAccessible(what: string) {
    await page.evaluate(axeSource);
    const violations = await page.evaluate(async () => {
      const result = await (window as any).axe.run(document, { resultTypes: ['violations'] });
      return result.violations.map((v: any) => ({ id: v.id, impact: v.impact, nodes: v.nodes.map((n: any) => n.target.join(' ')).slice(0, 3) }));
    });
    const serious = violations.filter((v: { impact: string }) => v.impact === 'serious' || v.impact === 'critical');
    expect(serious, `${what}: ${JSON.stringify(serious)}`).toEqual([]);
  }

  async function go(hash: string) {
    await page.evaluate((h) => (location.hash = h), hash);
  }

  const poll = <T>(read: () => T | Promise<T>) => expect.poll(read, { timeout: 10_000, interval: 100 });
  const nav = (name: string) => page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name, exact: true });
  /** Presses Refresh on the Logs tab until the list holds `count` entries. */
  const refreshUntil = (list: ReturnType<Page['locator']>, count: number, what: string) =>
    waitFor(
      async () => {
        await page.getByRole('button', { name: 'Refresh' }).click();
        return list.count();
      },
      (n) => n === count,
      10_000,
      what,
    );
  const api = (path: string, init: Parameters<typeof call>[2] = {}) => call(proxy.url, path, { auth: ROOT, ...init });
  const webhookId = async (name: string) => ((await api('/_admin/webhooks')).json as Array<{ _id: string; name: string }>).find((w) => w.name === name)?._id;

  beforeAll(async () => {
    backend = await startStandinBackend({ data: { shop: { orders: [], items: [{ _id: 'i1', name: 'oar' }] } } });
    target = await startTarget(() => ({ status: targetStatus, body: targetStatus === 200 ? 'hello from the target' : 'the target is unhappy' }));
    const setup = writeTempFile('setup.yaml', {
      permissions: [
        { _id: 'users-issue-keys', predicate: 'path-prefix(/keys)', roles: ['user'], priority: 10, apiKeys: { roles: ['reader'] } },
        { _id: 'readers-read-shop', predicate: 'method(GET) and path-prefix(/shop)', roles: ['reader'], priority: 5 },
      ],
    });
    stack = await startConsoleStack(
      SERVICE,
      {
        // Nothing balances in front of it: stop at once on SIGTERM (the drain is tested in shutdown-signals).
        shutdown: { drainSeconds: 0 },
        upstream: { url: backend.url },
        acl: { mode: 'own-routes', bootstrap: setup },
        webhooks: { allowPrivateTargets: ['127.0.0.0/8'], retrySchedule: ['1h'] },
      },
      { width: 1280, height: 800 },
      pageErrors,
    );
    ({ redis, proxy, page } = stack);
    base = `${proxy.url}/_admin/`;
    const origin = new URL(proxy.url).origin;
    page.on('request', (req) => {
      if (!req.url().startsWith(`${origin}/`)) foreignRequests.push(req.url());
    });
  }, 60_000);

  afterAll(async () => {
    await stack?.stop();
    await target?.close();
    await backend?.close();
    console.log(`console browser suite: ${((Date.now() - suiteStarted) / 1000).toFixed(1)} s`);
  });

  it('serves the page and its files with the strict CSP, to anyone, with no data in them', async () => {
    const shell = await call(proxy.url, '/_admin/');
    expect(shell.status).toBe(200);
    expect(shell.headers['content-type']).toMatch(/text\/html/);
    expect(shell.headers['content-security-policy']).toBe(STRICT_CSP);
    expect(shell.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(shell.headers['content-security-policy']).toContain("script-src 'self'");
    expect(shell.headers['x-frame-options']).toBe('DENY');
    expect(shell.text).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/); // no inline script
    const js = await call(proxy.url, '/_admin/console/main.js');
    expect(js.status).toBe(200);
    expect(js.headers['content-security-policy']).toBe(STRICT_CSP);
    expect(js.text).not.toMatch(/https?:\/\/(?!localhost|127\.0\.0\.1)[a-z0-9.-]+\.[a-z]{2,}\/[^"'\s]*\.(js|css)/i); // no CDN
    expect((await call(proxy.url, '/_admin')).status).toBe(308);
    expect((await call(proxy.url, '/_admin/console/nothing.js')).status).toBe(404);
    // The API stays behind authorization.
    expect((await call(proxy.url, '/_admin/webhooks')).status).toBe(401);
  });

  it('a wrong password shows an error and no page content', async () => {
    const response = await page.goto(base);
    expect(response!.headers()['content-security-policy']).toBe(STRICT_CSP);
    await page.getByLabel('Username', { exact: true }).fill('root');
    await page.getByLabel('Password', { exact: true }).fill('not-the-password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await poll(() => page.getByRole('alert').textContent()).toContain('Wrong username or password');
    expect(await page.getByRole('navigation', { name: 'Main' }).count()).toBe(0);
    expect(await page.getByRole('heading', { name: 'Webhooks' }).count()).toBe(0);
    await expectAccessible('sign-in page');
    await screenshot(page, 'sign-in');
    // Nothing of the credentials was stored by the page.
    expect(await page.evaluate(() => [localStorage.length, sessionStorage.length, document.cookie])).toEqual([0, 0, '']);
  });

  it('signs in, and shows an empty webhook list that says what to do', async () => {
    await page.getByLabel('Password', { exact: true }).fill('root-password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Webhooks', level: 1 }).waitFor();
    await page.getByText('No webhooks yet.').waitFor();
    expect(await page.getByRole('link', { name: 'Create your first webhook' }).count()).toBe(1);
    expect(await page.evaluate(() => [localStorage.length, sessionStorage.length, document.cookie])).toEqual([0, 0, '']);
    await expectAccessible('empty webhook list');
  });

  it('creates an HTTP webhook with a template: the condition is checked as typed, Test Webhook shows the answer before saving', async () => {
    await page.getByRole('link', { name: 'Create your first webhook' }).click();
    await page.getByRole('heading', { name: 'New webhook' }).waitFor();
    await page.getByLabel('Name', { exact: true }).fill('Order created');
    const condition = page.getByLabel('Condition', { exact: true });
    await condition.fill('method(POST) and pathx(/shop/orders)');
    // The parse error, under the field, at its position, with a caret.
    const check = page.locator('#condition-check');
    await poll(() => check.textContent()).toContain('at position 17');
    expect(await check.locator('.caret').count()).toBe(1);
    expect(await condition.getAttribute('aria-invalid')).toBe('true');
    await expectAccessible('webhook form with a condition error');
    await condition.fill("method(POST) and path('/shop/orders')");
    await poll(() => check.textContent()).toContain('The condition parses');

    await page.getByLabel('Target URL').fill(`${target.url}/hook`);
    await page.getByLabel('Send a template instead of the default payload').check();
    await page.getByLabel('Template (Mustache)').fill('{"text": "{{request.method}} {{request.path}}", "status": {{response.statusCode}}}');

    await page.getByRole('button', { name: 'Test Webhook' }).click();
    const result = page.getByRole('region', { name: 'Test result' });
    await poll(() => result.textContent()).toContain('Target answered 200');
    expect(await result.textContent()).toContain('hello from the target');
    expect(target.on('/hook')).toHaveLength(1);
    expect(JSON.parse(target.on('/hook')[0]!.body)).toEqual({ text: 'POST /sample/orders', status: 201 });
    expect((await api('/_admin/webhooks')).json).toEqual([]); // nothing saved by a test send
    await expectAccessible('webhook form with a test result');
    await screenshot(page, 'webhook-form');

    await page.getByRole('button', { name: 'Save webhook' }).click();
    await page.getByText('Webhook "Order created" created').waitFor();
    const id = await webhookId('Order created');
    expect((await api(`/_admin/webhooks/${id}`)).json).toMatchObject({ type: 'http', enabled: true, transform: { enabled: true } });
  });

  it('shows a matching request in the Logs tab, with its six sections; skipped entries are one filter away', async () => {
    // A proxied request the condition does not match: a skipped entry, which the view's default (success and failed) leaves out.
    expect((await call(proxy.url, '/shop/items')).status).toBe(200);
    const id = await webhookId('Order created');
    await waitFor(
      async () => (await api(`/_admin/webhooks/${id}/logs?status=skipped`)).json,
      (l) => l.length === 1,
      10_000,
      'the skipped entry',
    );
    expect((await call(proxy.url, '/shop/orders', { method: 'POST', body: { _id: 'o1', item: 'paddle' } })).status).toBe(201);
    await waitFor(
      () => target.on('/hook'),
      (r) => r.length === 2,
      10_000,
      'the delivery',
    );
    await page.getByRole('link', { name: 'Logs', exact: true }).click();
    await refreshUntil(page.getByRole('list', { name: 'Log entries' }).locator('li'), 1, 'the log entry in the page');
    expect(await page.getByLabel('Status', { exact: true }).inputValue()).toBe('success,failed');
    const entry = page.getByRole('list', { name: 'Log entries' }).locator('li').first();
    expect(await entry.textContent()).toContain('POST /shop/orders');
    await entry.getByRole('button', { name: 'Show details' }).click();
    const sections = ['Incoming request', 'Condition', 'Transformation', 'Outgoing request', 'Response', 'Error'];
    for (const name of sections) await entry.locator('summary', { hasText: name }).click();
    expect(await entry.locator('details[open]').count()).toBe(6);
    const text = (await entry.textContent()) ?? '';
    expect(text).toContain('"item": "paddle"'); // incoming request body
    expect(text).toContain('Matched');
    expect(text).toContain('{"text": "POST /shop/orders", "status": 201}'); // transformation output
    expect(text).toContain(`POST ${target.url}/hook`); // outgoing request
    expect(text).toContain('hello from the target'); // the target's response
    expect(text).toContain('No error.');
    await expectAccessible('logs with an expanded entry');
    await screenshot(page, 'webhook-logs');

    const entries = page.getByRole('list', { name: 'Log entries' }).locator('li');
    await page.getByLabel('Status', { exact: true }).selectOption('skipped');
    await poll(() => entries.first().locator('.badge').first().textContent()).toBe('skipped');
    expect(await entries.count()).toBe(1);
    expect(await entries.first().textContent()).toContain('GET /shop/items');
    await page.getByLabel('Status', { exact: true }).selectOption('success,failed');
    await poll(() => entries.first().locator('.badge').first().textContent()).toBe('success');
    expect(await entries.count()).toBe(1);
  });

  it('filters by status, resends a failed entry, and clears the logs after confirmation', async () => {
    targetStatus = 400; // final: no retry
    expect((await call(proxy.url, '/shop/orders', { method: 'POST', body: { _id: 'o2' } })).status).toBe(201);
    await waitFor(
      () => target.on('/hook'),
      (r) => r.length === 3,
      10_000,
      'the failing delivery',
    );
    const entries = page.getByRole('list', { name: 'Log entries' }).locator('li');
    await refreshUntil(entries, 2, 'two entries');
    await page.getByLabel('Status', { exact: true }).selectOption('failed');
    await poll(() => entries.count()).toBe(1);
    expect(await entries.first().locator('.badge').first().textContent()).toBe('failed');
    expect(await entries.first().textContent()).toContain('Target answered 400');
    await page.getByLabel('Status', { exact: true }).selectOption('success');
    await poll(() => entries.first().locator('.badge').first().textContent()).toBe('success');
    expect(await entries.count()).toBe(1);

    await page.getByLabel('Status', { exact: true }).selectOption('failed');
    await poll(() => entries.first().locator('.badge').first().textContent()).toBe('failed');
    targetStatus = 200;
    await entries.first().getByRole('button', { name: 'Resend' }).click();
    await page.getByText('Resend queued as attempt 2').waitFor();
    await waitFor(
      () => target.on('/hook'),
      (r) => r.length === 4,
      10_000,
      'the resent delivery',
    );
    const sent = target.on('/hook');
    expect(sent[3]!.headers['webhook-id']).toBe(sent[2]!.headers['webhook-id']);
    await page.getByLabel('Status', { exact: true }).selectOption('success,failed');
    await refreshUntil(entries, 3, 'the resent attempt in the page');
    expect(await entries.first().textContent()).toContain('Attempt 2');

    // Recover: an event that failed while the target was down is sent again.
    targetStatus = 400;
    expect((await call(proxy.url, '/shop/orders', { method: 'POST', body: { _id: 'o2b' } })).status).toBe(201);
    await waitFor(
      () => target.on('/hook'),
      (r) => r.length === 5,
      10_000,
      'another failing delivery',
    );
    targetStatus = 200;
    await page.getByRole('button', { name: 'Recover failed…' }).click();
    const recover = page.getByRole('dialog', { name: /Recover failed events/ });
    // One hour ago by default, in the browser's zone. Chromium drops ":00" seconds from a
    // datetime-local value, so the seconds are optional (this failed whenever the default fell
    // on a whole minute).
    const since = await recover.getByLabel('Since (your time zone)').inputValue();
    expect(since).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d)?$/);
    expect(Math.abs(Date.now() - 3600_000 - new Date(since).getTime())).toBeLessThan(120_000);
    await expectAccessible('recover dialog');
    await recover.getByRole('button', { name: 'Recover' }).click();
    await page.getByText('Re-queued 1 event.').waitFor();
    await waitFor(
      () => target.on('/hook'),
      (r) => r.length === 6,
      10_000,
      'the recovered delivery',
    );
    expect(JSON.parse(target.on('/hook')[5]!.body)).toEqual(JSON.parse(target.on('/hook')[4]!.body));

    await page.getByRole('button', { name: 'Clear Logs' }).click();
    const dialog = page.getByRole('dialog', { name: /Clear the logs/ });
    await dialog.waitFor();
    await expectAccessible('clear logs dialog');
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await refreshUntil(entries, 5, 'five entries before Clear Logs');
    await page.getByRole('button', { name: 'Clear Logs' }).click();
    await dialog.getByRole('button', { name: 'Delete entries' }).click();
    await page.getByText('No success or failed entries.').waitFor();
    await page.getByText('or "Skipped" for the requests that did not match the condition').waitFor();
    expect((await api(`/_admin/webhooks/${await webhookId('Order created')}/logs`)).json).toEqual([]);
  });

  it('records live requests with a countdown, stops, and turns one into a condition', async () => {
    await nav('Recording').click();
    await page.getByText('Nothing recorded.').waitFor();
    await expectAccessible('recording, idle');
    await page.getByRole('button', { name: 'Start Recording' }).click();
    await page.getByText('Waiting for requests…').waitFor();
    const countdown = page.locator('.countdown');
    expect(Number((await countdown.textContent())!.replace(/\D/g, ''))).toBeGreaterThan(50);
    expect((await call(proxy.url, '/shop/items?color=red')).status).toBe(200);
    const recorded = page.getByRole('list', { name: 'Recorded requests' }).locator('li');
    await recorded.first().waitFor();
    expect(await recorded.first().textContent()).toContain('GET /shop/items');
    expect(await recorded.first().textContent()).toContain('Order created: no match');
    await expectAccessible('recording with a request');
    await screenshot(page, 'recording');
    await page.getByRole('button', { name: 'Stop' }).click();
    await page.getByRole('button', { name: 'Start Recording' }).waitFor();
    expect(await recorded.count()).toBe(1); // what was captured stays

    await recorded.first().getByRole('button', { name: 'Make a condition from this request' }).click();
    await page.getByRole('heading', { name: 'New webhook' }).waitFor();
    expect(await page.getByLabel('Condition', { exact: true }).inputValue()).toBe("method(GET) and path('/shop/items')");
    await poll(() => page.locator('#condition-check').textContent()).toContain('The condition parses');
  });

  it('creates an email webhook', async () => {
    // The type tabs work from the keyboard (arrow keys), as tabs do.
    await page.getByRole('tab', { name: 'HTTP' }).focus();
    await page.keyboard.press('ArrowRight');
    await poll(() => page.getByRole('tab', { name: 'Email' }).getAttribute('aria-selected')).toBe('true');
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Email');
    await page.getByLabel('Name', { exact: true }).fill('Item looked at');
    await page.getByLabel('To', { exact: true }).fill('ops@example.com, sales@example.com');
    await page.getByLabel('Subject').fill('Someone looked at {{request.path}}');
    await page.getByLabel('Body template (Mustache)').fill('<p>{{request.method}} {{request.path}}</p>');
    await expectAccessible('email webhook form');
    await page.getByRole('button', { name: 'Save webhook' }).click();
    await page.getByText('Webhook "Item looked at" created').waitFor();
    const id = await webhookId('Item looked at');
    expect((await api(`/_admin/webhooks/${id}`)).json).toMatchObject({
      type: 'email',
      condition: "method(GET) and path('/shop/items')",
      email: { to: ['ops@example.com', 'sales@example.com'], subject: 'Someone looked at {{request.path}}', bodyType: 'html' },
    });
  });

  it('toggles a webhook off, and then nothing fires', async () => {
    await nav('Webhooks').click();
    const toggle = page.getByRole('switch', { name: 'Enabled: Order created' });
    expect(await toggle.isChecked()).toBe(true);
    await expectAccessible('webhook list');
    await screenshot(page, 'webhooks');
    await toggle.click();
    await poll(() => toggle.isChecked()).toBe(false);
    expect(await page.locator('li', { hasText: 'Order created' }).first().locator('.badge.disabled').textContent()).toBe('Disabled');
    const id = await webhookId('Order created');
    expect((await api(`/_admin/webhooks/${id}`)).json.enabled).toBe(false);
    const before = target.received.length;
    const disabledAt = Date.now();
    expect((await call(proxy.url, '/shop/orders', { method: 'POST', body: { _id: 'o3' } })).status).toBe(201);
    // A bounded wait for something that must not happen (a delivery takes milliseconds here).
    await new Promise((r) => setTimeout(r, 2000));
    expect(target.received.length).toBe(before);
    // Not even a skipped entry: a disabled webhook is not evaluated. (Earlier entries are from the recording.)
    expect((await api(`/_admin/webhooks/${id}/logs`)).json.filter((e: { timestamp: { $date: number } }) => e.timestamp.$date >= disabledAt)).toEqual([]);
  });

  it('shows why a webhook was disabled automatically', async () => {
    // What the delivery engine writes when a target keeps failing (SPEC §7.1), written here
    // straight into the stored document since no target in this test fails a hundred times.
    const id = (await webhookId('Order created'))!;
    const key = redisKeys('outrigger', SERVICE).webhooks;
    const doc = JSON.parse((await redis.client.hget(key, id))!);
    const disabledAt = Date.UTC(2026, 10, 23, 18, 5, 0);
    await redis.client.hset(key, id, JSON.stringify({ ...doc, enabled: false, disabledReason: '100 consecutive events failed (last: the target answered 503)', disabledAt: { $date: disabledAt } }));
    await go('#/features');
    await nav('Webhooks').click();
    const warning = page.locator('li', { hasText: 'Order created' }).first().locator('.warning');
    await poll(() => warning.textContent()).toContain('Disabled automatically on');
    expect(await warning.textContent()).toContain('100 consecutive events failed (last: the target answered 503)');
    expect(await warning.locator('time').getAttribute('datetime')).toBe(new Date(disabledAt).toISOString());
    await redis.client.hset(key, id, JSON.stringify(doc));
  });

  it('edits a webhook, keeping what the form does not show (its secret)', async () => {
    const id = (await webhookId('Order created'))!;
    const before = (await api(`/_admin/webhooks/${id}`)).json;
    await go(`#/webhooks/${id}`);
    await page.getByLabel('Timeout (ms)').fill('6000');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.getByText('Saved.').waitFor();
    const after = (await api(`/_admin/webhooks/${id}`)).json;
    expect(after).toMatchObject({ timeout_ms: 6000, secret: before.secret, transform: before.transform, condition: before.condition });
    expect(after.updatedAt.$date).toBeGreaterThan(before.updatedAt.$date);
    await nav('Webhooks').click();
  });

  it("sets, shows and clears a webhook's delivery rate limit and retry schedule; a bad delay is named under its field", async () => {
    const id = (await webhookId('Order created'))!;
    await go(`#/webhooks/${id}`);
    const rate = page.getByLabel('Max deliveries per second (optional)');
    const retries = page.getByLabel('Retry schedule (optional)');
    await rate.fill('5');
    await retries.fill('10s, 1m, soon');
    await page.getByRole('button', { name: 'Save changes' }).click();
    const problem = page.locator('#retrySchedule-error');
    await poll(() => problem.textContent()).toContain('retrySchedule[2] must be a delay');
    expect(await retries.getAttribute('aria-invalid')).toBe('true');
    expect((await api(`/_admin/webhooks/${id}`)).json.retrySchedule).toBeUndefined();
    await expectAccessible('webhook form with a retry schedule problem');

    await retries.fill('10s, 1m, 90');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.getByText('Saved.').waitFor();
    expect((await api(`/_admin/webhooks/${id}`)).json).toMatchObject({ maxPerSecond: 5, retrySchedule: ['10s', '1m', 90] });
    // Shown as stored when the form opens again.
    // Wait for the list before going back. When the router read location.hash (fixed in
    // main.ts), two quick changes reached it as one: the old form stayed, with its "Saved."
    // notice, and a later wait for "Saved." passed before that save had landed. The count
    // below fails if that comes back.
    await go('#/webhooks');
    await page.getByRole('heading', { name: 'Webhooks', level: 1 }).waitFor();
    await go(`#/webhooks/${id}`);
    await poll(() => page.getByLabel('Max deliveries per second (optional)').inputValue()).toBe('5');
    await page.getByLabel('Retry schedule (optional)').waitFor();
    expect(await page.getByText('Saved.').count()).toBe(0);
    expect(await page.getByLabel('Retry schedule (optional)').inputValue()).toBe('10s, 1m, 90');
    await screenshot(page, 'webhook-form-delivery');

    // "none" turns retries off; emptied fields go back to no limit and the service's schedule.
    await page.getByLabel('Retry schedule (optional)').fill('none');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.getByText('Saved.').waitFor();
    expect((await api(`/_admin/webhooks/${id}`)).json.retrySchedule).toEqual([]);
    await page.getByLabel('Max deliveries per second (optional)').fill('');
    await page.getByLabel('Retry schedule (optional)').fill('');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await poll(async () => (await api(`/_admin/webhooks/${id}`)).json.maxPerSecond ?? 'absent').toBe('absent');
    expect((await api(`/_admin/webhooks/${id}`)).json.retrySchedule).toBeUndefined();
    await nav('Webhooks').click();
  });

  it('deletes a webhook only after confirmation', async () => {
    const del = page.getByRole('button', { name: 'Delete Item looked at' });
    await del.click();
    const dialog = page.getByRole('dialog', { name: 'Delete the webhook "Item looked at"?' });
    await dialog.waitFor();
    await expectAccessible('delete confirmation');
    // Focus starts on Cancel; Escape cancels and gives focus back to the button that asked.
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Cancel');
    await page.keyboard.press('Escape');
    await poll(() => dialog.count()).toBe(0);
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Delete Item looked at');
    expect(await webhookId('Item looked at')).toBeDefined();
    await del.click();
    await dialog.getByRole('button', { name: 'Delete webhook' }).click();
    await poll(() => page.getByRole('button', { name: 'Delete Item looked at' }).count()).toBe(0);
    expect(await webhookId('Item looked at')).toBeUndefined();
    expect(await webhookId('Order created')).toBeDefined();
  });

  let keptKey = '';
  let keyCountBefore = 0;

  it('lists keys with holder, client and last use, filters them, and revokes one (which then gets 401)', async () => {
    const laptop = await call(proxy.url, '/keys', { method: 'POST', auth: ALICE, body: { name: 'alice laptop', roles: ['reader'] } });
    const ci = await call(proxy.url, '/keys', { method: 'POST', auth: ALICE, body: { name: 'alice ci', roles: ['reader'] } });
    expect([laptop.status, ci.status]).toEqual([201, 201]);
    // An agent's key (agent sign-in stores exactly this record: via oauth, with the client's name).
    const issuer = new ApiKeyIssuer(new ApiKeyStore(redis.client, redisKeys('outrigger', SERVICE)), {} as ChangeBus, { prefix: 'rig', serviceId: SERVICE }, createLogger({ level: 'silent' }));
    const agent = await issuer.issue({ owner: 'alice', name: 'Claude Desktop', roles: ['reader'], lifetimeDays: 30, maxKeys: 10, via: 'oauth', client: 'claude-desktop' });
    keptKey = agent.key;
    expect((await call(proxy.url, '/shop/items', { auth: `Bearer ${laptop.json.key}` })).status).toBe(200);
    expect((await call(proxy.url, '/shop/items', { auth: `Bearer ${agent.key}` })).status).toBe(200);
    // lastUsedAt is written in the background after the first use.
    await waitFor(
      () => api('/_admin/keys'),
      (r) => r.json.filter((k: { lastUsedAt?: unknown }) => k.lastUsedAt).length === 2,
      10_000,
      'last use recorded',
    );

    await nav('API keys').click();
    const rows = page.locator('tbody tr');
    await poll(() => rows.count()).toBe(3);
    const agentRow = rows.filter({ hasText: 'Claude Desktop' });
    const agentText = (await agentRow.textContent())!;
    expect(agentText).toContain('alice');
    expect(agentText).toContain('claude-desktop');
    expect(agentText).toContain('oauth');
    expect(await rows.filter({ hasText: 'alice laptop' }).textContent()).not.toContain('never'); // last use shown
    expect(await rows.filter({ hasText: 'alice laptop' }).textContent()).toContain(`${laptop.json.key.slice(0, 12)}…`); // its start (SPEC §15)
    expect(await rows.filter({ hasText: 'alice ci' }).textContent()).toContain('never');
    await expectAccessible('keys page');
    await screenshot(page, 'keys');

    await page.getByLabel('Client', { exact: true }).fill('claude-desktop');
    await page.getByRole('button', { name: 'Filter' }).click();
    await poll(() => rows.count()).toBe(1);
    await page.getByRole('button', { name: 'Show all' }).click();
    await poll(() => rows.count()).toBe(3);
    await page.getByLabel('Holder', { exact: true }).fill('bob');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.getByText('No key matches this filter.').waitFor();
    await page.getByRole('button', { name: 'Show all' }).click();
    await poll(() => rows.count()).toBe(3);

    await page.getByRole('button', { name: 'Revoke alice laptop of alice' }).click();
    const dialog = page.getByRole('dialog', { name: /Revoke the key "alice laptop"/ });
    await dialog.getByRole('button', { name: 'Revoke' }).click();
    await page.getByText('Revoked "alice laptop" of alice.').waitFor();
    await poll(() => rows.count()).toBe(2);
    const revoked = await call(proxy.url, '/shop/items', { auth: `Bearer ${laptop.json.key}` });
    expect(revoked.status).toBe(401);
    expect(revoked.headers['www-authenticate']).toMatch(/invalid_token/);
    keyCountBefore = (await api('/_admin/keys')).json.length;
  });

  it('drives each feature through disable, enable, uninstall (confirmed) and install; the keys are all there afterwards', async () => {
    await nav('Features').click();
    for (const title of ['API keys', 'Webhooks']) {
      const card = page.getByRole('listitem', { name: title });
      const badge = card.locator('.badge');
      await poll(() => badge.textContent()).toBe('Enabled');
      await card.getByRole('button', { name: `Disable ${title}` }).click();
      await poll(() => badge.textContent()).toBe('Disabled');
      if (title === 'API keys') {
        await poll(async () => (await call(proxy.url, '/shop/items', { auth: `Bearer ${keptKey}` })).status).toBe(401);
        await expectAccessible('features page');
        await screenshot(page, 'features');
      }
      await card.getByRole('button', { name: `Enable ${title}` }).click();
      await poll(() => badge.textContent()).toBe('Enabled');
      await card.getByRole('button', { name: `Uninstall ${title}` }).click();
      const dialog = page.getByRole('dialog', { name: `Uninstall ${title}?` });
      expect(await dialog.textContent()).toContain('Nothing is deleted');
      await dialog.getByRole('button', { name: 'Uninstall' }).click();
      await poll(() => badge.textContent()).toBe('Not installed');
      expect(await card.getByRole('button', { name: `Enable ${title}` }).count()).toBe(0);
      await card.getByRole('button', { name: `Install ${title}` }).click();
      await poll(() => badge.textContent()).toBe('Enabled');
    }
    expect((await api('/_admin/features')).json).toEqual([
      { name: 'api-keys', state: 'enabled' },
      { name: 'webhooks', state: 'enabled' },
    ]);
    const keys = (await api('/_admin/keys')).json;
    expect(keys).toHaveLength(keyCountBefore);
    await poll(async () => (await call(proxy.url, '/shop/items', { auth: `Bearer ${keptKey}` })).status).toBe(200);
  });

  it('shows permissions and GraphQL apps read-only', async () => {
    await nav('Permissions').click();
    const cards = page.getByRole('list', { name: 'Permissions' }).locator('li');
    await poll(() => cards.count()).toBe(2);
    expect(await cards.first().textContent()).toContain('users-issue-keys');
    await cards.first().locator('summary').click();
    expect(await cards.first().locator('pre').textContent()).toContain('"apiKeys"');
    expect(await page.getByRole('button', { name: /save|delete|edit/i }).count()).toBe(0);
    await expectAccessible('permissions page');
    await screenshot(page, 'permissions');

    await nav('GraphQL apps').click();
    await page.getByText('No GraphQL apps yet.').waitFor();
    await expectAccessible('GraphQL apps page');

    // An app with MCP tools (SPEC §11): the page lists them, a mutation marked hidden without mcp.mutations.
    const app = {
      descriptor: { uri: 'tools', description: 'items for agents' },
      schema: 'type Item { _id: String } type Query { items: [Item] } type Mutation { addItem(id: String!): ID }',
      mappings: { Query: { items: { db: 'shop', collection: 'items' } }, Mutation: { addItem: { db: 'shop', collection: 'items', insert: { _id: { $arg: 'id' } } } } },
      mcp: {
        tools: [
          { name: 'list_items', description: 'Every item', query: '{ items { _id } }' },
          { name: 'add_item', description: 'Adds an item', query: 'mutation Add($id: String!) { addItem(id: $id) }' },
        ],
      },
    };
    expect((await api('/gql-apps/tools', { method: 'PUT', body: app })).status).toBe(201);
    await go('#/permissions');
    await nav('GraphQL apps').click();
    const tools = page.getByRole('list', { name: 'MCP tools of tools' }).locator('li');
    await poll(() => tools.count()).toBe(2);
    expect(await tools.nth(0).textContent()).toContain('list_items');
    expect(await tools.nth(1).textContent()).toMatch(/add_item\s*mutation\s*hidden: mcp\.mutations is off/);
    await expectAccessible('GraphQL apps page with tools');
    await api('/gql-apps/tools', { method: 'DELETE' });
  });

  it('is readable on a phone (390×844), and every request stayed on its own origin', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    await go('#/webhooks');
    await page.getByRole('heading', { name: 'Webhooks', level: 1 }).waitFor();
    // Nothing wider than the screen except scrollable tables.
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth);
    expect(overflow).toBeLessThanOrEqual(390);
    await expectAccessible('webhook list on a phone');
    await screenshot(page, 'webhooks-phone');
    await go(`#/webhooks/${await webhookId('Order created')}`);
    await page.getByLabel('Condition', { exact: true }).waitFor();
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    await screenshot(page, 'webhook-form-phone');
    await page.setViewportSize({ width: 1280, height: 800 });

    // Keyboard: Tab reaches the main navigation, and focus is visible (an outline is drawn).
    await go('#/features');
    await page.getByRole('heading', { name: 'Features', level: 1 }).waitFor();
    // The page moves focus to its heading after it renders; a Tab pressed before that lands
    // somewhere the heading then takes focus from (this failed one run in a few).
    await poll(() => page.evaluate(() => document.activeElement?.tagName)).toBe('H1');
    await page.keyboard.press('Tab');
    const outline = await page.evaluate(() => {
      const el = document.activeElement as HTMLElement;
      return { tag: el.tagName, text: el.textContent, outline: getComputedStyle(el).outlineStyle };
    });
    expect(outline.tag, JSON.stringify(outline)).not.toBe('H1');
    expect(outline.outline, JSON.stringify(outline)).not.toBe('none');

    expect(foreignRequests).toEqual([]);
    expect(pageErrors).toEqual([]);
  });

  it('signing out forgets the credentials', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
    expect(await page.getByRole('navigation', { name: 'Main' }).count()).toBe(0);
    expect(await page.evaluate(() => [localStorage.length, sessionStorage.length, document.cookie])).toEqual([0, 0, '']);
  });
});
