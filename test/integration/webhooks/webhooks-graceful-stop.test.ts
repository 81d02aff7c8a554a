import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { startTestOutrigger, type RawConfig } from '../../support/outrigger.js';
import { call, sleep, untilKnown, useWorkerStack, waitFor, webhooksOf } from './webhooks-helpers.js';
import type { Running } from '../../support/fixtures.js';

/**
 * A worker stopped gracefully (a rolling restart, SPEC §2) leaves nothing waiting out a lease:
 * the retry jobs it holds become due again at once for the next worker, instead of after
 * `reclaimIdleMs` (120 s by default, longer than clients wait for a webhook).
 */
describe('webhooks: a graceful worker stop leaves no event behind', () => {
  const { stack, running, workers } = useWorkerStack();

  let starts = 0;
  // reclaimIdleMs stays at its default (120 s): a lease left behind would outlast every wait below.
  async function start(serviceId: string, webhooks: RawConfig): Promise<Running> {
    const r = await startTestOutrigger({ ...stack.raw, service: { id: `${serviceId}-${++starts}` }, webhooks: { ...stack.raw.webhooks, ...webhooks } }, { worker: false });
    running.push(r);
    const res = await call(r.url, '/_admin/webhooks', { method: 'POST', body: { name: 'stop', type: 'http', condition: "path('/shop/orders')", url: `${stack.target.url}/stop`, timeout_ms: 30_000 } });
    expect(res.status, JSON.stringify(res.json)).toBe(201);
    await untilKnown([r], res.json._id);
    return r;
  }
  const worker = (r: Running, name: string) => {
    const w = webhooksOf(r).internals.createWorker({ consumerName: name });
    workers.push(w);
    return w;
  };
  const dueIn = async (r: Running, member: string) => Number(await stack.redis.client.zscore(r.context.keys.retrySchedule, member)) - Date.now();

  it('a retry whose delivery is still running when stop() times out is given back and delivered by the next worker', async () => {
    const proxy = await start('stop-inflight-retry', { retrySchedule: ['100ms'] });
    // Attempt 1 fails (a retry 100 ms later); attempt 2 hangs until released.
    stack.target.answer = () => (stack.target.on('/stop').length === 1 ? { status: 503, body: 'later' } : stack.target.on('/stop').length === 2 ? 'hang' : { status: 200, body: 'ok' });
    const a = worker(proxy, 'stop-a');
    a.start();
    await call(proxy.url, '/shop/orders', { method: 'POST', body: { order: 1 } });
    await waitFor(
      () => stack.target.on('/stop'),
      (l) => l.length === 2,
      10_000,
      'attempt 2 to start',
    );
    const [member] = await stack.redis.client.zrange(proxy.context.keys.retrySchedule, 0, -1);
    expect(await dueIn(proxy, member!)).toBeGreaterThan(60_000); // leased for reclaimIdleMs

    await a.stop(300);
    // Given back: due now, not in two minutes.
    expect(await dueIn(proxy, member!)).toBeLessThanOrEqual(0);
    // The hung attempt is still open (as a stopped process's would be): the next worker sends it again.
    const b = worker(proxy, 'stop-b');
    b.start();
    await waitFor(
      () => stack.target.on('/stop'),
      (l) => l.length === 3,
      10_000,
      'the next worker to deliver the retry',
    );
    stack.target.release();
    await waitFor(
      () => stack.redis.client.zcard(proxy.context.keys.retrySchedule),
      (n) => n === 0,
      5000,
      'the retry job to be done',
    );
    await b.stop();
  });

  it('retry jobs leased while the worker was stopping are given back, not kept for reclaimIdleMs', async () => {
    const proxy = await start('stop-lease-race', { retrySchedule: ['1h'] });
    const keys = proxy.context.keys;
    // A retry job in Redis (attempt 1 failed; attempt 2 scheduled an hour from now), made due.
    stack.target.answer = () => (stack.target.on('/stop').length === 1 ? { status: 503, body: 'later' } : { status: 200, body: 'ok' });
    const maker = worker(proxy, 'stop-maker');
    maker.start();
    await call(proxy.url, '/shop/orders', { method: 'POST', body: { order: 2 } });
    await waitFor(
      () => stack.redis.client.zcard(keys.retrySchedule),
      (n) => n === 1,
      10_000,
      'the retry job',
    );
    await maker.stop();
    const [member] = await stack.redis.client.zrange(keys.retrySchedule, 0, -1);
    await stack.redis.client.zadd(keys.retrySchedule, 0, member!);

    // Writes pause (the lease script among them) while the worker starts, sends its first lease
    // round and is told to stop: the round's reply arrives after the stop began.
    // (With a retry schedule of 1 h the worker looks for due jobs every second.)
    await stack.redis.client.call('CLIENT', 'PAUSE', 2500, 'WRITE');
    const a = worker(proxy, 'stop-late-lease');
    a.start();
    await sleep(1500);
    await a.stop(300);
    expect(await dueIn(proxy, member!)).toBeLessThanOrEqual(0);
    expect(stack.target.on('/stop')).toHaveLength(1); // the stopping worker delivered nothing

    const b = worker(proxy, 'stop-next');
    b.start();
    await waitFor(
      () => stack.target.on('/stop'),
      (l) => l.length === 2,
      10_000,
      'the next worker to deliver the retry',
    );
    await b.stop();
  });

  it('a read still blocked on the server after its worker left the group: the entry it is handed goes to a live worker', async () => {
    // What a stop can leave for a moment: the worker closed its blocking connection, and Redis,
    // not yet aware, hands the next entry to that read. The worker left the group (and its alive
    // key) when nothing was pending; the entry must not be lost with it.
    const proxy = await start('stop-stale-read', {});
    const keys = proxy.context.keys;
    const a = worker(proxy, 'stop-stale');
    a.start();
    await sleep(300);
    await a.stop();
    const stale = new Redis(stack.redis.url, { maxRetriesPerRequest: 0 });
    try {
      const read = stale.call('XREADGROUP', 'GROUP', keys.eventsGroup, 'stop-stale', 'COUNT', 10, 'BLOCK', 0, 'STREAMS', keys.events, '>').catch(() => null);
      await sleep(100); // blocked first, so it is served before the live worker's read
      const b = worker(proxy, 'stop-live');
      b.start();
      await call(proxy.url, '/shop/orders', { method: 'POST', body: { order: 3 } });
      expect(await read).not.toBeNull(); // the stale read took the entry: pending for a consumer that left
      await waitFor(
        () => stack.target.on('/stop'),
        (l) => l.length === 1,
        10_000,
        'the live worker to take the entry from the stale consumer',
      );
      await b.stop();
    } finally {
      stale.disconnect();
    }
  });
});
