import type { IncomingMessage, ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call } from '../../support/clients/http-client.js';
import { as, useStack } from '../../support/fixtures.js';
import { startOtlpReceiver, type OtlpReceiver } from '../../support/peers/otlp-receiver.js';
import { waitFor } from '../../support/wait.js';

/**
 * Issue 34 item 9, the proxy's lower edges: identity headers spelled with underscores, a
 * projected write answered without a body, span attributes carrying request bytes, and a
 * client choosing whether it is traced. Each row failed on the code before its fix.
 */
for (const name of Object.keys(process.env)) if (name.startsWith('OTEL_')) delete process.env[name];

const CLIENT_SPAN = '00f067aa0ba902b7';

function recordingUpstream() {
  const seen: Array<{ method: string; url: string; rawHeaders: string[]; headers: IncomingMessage['headers'] }> = [];
  const handler = (req: IncomingMessage, res: ServerResponse) => {
    seen.push({ method: req.method!, url: req.url!, rawHeaders: req.rawHeaders, headers: req.headers });
    req.resume();
    req.on('end', () => {
      // RESTHeart answers a write with 201/200 and no body (a JSON content type all the same).
      if (req.method === 'POST' || req.method === 'PATCH') return void res.writeHead(req.method === 'POST' ? 201 : 200, { 'content-type': 'application/json', location: '/shop/orders/1' }).end();
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true,"secret":"s"}');
    });
  };
  return { seen, handler };
}

describe('identity headers with underscores, projected writes with no body', () => {
  const upstream = recordingUpstream();
  const stack = useStack({
    service: 'proxy-edges',
    upstream: upstream.handler,
    users: { root: ['root'], alice: ['user'] },
    permissions: { shop: { predicate: 'path-prefix(/shop)', roles: ['user'], priority: 1, mongo: { projectResponse: { secret: 0 } } } },
    config: { upstream: { identity: { mode: 'headers' } } },
  });

  it('X_Forwarded_User-style spellings of the identity and forwarding headers never reach the backend', async () => {
    const res = await call(stack.proxy.url, '/shop/orders', {
      auth: as('alice'),
      headers: { X_Forwarded_User: 'root', x_forwarded_roles: 'root', 'X-Forwarded_User': 'root', X_Forwarded_For: '10.9.9.9', x_forwarded_host: 'evil.test' },
    });
    expect(res.status).toBe(200);
    const sent = upstream.seen.at(-1)!;
    const names = sent.rawHeaders.filter((_, i) => i % 2 === 0).map((n) => n.toLowerCase());
    expect(names.filter((n) => n.includes('_'))).toEqual([]);
    expect(sent.headers['x-forwarded-user']).toBe('alice');
    expect(sent.rawHeaders).not.toContain('root');
    expect(sent.rawHeaders).not.toContain('10.9.9.9');
    // Other headers with underscores pass as they came.
    await call(stack.proxy.url, '/shop/orders', { auth: as('alice'), headers: { x_custom_thing: 'kept' } });
    expect(upstream.seen.at(-1)!.headers['x_custom_thing']).toBe('kept');
  });

  it.each([
    ['POST', 201],
    ['PATCH', 200],
  ] as const)("a %s under projectResponse answered with no body gets the backend's %i, not 502", async (method, status) => {
    const before = upstream.seen.length;
    const res = await call(stack.proxy.url, '/shop/orders', { method, auth: as('alice'), body: { n: 1 } });
    expect(res.status).toBe(status);
    expect(res.text).toBe('');
    expect(res.headers.location).toBe('/shop/orders/1');
    // Applied once: the client has no reason to retry.
    expect(upstream.seen.slice(before).filter((s) => s.method === method)).toHaveLength(1);
  });

  it('a read under projectResponse is still projected', async () => {
    const res = await call(stack.proxy.url, '/shop/orders', { auth: as('alice') });
    expect(res.json).toEqual({ ok: true });
  });
});

describe('span attributes from the request, and a client-sent sampled flag', () => {
  let receiver: OtlpReceiver;
  beforeAll(async () => {
    receiver = await startOtlpReceiver();
  });
  afterAll(() => receiver.close());
  const upstream = recordingUpstream();
  const stack = useStack({
    service: 'proxy-edges-traces',
    upstream: upstream.handler,
    users: { alice: ['user'] },
    config: () => ({ acl: { mode: 'own-routes' }, telemetry: { clientSampledFlag: 'ignore', otlp: { endpoint: receiver.url, protocol: 'http/json' } } }),
  });
  const spansOf = (traceId: string, count: number) =>
    waitFor(
      () => receiver.spans.filter((s) => s.traceId === traceId),
      (s) => s.length >= count,
      10_000,
    );

  it('path parameters are redacted in url.path and url.full as the query is left out, and request values are bounded', async () => {
    const trace = 'bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb1';
    const long = 'a'.repeat(6000);
    const res = await call(stack.proxy.url, `/things/${long};jsessionid=SECRET-SESSION?token=q`, {
      headers: { traceparent: `00-${trace}-${CLIENT_SPAN}-01`, host: `${'h'.repeat(3000)}.test` },
    });
    expect(res.status).toBe(200);
    const spans = await spansOf(trace, 2);
    const text = JSON.stringify(spans.map((s) => s.attributes));
    expect(text).not.toContain('SECRET-SESSION');
    const server = spans.find((s) => s.kind === 2)!;
    const client = spans.find((s) => s.kind === 3)!;
    for (const value of [...Object.values(server.attributes), ...Object.values(client.attributes)]) if (typeof value === 'string') expect(value.length).toBeLessThanOrEqual(1024);
    expect(String(server.attributes['url.path'])).toMatch(/^\/things\/a+/);
  });

  it("telemetry.clientSampledFlag: ignore: a client's unsampled flag does not keep its request out of the traces (its trace id is kept)", async () => {
    const trace = 'ccccccccccccccccccccccccccccccc1';
    const res = await call(stack.proxy.url, '/things/x', { headers: { traceparent: `00-${trace}-${CLIENT_SPAN}-00` } });
    expect(res.status).toBe(200);
    expect(String(upstream.seen.at(-1)!.headers.traceparent)).toMatch(new RegExp(`^00-${trace}-[0-9a-f]{16}-01$`));
    expect((await spansOf(trace, 2)).length).toBeGreaterThanOrEqual(2);
  });
});
