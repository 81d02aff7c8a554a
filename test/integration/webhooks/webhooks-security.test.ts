import { afterAll, describe, expect, it } from 'vitest';
import { buildConnector } from 'undici';
import { createLogger } from '../../../src/observability/logger.js';
import { Deliverer } from '../../../src/webhooks/deliver/attempt/deliverer.js';
import { EmailAllowance } from '../../../src/webhooks/deliver/attempt/email-allowance.js';
import { webhookValidator } from '../../../src/webhooks/documents/index.js';
import type { HostLookup } from '../../../src/net/ssrf-guard/index.js';
import type { WebhookDocument } from '../../../src/webhooks/webhook.js';
import { decodeStreamRecord } from '../../../src/webhooks/stream-record.js';
import { type TestRedis } from '../../support/redis/redis.js';
import { basic, startTestOutrigger, testConfig } from '../../support/outrigger.js';
import { call, untilKnown, waitFor, webhooksOf } from './webhooks-helpers.js';
import { ROOT, type Running, useStack } from '../../support/fixtures.js';

/** Every value stored under a key prefix, as text (strings, hashes, lists, sorted sets, streams). */
async function dumpRedis(redis: TestRedis, match: string): Promise<string> {
  const out: string[] = [];
  let cursor = '0';
  do {
    const [next, keys] = await redis.client.scan(cursor, 'MATCH', match, 'COUNT', 500);
    cursor = next;
    for (const key of keys) {
      const type = await redis.client.type(key);
      if (type === 'string') out.push(key, (await redis.client.get(key)) ?? '');
      else if (type === 'hash') out.push(key, JSON.stringify(await redis.client.hgetall(key)));
      else if (type === 'list') out.push(key, JSON.stringify(await redis.client.lrange(key, 0, -1)));
      else if (type === 'zset') out.push(key, JSON.stringify(await redis.client.zrange(key, 0, -1)));
      else if (type === 'set') out.push(key, JSON.stringify(await redis.client.smembers(key)));
      else if (type === 'stream') out.push(key, JSON.stringify(await redis.client.xrange(key, '-', '+')));
    }
  } while (cursor !== '0');
  return out.join('\n');
}

