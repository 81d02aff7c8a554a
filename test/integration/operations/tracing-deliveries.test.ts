/**
 * SPEC §9 beyond the pass-through: a GraphQL request's backend reads, a webhook delivery with
 * its retry and a resend in the originating request's trace (the target receiving traceparent
 * of each attempt span), no secret in any exported attribute, and a collector that refuses or
 * hangs changing no answer and no latency (drops counted, one warning).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call } from '../../support/clients/http-client.js';
import { as, ROOT, useStack } from '../../support/fixtures.js';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../../support/peers/otlp-receiver.js';
import { waitFor } from '../../support/wait.js';

for (const name of Object.keys(process.env)) if (name.startsWith('OTEL_')) delete process.env[name];

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-0[01]$/;
const eventually = <T>(read: () => T | undefined | Promise<T | undefined>, timeoutMs = 15_000): Promise<T> => waitFor(read, (v) => v !== undefined, timeoutMs) as Promise<T>;
const parse = (header: unknown) => {
  const m = TRACEPARENT.exec(String(header));
  expect(m, `a valid traceparent, got ${String(header)}`).not.toBeNull();
  return { traceId: m![1]!, spanId: m![2]! };
};
const header = (trace: string) => `00-${trace}-00f067aa0ba902b7-01`;

describe('traces: GraphQL, webhook deliveries, secrets, a collector in trouble', () => {
  let receiver: OtlpReceiver;
  beforeAll(async () => {
    receiver = await startOtlpReceiver();
  });
  afterAll(() => receiver.close());
  let flakyCalls = 0;
  const stack = useStack({
    service: 'trace-all',
    jwtIdentity: true,
    backend: { data: { shop: { products: [{ _id: 'p1', name: 'anchor', price: 3 }], orders: [] } } },
    target: (req) => (req.url === '/flaky' && ++flakyCalls === 1 ? { status: 503, body: 'busy' } : { status: 200, body: 'ok' }),
    users: { root: ['root'], alice: ['user'] },
    captureLogs: 'info',
    outrigger: { worker: true },
    config: () => ({
      acl: { mode: 'own-routes' },
      telemetry: { otlp: { endpoint: receiver.url, timeoutMs: 500 }, maxQueueSize: 200 },
      webhooks: { allowPrivateTargets: ['127.0.0.0/8'], retrySchedule: ['300ms'] },
    }),
    permissions: { keys: { predicate: 'path-prefix(/keys)', roles: ['user'], priority: 1, apiKeys: { roles: ['user'] } } },
    apps: {
      audit: {
        descriptor: { uri: 'audit' },
        schema: 'type Product { name: String, price: Int } type Query { products: [Product] }',
        mappings: { Query: { products: { db: 'shop', collection: 'products' } } },
      },
    },
  });
  const spansOf = (trace: string) => receiver.spans.filter((s) => s.traceId === trace);
  const secrets: string[] = ['root-password', 'alice-password', ROOT.slice(6), as('alice').slice(6)];

  it('a GraphQL request: server span → authenticate, authorize, one client span per backend read, whose id the backend receives', async () => {
    const trace = '11111111111111111111111111111111';
    stack.backend.clearRequests();
    const res = await call(stack.proxy.url, '/graphql/audit', {
      method: 'POST',
      auth: ROOT,
      headers: { traceparent: header(trace), accept: 'application/graphql-response+json' },
      body: { query: '{ products { name price } }' },
    });
    expect(res.status, res.text).toBe(200);
    expect(res.json.data.products).toEqual([{ name: 'anchor', price: 3 }]);
    const read = stack.backend.requests.find((r) => r.path === '/shop/products')!;
    const backend = parse(read.headers.traceparent);
    expect(backend.traceId).toBe(trace);

    const spans = await eventually(() => {
      const s = spansOf(trace);
      return s.some((x) => x.name === 'GET shop/products') && s.some((x) => x.kind === 2) ? s : undefined;
    });
    const server = spans.find((s) => s.kind === 2)!;
    expect(server.name).toBe('POST /graphql');
    expect(server.attributes).toMatchObject({ 'http.route': '/graphql', 'outrigger.route': 'graphql', 'http.response.status_code': 200 });
    const children = spans.filter((s) => s.parentSpanId === server.spanId).map((s) => s.name);
    expect(children).toEqual(expect.arrayContaining(['authenticate', 'authorize', 'GET shop/products']));
    const readSpan = spans.find((s) => s.name === 'GET shop/products')!;
    expect(readSpan.kind).toBe(3);
    expect(backend.spanId).toBe(readSpan.spanId);
    expect(readSpan.attributes).toMatchObject({ 'http.request.method': 'GET', 'http.response.status_code': 200 });
  });

  let hookSecret = '';
  it('a webhook delivery and its retry are spans in the request’s trace; the target receives traceparent of each attempt; a resend joins too', async () => {
    const created = await call(stack.proxy.url, '/_admin/webhooks', {
      method: 'POST',
      auth: ROOT,
      body: { name: 'orders out', type: 'http', condition: "method(POST) and path('/shop/orders')", url: `${stack.target.url}/flaky` },
    });
    expect(created.status, created.text).toBe(201);
    hookSecret = created.json.secret;
    const hookId = created.json._id;
    secrets.push(hookSecret);
    await new Promise((r) => setTimeout(r, 300)); // the definition reaches the observer by pub/sub

    const trace = '22222222222222222222222222222222';
    const res = await call(stack.proxy.url, '/shop/orders', { method: 'POST', auth: ROOT, headers: { traceparent: header(trace) }, body: { item: 'rope' } });
    expect(res.status).toBeLessThan(300);

    const got = await eventually(() => (stack.target.on('/flaky').length >= 2 ? stack.target.on('/flaky') : undefined));
    const attempts = got.map((r) => parse(r.headers.traceparent));
    expect(attempts.map((a) => a.traceId)).toEqual([trace, trace]);
    expect(attempts[0]!.spanId).not.toBe(attempts[1]!.spanId);

    const spans = await eventually(() => {
      const s = spansOf(trace);
      return s.filter((x) => x.name === 'webhook deliver orders out').length >= 2 && s.some((x) => x.kind === 2) ? s : undefined;
    });
    const server = spans.find((s) => s.kind === 2)!;
    const deliveries = spans
      .filter((s) => s.name === 'webhook deliver orders out')
      .sort((a, b) => Number(a.attributes['outrigger.webhook.attempt']) - Number(b.attributes['outrigger.webhook.attempt']));
    for (const d of deliveries) expect(d.parentSpanId).toBe(server.spanId);
    expect(deliveries.map((d) => d.spanId)).toEqual(attempts.map((a) => a.spanId));
    expect(deliveries[0]!.attributes).toMatchObject({ 'outrigger.webhook.id': hookId, 'outrigger.webhook.attempt': 1, 'http.response.status_code': 503, 'server.address': '127.0.0.1' });
    expect(deliveries[0]!.statusCode).toBe(2);
    expect(deliveries[1]!.attributes).toMatchObject({ 'outrigger.webhook.attempt': 2, 'http.response.status_code': 200 });
    expect(deliveries[0]!.attributes['outrigger.event.id']).toBe(deliveries[1]!.attributes['outrigger.event.id']);
    expect(spans.some((s) => s.name === 'webhook tee' && s.parentSpanId === server.spanId)).toBe(true);

    // Resend the first (failed) attempt from its log entry: a third attempt, same trace.
    const logs = await call(stack.proxy.url, `/_admin/webhooks/${hookId}/logs?status=failed`, { auth: ROOT });
    const resend = await call(stack.proxy.url, `/_admin/webhooks/${hookId}/logs/${logs.json[0]._id}/resend`, { method: 'POST', auth: ROOT });
    expect(resend.status, resend.text).toBeLessThan(300);
    const third = await eventually(() => stack.target.on('/flaky')[2]);
    expect(parse(third.headers.traceparent).traceId).toBe(trace);
    await eventually(() => (spansOf(trace).filter((x) => x.name === 'webhook deliver orders out').length >= 3 ? true : undefined));
  });

  it('no exported attribute holds a secret (API key, passwords, Basic credentials, the webhook secret)', async () => {
    const issued = await call(stack.proxy.url, '/keys', { method: 'POST', auth: as('alice'), body: { name: 'laptop', roles: ['user'] } });
    expect(issued.status, issued.text).toBe(201);
    const key: string = issued.json.key;
    secrets.push(key);
    const trace = '33333333333333333333333333333333';
    await call(stack.proxy.url, '/shop/products?apikey-like=nothing', { headers: { authorization: `Bearer ${key}`, traceparent: header(trace), cookie: 'sid=cookie-secret' } });
    secrets.push('cookie-secret');
    await eventually(() => (spansOf(trace).some((s) => s.kind === 2) ? true : undefined));
    expect(receiver.spans.length).toBeGreaterThan(10);
    const everything = (s: ReceivedSpan) => JSON.stringify([s.name, s.attributes, s.resource]);
    for (const span of receiver.spans) for (const secret of secrets) expect(everything(span), `span ${span.name}`).not.toContain(secret);
  });

  async function timed(n: number): Promise<number[]> {
    const times: number[] = [];
    for (let i = 0; i < n; i++) {
      const t0 = performance.now();
      const res = await call(stack.proxy.url, '/shop/products', { auth: ROOT });
      times.push(performance.now() - t0);
      expect(res.status).toBe(200);
    }
    return times.sort((a, b) => a - b);
  }
  const median = (t: number[]) => t[Math.floor(t.length / 2)]!;
  const dropped = async () => Number(/outrigger_trace_spans_dropped_total (\d+)/.exec((await call(stack.proxy.url, '/_metrics')).text)?.[1] ?? 0);

  it('a collector that refuses, then one that hangs, changes no answer and no latency; drops are counted and warned once', async () => {
    const baseline = await timed(40);
    receiver.mode = 'refuse';
    const refusing = await timed(40);
    await eventually(async () => ((await dropped()) > 0 ? true : undefined));
    receiver.mode = 'hang';
    const hanging = await timed(40);
    await new Promise((r) => setTimeout(r, 2500));
    const hangingLater = await timed(40);
    // Relative to the same requests with the collector accepting (issue 40), with a margin for a
    // loaded machine: the median below the export timeout (500 ms), which a request that waited
    // for a hung collector would take; the 90th percentile too, so a few slow requests (a busy
    // machine's) pass and a tenth of them waiting does not. The slowest is printed, not bounded.
    const p90 = (t: number[]) => t[Math.floor(t.length * 0.9)]!;
    const bound = Math.min(median(baseline) * 3 + 100, 450);
    const tailBound = p90(baseline) * 3 + 200;
    const ms = (t: number[]) => `${median(t).toFixed(1)} (p90 ${p90(t).toFixed(0)}, max ${t.at(-1)!.toFixed(0)})`;
    console.log(`median ms: accepting ${ms(baseline)}, refusing ${ms(refusing)}, hanging ${ms(hanging)}, hanging 2.5 s on ${ms(hangingLater)}`);
    for (const t of [refusing, hanging, hangingLater]) {
      expect(median(t)).toBeLessThan(bound);
      expect(p90(t)).toBeLessThan(tailBound);
    }
    const before = await dropped();
    await eventually(async () => ((await dropped()) > before ? true : undefined));
    const warnings = stack.logLines.filter((l) => typeof l.msg === 'string' && l.msg.startsWith('trace spans are being dropped'));
    expect(warnings).toHaveLength(1);
    expect(JSON.stringify(warnings[0])).not.toContain('authorization');
    receiver.mode = 'accept';
  });
});
