/**
 * Chaos (issue 28 item 3): the SMTP server of e-mail webhooks down, then slow. A request never
 * waits for SMTP (the tee only queues); an attempt against a server that is down fails and is
 * retried on the schedule; the message arrives once the server is back; a slow server delays
 * only the delivery.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStandinBackend, type StandinBackend } from '../../examples/standin-backend/index.js';
import { freePort } from '../../src/util/free-port.js';
import { call } from '../support/clients/http-client.js';
import { basic, startTestOutrigger, staticUsers } from '../support/outrigger.js';
import { startTestRedis, type TestRedis } from '../support/redis/redis.js';
import { startSmtpCapture, type SmtpCapture } from '../support/peers/smtp.js';
import { atOnceBound, baselineMs } from '../support/timing.js';
import { until } from '../support/wait.js';

const ROOT = basic('root', 'root-password');

describe('chaos: the SMTP server down, then slow', () => {
  let redis: TestRedis;
  let backend: StandinBackend;
  let smtpPort: number;
  let smtp: SmtpCapture | undefined;
  let proxy: Awaited<ReturnType<typeof startTestOutrigger>>;
  let hookId: string;
  /** The same POST before any e-mail webhook exists: "at once" is a multiple of it (issue 40). */
  let baseline: number;

  beforeAll(async () => {
    redis = await startTestRedis();
    backend = await startStandinBackend({ data: { shop: { orders: [] } } });
    smtpPort = await freePort(); // nothing listens there yet: the server is down
    proxy = await startTestOutrigger(
      {
        service: { id: 'chaos-smtp' },
        upstream: { url: backend.url },
        redis: { url: redis.url },
        users: await staticUsers({ root: ['root'] }),
        acl: { mode: 'own-routes' },
        webhooks: { retrySchedule: ['300ms', '300ms', '300ms', '300ms', '300ms', '300ms', '300ms', '300ms'], email: { smtp: { host: '127.0.0.1', port: smtpPort }, from: 'outrigger@example.com' } },
      },
      { worker: true },
    );
    baseline = await baselineMs(() => call(proxy.url, '/shop/orders', { method: 'POST', body: { total: 0 } }));
    const hook = await call(proxy.url, '/_admin/webhooks', {
      method: 'POST',
      auth: ROOT,
      body: {
        name: 'order mail',
        type: 'email',
        condition: "method(POST) and path('/shop/orders')",
        email: { to: ['ops@example.com'], subject: 'Order', bodyType: 'json', bodyTemplate: '{"id": "{{request.body._id}}"}' },
      },
    });
    expect(hook.status, JSON.stringify(hook.json)).toBe(201);
    hookId = hook.json._id;
  }, 60_000);

  afterAll(async () => {
    await proxy?.stop();
    await smtp?.close();
    await backend?.close();
    await redis?.close();
  });

  const logs = async () => (await call(proxy.url, `/_admin/webhooks/${hookId}/logs`, { auth: ROOT })).json as Array<{ status: string; attempt?: number; summary?: { error?: string } }>;

  it('down: the request is answered at once, attempts fail and are retried, the mail arrives once the server is back', async () => {
    const t0 = performance.now();
    const res = await call(proxy.url, '/shop/orders', { method: 'POST', body: { _id: 'down-1', total: 3 } });
    expect(res.status).toBe(201);
    // Waiting for the attempts and their retries (300 ms apart) would take seconds.
    expect(performance.now() - t0).toBeLessThan(atOnceBound(baseline, 1000));
    // At least two failed attempts against the closed port, each logged with what went wrong.
    await until(async () => (await logs()).filter((e) => e.status === 'failed' || e.status === 'retrying').length >= 2, 'two failed attempts to be logged', 20_000);
    const failed = (await logs()).find((e) => e.status === 'failed' || e.status === 'retrying');
    expect(failed?.summary?.error ?? '').toMatch(/ECONNREFUSED|connect/i);
    smtp = await startSmtpCapture({ port: smtpPort });
    await until(() => smtp!.mails.some((m) => m.raw.includes('down-1')), 'the mail to arrive once the SMTP server is back', 20_000);
    expect(smtp.mails.filter((m) => m.raw.includes('down-1'))).toHaveLength(1);
  }, 60_000);

  it('slow: a server that takes 2 s to accept each message delays the delivery, never the request', async () => {
    await smtp?.close();
    smtp = await startSmtpCapture({ port: smtpPort, delayMs: 2000 });
    const started = performance.now();
    const timings: number[] = [];
    for (let i = 0; i < 3; i++) {
      const t0 = performance.now();
      const res = await call(proxy.url, '/shop/orders', { method: 'POST', body: { _id: `slow-${i}`, total: i } });
      timings.push(performance.now() - t0);
      expect(res.status).toBe(201);
    }
    // A request that waited for its message would take the server's 2 s: the bound stays below.
    const bound = Math.min(atOnceBound(baseline, 1000), 1900);
    for (const ms of timings) expect(ms, `a POST took ${ms.toFixed(0)} ms (baseline ${baseline.toFixed(0)} ms)`).toBeLessThan(bound);
    await until(() => [0, 1, 2].every((i) => smtp!.mails.some((m) => m.raw.includes(`slow-${i}`))), 'the three mails to arrive', 30_000);
    // The server's 2 s were really spent: the last mail arrived at least that long after the first request.
    expect(performance.now() - started).toBeGreaterThanOrEqual(2000);
  }, 60_000);
});
