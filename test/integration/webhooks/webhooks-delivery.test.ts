import { describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { deliveryMessageId } from '../../../src/webhooks/signature.js';
import { call, untilKnown, untilSettled, waitFor, type Answer } from './webhooks-helpers.js';
import { HOOK_EDITORS, ROOT, useStack } from '../../support/fixtures.js';

describe('webhooks: from a proxied request to a delivery', () => {
  // alice may manage webhooks (but is no admin: no secrets, no test sends).
  const stack = useStack({
    service: 'wh-delivery',
    backend: { data: { shop: Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`orders${i + 1}`, []])) } },
    target: true,
    users: { root: ['root'], alice: ['hook-editor'] },
    config: { acl: { mode: 'own-routes' }, webhooks: { allowPrivateTargets: ['127.0.0.0/8'], retrySchedule: ['300ms', '300ms', '300ms'] } },
    outrigger: { worker: true },
    permissions: { 'hook-editors': HOOK_EDITORS },
  });
  let counter = 0;
  const path = () => `/shop/orders${++counter}`;

  async function createWebhook(doc: Record<string, unknown>, base = stack.proxy.url) {
    const res = await call(base, '/_admin/webhooks', { method: 'POST', auth: ROOT, body: doc });
    expect(res.status, JSON.stringify(res.json)).toBe(201);
    await untilKnown([stack.proxy], res.json._id);
    return res.json;
  }
  const logsOf = async (id: string, query = '') => (await call(stack.proxy.url, `/_admin/webhooks/${id}/logs${query}`, { auth: ROOT })).json;

  it('delivers a matching request with the rendered template and a signature standardwebhooks verifies', async () => {
    const p = path();
    const hook = await createWebhook({
      name: 'orders to target',
      type: 'http',
      condition: `method(POST) and path('${p}')`,
      url: `${stack.target.url}/signed`,
      headers: { 'X-Custom': 'yes' },
      transform: {
        enabled: true,
        template: '{"order": "{{request.body.name}}", "qty": {{request.body.qty}}, "status": {{response.statusCode}}, "svc": "{{service.id}}", "ct": "{{request.headers.Content-Type}}"}',
      },
    });
    expect(hook.secret).toMatch(/^whsec_/);

    const res = await call(stack.proxy.url, p, { method: 'POST', body: { name: 'O\'Brien "Bob"\n<b>', qty: 2 } });
    expect(res.status).toBe(201);

    const [got] = await waitFor(
      () => stack.target.on('/signed'),
      (r) => r.length === 1,
      10_000,
      'the delivery',
    );
    expect(JSON.parse(got!.body)).toEqual({ order: 'O\'Brien "Bob"\n<b>', qty: 2, status: 201, svc: 'wh-delivery', ct: 'application/json' });
    expect(got!.headers['x-custom']).toBe('yes');
    expect(got!.headers['content-type']).toBe('application/json');
    // The receiver's side of Standard Webhooks: the signature verifies with the webhook's secret...
    const verified = new Webhook(hook.secret).verify(got!.body, got!.headers as Record<string, string>);
    expect(verified).toEqual(JSON.parse(got!.body));
    // ...and fails with another secret or another body.
    expect(() => new Webhook('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw').verify(got!.body, got!.headers as Record<string, string>)).toThrow();
    expect(() => new Webhook(hook.secret).verify(got!.body.replace('2', '3'), got!.headers as Record<string, string>)).toThrow();

    const logs = await waitFor(
      () => logsOf(hook._id),
      (l) => l.length === 1,
      5000,
      'the log entry',
    );
    const entry = logs[0];
    expect(entry).toMatchObject({ webhookId: hook._id, status: 'success', attempt: 1, summary: { method: 'POST', path: p, target: `${stack.target.url}/signed`, statusCode: 200, error: null } });
    expect(got!.headers['webhook-id']).toBe(deliveryMessageId(entry.eventId, hook._id));
    expect(entry.detail.incomingRequest).toMatchObject({ method: 'POST', path: p, body: { name: 'O\'Brien "Bob"\n<b>', qty: 2 } });
    expect(entry.detail.condition).toMatchObject({ matched: true });
    expect(entry.detail.transformation.output).toBe(got!.body);
    expect(entry.detail.transformation.input.request.body).toEqual({ name: 'O\'Brien "Bob"\n<b>', qty: 2 });
    expect(entry.detail.outgoingRequest).toMatchObject({ method: 'POST', url: `${stack.target.url}/signed`, body: got!.body });
    expect(entry.detail.outgoingRequest.headers['webhook-signature']).toBe(got!.headers['webhook-signature']);
    expect(entry.detail.response).toMatchObject({ statusCode: 200, body: 'ok' });
    expect(typeof entry.durationMs).toBe('number');
    expect(entry.timestamp.$date).toBeGreaterThan(Date.now() - 60_000);
  });

  it('sends the default payload when no transform is enabled', async () => {
    const p = path();
    const hook = await createWebhook({ name: 'default payload', type: 'http', condition: `path('${p}')`, url: `${stack.target.url}/default` });
    const answer = await call(stack.proxy.url, `${p}?a=1&a=2&b=x`, { method: 'POST', body: { item: 'boat' }, headers: { 'x-trace': 't1' } });
    const [got] = await waitFor(
      () => stack.target.on('/default'),
      (r) => r.length === 1,
      10_000,
      'the delivery',
    );
    const payload = JSON.parse(got!.body);
    expect(payload).toMatchObject({
      service: { id: 'wh-delivery' },
      webhook: { id: hook._id, name: 'default payload' },
      request: { method: 'POST', path: p, query: { a: ['1', '2'], b: 'x' }, body: { item: 'boat' } },
      response: { statusCode: 201 },
    });
    expect(payload.request.headers['x-trace']).toBe('t1');
    // The response as the client got it, X-Request-Id included: the event can be found in the logs.
    expect(payload.response.headers['x-request-id']).toBe(answer.headers['x-request-id']);
    expect(payload.id).toMatch(/^evt_/);
    expect(new Date(payload.timestamp).getTime()).toBeGreaterThan(Date.now() - 60_000);
    expect(() => new Webhook(hook.secret).verify(got!.body, got!.headers as Record<string, string>)).not.toThrow();
  });

  it('logs a non-matching request as skipped, at most once per webhook per 10 s', async () => {
    const p = path();
    const hook = await createWebhook({ name: 'never matches here', type: 'http', condition: `path('${p}') and method(DELETE)`, url: `${stack.target.url}/never` });
    await call(stack.proxy.url, p, { method: 'POST', body: { a: 1 } });
    const logs = await waitFor(
      () => logsOf(hook._id),
      (l) => l.length >= 1,
      5000,
      'the skipped entry',
    );
    expect(logs[0]).toMatchObject({ status: 'skipped', attempt: 0, summary: { method: 'POST', path: p }, detail: { condition: { matched: false } } });
    expect(logs[0].detail.condition.reason).toMatch(/did not match POST/);
    expect(logs[0].detail.incomingRequest.body).toEqual({ a: 1 });
    for (let i = 0; i < 5; i++) await call(stack.proxy.url, p, { method: 'POST', body: { a: i } });
    await untilSettled(stack.redis.client, [stack.proxy]);
    expect(await logsOf(hook._id)).toHaveLength(1);
    expect(stack.target.on('/never')).toHaveLength(0);
  });

  it('fires three webhooks matching one request in parallel; a slow target delays none of the others', async () => {
    const p = path();
    const slowAnswers: number[] = [];
    stack.target.answer = (req) => {
      if (req.url === '/parallel-slow') {
        slowAnswers.push(performance.now() + 5000);
        return { status: 200, delayMs: 5000 };
      }
      return { status: 200, body: 'fast' };
    };
    const slow = await createWebhook({ name: 'slow', type: 'http', condition: `path('${p}')`, url: `${stack.target.url}/parallel-slow`, timeout_ms: 10_000 });
    const fast1 = await createWebhook({ name: 'fast 1', type: 'http', condition: `path('${p}')`, url: `${stack.target.url}/parallel-fast-1` });
    const fast2 = await createWebhook({ name: 'fast 2', type: 'http', condition: `path-prefix('${p}')`, url: `${stack.target.url}/parallel-fast-2` });
    await call(stack.proxy.url, p, { method: 'POST', body: { n: 1 } });
    // Both fast deliveries are logged as successes while the slow target still holds its request.
    await waitFor(
      async () => [...(await logsOf(fast1._id)), ...(await logsOf(fast2._id))],
      (l) => l.length === 2,
      4000,
      'the fast deliveries',
    );
    expect(await logsOf(slow._id)).toHaveLength(0);
    expect(stack.target.on('/parallel-slow')).toHaveLength(1);
    const fastAt = [...stack.target.on('/parallel-fast-1'), ...stack.target.on('/parallel-fast-2')].map((r) => r.at);
    expect(Math.max(...fastAt)).toBeLessThan(slowAnswers[0]!);
    // Another event behind the slow one is not held up either.
    await call(stack.proxy.url, `${p}/x`, { method: 'POST', body: { n: 2 } });
    await waitFor(
      () => logsOf(fast2._id),
      (l) => l.length === 2,
      4000,
      'a second fast delivery',
    );
    expect(await logsOf(slow._id, '?status=success')).toHaveLength(0);
    const slowLogs = await waitFor(
      () => logsOf(slow._id, '?status=success'),
      (l) => l.length === 1,
      10_000,
      'the slow delivery',
    );
    expect(slowLogs[0]).toMatchObject({ status: 'success', summary: { statusCode: 200 } });
    expect(slowLogs[0].durationMs).toBeGreaterThanOrEqual(4500);
    stack.target.answer = () => ({ status: 200, body: 'ok' });
  });

  it('logs targets answering 401 and 400 as final failures, and timeouts and redirects with what happened', async () => {
    const p = path();
    stack.target.answer = (req): Answer => {
      if (req.url === '/f401') return { status: 401, headers: { 'www-authenticate': 'Bearer', 'set-cookie': 'sid=secret-cookie' }, body: 'no token' };
      if (req.url === '/f400') return { status: 400, headers: { 'content-type': 'application/json' }, body: '{"error":"bad field x"}' };
      if (req.url === '/fslow') return { status: 200, delayMs: 3000 };
      if (req.url === '/fredirect') return { status: 302, headers: { location: '/moved-here' } };
      return { status: 200 };
    };
    const h401 = await createWebhook({ name: '401', type: 'http', condition: `path('${p}')`, url: `${stack.target.url}/f401` });
    const h400 = await createWebhook({ name: '400', type: 'http', condition: `path('${p}')`, url: `${stack.target.url}/f400` });
    const hSlow = await createWebhook({ name: 'timeout', type: 'http', condition: `path('${p}')`, url: `${stack.target.url}/fslow`, timeout_ms: 1000 });
    const hRedirect = await createWebhook({ name: 'redirect', type: 'http', condition: `path('${p}')`, url: `${stack.target.url}/fredirect` });
    await call(stack.proxy.url, p, { method: 'POST', body: { n: 1 } });

    const [e401] = await waitFor(
      () => logsOf(h401._id),
      (l) => l.length === 1,
      5000,
      '401 log',
    );
    expect(e401).toMatchObject({ status: 'failed', attempt: 1, summary: { statusCode: 401, error: 'the target answered 401' } });
    expect(e401.nextAttemptAt).toBeUndefined();
    expect(e401.detail.response).toMatchObject({ statusCode: 401, body: 'no token', headers: { 'www-authenticate': 'Bearer', 'set-cookie': '[redacted]' } });
    const [e400] = await waitFor(
      () => logsOf(h400._id),
      (l) => l.length === 1,
      5000,
      '400 log',
    );
    expect(e400).toMatchObject({ status: 'failed', summary: { statusCode: 400 }, detail: { response: { statusCode: 400, body: { error: 'bad field x' } } } });
    expect(e400.nextAttemptAt).toBeUndefined();
    const [eRedirect] = await waitFor(
      () => logsOf(hRedirect._id),
      (l) => l.length === 1,
      5000,
      'redirect log',
    );
    expect(eRedirect).toMatchObject({ status: 'failed', summary: { statusCode: 302 } });
    expect(eRedirect.summary.error).toMatch(/redirects are not followed/);

    // A timeout is retried on the schedule (3 retries here), then final.
    const slowLogs = await waitFor(
      () => logsOf(hSlow._id),
      (l) => l.length === 4,
      15_000,
      'timeout attempts',
    );
    expect(slowLogs.map((e: any) => e.attempt)).toEqual([4, 3, 2, 1]);
    for (const e of slowLogs) {
      expect(e).toMatchObject({ status: 'failed', summary: { statusCode: null, error: 'timed out after 1000 ms without an answer' } });
      expect(e.detail.error).toBe('timed out after 1000 ms without an answer');
      expect(e.durationMs).toBeGreaterThanOrEqual(900);
    }
    expect(slowLogs[0].nextAttemptAt).toBeUndefined();
    for (const e of slowLogs.slice(1)) expect(e.nextAttemptAt.$date).toBeGreaterThan(e.timestamp.$date);

    await untilSettled(stack.redis.client, [stack.proxy]);
    expect(stack.target.on('/f401')).toHaveLength(1);
    expect(stack.target.on('/f400')).toHaveLength(1);
    expect(stack.target.on('/fredirect')).toHaveLength(1);
    expect(stack.target.on('/moved-here')).toHaveLength(0);
    stack.target.answer = () => ({ status: 200, body: 'ok' });
  });

  it('retries with backoff until the target succeeds, honouring Retry-After, with one webhook-id throughout', async () => {
    const p = path();
    stack.target.answer = (req) => {
      const n = stack.target.on('/flaky').indexOf(req);
      if (n === 0) return { status: 503, body: 'down' };
      if (n === 1) return { status: 429, headers: { 'retry-after': '1' }, body: 'slow down' };
      return { status: 204 };
    };
    const hook = await createWebhook({ name: 'flaky', type: 'http', condition: `path('${p}')`, url: `${stack.target.url}/flaky` });
    await call(stack.proxy.url, p, { method: 'POST', body: { n: 1 } });
    const logs = await waitFor(
      () => logsOf(hook._id),
      (l) => l.length === 3,
      10_000,
      'three attempts',
    );
    // Newest first.
    expect(logs.map((e: any) => [e.attempt, e.status, e.summary.statusCode])).toEqual([
      [3, 'success', 204],
      [2, 'failed', 429],
      [1, 'failed', 503],
    ]);
    expect(logs[2].nextAttemptAt.$date).toBeGreaterThanOrEqual(logs[2].timestamp.$date + 300);
    expect(logs[1].nextAttemptAt.$date - logs[1].timestamp.$date).toBeGreaterThanOrEqual(1000);
    const got = stack.target.on('/flaky');
    expect(got).toHaveLength(3);
    expect(got[2]!.at - got[1]!.at).toBeGreaterThanOrEqual(950);
    expect(new Set(got.map((r) => r.headers['webhook-id'])).size).toBe(1);
    for (const r of got) expect(() => new Webhook(hook.secret).verify(r.body, r.headers as Record<string, string>)).not.toThrow();
    await untilSettled(stack.redis.client, [stack.proxy]);
    expect(stack.target.on('/flaky')).toHaveLength(3);

    // The logs API: status filter, pagination newest first, X-Total-Count, Clear Logs.
    const failed = await call(stack.proxy.url, `/_admin/webhooks/${hook._id}/logs?status=failed`, { auth: ROOT });
    expect(failed.json.map((e: any) => e.attempt)).toEqual([2, 1]);
    expect(failed.headers['x-total-count']).toBe('2');
    const page2 = await call(stack.proxy.url, `/_admin/webhooks/${hook._id}/logs?pagesize=1&page=2`, { auth: ROOT });
    expect(page2.json.map((e: any) => e.attempt)).toEqual([2]);
    expect(page2.headers['x-total-count']).toBe('3');
    expect((await call(stack.proxy.url, `/_admin/webhooks/${hook._id}/logs?status=nope`, { auth: ROOT })).status).toBe(400);
    const before = new Date(logs[1].timestamp.$date).toISOString();
    expect((await call(stack.proxy.url, `/_admin/webhooks/${hook._id}/logs?before=${before}`, { method: 'DELETE', auth: ROOT })).status).toBe(204);
    expect((await logsOf(hook._id)).map((e: any) => e.attempt)).toEqual([3, 2]);
    expect((await call(stack.proxy.url, `/_admin/webhooks/${hook._id}/logs?status=failed`, { auth: ROOT })).json.map((e: any) => e.attempt)).toEqual([2]);
    expect((await call(stack.proxy.url, `/_admin/webhooks/${hook._id}/logs?before=yesterday-ish`, { method: 'DELETE', auth: ROOT })).status).toBe(400);
    expect((await call(stack.proxy.url, `/_admin/webhooks/${hook._id}/logs`, { method: 'DELETE', auth: ROOT })).status).toBe(204);
    expect(await logsOf(hook._id)).toEqual([]);
    stack.target.answer = () => ({ status: 200, body: 'ok' });
  });
});
