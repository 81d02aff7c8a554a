/**
 * SPEC §9 on the pass-through path: W3C propagation with and without an exporter, the span tree
 * of a proxied request exported over OTLP/HTTP in JSON and in protobuf to an in-test receiver,
 * and a collector that refuses or hangs changing no answer and no latency (drops counted).
 */
import type { IncomingHttpHeaders } from 'node:http';
import { beforeAll, afterAll, describe, expect, it } from 'vitest';
import { call } from '../../support/clients/http-client.js';
import { as, useStack } from '../../support/fixtures.js';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../../support/peers/otlp-receiver.js';
import { waitFor } from '../../support/wait.js';

/** The first value `read` gives that is not undefined. */
const eventually = <T>(read: () => T | undefined, timeoutMs = 10_000): Promise<T> => waitFor(read, (v) => v !== undefined, timeoutMs) as Promise<T>;

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-0[01]$/;
const CLIENT_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CLIENT_SPAN = '00f067aa0ba902b7';
const CLIENT_HEADER = `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01`;

for (const name of Object.keys(process.env)) if (name.startsWith('OTEL_')) delete process.env[name];

/** The upstream: answers 200 and remembers each request's headers. */
function recordingUpstream() {
  const seen: IncomingHttpHeaders[] = [];
  const handler = (req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse) => {
    seen.push(req.headers);
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}'));
  };
  return { seen, handler };
}

const parse = (header: unknown) => {
  const m = TRACEPARENT.exec(String(header));
  expect(m, `a valid traceparent, got ${String(header)}`).not.toBeNull();
  return { traceId: m![1]!, spanId: m![2]!, sampled: String(header).endsWith('-01') };
};

describe('traces: propagation without an exporter', () => {
  const upstream = recordingUpstream();
  const stack = useStack({ service: 'trace-prop', upstream: upstream.handler, users: { alice: ['user'] }, config: { acl: { mode: 'own-routes' } }, captureLogs: 'debug' });

  it("passes the client's traceparent, tracestate and baggage to the backend unchanged, exactly once each", async () => {
    const res = await call(stack.proxy.url, '/things', { headers: { traceparent: CLIENT_HEADER, tracestate: 'vendor=abc', baggage: 'k=v' } });
    expect(res.status).toBe(200);
    const h = upstream.seen.at(-1)!;
    expect(h.traceparent).toBe(CLIENT_HEADER);
    expect(h.tracestate).toBe('vendor=abc');
    expect(h.baggage).toBe('k=v');
  });

  it('starts a trace when the client sends none (a new trace id per request), and for an invalid one', async () => {
    await call(stack.proxy.url, '/a');
    await call(stack.proxy.url, '/b', { headers: { traceparent: '00-00000000000000000000000000000000-00f067aa0ba902b7-01' } });
    const [first, second] = upstream.seen.slice(-2).map((h) => parse(h.traceparent));
    expect(first!.traceId).not.toBe(second!.traceId);
    expect(first!.sampled).toBe(true);
  });

  it("the request's log line carries its trace id", async () => {
    await call(stack.proxy.url, '/logged', { headers: { traceparent: CLIENT_HEADER } });
    const line = await eventually(() => stack.logLines.find((l) => l.msg === 'request' && l.req?.path === '/logged'), 5000);
    expect(line.trace_id).toBe(CLIENT_TRACE);
  });

  it('a Basic users lookup at the backend carries the trace too', async () => {
    // users.source: upstream sends GET /roles/{id} with the caller's Basic header (this upstream answers no roles: 502).
    const other = await stack.start({ users: { source: 'upstream', static: [] }, upstream: { url: stack.upstreamUrl } });
    await call(other.url, '/x', { auth: as('alice'), headers: { traceparent: CLIENT_HEADER } });
    const roleLookup = upstream.seen.filter((h) => h.authorization === as('alice')).at(-1);
    expect(roleLookup?.traceparent).toBe(CLIENT_HEADER);
  });
});

function spansOf(receiver: OtlpReceiver, traceId: string): ReceivedSpan[] {
  return receiver.spans.filter((s) => s.traceId === traceId);
}

for (const protocol of ['http/json', 'http/protobuf'] as const) {
  describe(`traces: a proxied request exported over OTLP ${protocol}`, () => {
    let receiver: OtlpReceiver;
    beforeAll(async () => {
      receiver = await startOtlpReceiver();
    });
    afterAll(() => receiver.close());
    const upstream = recordingUpstream();
    const stack = useStack({
      service: `trace-${protocol.slice(5)}`,
      upstream: upstream.handler,
      users: { root: ['root'], alice: ['user'] },
      permissions: { things: { predicate: 'path-prefix(/things)', roles: ['user'], priority: 1 } },
      config: () => ({ telemetry: { serviceName: 'rig-under-test', otlp: { endpoint: receiver.url, protocol } } }),
    });

    it('client → server span → authenticate, authorize, upstream client span → backend, in one trace', async () => {
      const res = await call(stack.proxy.url, '/things/1', { auth: as('alice'), headers: { traceparent: CLIENT_HEADER, tracestate: 'vendor=abc' } });
      expect(res.status).toBe(200);
      const backend = parse(upstream.seen.at(-1)!.traceparent);
      expect(backend.traceId).toBe(CLIENT_TRACE);
      expect(backend.sampled).toBe(true);
      expect(upstream.seen.at(-1)!.tracestate).toBe('vendor=abc');

      const spans = await eventually(() => {
        const s = spansOf(receiver, CLIENT_TRACE);
        return s.length >= 4 ? s : undefined;
      }, 10_000);
      expect(spans.every((s) => s.encoding === (protocol === 'http/json' ? 'json' : 'protobuf'))).toBe(true);
      const server = spans.find((s) => s.kind === 2)!;
      expect(server.parentSpanId).toBe(CLIENT_SPAN);
      expect(server.resource['service.name']).toBe('rig-under-test');
      expect(server.attributes).toMatchObject({ 'http.request.method': 'GET', 'url.path': '/things/1', 'http.response.status_code': 200, 'outrigger.route': 'proxy' });
      const children = spans.filter((s) => s.parentSpanId === server.spanId);
      expect(children.map((s) => s.name).sort()).toEqual(['GET upstream', 'authenticate', 'authorize']);
      const client = children.find((s) => s.name === 'GET upstream')!;
      expect(client.kind).toBe(3);
      // The backend's parent is Outrigger's client span.
      expect(backend.spanId).toBe(client.spanId);
      expect(client.attributes).toMatchObject({ 'http.request.method': 'GET', 'server.address': '127.0.0.1', 'http.response.status_code': 200 });
      expect(children.find((s) => s.name === 'authenticate')!.attributes).toMatchObject({ 'outrigger.auth.via': 'basic' });
      expect(children.find((s) => s.name === 'authorize')!.attributes).toMatchObject({ 'outrigger.acl.allowed': true, 'outrigger.acl.permission': 'things' });
    });

    it("respects a client's unsampled flag: the backend gets the trace, unsampled, and nothing is exported", async () => {
      const trace = 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa1';
      await call(stack.proxy.url, '/things/2', { auth: as('alice'), headers: { traceparent: `00-${trace}-${CLIENT_SPAN}-00` } });
      const backend = parse(upstream.seen.at(-1)!.traceparent);
      expect(backend).toMatchObject({ traceId: trace, sampled: false });
      await call(stack.proxy.url, '/things/3', { auth: as('alice') }); // flushed in the same or a later batch
      await new Promise((r) => setTimeout(r, 1500));
      expect(spansOf(receiver, trace)).toEqual([]);
    });
  });
}
