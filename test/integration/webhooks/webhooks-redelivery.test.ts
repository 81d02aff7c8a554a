import { describe, expect, it } from 'vitest';
import { call, untilKnown, waitFor } from './webhooks-helpers.js';
import { ROOT, useStack } from '../../support/fixtures.js';

/** Resend one log entry and recover failed events (SPEC §7.1), through a real worker and Redis. */
describe('webhooks: resend and recover', () => {
  /** What the target answers, per path. */
  const answers = new Map<string, number>();
  const stack = useStack({
    service: 'wh-redelivery',
    backend: { data: { shop: { a: [], b: [], c: [] } } },
    target: (req) => ({ status: answers.get(req.url) ?? 200, body: `answered ${answers.get(req.url) ?? 200}` }),
    users: { root: ['root'] },
    // A retryable failure waits an hour: long enough to see a pending retry being replaced.
    config: { acl: { mode: 'own-routes' }, webhooks: { allowPrivateTargets: ['127.0.0.0/8'], retrySchedule: ['1h'] } },
    outrigger: { worker: true },
  });

  const logsOf = async (id: string, query = '') => (await call(stack.proxy.url, `/_admin/webhooks/${id}/logs${query}`, { auth: ROOT })).json as any[];
  const retryJobs = async () => (await stack.proxy.context.redis.zrange(stack.proxy.context.keys.retrySchedule, 0, -1)).map((m) => JSON.parse(m));

  async function createWebhook(id: string, path: string) {
    const res = await call(stack.proxy.url, '/_admin/webhooks', {
      method: 'POST',
      auth: ROOT,
      body: { _id: id, name: id, type: 'http', condition: `method(POST) and path('/shop/${id}')`, url: `${stack.target.url}${path}` },
    });
    expect(res.status, res.text).toBe(201);
    await untilKnown([stack.proxy], id);
  }

  it('resends one entry now, with the same webhook-id, logged as the next attempt, replacing a pending retry', async () => {
    await createWebhook('a', '/a');
    answers.set('/a', 503);
    expect((await call(stack.proxy.url, '/shop/a', { method: 'POST', body: { n: 1 } })).status).toBe(201);
    const [failed] = await waitFor(
      () => logsOf('a'),
      (l) => l.length === 1,
      10_000,
      'the failed attempt',
    );
    expect(failed.status).toBe('failed');
    expect(failed.nextAttemptAt).toBeDefined();
    expect(await retryJobs()).toHaveLength(1);

    // Recover leaves an event whose retry is still scheduled to that schedule.
    const recovered = await call(stack.proxy.url, '/_admin/webhooks/a/recover', { method: 'POST', auth: ROOT, body: { since: new Date(Date.now() - 60_000).toISOString() } });
    expect(recovered.status, recovered.text).toBe(202);
    expect(recovered.json).toMatchObject({ requeued: 0, alreadyScheduled: 1 });

    answers.set('/a', 200);
    const resent = await call(stack.proxy.url, `/_admin/webhooks/a/logs/${failed._id}/resend`, { method: 'POST', auth: ROOT });
    expect(resent.status, resent.text).toBe(202);
    expect(resent.json).toMatchObject({ webhookId: 'a', eventId: failed.eventId, attempt: 2, queued: true });

    const logs = await waitFor(
      () => logsOf('a'),
      (l) => l.length === 2,
      10_000,
      'the resent attempt',
    );
    expect(logs[0]).toMatchObject({ status: 'success', attempt: 2, eventId: failed.eventId });
    expect(logs[0].detail.incomingRequest).toEqual(failed.detail.incomingRequest);
    const sent = stack.target.on('/a');
    expect(sent).toHaveLength(2);
    expect(sent[1]!.headers['webhook-id']).toBe(sent[0]!.headers['webhook-id']);
    // The same payload (the default one: request and response of the original event).
    expect(JSON.parse(sent[1]!.body)).toEqual(JSON.parse(sent[0]!.body));
    // The hour-long retry was replaced, not kept as a second delivery.
    expect(await retryJobs()).toHaveLength(0);

    // A successful entry may be resent too (the receiver dedupes on webhook-id).
    const again = await call(stack.proxy.url, `/_admin/webhooks/a/logs/${logs[0]._id}/resend`, { method: 'POST', auth: ROOT });
    expect(again.json.attempt).toBe(3);
    await waitFor(
      () => stack.target.on('/a'),
      (r) => r.length === 3,
      10_000,
      'the second resend',
    );
  });

  it('refuses what cannot be resent, each with its reason', async () => {
    const [entry] = await logsOf('a');
    expect((await call(stack.proxy.url, '/_admin/webhooks/a/logs/0000000000-00ff/resend', { method: 'POST', auth: ROOT })).status).toBe(404);
    expect((await call(stack.proxy.url, '/_admin/webhooks/nope/logs/x/resend', { method: 'POST', auth: ROOT })).status).toBe(404);
    expect((await call(stack.proxy.url, `/_admin/webhooks/a/logs/${entry._id}/resend`, { auth: ROOT })).status).toBe(405);
    expect((await call(stack.proxy.url, `/_admin/webhooks/a/logs/${entry._id}/resend`, { method: 'POST' })).status).toBe(401);

    expect((await call(stack.proxy.url, '/_admin/webhooks/a', { method: 'PATCH', auth: ROOT, body: { enabled: false } })).status).toBe(200);
    const disabled = await call(stack.proxy.url, `/_admin/webhooks/a/logs/${entry._id}/resend`, { method: 'POST', auth: ROOT });
    expect(disabled.status).toBe(409);
    expect(disabled.json.message).toMatch(/disabled/);
    expect((await call(stack.proxy.url, '/_admin/webhooks/a', { method: 'PATCH', auth: ROOT, body: { enabled: true } })).status).toBe(200);

    for (const body of [{}, { since: 'yesterday' }, { since: '2026-01-01T00:00:00Z', extra: 1 }]) {
      const res = await call(stack.proxy.url, '/_admin/webhooks/a/recover', { method: 'POST', auth: ROOT, body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.json.message).toMatch(/since|extra/);
    }
  });

  it('recovers every event whose last attempt failed since a date, and only those', async () => {
    await createWebhook('b', '/b');
    answers.set('/b', 400); // final: no retry is scheduled
    for (let i = 0; i < 3; i++) expect((await call(stack.proxy.url, '/shop/b', { method: 'POST', body: { i } })).status).toBe(201);
    await waitFor(
      () => logsOf('b', '?status=failed'),
      (l) => l.length === 3,
      10_000,
      'three failed events',
    );
    answers.set('/b', 200);
    expect((await call(stack.proxy.url, '/shop/b', { method: 'POST', body: { i: 'ok' } })).status).toBe(201);
    await waitFor(
      () => logsOf('b', '?status=success'),
      (l) => l.length === 1,
      10_000,
      'one success',
    );
    expect(await retryJobs()).toHaveLength(0);

    const future = await call(stack.proxy.url, '/_admin/webhooks/b/recover', { method: 'POST', auth: ROOT, body: { since: new Date(Date.now() + 60_000).toISOString() } });
    expect(future.json).toMatchObject({ requeued: 0, alreadyScheduled: 0, more: false });

    const recovered = await call(stack.proxy.url, '/_admin/webhooks/b/recover', { method: 'POST', auth: ROOT, body: { since: new Date(Date.now() - 60_000).toISOString() } });
    expect(recovered.status, recovered.text).toBe(202);
    expect(recovered.json).toMatchObject({ webhookId: 'b', requeued: 3, alreadyScheduled: 0, more: false });

    const successes = await waitFor(
      () => logsOf('b', '?status=success'),
      (l) => l.length === 4,
      10_000,
      'the recovered deliveries',
    );
    expect(successes.slice(0, 3).map((e) => e.attempt)).toEqual([2, 2, 2]);
    const sent = stack.target.on('/b');
    expect(sent).toHaveLength(7);
    const firstIds = sent
      .slice(0, 3)
      .map((r) => r.headers['webhook-id'])
      .sort();
    expect(
      sent
        .slice(4)
        .map((r) => r.headers['webhook-id'])
        .sort(),
    ).toEqual(firstIds);
    expect(
      sent
        .slice(4)
        .map((r) => JSON.parse(r.body).request.body.i)
        .sort(),
    ).toEqual([0, 1, 2]);

    // Their last attempts now succeeded: nothing left to recover.
    const again = await call(stack.proxy.url, '/_admin/webhooks/b/recover', { method: 'POST', auth: ROOT, body: { since: new Date(Date.now() - 60_000).toISOString() } });
    expect(again.json).toMatchObject({ requeued: 0, alreadyScheduled: 0 });
  });

  it('checks a condition and says where it breaks (the console checks as you type)', async () => {
    const check = (body: unknown) => call(stack.proxy.url, '/_admin/conditions/check', { method: 'POST', auth: ROOT, body });
    expect((await check({ condition: "method(POST) and path('/a')" })).json).toEqual({ valid: true });
    const broken = await check({ condition: 'method(POST) and pathx(/a)' });
    expect(broken.status).toBe(200);
    expect(broken.json.valid).toBe(false);
    expect(broken.json.error).toMatch(/pathx/);
    expect(broken.json.position).toBe(17);
    const user = await check({ condition: 'equals(@user.id, %U)' });
    expect(user.json.valid).toBe(false);
    expect((await check({ condition: 'equals(@user.id, %U)', kind: 'permission' })).json).toEqual({ valid: true });
    expect((await check({ condition: 'true', kind: 'acl' })).status).toBe(400);
    expect((await check({ condition: 5 })).status).toBe(400);
    expect((await call(stack.proxy.url, '/_admin/conditions/check', { method: 'POST', body: { condition: 'true' } })).status).toBe(401);
  });
});