describe('webhooks: SSRF guard at write and at send, and no secrets in events, payloads, recordings or logs', () => {
  const stack = useStack({
    upstream: (req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'application/json', 'set-cookie': 'session=setcookie-secret-value; HttpOnly', 'auth-token': 'backend-token-secret-value' });
        res.end(JSON.stringify({ ok: true, path: req.url }));
      });
    },
    target: true,
    users: { root: ['root'], alice: ['user'] },
    config: { acl: { mode: 'own-routes' }, log: { secretHeaders: ['X-Api-Secret'] } },
    outrigger: false,
  });
  const running: Running[] = [];
  afterAll(async () => {
    for (const r of running) await r.stop().catch(() => {});
  });
  const ALICE = basic('alice', 'alice-password');

  it('refuses loopback, private, link-local and IPv4-mapped targets and names resolving to loopback when a webhook is written', async () => {
    const proxy = await startTestOutrigger({ ...stack.raw, service: { id: 'wh-ssrf-write' } });
    running.push(proxy);
    const cases: Array<[string, string]> = [
      [`http://127.0.0.1:${stack.target.port}/hook`, '127.0.0.1 (loopback'],
      ['http://10.0.0.1/hook', '10.0.0.1 (private'],
      ['http://169.254.169.254/latest/meta-data/', '169.254.169.254 (link-local'],
      [`http://[::ffff:127.0.0.1]:${stack.target.port}/hook`, 'loopback'],
      [`http://localhost:${stack.target.port}/hook`, 'resolves to'],
    ];
    for (const [url, reason] of cases) {
      const res = await call(proxy.url, '/_admin/webhooks', { method: 'POST', auth: ROOT, body: { name: 'ssrf', type: 'http', condition: 'true', url } });
      expect(res.status, url).toBe(400);
      expect(res.json.message, url).toContain('url: webhook target');
      expect(res.json.message, url).toContain(reason);
      expect(res.json.message, url).toContain('webhooks.allowPrivateTargets');
    }
    expect((await call(proxy.url, '/_admin/webhooks', { auth: ROOT })).json).toEqual([]);
    // A name that resolves to loopback through DNS (injected resolver: nothing leaves the machine).
    const lookup: HostLookup = async () => [{ address: '127.0.0.2', family: 4 }];
    const validate = webhookValidator(testConfig({ ...stack.raw, service: { id: 'x' } }), { lookup });
    const result = await validate({ name: 'n', type: 'http', condition: 'true', url: 'https://hooks.attacker.example/x' }, undefined);
    expect(result.ok).toBe(false);
    expect(!result.ok && result.problems.join()).toContain('hooks.attacker.example" resolves to 127.0.0.2');
    expect(stack.target.received).toHaveLength(0);
  });

  it('refuses them again when sending: every resolved address is checked and only a checked one is connected to', async () => {
    // A webhook saved while 127.0.0.0/8 was allowed; the allowance is then removed from the config.
    const allowed = await startTestOutrigger({ ...stack.raw, service: { id: 'wh-ssrf-send' }, webhooks: { allowPrivateTargets: ['127.0.0.0/8'] } });
    const saved = await call(allowed.url, '/_admin/webhooks', {
      method: 'POST',
      auth: ROOT,
      body: { _id: 'was-allowed', name: 'n', type: 'http', condition: 'true', url: `${stack.target.url}/was-allowed` },
    });
    expect(saved.status).toBe(201);
    await allowed.stop();
    const proxy = await startTestOutrigger({ ...stack.raw, service: { id: 'wh-ssrf-send' } }, { worker: true });
    running.push(proxy);
    await untilKnown([proxy], 'was-allowed');
    await call(proxy.url, '/some/thing', { method: 'POST', body: { a: 1 } });
    const [entry] = await waitFor(
      async () => (await call(proxy.url, '/_admin/webhooks/was-allowed/logs', { auth: ROOT })).json,
      (l) => l.length === 1,
      5000,
      'the refusal',
    );
    expect(entry).toMatchObject({ status: 'failed', attempt: 1, summary: { statusCode: null } });
    expect(entry.summary.error).toContain('127.0.0.1 (loopback');
    expect(entry.nextAttemptAt).toBeUndefined(); // final, never retried
    expect(stack.target.on('/was-allowed')).toHaveLength(0);

    // The delivery code itself, for addresses a stored document could hold (hand-edited, or
    // resolved differently later: DNS rebinding). Connects are watched and refused if they ever happen.
    const connects: string[] = [];
    const realConnector = buildConnector({});
    const watching: buildConnector.connector = (options, callback) => {
      connects.push(options.hostname);
      if (!options.hostname.startsWith('127.')) return callback(new Error(`test guard: refused to connect to ${options.hostname}`), null);
      return realConnector(options, callback);
    };
    let rebinding = 0;
    const lookup: HostLookup = async (name) => {
      if (name === 'rebinding.example') return rebinding++ === 0 ? [{ address: '93.184.216.34', family: 4 }] : [{ address: '127.0.0.1', family: 4 }];
      if (name === 'mixed.example')
        return [
          { address: '93.184.216.34', family: 4 },
          { address: '10.1.2.3', family: 4 },
        ];
      throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
    };
    const config = testConfig({ ...stack.raw, service: { id: 'wh-ssrf-unit' } });
    const deliverer = new Deliverer({
      serviceId: 'wh-ssrf-unit',
      webhooks: config.webhooks,
      secretHeaders: [],
      allowance: new EmailAllowance(stack.redis.client, proxy.context.keys, 0),
      logger: createLogger({ level: 'silent' }),
      lookup,
      socketConnector: watching,
    });
    // Written when the name resolved to a public address:
    const validate = webhookValidator(config, { lookup });
    const rebound = await validate({ _id: 'rebound', name: 'n', type: 'http', condition: 'true', url: `http://rebinding.example:${stack.target.port}/rebound` }, undefined);
    expect(rebound.ok).toBe(true);
    const event = {
      id: 'evt_ssrf',
      timestamp: Date.now(),
      serviceId: 'x',
      request: { method: 'GET', path: '/', query: {}, headers: {}, body: null, bodyTruncated: false },
      response: { statusCode: 200, headers: {}, body: null, bodyTruncated: false },
    };
    const docs: WebhookDocument[] = [
      ...['http://127.0.0.1:1/x', 'http://10.0.0.1/x', 'http://169.254.169.254/latest/meta-data/', 'http://[::ffff:127.0.0.1]:1/x', 'http://mixed.example/x'].map(
        (url, i) => ({ ...(rebound.ok ? rebound.doc : ({} as WebhookDocument)), _id: `stored-${i}`, url }) as WebhookDocument,
      ),
      rebound.ok ? rebound.doc : ({} as WebhookDocument),
    ];
    for (const doc of docs) {
      const result = await deliverer.attempt(doc, event, { attempt: 1, condition: { matched: true, reason: 'test' } });
      expect(result.entry.status, (doc as { url: string }).url).toBe('failed');
      expect(result.retryable, (doc as { url: string }).url).toBe(false);
      expect(result.entry.summary.error).toMatch(/which webhooks may not reach/);
    }
    expect(connects).toEqual([]);
    expect(stack.target.on('/rebound')).toHaveLength(0);
    await deliverer.close();
  });

  it('never lets Authorization, Cookie, Set-Cookie, secret headers or an issued key into events, payloads, recordings or logs', async () => {
    const proxy = await startTestOutrigger({ ...stack.raw, service: { id: 'wh-secrets' }, webhooks: { allowPrivateTargets: ['127.0.0.0/8'] } }, { worker: false });
    running.push(proxy);
    const keysPermission = await call(proxy.url, '/_admin/acl/alice-keys', {
      method: 'PUT',
      auth: ROOT,
      body: { predicate: 'path-prefix(/keys)', roles: ['user'], priority: 10, apiKeys: { roles: ['reader'] } },
    });
    expect(keysPermission.status).toBe(201);
    for (const [id, extra] of [
      ['all-default', {}],
      [
        'all-template',
        {
          transform: {
            enabled: true,
            template:
              '{"auth": "{{request.headers.authorization}}", "cookie": "{{request.headers.cookie}}", "setCookie": "{{response.headers.set-cookie}}", "key": "{{response.body.key}}", "whole": {{{response.body}}} }',
          },
        },
      ],
    ] as const) {
      const res = await call(proxy.url, '/_admin/webhooks', { method: 'POST', auth: ROOT, body: { _id: id, name: id, type: 'http', condition: 'true', url: `${stack.target.url}/${id}`, ...extra } });
      expect(res.status, JSON.stringify(res.json)).toBe(201);
    }
    await untilKnown([proxy], 'all-template');
    expect((await call(proxy.url, '/_admin/webhooks/recording', { method: 'POST', auth: ROOT })).status).toBe(201);

    const secretHeaders = { cookie: 'sid=cookie-secret-value', 'x-api-secret': 'header-secret-value', 'proxy-authorization': 'Basic proxy-secret-value' };
    const issued = await call(proxy.url, '/keys', { method: 'POST', auth: ALICE, body: { name: 'my key', roles: ['reader'] }, headers: secretHeaders });
    expect(issued.status, JSON.stringify(issued.json)).toBe(201);
    const key: string = issued.json.key;
    expect(key).toMatch(/^rig_/);
    const viaKey = await call(proxy.url, '/shop/orders?x=1', { auth: `Bearer ${key}`, headers: secretHeaders });
    expect(viaKey.status).toBe(200);
    expect(viaKey.headers['set-cookie']).toBeDefined();
    const viaBasic = await call(proxy.url, '/shop/orders', { method: 'POST', auth: ALICE, body: { note: 'hello' }, headers: secretHeaders });
    expect(viaBasic.status).toBe(200);

    const secrets = [
      key,
      key.slice(4, 30),
      'cookie-secret-value',
      'setcookie-secret-value',
      'header-secret-value',
      'proxy-secret-value',
      'backend-token-secret-value',
      'alice-password',
      Buffer.from('alice:alice-password').toString('base64'),
    ];
    const expectNoSecret = (text: string, where: string) => {
      for (const secret of secrets) expect(text.includes(secret), `${where} holds ${secret}`).toBe(false);
    };

    // Events: no worker runs yet, so they wait in the stream.
    const events = proxy.context.keys.events;
    await waitFor(
      () => stack.redis.client.xlen(events),
      (n) => n === 3,
      5000,
      'three events in the stream',
    );
    const streamText = JSON.stringify(await stack.redis.client.xrange(events, '-', '+'));
    expectNoSecret(streamText, 'the event stream');
    expect(streamText).toContain('[redacted]');
    const keysEvent = (await stack.redis.client.xrange(events, '-', '+')).map(([, f]) => decodeStreamRecord(f)!).find((r) => r.event.request.path === '/keys')!;
    expect(keysEvent.event.response.body).toEqual({ _id: issued.json._id, name: 'my key', roles: ['reader'], expiresAt: issued.json.expiresAt });
    expect(keysEvent.event.request.headers).toMatchObject({ authorization: '[redacted]', cookie: '[redacted]', 'x-api-secret': '[redacted]', 'proxy-authorization': '[redacted]' });

    // Deliveries: payloads as the targets receive them.
    const worker = webhooksOf(proxy).internals.createWorker();
    worker.start();
    await waitFor(
      () => stack.target.received.length,
      (n) => n === 6,
      10_000,
      'six deliveries',
    );
    for (const r of stack.target.received) expectNoSecret(r.body, `the payload to ${r.url}`);
    const templated = stack.target.on('/all-template').map((r) => JSON.parse(r.body));
    expect(templated.find((p) => p.whole?.path === '/shop/orders?x=1')).toMatchObject({ auth: '[redacted]', cookie: '[redacted]', setCookie: '[redacted]' });
    expect(templated.find((p) => p.whole?.name === 'my key')).toMatchObject({ key: '' });
    await worker.stop();

    // Recordings and logs, as the API answers them and as Redis stores them.
    const recording = await call(proxy.url, '/_admin/webhooks/recording', { auth: ROOT });
    expect(recording.json.requests).toHaveLength(3);
    expectNoSecret(recording.text, 'the recording');
    for (const id of ['all-default', 'all-template']) {
      const logs = await call(proxy.url, `/_admin/webhooks/${id}/logs`, { auth: ROOT });
      expect(logs.json.filter((e: any) => e.status === 'success')).toHaveLength(3);
      expectNoSecret(logs.text, `the logs of ${id}`);
    }
    expectNoSecret(await dumpRedis(stack.redis, `${proxy.context.keys.namespace}*`), 'Redis');
  });
});
