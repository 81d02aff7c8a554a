import { afterAll, describe, expect, it } from 'vitest';
import { redisKeys, utcDay } from '../../../src/store/keys.js';
import { EmailAllowance } from '../../../src/webhooks/deliver/attempt/email-allowance.js';
import { startTestOutrigger, type RawConfig } from '../../support/outrigger.js';
import { call, sleep, untilKnown, waitFor } from './webhooks-helpers.js';
import { type Running, useStack } from '../../support/fixtures.js';

interface Mail {
  from: string;
  to: string[];
  raw: string;
  headers: Record<string, string>;
  body: string;
}

/** Headers (unfolded, lower-case names) and the decoded body of a single-part message. */
function parseMail(raw: string): { headers: Record<string, string>; body: string } {
  const split = raw.indexOf('\r\n\r\n');
  const head = raw.slice(0, split).replace(/\r\n[ \t]+/g, ' ');
  const headers: Record<string, string> = {};
  for (const line of head.split('\r\n')) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
  }
  let body = raw.slice(split + 4);
  const encoding = headers['content-transfer-encoding']?.toLowerCase();
  if (encoding === 'quoted-printable') {
    body = Buffer.from(
      body.replace(/=\r\n/g, '').replace(/=([0-9A-F]{2})/g, (_, h: string) => String.fromCharCode(parseInt(h, 16))),
      'latin1',
    ).toString('utf8');
  } else if (encoding === 'base64') body = Buffer.from(body, 'base64').toString('utf8');
  return { headers, body: body.replace(/\r\n$/, '') };
}

