/**
 * CORS in a real browser (headless Chromium, SPEC §15): a page served from a second loopback
 * origin calls a REST path and a GraphQL app through Outrigger with an API key. The Authorization
 * header makes Chromium send a preflight first; the page reads the answers and an exposed header,
 * and cannot read one that is not exposed. With the page's origin not listed, Chromium refuses.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser } from '../../support/clients/browser.js';
import { as, useStack } from '../../support/fixtures.js';
import { call } from '../../support/clients/http-client.js';
import { startHttpServer, type TestServer } from '../../support/peers/http-servers.js';
import { shopApp, shopData } from '../graphql/graphql-helpers.js';

describe('CORS in Chromium', () => {
  const stack = useStack(
    {
      service: 'cors-browser',
      jwtIdentity: true,
      backend: { data: shopData() },
      users: { root: ['root'], alice: ['user'] },
      config: { acl: { mode: 'enforce' }, limits: { policies: [{ name: 'per-key', by: 'key', limit: 1000, window: '1h' }] } },
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
  let site: TestServer;
  let page: Page;
  let key: string;
  beforeAll(async () => {
    // The page's own origin: another port on loopback, so every call to Outrigger is cross-origin.
    site = await startHttpServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end('<!doctype html><title>app</title><p>app');
    });
    const issued = await call(stack.proxy.url, '/keys', { method: 'POST', auth: as('alice'), body: { name: 'browser app', roles: ['user'] } });
    expect(issued.status).toBe(201);
    key = issued.json.key;
    browser = await launchBrowser();
    page = await (await browser.newContext()).newPage();
    await page.goto(site.url);
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await site?.close();
  });

  /** Runs in the page: a REST GET and a GraphQL POST with the key, as a browser app would. */
  const callFromPage = (base: string) =>
    page.evaluate(
      async ({ base, key }) => {
        const attempt = async (run: () => Promise<Response>) => {
          try {
            const res = await run();
            return { status: res.status, body: await res.json(), rateLimit: res.headers.get('RateLimit'), requestId: res.headers.get('X-Request-Id'), vary: res.headers.get('Vary') };
          } catch (error) {
            return { error: String(error) };
          }
        };
        const authorization = `Bearer ${key}`;
        return {
          origin: location.origin,
          rest: await attempt(() => fetch(`${base}/shop/orders?filter=${encodeURIComponent('{"number":7}')}`, { headers: { authorization } })),
          graphql: await attempt(() =>
            fetch(`${base}/graphql/shop`, { method: 'POST', headers: { authorization, 'content-type': 'application/json' }, body: JSON.stringify({ query: '{ order(number: 7) { number total } }' }) }),
          ),
          refused: await attempt(() => fetch(`${base}/shop/orders`, { headers: { authorization: 'Bearer not-a-key' } })),
          graphqlRefused: await attempt(() =>
            fetch(`${base}/graphql/shop`, { method: 'POST', headers: { authorization: 'Bearer not-a-key', 'content-type': 'application/json' }, body: JSON.stringify({ query: '{ __typename }' }) }),
          ),
        };
      },
      { base, key },
    );

  it('a page on another origin reads a REST answer, a GraphQL answer and the exposed headers', async () => {
    stack.backend.clearRequests();
    const seen = await callFromPage(stack.proxy.url);
    expect(seen.origin).not.toBe(new URL(stack.proxy.url).origin);
    expect(seen.rest).toMatchObject({ status: 200, rateLimit: expect.stringMatching(/^"per-key";r=\d+;t=\d+$/), requestId: expect.any(String), vary: null });
    expect((seen.rest as { body: Array<{ number: number }> }).body.map((o) => o.number)).toEqual([7]);
    expect(seen.graphql).toMatchObject({ status: 200, body: { data: { order: { number: 7, total: 70 } } }, rateLimit: expect.any(String) });
    // A refusal is readable too: the page learns why.
    expect(seen.refused).toMatchObject({ status: 401 });
    expect(seen.graphqlRefused).toMatchObject({ status: 401, body: { errors: [expect.objectContaining({ message: expect.any(String) })] } });
    // Preflights were answered by Outrigger: the backend saw the reads only.
    expect(stack.backend.requests.map((r) => r.method)).not.toContain('OPTIONS');
  });

  it('with the page not among cors.allowOrigins, Chromium refuses the calls', async () => {
    const listed = await stack.start({ cors: { allowOrigins: ['https://app.example.com'] } });
    const seen = await callFromPage(listed.url);
    expect(seen.rest).toEqual({ error: expect.stringContaining('Failed to fetch') });
    expect(seen.graphql).toEqual({ error: expect.stringContaining('Failed to fetch') });
  });
});
