/**
 * SPEC §13 under faults (issue 49), through the real proxy against a backend the test controls:
 * one that accepts and never answers, one that answers 5xx for a second, one that resets its
 * connections, latency that doubles slowly, and two replicas in front of one slow backend. Every
 * refusal is a 503 with Retry-After in the error format; nothing admitted is lost; each row is
 * bounded in time and ends by itself.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { call } from '../support/http-client.js';
import { as, useStack } from '../support/fixtures.js';
import { closedLoop, metricValue, startControlledBackend, type ControlledBackend } from '../support/controlled-backend.js';

const ALICE = as('alice');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('backend faults and the breaker', () => {
  let backend: ControlledBackend;
  beforeAll(async () => {
    backend = await startControlledBackend();
    return () => backend.close();
  });
  const stack = useStack({
    service: 'protect-faults',
    users: { alice: ['user'] },
    config: () => ({
      upstream: {
        url: backend.url,
        timeoutMs: 300,
        breaker: { failures: 4, ratio: 0.5, windowSeconds: 2, minAnswers: 10, coolOffSeconds: 0.5, probes: 2 },
        adaptiveConcurrency: { minRttPeriodSeconds: 1 },
      },
      acl: { mode: 'own-routes' },
    }),
  });
  const breaker = () => metricValue(stack.proxy.url, 'outrigger_upstream_breaker_state');

  /** Sends GETs until the backend is healthy again and the breaker closed (bounded). */
  async function recover(): Promise<void> {
    backend.mode = 'answer';
    for (let i = 0; i < 40; i++) {
      if ((await call(stack.proxy.url, `/recover/${i}`, { auth: ALICE })).status === 200 && (await breaker()) === 0) return;
      await sleep(100);
    }
    throw new Error('the breaker did not close within 4 s of the backend answering again');
  }

  it('a backend that accepts and never answers: 504 after upstream.timeoutMs, then the breaker answers 503 at once', async () => {
    backend.mode = 'hang';
    const statuses: number[] = [];
    for (let i = 0; i < 8 && statuses.at(-1) !== 503; i++) statuses.push((await call(stack.proxy.url, `/hang/${i}`, { auth: ALICE })).status);
    expect(statuses.slice(0, -1).every((s) => s === 504)).toBe(true);
    const open = await call(stack.proxy.url, '/hang/open', { auth: ALICE });
    expect(open.status).toBe(503);
    expect(open.headers['retry-after']).toBeDefined();
    expect(open.json).toMatchObject({ 'http status code': 503, message: expect.stringMatching(/circuit breaker/) });
    await recover();
  }, 20_000);

  it('a backend that answers 5xx for a second: the breaker opens on the ratio, and closes once it answers again', async () => {
    backend.mode = '5xx';
    const failing = await closedLoop(stack.proxy.url, '/flaky', { workers: 4, ms: 1000, headers: { authorization: ALICE } });
    expect(failing.statuses.get(500)).toBeGreaterThanOrEqual(10);
    expect(failing.statuses.get(503)).toBeGreaterThan(0);
    expect([...failing.statuses.keys()].every((s) => s === 500 || s === 503)).toBe(true);
    await recover();
    const after = await closedLoop(stack.proxy.url, '/flaky', { workers: 4, ms: 500, headers: { authorization: ALICE } });
    expect([...after.statuses.keys()]).toEqual([200]);
  }, 20_000);

  it('a backend that resets every connection: 502 (the GET sent once more first), then 503 at once, never a hang or a 500', async () => {
    backend.mode = 'reset';
    const before = backend.seen.get('reset') ?? 0;
    const first = await call(stack.proxy.url, '/reset/a', { auth: ALICE });
    expect(first.status).toBe(502);
    // Sent twice: the retry budget's one retry on another connection.
    expect((backend.seen.get('reset') ?? 0) - before).toBe(2);
    const resets = await closedLoop(stack.proxy.url, '/reset/b', { workers: 4, ms: 800, headers: { authorization: ALICE } });
    expect([...resets.statuses.keys()].every((s) => s === 502 || s === 503)).toBe(true);
    expect(resets.statuses.get(503)).toBeGreaterThan(0);
    await recover();
  }, 20_000);
});

describe('latency that doubles slowly', () => {
  let backend: ControlledBackend;
  beforeAll(async () => {
    backend = await startControlledBackend();
    backend.delayMs = 30;
    return () => backend.close();
  });
  const stack = useStack({
    service: 'protect-drift',
    users: { alice: ['user'] },
    config: () => ({
      upstream: { url: backend.url, connections: 32, adaptiveConcurrency: { minRttPeriodSeconds: 1, sampleWindowMs: 50, toleranceMs: 0 } },
      acl: { mode: 'own-routes' },
    }),
  });

  it('follows it: the minimum is re-measured, the limit never falls to its floor and nothing is refused', async () => {
    // A minute's doubling, compressed to 6 s: +5 ms every second, 30 → 60 ms.
    const load = closedLoop(stack.proxy.url, '/drift', { workers: 6, ms: 6500, headers: { authorization: ALICE } });
    const limits: number[] = [];
    for (let s = 0; s < 6; s++) {
      await sleep(1000);
      backend.delayMs += 5;
      limits.push((await metricValue(stack.proxy.url, 'outrigger_upstream_concurrency_limit'))!);
    }
    const result = await load;
    expect([...result.statuses.keys()]).toEqual([200]);
    expect(Math.min(...limits)).toBeGreaterThan(6);
    // The baseline moved with the backend (within a period or two of the last step).
    expect(await metricValue(stack.proxy.url, 'outrigger_upstream_min_latency_seconds')).toBeGreaterThan(0.04);
  }, 20_000);
});

describe('two replicas in front of one slow backend', () => {
  let backend: ControlledBackend;
  beforeAll(async () => {
    backend = await startControlledBackend();
    backend.delayMs = 40;
    return () => backend.close();
  });
  const stack = useStack({
    service: 'protect-replicas',
    users: { alice: ['user'] },
    config: () => ({
      upstream: { url: backend.url, connections: 32, adaptiveConcurrency: { minLimit: 2, sampleWindowMs: 50, minRttPeriodSeconds: 60 } },
      acl: { mode: 'own-routes' },
    }),
  });

  it('each replica learns its own limit: together they keep the backend near their floors, every refusal a 503', async () => {
    const second = await stack.start();
    for (const base of [stack.proxy.url, second.url]) expect((await call(base, '/warm', { auth: ALICE })).status).toBe(200);
    await Promise.all([stack.proxy.url, second.url].map((base) => closedLoop(base, '/healthy', { workers: 3, ms: 800, headers: { authorization: ALICE } })));
    backend.delayMs = 400;
    const loads = [stack.proxy.url, second.url].map((base) => closedLoop(base, '/slow', { workers: 12, ms: 6000, headers: { authorization: ALICE } }));
    for (let i = 0; i < 40; i++) {
      const both = await Promise.all([stack.proxy.url, second.url].map((base) => metricValue(base, 'outrigger_upstream_concurrency_limit')));
      if (both.every((l) => l! <= 6)) break;
      await sleep(100);
    }
    await sleep(500);
    backend.resetPeak();
    const results = await Promise.all(loads);
    expect(backend.peak).toBeLessThanOrEqual(14);
    for (const r of results) {
      expect(r.statuses.get(200)).toBeGreaterThan(0);
      expect([...r.statuses.keys()].sort()).toEqual([200, 503]);
      expect(r.refusal!.headers['retry-after']).toBe('1');
    }
  }, 30_000);
});
