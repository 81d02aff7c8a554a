/**
 * SPEC §13 through the real proxy, against a backend whose latency and faults the test sets:
 * the adaptive limit shrinks when the backend turns 10× slower and the excess is refused at once
 * (503, Retry-After, the error format); the breaker opens on connection failures, answers at once
 * while open and closes after its probes; a GET whose connection was reset is sent again.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { beforeAll, describe, expect, it } from 'vitest';
import { call } from '../../support/clients/http-client.js';
import { as, useStack } from '../../support/fixtures.js';
import { closedLoop, floodUntilLimited, metricValue, useControlledBackend } from '../../support/peers/controlled-backend.js';

const ALICE = as('alice');
const HEALTHY_MS = 40;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}

describe('adaptive concurrency (SPEC §13)', () => {
  const backend = useControlledBackend(HEALTHY_MS);
  const stack = useStack({
    service: 'adaptive',
    users: { alice: ['user'] },
    config: () => ({
      upstream: { url: backend.url, connections: 32, adaptiveConcurrency: { minLimit: 2, sampleWindowMs: 50, minRttPeriodSeconds: 60 } },
      acl: { mode: 'own-routes' },
    }),
  });
  const limit = () => metricValue(stack.proxy.url, 'outrigger_upstream_concurrency_limit');

  it('keeps the whole limit on a healthy backend, shrinks it when the backend is 10× slower and refuses the excess within the short wait', async () => {
    expect((await call(stack.proxy.url, '/warm', { auth: ALICE })).status).toBe(200);
    const healthy = await closedLoop(stack.proxy.url, '/healthy', { workers: 6, ms: 1000, headers: { authorization: ALICE } });
    // Nothing refused, and the limit (a noisy machine may nudge it) stays far above the 6 clients.
    expect([...healthy.statuses.keys()]).toEqual([200]);
    expect(await limit()).toBeGreaterThanOrEqual(16);

    backend.delayMs = 10 * HEALTHY_MS;
    const {
      floods: [slow],
    } = await floodUntilLimited([stack.proxy.url], '/slow', { workers: 16, ms: 5000, headers: { authorization: ALICE }, atMost: 6 });
    // Once the limit has come down (and what it admitted before has been answered), the backend
    // never again sees the 16 clients at once.
    await new Promise((resolve) => setTimeout(resolve, 12 * HEALTHY_MS));
    backend.resetPeak();
    const result = await slow!;
    expect(await limit()).toBeLessThanOrEqual(6);
    expect(backend.peak).toBeLessThanOrEqual(8);
    expect(result.statuses.get(200)).toBeGreaterThan(0);
    expect(result.statuses.get(503)).toBeGreaterThan(0);
    expect([...result.statuses.keys()].sort()).toEqual([200, 503]);
    // Refused within upstream.queueTimeoutMs (100 ms), never after the 400 ms an admitted request takes.
    expect(median(result.latencies.get(503)!)).toBeLessThan(10 * HEALTHY_MS);
    const refusal = result.refusal!;
    expect(refusal.headers['retry-after']).toBe('1');
    expect(JSON.parse(refusal.body)).toMatchObject({ 'http status code': 503, message: expect.stringMatching(/concurrency limit.*upstream\.adaptiveConcurrency/) });
  }, 25_000);

  it('grows the limit back once the backend is healthy again', async () => {
    backend.delayMs = HEALTHY_MS;
    await closedLoop(stack.proxy.url, '/recovered', { workers: 6, ms: 2000, headers: { authorization: ALICE } });
    expect(await limit()).toBeGreaterThanOrEqual(16);
  }, 10_000);
});

describe('circuit breaker (SPEC §13)', () => {
  let port = 0;
  beforeAll(async () => {
    // A port nothing listens on (yet): every connection is refused.
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    port = (probe.address() as AddressInfo).port;
    await new Promise((resolve) => probe.close(resolve));
  });
  const stack = useStack({
    service: 'breaker',
    users: { alice: ['user'] },
    captureLogs: 'info',
    config: () => ({
      upstream: { url: `http://127.0.0.1:${port}`, breaker: { failures: 6, coolOffSeconds: 0.5, probes: 2 } },
      acl: { mode: 'own-routes' },
    }),
  });

  it('opens after consecutive connection failures, answers 503 at once while open, and closes after its probes', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 8 && statuses.at(-1) !== 503; i++) statuses.push((await call(stack.proxy.url, `/down/${i}`, { auth: ALICE })).status);
    expect(statuses.at(-1)).toBe(503);
    expect(statuses.slice(0, -1).every((s) => s === 502)).toBe(true);
    const open = await call(stack.proxy.url, '/down/open', { auth: ALICE });
    expect(open.status).toBe(503);
    expect(open.headers['retry-after']).toBeDefined();
    expect(open.json).toMatchObject({ 'http status code': 503, message: expect.stringMatching(/circuit breaker is open.*nothing was sent/) });
    expect(await metricValue(stack.proxy.url, 'outrigger_upstream_breaker_state')).toBe(2);

    // The backend comes back on the same port; after the cool-off the probes close the breaker.
    const backend = createServer((_req, res) => res.end('back'));
    await new Promise<void>((resolve) => backend.listen(port, '127.0.0.1', resolve));
    try {
      await new Promise((resolve) => setTimeout(resolve, 600));
      for (let i = 0; i < 3; i++) expect((await call(stack.proxy.url, `/up/${i}`, { auth: ALICE })).status).toBe(200);
      expect(await metricValue(stack.proxy.url, 'outrigger_upstream_breaker_state')).toBe(0);
    } finally {
      backend.closeAllConnections();
      await new Promise((resolve) => backend.close(resolve));
    }
    const moves = stack.logLines.filter((l) => typeof l.msg === 'string' && l.msg.startsWith("the backend's circuit breaker moved"));
    expect(moves.map((l) => l.breaker)).toEqual(['open', 'half-open', 'closed']);
  }, 15_000);
});

describe('retry budget (SPEC §13)', () => {
  const firstOfPath = new Set<string>();
  let reached = 0;
  const stack = useStack({
    service: 'retries',
    users: { alice: ['user'] },
    // Destroys the connection of the first request of each path, before any byte of an answer.
    upstream: (req, res) => {
      reached++;
      if (!firstOfPath.has(req.url!)) {
        firstOfPath.add(req.url!);
        return void req.socket.destroy();
      }
      req.resume();
      res.end('second time');
    },
    config: { acl: { mode: 'own-routes' } },
  });

  it('sends a GET whose connection was reset once more, on another connection', async () => {
    const before = reached;
    const res = await call(stack.proxy.url, '/reset-get', { auth: ALICE });
    expect(res.status).toBe(200);
    expect(res.text).toBe('second time');
    expect(reached - before).toBe(2);
    // Counted as Prometheus names a counter (issue 49).
    const metrics = (await call(stack.proxy.url, '/_metrics')).text;
    expect(metrics).toContain('# TYPE outrigger_upstream_retries_total counter');
    expect(await metricValue(stack.proxy.url, 'outrigger_upstream_retries_total')).toBeGreaterThanOrEqual(1);
  });

  it('never sends a write again without an Idempotency-Key, and does with one', async () => {
    const before = reached;
    expect((await call(stack.proxy.url, '/reset-delete', { method: 'DELETE', auth: ALICE })).status).toBe(502);
    expect(reached - before).toBe(1);
    const keyed = await call(stack.proxy.url, '/reset-keyed', { method: 'DELETE', auth: ALICE, headers: { 'idempotency-key': '"k-1"' } });
    expect(keyed.status).toBe(200);
    expect(reached - before).toBe(3);
  });
});

describe('priority when shedding (SPEC §13)', () => {
  const backend = useControlledBackend(HEALTHY_MS);
  const stack = useStack({
    service: 'priorities',
    users: { root: ['root'], alice: ['user'] },
    config: () => ({
      upstream: { url: backend.url, connections: 32, adaptiveConcurrency: { minLimit: 4, sampleWindowMs: 50, minRttPeriodSeconds: 60 } },
      acl: { mode: 'enforce' },
      features: { webhooks: 'disabled' },
      limits: { policies: [{ name: 'bulk', by: 'client', limit: 1_000_000, window: '60s', condition: "path-prefix('/bulk')", priority: 'sheddable' }] },
    }),
    permissions: {
      keys: { predicate: 'path-prefix(/keys)', roles: ['user'], apiKeys: { roles: ['reader'] } },
      read: { predicate: 'method(GET) and path-prefix(/data)', roles: ['reader'] },
      batch: { predicate: 'path-prefix(/batch)', roles: ['user'], priorityClass: 'sheddable' },
      bulk: { predicate: 'path-prefix(/bulk)', roles: ['user'] },
    },
  });

  it("answers a critical key's requests throughout while sheddable ones are refused first", async () => {
    const issued = await call(stack.proxy.url, '/keys', { method: 'POST', auth: ALICE, body: { name: 'operator', roles: ['reader'] } });
    expect(issued.status, issued.text).toBe(201);
    const patched = await call(stack.proxy.url, `/_admin/keys/${issued.json._id}`, { method: 'PATCH', auth: as('root'), body: { priority: 'critical' } });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.json.priority).toBe('critical');
    const critical = { authorization: `Bearer ${issued.json.key}` };
    for (const path of ['/data/warm', '/batch/warm', '/bulk/warm'])
      expect((await call(stack.proxy.url, path, { headers: path === '/data/warm' ? critical : { authorization: ALICE } })).status).toBe(200);

    backend.delayMs = 10 * HEALTHY_MS;
    const flood = closedLoop(stack.proxy.url, '/batch/job', { workers: 12, ms: 6000, headers: { authorization: ALICE }, backoffMs: 50 });
    const bulk = closedLoop(stack.proxy.url, '/bulk/job', { workers: 4, ms: 6000, headers: { authorization: ALICE }, backoffMs: 50 });
    for (let i = 0; i < 40 && (await metricValue(stack.proxy.url, 'outrigger_upstream_concurrency_limit'))! > 6; i++) await new Promise((resolve) => setTimeout(resolve, 100));
    // From here on the limit binds: the critical key, one request at a time, is answered every time.
    const trickle = await closedLoop(stack.proxy.url, '/data/report', { workers: 1, ms: 3000, headers: critical });
    const health = await call(stack.proxy.url, '/_health/ready');
    const [flooded, bulked] = await Promise.all([flood, bulk]);
    expect([...trickle.statuses.keys()]).toEqual([200]);
    expect(trickle.statuses.get(200)).toBeGreaterThanOrEqual(3);
    expect(health.status).toBe(200);
    expect(flooded.statuses.get(503)).toBeGreaterThan(0);
    expect(JSON.parse(flooded.refusal!.body).message).toMatch(/priority sheddable/);
    // The rate-limit policy's class sheds its requests the same way.
    expect(bulked.statuses.get(503)).toBeGreaterThan(0);
    expect(JSON.parse(bulked.refusal!.body).message).toMatch(/priority sheddable/);
  }, 30_000);
});

describe("GraphQL's backend reads pass the same guard (SPEC §13)", () => {
  const SCHEMA = 'type Item { n: Int } type Query { items: [Item] }';
  const stack = useStack({
    service: 'guarded-graphql',
    backend: { data: { shop: { items: [{ _id: 'i1', n: 1 }] } } },
    users: { root: ['root'], alice: ['user'] },
    config: { acl: { mode: 'own-routes' }, features: { webhooks: 'disabled' }, upstream: { breaker: { failures: 3, coolOffSeconds: 30 } } },
    permissions: { gql: { predicate: 'path-prefix(/graphql)', roles: ['user'] } },
    apps: { inv: { _id: 'inv', descriptor: { uri: 'inv' }, schema: SCHEMA, mappings: { Query: { items: { db: 'shop', collection: 'items' } } } } },
  });

  it('a query is refused by the breaker the pass-through opened, without reaching for the backend', async () => {
    const query = (auth: string) => call(stack.proxy.url, '/graphql/inv', { method: 'POST', auth, body: { query: '{ items { n } }' } });
    const ok = await query(ALICE);
    expect(ok.status, ok.text).toBe(200);
    expect(ok.json.data.items).toEqual([{ n: 1 }]);
    await stack.backend.close();
    // Proxied GETs fail (each sent twice: the retry budget) until the breaker opens.
    const statuses: number[] = [];
    for (let i = 0; i < 4 && statuses.at(-1) !== 503; i++) statuses.push((await call(stack.proxy.url, `/shop/items?i=${i}`, { auth: ALICE })).status);
    expect(statuses.at(-1)).toBe(503);
    expect(await metricValue(stack.proxy.url, 'outrigger_upstream_breaker_state')).toBe(2);
    const refused = await query(ALICE);
    expect(refused.text).toMatch(/circuit breaker is open/);
  });
});
