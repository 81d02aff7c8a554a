import { writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { Webhook } from 'standardwebhooks';
import { ValidationError } from '../../../src/errors.js';
import { applySetup, applySetupFile, readSetupFile } from '../../../src/setup/apply-setup.js';
import { offlineSetupKinds } from '../../../src/offline-setup-kinds.js';
import { startTestOutrigger, testConfig } from '../../support/outrigger.js';
import { writeTempFile } from '../../support/clients/cli.js';
import { call, sleep, untilKnown, waitFor, webhooksOf } from './webhooks-helpers.js';
import { as, HOOK_EDITORS, ROOT, useStack } from '../../support/fixtures.js';

describe('webhooks: documents, test sends, the feature lifecycle, setup files, log retention', () => {
  const stack = useStack({
    service: 'wh-admin',
    backend: { data: { shop: { orders: [], items: [] } } },
    target: true,
    users: { root: ['root'], alice: ['hook-editor'], bob: ['nobody'] },
    config: { acl: { mode: 'own-routes' }, webhooks: { allowPrivateTargets: ['127.0.0.0/8'], retrySchedule: ['200ms'] } },
    outrigger: { worker: true },
    permissions: { 'hook-editors': HOOK_EDITORS },
  });
  const ALICE = as('alice');
  const BOB = as('bob');
  const logsOf = async (id: string, query = '') => (await call(stack.proxy.url, `/_admin/webhooks/${id}/logs${query}`, { auth: ROOT })).json;

  it('validates every write, naming each field, and keeps the secret for admins', async () => {
    const bad = await call(stack.proxy.url, '/_admin/webhooks', {
      method: 'POST',
      auth: ROOT,
      body: { type: 'http', condition: "path('/a'", url: 'ftp://x.example', timeout_ms: 50, colour: 'red' },
    });
    expect(bad.status).toBe(400);
    expect(bad.json['http status code']).toBe(400);
    for (const field of ['name is required', 'condition is invalid', 'at position', 'url must use http or https', 'timeout_ms must be an integer from 1000 to 30000', 'colour is not a webhook field'])
      expect(bad.json.message).toContain(field);
    const email = await call(stack.proxy.url, '/_admin/webhooks', {
      method: 'POST',
      auth: ROOT,
      body: { name: 'm', type: 'email', condition: 'true', email: { to: [], subject: 'x', bodyType: 'pdf', bodyTemplate: '{{#a}}' } },
    });
    expect(email.status).toBe(400);
    for (const field of ['email.to must be a non-empty array', 'email.bodyType must be "json" or "html"', 'email.bodyTemplate']) expect(email.json.message).toContain(field);
    for (const reserved of ['test', 'recording']) {
      const r = await call(stack.proxy.url, `/_admin/webhooks/${reserved}`, { method: 'PUT', auth: ROOT, body: { name: 'x', type: 'http', condition: 'true', url: `${stack.target.url}/x` } });
      expect(r.status).toBe(405);
      const p = await call(stack.proxy.url, '/_admin/webhooks', { method: 'POST', auth: ROOT, body: { _id: reserved, name: 'x', type: 'http', condition: 'true', url: `${stack.target.url}/x` } });
      expect(p.status).toBe(400);
      expect(p.json.message).toContain('reserved');
    }

    const created = await call(stack.proxy.url, '/_admin/webhooks', {
      method: 'POST',
      auth: ALICE,
      body: { _id: 'crud-1', name: 'Order created', type: 'http', condition: "method(POST) and path-prefix('/shop/orders')", url: `${stack.target.url}/crud` },
    });
    expect(created.status).toBe(201);
    expect(created.json.secret).toBeUndefined(); // alice is no admin
    expect(created.json).toMatchObject({ enabled: true, timeout_ms: 5000, headers: {}, createdAt: { $date: expect.any(Number) } });
    const asRoot = await call(stack.proxy.url, '/_admin/webhooks/crud-1', { auth: ROOT });
    expect(asRoot.json.secret).toMatch(/^whsec_/);
    const secret = asRoot.json.secret;
    expect((await call(stack.proxy.url, '/_admin/webhooks/crud-1', { auth: BOB })).status).toBe(403);

    const patched = await call(stack.proxy.url, '/_admin/webhooks/crud-1', { method: 'PATCH', auth: ALICE, body: { enabled: false, headers: { 'X-Env': 'test' } } });
    expect(patched.status).toBe(200);
    expect(patched.json).toMatchObject({ enabled: false, headers: { 'X-Env': 'test' } });
    expect((await call(stack.proxy.url, '/_admin/webhooks/crud-1', { auth: ROOT })).json.secret).toBe(secret); // kept across writes
    const badPatch = await call(stack.proxy.url, '/_admin/webhooks/crud-1', { method: 'PATCH', auth: ALICE, body: { timeout_ms: 999999 } });
    expect(badPatch.status).toBe(400);

    await call(stack.proxy.url, '/_admin/webhooks', {
      method: 'POST',
      auth: ROOT,
      body: { _id: 'crud-2', name: 'Item deleted', type: 'http', condition: 'method(DELETE)', url: `${stack.target.url}/items` },
    });
    const searched = await call(stack.proxy.url, '/_admin/webhooks?search=ORDER', { auth: ROOT });
    expect(searched.json.map((w: any) => w._id)).toEqual(['crud-1']);
    expect((await call(stack.proxy.url, '/_admin/webhooks?search=/items', { auth: ROOT })).json.map((w: any) => w._id)).toEqual(['crud-2']);
    const page = await call(stack.proxy.url, '/_admin/webhooks?pagesize=1&page=2', { auth: ALICE });
    expect(page.json).toHaveLength(1);
    expect(Number(page.headers['x-total-count'])).toBeGreaterThanOrEqual(2);
    expect(page.json[0].secret).toBeUndefined();

    expect((await call(stack.proxy.url, '/_admin/webhooks/crud-2', { method: 'DELETE', auth: ROOT })).status).toBe(204);
    expect((await call(stack.proxy.url, '/_admin/webhooks/crud-2', { auth: ROOT })).status).toBe(404);
    expect((await call(stack.proxy.url, '/_admin/webhooks/nope/logs', { auth: ROOT })).status).toBe(404);
  });

  it('test send: admin roles only, sends once now, answers the log entry with the target response, saves nothing', async () => {
    stack.target.answer = (req) => (req.url === '/test-500' ? { status: 500, body: 'boom' } : { status: 202, headers: { 'content-type': 'application/json' }, body: '{"seen":true}' });
    const unsaved = {
      name: 'try me',
      type: 'http',
      condition: "path-prefix('/sample')",
      url: `${stack.target.url}/test-send`,
      transform: { enabled: true, template: '{"path": "{{request.path}}", "who": "{{request.body.customer}}"}' },
    };
    expect((await call(stack.proxy.url, '/_admin/webhooks/test', { method: 'POST', auth: ALICE, body: { webhook: unsaved } })).status).toBe(403);
    expect(stack.target.on('/test-send')).toHaveLength(0);

    const before = (await call(stack.proxy.url, '/_admin/webhooks', { auth: ROOT })).json.length;
    const sent = await call(stack.proxy.url, '/_admin/webhooks/test', {
      method: 'POST',
      auth: ROOT,
      body: { webhook: unsaved, event: { request: { path: '/sample/orders', body: { customer: 'Ann' }, headers: { authorization: 'Bearer sample-secret' } } } },
    });
    expect(sent.status).toBe(200);
    expect(sent.json).toMatchObject({
      status: 'success',
      attempt: 1,
      test: true,
      summary: { statusCode: 202, target: `${stack.target.url}/test-send` },
      detail: {
        condition: { matched: true },
        transformation: { output: '{"path": "/sample/orders", "who": "Ann"}', error: null },
        response: { statusCode: 202, body: { seen: true } },
        incomingRequest: { headers: { authorization: '[redacted]' } },
      },
    });
    expect(stack.target.on('/test-send')).toHaveLength(1);
    expect(stack.target.on('/test-send')[0]!.body).toBe('{"path": "/sample/orders", "who": "Ann"}');
    // Nothing saved: no new document, no log, no retry.
    expect((await call(stack.proxy.url, '/_admin/webhooks', { auth: ROOT })).json.length).toBe(before);
    expect((await call(stack.proxy.url, '/_admin/webhooks/unsaved/logs', { auth: ROOT })).status).toBe(404);

    // A saved webhook by id: signed with its stored secret; a failing target is reported, not retried.
    const saved = await call(stack.proxy.url, '/_admin/webhooks', {
      method: 'POST',
      auth: ROOT,
      body: { _id: 'test-by-id', name: 'by id', type: 'http', condition: 'false', url: `${stack.target.url}/test-500` },
    });
    const failed = await call(stack.proxy.url, '/_admin/webhooks/test', { method: 'POST', auth: ROOT, body: { webhookId: 'test-by-id' } });
    expect(failed.status).toBe(200);
    expect(failed.json).toMatchObject({ status: 'failed', summary: { statusCode: 500 }, detail: { response: { body: 'boom' }, condition: { matched: false } } });
    const got = stack.target.on('/test-500');
    expect(got).toHaveLength(1);
    expect(() => new Webhook(saved.json.secret).verify(got[0]!.body, got[0]!.headers as Record<string, string>)).not.toThrow();
    await sleep(600);
    expect(stack.target.on('/test-500')).toHaveLength(1);
    expect(await logsOf('test-by-id')).toEqual([]);

    const blocked = await call(stack.proxy.url, '/_admin/webhooks/test', { method: 'POST', auth: ROOT, body: { webhook: { ...unsaved, url: 'http://169.254.169.254/latest/meta-data' } } });
    expect(blocked.status).toBe(400);
    expect(blocked.json.message).toContain('webhook.url');
    expect(blocked.json.message).toContain('169.254.169.254');
    expect((await call(stack.proxy.url, '/_admin/webhooks/test', { method: 'POST', auth: ROOT, body: { webhookId: 'missing' } })).status).toBe(404);
    expect((await call(stack.proxy.url, '/_admin/webhooks/test', { method: 'GET', auth: ROOT })).status).toBe(405);
    stack.target.answer = () => ({ status: 200, body: 'ok' });
  });

  it('disabled: nothing fires and everything is kept; enabled again: it fires', async () => {
    const hook = await call(stack.proxy.url, '/_admin/webhooks', {
      method: 'POST',
      auth: ROOT,
      body: { _id: 'life', name: 'lifecycle', type: 'http', condition: "path('/shop/items')", url: `${stack.target.url}/life` },
    });
    expect(hook.status).toBe(201);
    await untilKnown([stack.proxy], 'life');
    await call(stack.proxy.url, '/shop/items', { method: 'POST', body: { n: 1 } });
    await waitFor(
      () => logsOf('life'),
      (l) => l.length === 1,
      5000,
      'first delivery',
    );

    for (const action of ['disable', 'uninstall']) {
      expect((await call(stack.proxy.url, `/_admin/features/webhooks/${action}`, { method: 'POST', auth: ROOT })).status).toBe(200);
      await call(stack.proxy.url, '/shop/items', { method: 'POST', body: { n: 2 } });
      await call(stack.proxy.url, '/shop/orders', { method: 'POST', body: { n: 2 } });
      await sleep(700);
      expect(stack.target.on('/life')).toHaveLength(1);
      // Kept: the document and its logs are there.
      expect((await call(stack.proxy.url, '/_admin/webhooks/life', { auth: ROOT })).status).toBe(200);
      expect(await logsOf('life')).toHaveLength(1);
    }
    expect((await call(stack.proxy.url, '/_admin/features/webhooks/install', { method: 'POST', auth: ROOT })).status).toBe(200);
    await call(stack.proxy.url, '/shop/items', { method: 'POST', body: { n: 3 } });
    await waitFor(
      () => stack.target.on('/life'),
      (l) => l.length === 2,
      5000,
      'delivery after enabling',
    );
    expect(JSON.parse(stack.target.on('/life')[1]!.body).request.body).toEqual({ n: 3 });
  });

  it('setup files (apply, bootstrap, check) accept webhooks with the same validation, all or nothing', async () => {
    const setup = {
      webhooks: [
        { _id: 'from-setup', name: 'from setup', type: 'http', condition: "path-prefix('/shop')", url: `${stack.target.url}/setup` },
        {
          _id: 'mail-setup',
          name: 'mail',
          type: 'email',
          condition: 'method(DELETE)',
          email: { to: ['ops@example.com'], subject: 'deleted {{request.path}}', bodyType: 'html', bodyTemplate: '<p>{{request.path}}</p>' },
        },
      ],
    };
    const file = writeTempFile('setup.yaml', setup);
    const kinds = stack.proxy.modules.flatMap((m) => m.setupKinds ?? []);
    const first = await applySetupFile(stack.proxy.context, file, kinds);
    expect(first.counts).toMatchObject({ created: 2, updated: 0, unchanged: 0 });
    const again = await applySetupFile(stack.proxy.context, file, kinds);
    expect(again.counts).toMatchObject({ created: 0, updated: 0, unchanged: 2 });
    const stored = await call(stack.proxy.url, '/_admin/webhooks/from-setup', { auth: ROOT });
    expect(stored.json.secret).toMatch(/^whsec_/);

    writeFileSync(
      file,
      stringify({
        webhooks: [
          { ...setup.webhooks[0], name: 'renamed' },
          { _id: 'broken', name: 'x', type: 'http', condition: 'nope(', url: 'http://10.0.0.1/' },
        ],
      }),
    );
    const failure = await applySetupFile(stack.proxy.context, file, kinds).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(ValidationError);
    const problems = (failure as ValidationError).problems.join('\n');
    expect(problems).toContain('webhooks[1] (broken): condition is invalid');
    expect(problems).toContain('10.0.0.1');
    expect((await call(stack.proxy.url, '/_admin/webhooks/from-setup', { auth: ROOT })).json.name).toBe('from setup'); // nothing applied
    expect((await call(stack.proxy.url, '/_admin/webhooks/from-setup', { auth: ROOT })).json.secret).toBe(stored.json.secret);

    // outrigger check: the same validation offline (no Redis, no DNS).
    const offline = await applySetup(readSetupFile(file), offlineSetupKinds(testConfig(stack.raw)), { offline: true }).catch((e: unknown) => e);
    expect((offline as ValidationError).problems.join('\n')).toContain('webhooks[1] (broken)');
    writeFileSync(file, stringify(setup));
    expect((await applySetup(readSetupFile(file), offlineSetupKinds(testConfig(stack.raw)), { offline: true })).counts.created).toBe(2);
  });

  it('log entries expire after the retention', async () => {
    const short = await startTestOutrigger({ ...stack.raw, service: { id: 'wh-admin-retention' }, webhooks: { ...stack.raw.webhooks, logRetentionSeconds: 2 } }, { worker: true });
    try {
      const hook = await call(short.url, '/_admin/webhooks', {
        method: 'POST',
        auth: ROOT,
        body: { _id: 'expiring', name: 'expiring', type: 'http', condition: 'true', url: `${stack.target.url}/expiring` },
      });
      expect(hook.status).toBe(201);
      await untilKnown([short], 'expiring');
      await call(short.url, '/shop/orders', { method: 'POST', body: { n: 1 } });
      const logs = await waitFor(
        async () => (await call(short.url, '/_admin/webhooks/expiring/logs', { auth: ROOT })).json,
        (l) => l.length === 1,
        5000,
        'a log entry',
      );
      const key = `${short.context.keys.webhookLogEntry(logs[0]._id)}`;
      const ttl = await stack.redis.client.pttl(key);
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(2000);
      await sleep(2300);
      expect((await call(short.url, '/_admin/webhooks/expiring/logs', { auth: ROOT })).json).toEqual([]);
      expect(await stack.redis.client.exists(key)).toBe(0);
      expect(await stack.redis.client.exists(short.context.keys.webhookLogIndex('expiring'))).toBe(0);
      expect(webhooksOf(short).internals.logs.retentionMs).toBe(2000);
    } finally {
      await short.stop();
    }
  });
});