describe('webhooks: e-mail through a real SMTP server', () => {
  let refuseNext = 0;
  const stack = useStack({
    backend: { data: { shop: { orders: [], refunds: [], a: [], b: [], c: [], d: [] } } },
    smtp: {
      refuse: () => {
        if (refuseNext <= 0) return null;
        refuseNext--;
        return Object.assign(new Error('mailbox busy, try again later'), { responseCode: 451 });
      },
    },
    config: { acl: { mode: 'own-routes', adminRoles: ['$unauthenticated'] }, webhooks: { retrySchedule: ['300ms'] } },
    outrigger: false,
  });
  const running: Running[] = [];
  afterAll(async () => {
    for (const r of running) await r.stop().catch(() => {});
  });
  /** What the SMTP server accepted, with headers and body decoded. */
  const mails = (): Mail[] => stack.smtp.mails.map((m) => ({ ...m, ...parseMail(m.raw) }));

  async function start(serviceId: string, email: RawConfig): Promise<Running> {
    const r = await startTestOutrigger(
      { ...stack.raw, service: { id: serviceId }, webhooks: { ...stack.raw.webhooks, email: { smtp: { host: '127.0.0.1', port: stack.smtp.port }, from: 'outrigger@example.com', ...email } } },
      { worker: true },
    );
    running.push(r);
    return r;
  }
  async function hook(r: Running, doc: Record<string, unknown>) {
    const res = await call(r.url, '/_admin/webhooks', { method: 'POST', body: { type: 'email', ...doc } });
    expect(res.status, JSON.stringify(res.json)).toBe(201);
    await untilKnown([r], res.json._id);
    return res.json;
  }
  /** Delivery attempts (skipped entries of requests to other paths left out). */
  const logsOf = async (r: Running, id: string) => (await call(r.url, `/_admin/webhooks/${id}/logs`)).json.filter((e: any) => e.status !== 'skipped');
  const mailsTo = (address: string) => mails().filter((m) => m.to.includes(address));

  it('sends a JSON body as text to every to and cc recipient, with a one-line plain-text subject', async () => {
    const proxy = await start('wh-mail', { dailyAllowance: 100 });
    const h = await hook(proxy, {
      name: 'order mail',
      condition: "method(POST) and path('/shop/orders')",
      email: {
        to: ['ops@example.com', 'sales@example.com'],
        cc: ['audit@example.com'],
        subject: 'Order {{request.body.id}}\n created by <{{request.body.by}}> & co',
        bodyType: 'json',
        bodyTemplate: '{"id": {{request.body.id}}, "note": "{{request.body.note}}", "status": {{response.statusCode}}}',
      },
    });
    await call(proxy.url, '/shop/orders', { method: 'POST', body: { id: 7, by: 'ann', note: 'say "hi"\nthen <b>leave</b>' } });
    const [mail] = await waitFor(
      () => mailsTo('ops@example.com'),
      (m) => m.length === 1,
      10_000,
      'the e-mail',
    );
    expect(mail!.from).toBe('outrigger@example.com');
    expect(mail!.to.sort()).toEqual(['audit@example.com', 'ops@example.com', 'sales@example.com']);
    expect(mail!.headers.subject).toBe('Order 7 created by <ann> & co');
    expect(mail!.headers.to).toBe('ops@example.com, sales@example.com');
    expect(mail!.headers.cc).toBe('audit@example.com');
    expect(mail!.headers['content-type']).toMatch(/^text\/plain/);
    expect(mail!.headers['message-id']).toMatch(/^<msg_[A-Za-z0-9_-]+@outrigger\.wh-mail>$/);
    expect(JSON.parse(mail!.body)).toEqual({ id: 7, note: 'say "hi"\nthen <b>leave</b>', status: 201 });
    const [entry] = await waitFor(
      () => logsOf(proxy, h._id),
      (l) => l.length === 1,
      5000,
      'the log',
    );
    expect(entry).toMatchObject({ status: 'success', summary: { target: 'mailto:ops@example.com,sales@example.com,audit@example.com', statusCode: 250 } });
    expect(entry.detail.outgoingRequest).toMatchObject({ method: 'SMTP', headers: { subject: 'Order 7 created by <ann> & co', cc: 'audit@example.com' } });
    expect(entry.detail.transformation.output.body).toBe(mail!.body);
    expect(await stack.redis.client.get(proxy.context.keys.emailAllowance(utcDay()))).toBe('3');
  });

  it("carries the attempt's traceparent as a message header, in the request's trace, as the webhook POST does", async () => {
    const proxy = await start('wh-mail-trace', { dailyAllowance: 100 });
    const h = await hook(proxy, {
      name: 'traced mail',
      condition: "method(POST) and path('/shop/d')",
      email: { to: ['trace@example.com'], subject: 'traced', bodyType: 'json', bodyTemplate: '{"n": 1}' },
    });
    const trace = '4bf92f3577b34da6a3ce929d0e0e4736';
    const incoming = `00-${trace}-00f067aa0ba902b7-01`;
    await call(proxy.url, '/shop/d', { method: 'POST', body: {}, headers: { traceparent: incoming } });
    const [mail] = await waitFor(
      () => mailsTo('trace@example.com'),
      (m) => m.length === 1,
      10_000,
      'the e-mail',
    );
    const sent = /^00-([0-9a-f]{32})-([0-9a-f]{16})-0[01]$/.exec(mail!.headers.traceparent ?? '');
    expect(sent, `a traceparent header in:\n${mail!.raw.slice(0, 2000)}`).not.toBeNull();
    // The same trace, the attempt span's own id (not the caller's, not the proxy span's).
    expect(sent![1]).toBe(trace);
    expect(sent![2]).not.toBe('00f067aa0ba902b7');
    const [entry] = await waitFor(
      () => logsOf(proxy, h._id),
      (l) => l.length === 1,
      5000,
      'the log',
    );
    expect(entry.detail.outgoingRequest.headers.traceparent).toBe(mail!.headers.traceparent);
    expect(entry.traceparent).toMatch(new RegExp(`^00-${trace}-`));
  });

  it('sends HTML bodies with {{x}} HTML-escaped, and retries an SMTP 4xx', async () => {
    const proxy = await start('wh-mail-html', { dailyAllowance: 100 });
    const h = await hook(proxy, {
      name: 'refund mail',
      condition: "path('/shop/refunds')",
      email: { to: ['refunds@example.com'], subject: 'Refund', bodyType: 'html', bodyTemplate: '<p>Note: {{request.body.note}}</p><p>{{{request.body.html}}}</p>' },
    });
    refuseNext = 1;
    await call(proxy.url, '/shop/refunds', { method: 'POST', body: { note: '<script>alert(1)</script>', html: '<em>ok</em>' } });
    const [mail] = await waitFor(
      () => mailsTo('refunds@example.com'),
      (m) => m.length === 1,
      10_000,
      'the e-mail',
    );
    expect(mail!.headers['content-type']).toMatch(/^text\/html/);
    expect(mail!.body).toBe('<p>Note: &lt;script&gt;alert(1)&lt;&#x2F;script&gt;</p><p><em>ok</em></p>');
    const logs = await waitFor(
      () => logsOf(proxy, h._id),
      (l) => l.length === 2,
      5000,
      'two attempts',
    );
    expect(logs.map((e: any) => [e.attempt, e.status, e.summary.statusCode])).toEqual([
      [2, 'success', 250],
      [1, 'failed', 451],
    ]);
    expect(logs[1].nextAttemptAt).toBeDefined();
    // The refused attempt gave its reservation back: one recipient counted, not two.
    expect(await stack.redis.client.get(proxy.context.keys.emailAllowance(utcDay()))).toBe('1');
  });

  it('reserves the daily allowance atomically, all recipients or none; ownServer lifts it', async () => {
    const proxy = await start('wh-mail-allowance', { dailyAllowance: 8 });
    const five = ['a1@example.com', 'a2@example.com', 'a3@example.com', 'a4@example.com'];
    const first = await hook(proxy, { name: 'five', condition: "path('/shop/a')", email: { to: five, cc: ['a5@example.com'], subject: 'five', bodyType: 'json', bodyTemplate: '{"n": 1}' } });
    const again = await hook(proxy, {
      name: 'five again',
      condition: "path('/shop/b')",
      email: { to: ['b1@example.com', 'b2@example.com', 'b3@example.com', 'b4@example.com', 'b5@example.com'], subject: 'again', bodyType: 'json', bodyTemplate: '{"n": 2}' },
    });
    const three = await hook(proxy, {
      name: 'three',
      condition: "path('/shop/c')",
      email: { to: ['c1@example.com', 'c2@example.com'], cc: ['c3@example.com'], subject: 'three', bodyType: 'json', bodyTemplate: '{"n": 3}' },
    });
    const dayKey = proxy.context.keys.emailAllowance(utcDay());

    await call(proxy.url, '/shop/a', { method: 'POST', body: {} });
    await waitFor(
      () => logsOf(proxy, first._id),
      (l) => l.length === 1,
      5000,
      'five sent',
    );
    expect(await stack.redis.client.get(dayKey)).toBe('5');
    // Five recipients with three left: nothing is sent, nothing reserved, and the failure is final.
    await call(proxy.url, '/shop/b', { method: 'POST', body: {} });
    const [refused] = await waitFor(
      () => logsOf(proxy, again._id),
      (l) => l.length === 1,
      5000,
      'the refusal',
    );
    expect(refused).toMatchObject({ status: 'failed', summary: { error: 'daily email allowance exceeded' }, detail: { error: 'daily email allowance exceeded' } });
    expect(refused.nextAttemptAt).toBeUndefined();
    expect(await stack.redis.client.get(dayKey)).toBe('5');
    // Three recipients with three left: sent.
    await call(proxy.url, '/shop/c', { method: 'POST', body: {} });
    await waitFor(
      () => logsOf(proxy, three._id),
      (l) => l.length === 1 && l[0].status === 'success',
      5000,
      'three sent',
    );
    expect(await stack.redis.client.get(dayKey)).toBe('8');
    await sleep(300);
    expect(mails().filter((m) => m.to.some((t) => t.startsWith('b')))).toHaveLength(0);
    expect(mailsTo('a1@example.com')).toHaveLength(1);
    expect(mailsTo('c3@example.com')).toHaveLength(1);

    // Another service with its own server configured: no allowance.
    const own = await start('wh-mail-own', { dailyAllowance: 1, ownServer: true });
    const lifted = await hook(own, {
      name: 'lifted',
      condition: "path('/shop/d')",
      email: { to: ['d1@example.com', 'd2@example.com', 'd3@example.com'], subject: 'own', bodyType: 'json', bodyTemplate: '{"n": 4}' },
    });
    await call(own.url, '/shop/d', { method: 'POST', body: {} });
    await waitFor(
      () => logsOf(own, lifted._id),
      (l) => l.length === 1 && l[0].status === 'success',
      5000,
      'sent without allowance',
    );
    expect(mailsTo('d3@example.com')).toHaveLength(1);
    expect(await stack.redis.client.get(own.context.keys.emailAllowance(utcDay()))).toBeNull();
  });

  it('never over-reserves when many workers reserve at once', async () => {
    const keys = redisKeys('outrigger', 'wh-mail-race');
    const allowance = new EmailAllowance(stack.redis.client, keys, 10);
    const results = await Promise.all(Array.from({ length: 20 }, () => allowance.reserve(3)));
    expect(results.filter((r) => r.ok)).toHaveLength(3);
    expect(await allowance.used()).toBe(9);
    await allowance.release(3, utcDay());
    expect(await allowance.used()).toBe(6);
    expect((await allowance.reserve(4)).ok).toBe(true);
    expect((await allowance.reserve(1)).ok).toBe(false);
    expect(await stack.redis.client.ttl(keys.emailAllowance(utcDay()))).toBeGreaterThan(86_400);
  });
});
