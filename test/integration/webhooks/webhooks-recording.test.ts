import { beforeAll, describe, expect, it } from 'vitest';
import { startTestOutrigger } from '../../support/outrigger.js';
import { call, untilKnown, waitFor, webhooksOf } from './webhooks-helpers.js';
import { type Running, useStack } from '../../support/fixtures.js';

describe('webhooks: recording', () => {
  const stack = useStack({
    service: 'wh-recording',
    backend: { data: { shop: { orders: [], items: [] } } },
    target: true,
    config: { acl: { mode: 'own-routes', adminRoles: ['$unauthenticated'] }, webhooks: { allowPrivateTargets: ['127.0.0.0/8'], recordingSeconds: 3 } },
    outrigger: { worker: true },
  });
  /** Waits until the webhook 'orders' has delivered the requests whose body field `field` held each of `values`. */
  const deliveredWith = (field: string, values: number[]) =>
    waitFor(
      () => stack.target.on('/rec').map((r) => JSON.parse(r.body).request.body?.[field]),
      (seen) => values.every((v) => seen.includes(v)),
      10_000,
      `the deliveries of ${field} ${values.join(', ')}`,
    );
  /** A second replica (no worker) on the same config. */
  let r2: Running;
  beforeAll(async () => {
    r2 = await stack.start();
  });

  it('captures every request on every replica for its window, with each webhook evaluation, then stops by itself', async () => {
    const on = await call(stack.proxy.url, '/_admin/webhooks', {
      method: 'POST',
      body: { _id: 'orders', name: 'orders', type: 'http', condition: "path-prefix('/shop/orders')", url: `${stack.target.url}/rec` },
    });
    expect(on.status).toBe(201);
    const off = await call(stack.proxy.url, '/_admin/webhooks', {
      method: 'POST',
      body: { _id: 'paused', name: 'paused', type: 'http', enabled: false, condition: 'method(GET)', url: `${stack.target.url}/paused` },
    });
    expect(off.status).toBe(201);
    await untilKnown([stack.proxy, r2], 'paused');

    const started = await call(stack.proxy.url, '/_admin/webhooks/recording', { method: 'POST' });
    expect(started.status).toBe(201);
    expect(started.json).toMatchObject({ active: true, windowSeconds: 3, total: 0 });
    expect(started.json.endsAt.$date - started.json.startedAt.$date).toBe(3000);
    // The other replica learns of it through the change bus.
    await waitFor(
      () => webhooksOf(r2).internals.recording.isActive(),
      (a) => a,
      2000,
      'replica 2 to record',
    );

    const sent: Array<[string, string]> = [];
    for (let i = 0; i < 12; i++) {
      const replica = i % 2 === 0 ? stack.proxy : r2;
      const path = i % 3 === 0 ? `/shop/items?i=${i}` : `/shop/orders?i=${i}`;
      const method = i % 4 === 0 ? 'GET' : 'POST';
      const res = await call(replica.url, path, method === 'POST' ? { method, body: { i, customer: { name: `c${i}` } }, headers: { 'x-seq': String(i) } } : { headers: { 'x-seq': String(i) } });
      expect(res.status).toBeLessThan(500);
      sent.push([method, path]);
    }
    await call(stack.proxy.url, '/_admin/webhooks'); // admin routes are never recorded
    await call(stack.proxy.url, '/_health/live');
    const view = await waitFor(
      async () => (await call(stack.proxy.url, '/_admin/webhooks/recording?pagesize=1000')).json,
      (v) => v.total === 12,
      5000,
      'twelve recorded requests',
    );
    expect(view.requests).toHaveLength(12);
    const bySeq = new Map(view.requests.map((r: any) => [Number(r.headers['x-seq']), r]));
    sent.forEach(([method, path], i) => {
      const recorded: any = bySeq.get(i);
      expect(recorded, `request ${i}`).toBeDefined();
      expect(recorded).toMatchObject({ method, path: path.split('?')[0], query: { i: String(i) }, completed: true });
      expect(recorded.response.statusCode).toBeGreaterThanOrEqual(200);
      if (method === 'POST') expect(recorded.body).toEqual({ i, customer: { name: `c${i}` } });
      expect(recorded.webhooks).toEqual([
        { id: 'orders', name: 'orders', enabled: true, matched: path.startsWith('/shop/orders') },
        { id: 'paused', name: 'paused', enabled: false, matched: method === 'GET' },
      ]);
    });
    // While recording, every non-matching evaluation is logged as skipped (no 10 s gate).
    const skipped = await waitFor(
      async () => (await call(stack.proxy.url, '/_admin/webhooks/orders/logs?status=skipped')).json,
      (l) => l.length === sent.filter(([, p]) => !p.startsWith('/shop/orders')).length,
      5000,
      'a skipped entry per non-matching request',
    );
    expect(skipped.every((e: any) => e.summary.path === '/shop/items')).toBe(true);
    const page = await call(stack.proxy.url, '/_admin/webhooks/recording?pagesize=5&page=3');
    expect(page.json.requests).toHaveLength(2);
    expect(page.headers['x-total-count']).toBe('12');

    // The window closes by itself; what it captured stays readable.
    await waitFor(
      async () => (await call(stack.proxy.url, '/_admin/webhooks/recording?pagesize=1')).json.active,
      (a) => a === false,
      5000,
      'the window to end',
    );
    await call(stack.proxy.url, '/shop/orders?late=1', { method: 'POST', body: { late: 1 } });
    await call(r2.url, '/shop/items?late=1', { method: 'POST', body: { late: true } });
    await call(r2.url, '/shop/orders?late=2', { method: 'POST', body: { late: 2 } });
    // A recorded request leaves a replica in one write with the events queued with it, in order:
    // once each replica's last late order is delivered, anything recorded late would show (issue 54).
    await deliveredWith('late', [1, 2]);
    const after = await call(stack.proxy.url, '/_admin/webhooks/recording?pagesize=1000');
    expect(after.json).toMatchObject({ active: false, total: 12 });
  });

  it('DELETE stops a recording at once; a new one starts empty', async () => {
    await call(stack.proxy.url, '/_admin/webhooks/recording', { method: 'POST' });
    await waitFor(
      () => webhooksOf(r2).internals.recording.isActive(),
      (a) => a,
      2000,
      'replica 2 to record',
    );
    await call(r2.url, '/shop/orders?n=1', { method: 'POST', body: { n: 1 } });
    await waitFor(
      async () => (await call(stack.proxy.url, '/_admin/webhooks/recording')).json.total,
      (t) => t === 1,
      3000,
      'one request',
    );
    expect((await call(stack.proxy.url, '/_admin/webhooks/recording', { method: 'DELETE' })).status).toBe(204);
    await waitFor(
      () => webhooksOf(r2).internals.recording.isActive(),
      (a) => !a,
      2000,
      'replica 2 to stop',
    );
    await call(r2.url, '/shop/orders?n=2', { method: 'POST', body: { n: 2 } });
    await call(stack.proxy.url, '/shop/orders?n=3', { method: 'POST', body: { n: 3 } });
    await deliveredWith('n', [2, 3]);
    const view = (await call(stack.proxy.url, '/_admin/webhooks/recording')).json;
    expect(view).toMatchObject({ active: false, total: 1 });
    expect(view.requests[0].query).toEqual({ n: '1' });
  });

  it('records for 60 seconds by default', async () => {
    const other = await startTestOutrigger({ ...stack.raw, service: { id: 'wh-recording-default' }, webhooks: { allowPrivateTargets: ['127.0.0.0/8'] } });
    try {
      const started = await call(other.url, '/_admin/webhooks/recording', { method: 'POST' });
      expect(started.json.windowSeconds).toBe(60);
      expect(started.json.endsAt.$date - started.json.startedAt.$date).toBe(60_000);
      expect(await stack.redis.client.pttl(other.context.keys.recordingState)).toBeGreaterThan(60_000);
      await call(other.url, '/_admin/webhooks/recording', { method: 'DELETE' });
    } finally {
      await other.stop();
    }
  });
});
