import { describe, expect, it } from 'vitest';
import { call, untilKnown, untilSettled, waitFor } from './webhooks-helpers.js';
import { useStack } from '../../support/fixtures.js';

/**
 * SPEC §7.1, failing targets: automatic disable after consecutive failed events (with reason,
 * warn log, metric and alert e-mail), re-enabling restarts the count, `maxPerSecond` throttles
 * without losing anything, and a webhook's own `retrySchedule` replaces the configured one.
 */
describe('webhooks: failing targets', () => {
  const stack = useStack({
    service: 'wh-failing',
    backend: { data: { shop: Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`c${i + 1}`, []])) } },
    target: true,
    smtp: true,
    config: ({ smtp }) => ({
      acl: { mode: 'own-routes', adminRoles: ['$unauthenticated'] },
      webhooks: {
        allowPrivateTargets: ['127.0.0.0/8'],
        retrySchedule: ['200ms'],
        disableAfterFailures: 3,
        alertEmail: 'ops@example.com',
        email: { smtp: { host: '127.0.0.1', port: smtp.port }, from: 'outrigger@example.com' },
      },
    }),
    outrigger: { worker: true },
  });
  let counter = 0;
  const path = () => `/shop/c${++counter}`;

  const hook = async (doc: Record<string, unknown>) => {
    const res = await call(stack.proxy.url, '/_admin/webhooks', { method: 'POST', body: doc });
    expect(res.status, JSON.stringify(res.json)).toBe(201);
    await untilKnown([stack.proxy], res.json._id);
    return res.json;
  };
  const logsOf = async (id: string) => (await call(stack.proxy.url, `/_admin/webhooks/${id}/logs?pagesize=100`)).json as Array<Record<string, any>>;
  const get = async (id: string) => (await call(stack.proxy.url, `/_admin/webhooks/${id}`)).json;
  const send = async (p: string, n: number) => {
    for (let i = 0; i < n; i++) expect((await call(stack.proxy.url, p, { method: 'POST', body: { i } })).status).toBe(201);
  };

  it('disables a webhook after disableAfterFailures consecutive failed events, says why, and re-enabling restarts the count', async () => {
    const p = path();
    const h = await hook({ name: 'broken', type: 'http', condition: `path('${p}')`, url: `${stack.target.url}/broken`, retrySchedule: [] });
    let status = 404; // final at once: not retried
    stack.target.answer = (req) => (req.url === '/broken' ? { status, body: 'no' } : { status: 200, body: 'ok' });

    // A success between failures breaks the run: 2 failed, 1 success, 2 failed stays enabled.
    await send(p, 2);
    await waitFor(
      () => logsOf(h._id),
      (l) => l.filter((e) => e.status === 'failed').length === 2,
      10_000,
      'two failures',
    );
    status = 200;
    await send(p, 1);
    await waitFor(
      () => logsOf(h._id),
      (l) => l.some((e) => e.status === 'success'),
      10_000,
      'a success',
    );
    status = 404;
    await send(p, 2);
    await waitFor(
      () => logsOf(h._id),
      (l) => l.filter((e) => e.status === 'failed').length === 4,
      10_000,
      'four failures',
    );
    expect((await get(h._id)).enabled).toBe(true);

    // The third consecutive failure disables it.
    const disabledBefore = stack.proxy.context.metrics.webhooksAutoDisabled.get({ type: 'http' });
    await send(p, 1);
    const doc = await waitFor(
      () => get(h._id),
      (d) => d.enabled === false,
      10_000,
      'the automatic disable',
    );
    expect(doc.disabledReason).toMatch(/3 consecutive events ended failed/);
    expect(typeof doc.disabledAt.$date).toBe('number');
    // The worker counts the disable once its write is acknowledged, a moment after readers may see the document.
    await waitFor(
      () => stack.proxy.context.metrics.webhooksAutoDisabled.get({ type: 'http' }),
      (n) => n === disabledBefore + 1,
      5000,
      'the auto-disable metric',
    );
    const mail = await waitFor(
      () => stack.smtp.mails.filter((m) => m.to.includes('ops@example.com')),
      (m) => m.length === 1,
      10_000,
      'the alert e-mail',
    );
    expect(mail[0]!.raw).toContain('broken');
    expect(mail[0]!.raw).toContain(h._id);

    // Disabled: nothing more is sent.
    const sentSoFar = stack.target.on('/broken').length;
    await send(p, 1);
    await untilSettled(stack.redis.client, [stack.proxy]);
    expect(stack.target.on('/broken')).toHaveLength(sentSoFar);

    // Enabled again: the reason goes, the count starts from zero (two failures do not disable it again).
    const enabled = await call(stack.proxy.url, `/_admin/webhooks/${h._id}`, { method: 'PATCH', body: { enabled: true } });
    expect(enabled.status, JSON.stringify(enabled.json)).toBe(200);
    const again = await waitFor(
      () => get(h._id),
      (d) => d.enabled === true,
      5000,
      'the re-enable',
    );
    expect(again.disabledReason).toBeUndefined();
    await untilKnown([stack.proxy], h._id);
    await waitFor(
      async () => (await call(stack.proxy.url, '/_admin/webhooks')).json.find((d: any) => d._id === h._id)?.enabled,
      (e) => e === true,
      5000,
      'the worker to see it enabled',
    );
    const failedBefore = (await logsOf(h._id)).filter((e) => e.status === 'failed').length;
    await send(p, 2);
    await waitFor(
      () => logsOf(h._id),
      (l) => l.filter((e) => e.status === 'failed').length === failedBefore + 2,
      10_000,
      'two more failures',
    );
    await untilSettled(stack.redis.client, [stack.proxy]);
    expect((await get(h._id)).enabled).toBe(true);
    // ...and a third does: it was still delivered (and failed), so the two had not disabled it.
    await send(p, 1);
    await waitFor(
      () => get(h._id),
      (d) => d.enabled === false,
      10_000,
      'the second automatic disable',
    );
    expect((await logsOf(h._id)).filter((e) => e.status === 'failed')).toHaveLength(failedBefore + 3);
  }, 60_000);

  it('throttles a webhook to maxPerSecond: the excess waits in the retry set and every event is delivered once', async () => {
    const p = path();
    const h = await hook({ name: 'slow target', type: 'http', condition: `path('${p}')`, url: `${stack.target.url}/throttled`, maxPerSecond: 4 });
    stack.target.answer = () => ({ status: 200, body: 'ok' });
    const events = 16;
    await send(p, events);
    const got = await waitFor(
      () => stack.target.on('/throttled'),
      (l) => l.length >= events,
      30_000,
      'every throttled delivery',
    );
    // Nothing lost, nothing twice.
    const orders = got.map((r) => JSON.parse(r.body).request.body.i as number).sort((a, b) => a - b);
    expect(orders).toEqual(Array.from({ length: events }, (_, i) => i));
    // At 4 per second, 16 deliveries cannot fit in less than three whole seconds (a lower bound: load only stretches it).
    expect(got.at(-1)!.at - got[0]!.at).toBeGreaterThanOrEqual(2500);
    // No epoch second saw more than 4 deliveries start (the receiver's clock is the worker's).
    const perSecond = new Map<number, number>();
    for (const r of got) {
      const second = Math.floor((performance.timeOrigin + r.at) / 1000);
      perSecond.set(second, (perSecond.get(second) ?? 0) + 1);
    }
    expect(Math.max(...perSecond.values())).toBeLessThanOrEqual(5); // 4, plus one that crossed a second boundary in flight
    const logs = await waitFor(
      () => logsOf(h._id),
      (l) => l.filter((e) => e.status === 'success').length === events,
      10_000,
      'the logs',
    );
    // Waiting for the rate uses no attempt.
    expect(logs.every((e) => e.attempt === 1)).toBe(true);
  }, 60_000);

  it("uses the webhook's own retrySchedule instead of webhooks.retrySchedule, and refuses a bad one at write", async () => {
    const bad = await call(stack.proxy.url, '/_admin/webhooks', {
      method: 'POST',
      body: { name: 'bad', type: 'http', condition: "path('/x')", url: `${stack.target.url}/x`, retrySchedule: ['5 parsecs', 0.001], maxPerSecond: 0 },
    });
    expect(bad.status).toBe(400);
    const text = JSON.stringify(bad.json);
    expect(text).toContain('retrySchedule[0]');
    expect(text).toContain('retrySchedule[1]');
    expect(text).toContain('maxPerSecond');

    const p = path();
    // The configured schedule allows one retry; this webhook's own allows three.
    const h = await hook({ name: 'own schedule', type: 'http', condition: `path('${p}')`, url: `${stack.target.url}/flaky`, retrySchedule: ['100ms', '100ms', '100ms'] });
    stack.target.answer = (req) => (req.url === '/flaky' ? { status: 503, body: 'busy' } : { status: 200, body: 'ok' });
    await send(p, 1);
    const logs = await waitFor(
      () => logsOf(h._id),
      (l) => l.length === 4 && l.some((e) => e.attempt === 4),
      15_000,
      'four attempts',
    );
    expect(logs.map((e) => e.attempt).sort()).toEqual([1, 2, 3, 4]);
    expect(logs.find((e) => e.attempt === 4)!.nextAttemptAt).toBeUndefined();
    await untilSettled(stack.redis.client, [stack.proxy]);
    expect(stack.target.on('/flaky')).toHaveLength(4);
  }, 30_000);
});
