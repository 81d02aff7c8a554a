/**
 * SPEC §9 with GraphQL mutations (§6.4): each backend write is a client span of the GraphQL
 * request carrying its traceparent, and the webhook delivery the write causes is a span in the
 * same trace, its POST carrying traceparent of the attempt span.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, untilKnown } from '../webhooks/webhooks-helpers.js';
import { as, ROOT, useStack } from '../../support/fixtures.js';
import { mutationApp, mutationData, putMutationPermissions } from '../graphql/graphql-mutations-helpers.js';
import { startOtlpReceiver, type OtlpReceiver } from '../../support/peers/otlp-receiver.js';
import { waitFor } from '../../support/wait.js';

for (const name of Object.keys(process.env)) if (name.startsWith('OTEL_')) delete process.env[name];
const eventually = <T>(read: () => T | undefined, timeoutMs = 15_000): Promise<T> => waitFor(read, (v) => v !== undefined, timeoutMs) as Promise<T>;

describe('traces: a GraphQL mutation, its backend write and the delivery it causes, in one trace', () => {
  let receiver: OtlpReceiver;
  beforeAll(async () => {
    receiver = await startOtlpReceiver();
  });
  afterAll(() => receiver.close());
  const stack = useStack({
    service: 'trace-mutations',
    backend: { data: mutationData() },
    jwtIdentity: true,
    target: true,
    users: { root: ['root'], alice: ['writer'] },
    config: () => ({
      acl: { mode: 'enforce' },
      telemetry: { otlp: { endpoint: receiver.url, protocol: 'http/json' } },
      webhooks: { allowPrivateTargets: ['127.0.0.0/8'] },
    }),
    outrigger: { worker: true },
  });

  it('write span → backend traceparent; delivery span under the GraphQL server span → target traceparent', async () => {
    await putMutationPermissions(stack.proxy.url, ROOT);
    expect((await call(stack.proxy.url, '/gql-apps/writes', { method: 'PUT', auth: ROOT, body: mutationApp() })).status).toBe(201);
    const created = await call(stack.proxy.url, '/_admin/webhooks', {
      method: 'POST',
      auth: ROOT,
      body: { name: 'new orders', type: 'http', condition: "path-prefix('/shop/orders') and method(POST)", url: `${stack.target.url}/orders` },
    });
    expect(created.status).toBe(201);
    await untilKnown([stack.proxy], created.json._id);

    const trace = '44444444444444444444444444444444';
    const res = await call(stack.proxy.url, '/graphql/writes', {
      method: 'POST',
      auth: as('alice'),
      headers: { traceparent: `00-${trace}-00f067aa0ba902b7-01`, accept: 'application/graphql-response+json' },
      body: { query: 'mutation { createOrder(number: 950, total: 9) { number } }' },
    });
    expect(res.json.data.createOrder).toEqual({ number: 950 });
    const write = stack.backend.requests.find((r) => r.method === 'POST' && r.path === '/shop/orders')!;
    const backendParent = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/.exec(String(write.headers.traceparent));
    expect(backendParent?.[1]).toBe(trace);

    const delivered = await eventually(() => stack.target.on('/orders')[0]);
    const targetParent = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/.exec(String(delivered.headers.traceparent));
    expect(targetParent?.[1]).toBe(trace);

    const spans = await eventually(() => {
      const s = receiver.spans.filter((x) => x.traceId === trace);
      return s.some((x) => x.name === 'webhook deliver new orders') && s.some((x) => x.kind === 2) ? s : undefined;
    });
    const server = spans.find((s) => s.kind === 2)!;
    const writeSpan = spans.find((s) => s.name === 'POST shop/orders')!;
    expect(writeSpan).toMatchObject({ kind: 3, parentSpanId: server.spanId, spanId: backendParent![2] });
    expect(writeSpan.attributes).toMatchObject({ 'http.request.method': 'POST', 'http.response.status_code': 201 });
    const delivery = spans.find((s) => s.name === 'webhook deliver new orders')!;
    expect(delivery).toMatchObject({ parentSpanId: server.spanId, spanId: targetParent![2] });
  });
});
