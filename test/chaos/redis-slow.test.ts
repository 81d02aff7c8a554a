/**
 * Chaos (issue 28 item 3): Redis slow, 600 ms each way, through a relay that keeps the byte order.
 * Nothing on the request path waits for Redis once it knows the caller: a cached API key, a
 * Basic user already verified and a teed POST answer as fast as with Redis at full speed (the
 * tee queues in process), and every teed event is delivered once Redis is fast again.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call } from '../support/clients/http-client.js';
import { startTcpRelay, type TcpRelay } from '../support/peers/tcp-relay.js';
import { atOnceBound, baselineMs } from '../support/timing.js';
import { until } from '../support/wait.js';
import { startTarget, type Target } from '../support/peers/webhook-target.js';
import { ALICE, startChaosStack, type ChaosStack } from './support.js';

/**
 * Each way, through the relay. A Redis round trip then costs >= 1200 ms, so a request that waits
 * for one is told from a fast one even on a loaded machine (issue 40), and stays under
 * redis.commandTimeoutMs (2 s), so nothing times out.
 */
const DELAY_MS = 600;

describe('chaos: Redis 600 ms slow each way', () => {
  let relay: TcpRelay;
  let target: Target;
  let stack: ChaosStack;
  let proxy: ChaosStack['proxy'];
  let key: string;

  beforeAll(async () => {
    target = await startTarget();
    stack = await startChaosStack({
      service: 'chaos-slow',
      worker: true,
      redisUrl: async (redis) => {
        relay = await startTcpRelay(redis.port);
        return relay.url();
      },
    });
    proxy = stack.proxy;
    const issued = await stack.issueKey('chaos');
    expect(issued.status, JSON.stringify(issued.json)).toBe(201);
    key = issued.json.key;
    await stack.ordersWebhook(`${target.url}/hook`);
    // Warm every cache the way a live service is warm: the key, the user, the webhook list.
    await until(async () => (await call(proxy.url, '/shop/orders', { auth: `Bearer ${key}` })).status === 200, 'the key to verify');
    expect((await call(proxy.url, '/shop/orders', { auth: ALICE })).status).toBe(200);
    await call(proxy.url, '/shop/orders', { method: 'POST', auth: `Bearer ${key}`, body: { _id: 'warm', total: 1 } });
    await until(() => target.received.length >= 1, 'the warm-up event to be delivered');
  }, 60_000);

  afterAll(async () => {
    relay?.setDelay(0);
    await stack?.stop();
    await relay?.close();
    await target?.close();
  });

  it('a cached key, a verified Basic user and a teed POST answer fast; every event arrives once Redis is fast again', async () => {
    let posted = 0;
    // "Fast" is relative to the same requests with Redis at full speed, a moment before (issue
    // 40), and always below one slowed round trip, so waiting for Redis fails it.
    const baseline = Math.max(
      await baselineMs(() => call(proxy.url, '/shop/orders', { auth: `Bearer ${key}` })),
      await baselineMs(() => call(proxy.url, '/shop/orders', { auth: ALICE })),
      await baselineMs(() => call(proxy.url, '/shop/orders', { method: 'POST', auth: `Bearer ${key}`, body: { _id: `base-${++posted}`, total: 0 } })),
    );
    const fastMs = Math.min(atOnceBound(baseline, DELAY_MS), 2 * DELAY_MS - 20);
    relay.setDelay(DELAY_MS);
    const timings: Array<{ what: string; ms: number; status: number }> = [];
    const timed = async (what: string, path: string, init: Parameters<typeof call>[2]) => {
      const t0 = performance.now();
      const res = await call(proxy.url, path, init);
      timings.push({ what, ms: performance.now() - t0, status: res.status });
    };
    for (let i = 0; i < 5; i++) {
      await timed('key', '/shop/orders', { auth: `Bearer ${key}` });
      await timed('basic', '/shop/orders', { auth: ALICE });
      await timed('teed POST', '/shop/orders', { method: 'POST', auth: `Bearer ${key}`, body: { _id: `slow-${i}`, total: i } });
    }
    // The control: issuing a key must write Redis, so it does wait for the slow relay.
    const t0 = performance.now();
    const issued = await stack.issueKey('slow');
    const issueMs = performance.now() - t0;
    relay.setDelay(0);
    expect(issued.status).toBe(201);
    expect(issueMs, 'POST /keys, which writes Redis, must see the relay delay').toBeGreaterThanOrEqual(2 * DELAY_MS);
    for (const t of timings) {
      expect(t.status, `${t.what} answered ${t.status}`).toBeLessThan(300);
      expect(t.ms, `${t.what} took ${t.ms.toFixed(0)} ms with Redis ${DELAY_MS} ms slow each way (baseline ${baseline.toFixed(0)} ms)`).toBeLessThan(fastMs);
    }
    // Nothing lost: the five teed events (and the warm-up one) reach the target.
    await until(() => target.received.filter((r) => r.body.includes('slow-')).length >= 5, 'the five teed events to be delivered', 30_000);
    const ids = target.received.map((r) => JSON.parse(r.body).request.body._id).filter((id: string) => id.startsWith('slow-'));
    expect(new Set(ids).size).toBe(5);
  }, 60_000);
});
