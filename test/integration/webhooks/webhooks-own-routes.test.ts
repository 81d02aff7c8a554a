/**
 * SPEC §15 "Webhook logs" with §7.1 and §7.3, through a real proxy, worker and Redis: a webhook may
 * watch Outrigger's own routes (`/keys` here) and is delivered like any other, but an own-route
 * request leaves no `skipped` entry (the console's own calls flooded the log) and does not take
 * the 10 s skipped-entry turn from a proxied request, which keeps its `skipped` entry. The log
 * API's `status` takes several statuses (the console's default view: success and failed).
 */
import { describe, expect, it } from 'vitest';
import { call, untilKnown, untilSettled, waitFor } from './webhooks-helpers.js';
import { ROOT, useStack } from '../../support/fixtures.js';

describe('webhook logs: own routes evaluated, without skipped entries', () => {
  const stack = useStack({
    service: 'wh-own-routes',
    backend: { data: { shop: { orders: [] } } },
    target: true,
    users: { root: ['root'] },
    config: { acl: { mode: 'own-routes' }, webhooks: { allowPrivateTargets: ['127.0.0.0/8'] } },
    outrigger: { worker: true },
  });

  async function createWebhook(doc: Record<string, unknown>) {
    const res = await call(stack.proxy.url, '/_admin/webhooks', { method: 'POST', auth: ROOT, body: doc });
    expect(res.status, JSON.stringify(res.json)).toBe(201);
    await untilKnown([stack.proxy], res.json._id);
    return res.json;
  }
  const logs = async (id: string, query = '') => call(stack.proxy.url, `/_admin/webhooks/${id}/logs${query}`, { auth: ROOT });

  it('delivers a webhook watching /keys; a webhook that does not match an own route gets no skipped entry, a proxied request still does', async () => {
    const keys = await createWebhook({ name: 'key listings', type: 'http', condition: "method(GET) and path-prefix('/keys')", url: `${stack.target.url}/keys-hook` });
    const other = await createWebhook({ name: 'elsewhere', type: 'http', condition: "path('/nowhere')", url: `${stack.target.url}/never` });

    // Own routes: /keys (watched by one webhook) and the console's admin calls.
    expect((await call(stack.proxy.url, '/keys', { auth: ROOT })).status).toBe(200);
    for (let i = 0; i < 3; i++) await call(stack.proxy.url, '/keys', { auth: ROOT });
    await waitFor(
      () => stack.target.on('/keys-hook'),
      (r) => r.length === 4,
      10_000,
      'the four deliveries of GET /keys',
    );
    await untilSettled(stack.redis.client, [stack.proxy]);
    expect((await logs(other._id)).json).toEqual([]);
    const delivered = (await logs(keys._id)).json;
    expect(delivered).toHaveLength(4);
    expect(delivered.every((e: any) => e.status === 'success' && e.summary.path === '/keys')).toBe(true);

    // A proxied request matching neither: each webhook gets its skipped entry (no own route took the turn).
    expect((await call(stack.proxy.url, '/shop/orders', { method: 'POST', body: { n: 1 } })).status).toBe(201);
    const skipped = await waitFor(
      async () => (await logs(other._id)).json,
      (l) => l.length === 1,
      10_000,
      'the skipped entry of the proxied request',
    );
    expect(skipped[0]).toMatchObject({ status: 'skipped', summary: { method: 'POST', path: '/shop/orders' } });
    await waitFor(
      async () => (await logs(keys._id, '?status=skipped')).json,
      (l) => l.length === 1,
      10_000,
      'the watching webhook skipped the proxied request too',
    );
    expect(stack.target.on('/never')).toHaveLength(0);

    // The console's default view: success and failed, merged newest first; skipped one filter away.
    const view = await logs(keys._id, '?status=success,failed&pagesize=3');
    expect(view.status).toBe(200);
    expect(view.headers['x-total-count']).toBe('4');
    expect(view.json.map((e: any) => e.status)).toEqual(['success', 'success', 'success']);
    const times = view.json.map((e: any) => e.timestamp.$date);
    expect([...times].sort((a, b) => b - a)).toEqual(times);
    const second = await logs(keys._id, '?status=success,failed&pagesize=3&page=2');
    expect(second.json).toHaveLength(1);
    expect(new Set([...view.json, ...second.json].map((e: any) => e._id)).size).toBe(4);
    expect((await logs(keys._id)).json).toHaveLength(5);
  });

  it('refuses a status list with an unknown status, and a merged page deeper than 10,000 entries, with a 400 naming it', async () => {
    const hook = await createWebhook({ name: 'bounds', type: 'http', condition: "path('/x')", url: `${stack.target.url}/x` });
    const bad = await logs(hook._id, '?status=success,delivered');
    expect(bad.status).toBe(400);
    expect(bad.json.message).toMatch(/status must be one of success, failed, skipped, or several of them comma-separated \(got "success,delivered"\)/);
    const deep = await logs(hook._id, '?status=success,failed&page=11&pagesize=1000');
    expect(deep.status).toBe(400);
    expect(deep.json.message).toMatch(/page × pagesize may be at most 10000 when status names more than one status/);
    expect((await logs(hook._id, '?status=failed&page=11&pagesize=1000')).status).toBe(200);
  });
});
