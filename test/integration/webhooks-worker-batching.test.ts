import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStandinBackend, type StandinBackend } from '../../examples/standin-backend/index.js';
import { startTestRedis, type TestRedis } from '../support/redis.js';
import { startTestOutrigger } from '../support/outrigger.js';
import { eventsInEntry } from '../../src/webhooks/stream-record.js';
import { call, sleep, startTarget, streamEvents, untilKnown, waitFor, webhooksOf, type Target } from './webhooks-helpers.js';

type Running = Awaited<ReturnType<typeof startTestOutrigger>>;

/** Counted by Redis itself: total_commands_processed, which includes the commands MULTI and scripts run. */
async function commandsProcessed(redis: TestRedis): Promise<number> {
  return Number(/total_commands_processed:(\d+)/.exec(await redis.client.info('stats'))![1]);
}

/**
 * The worker's group commit (issue 14): a backlog is drained with its log writes, markers and
 * acknowledgements merged across deliveries, so each event costs a few Redis commands, not the
 * eleven of one MULTI per delivery plus one per acknowledgement; and nothing is lost or repeated.
 */
describe('webhooks: the worker batches its Redis writes', () => {
  let redis: TestRedis;
  let backend: StandinBackend;
  let target: Target;
  let proxy: Running;

  beforeAll(async () => {
    redis = await startTestRedis();
    backend = await startStandinBackend({ data: { shop: { orders: [] } } });
    target = await startTarget();
    proxy = await startTestOutrigger(
      {
        service: { id: 'wh-batching' },
        upstream: { url: backend.url },
        redis: { url: redis.url },
        acl: { mode: 'own-routes', adminRoles: ['$unauthenticated'] },
        webhooks: { allowPrivateTargets: ['127.0.0.0/8'] },
      },
      { worker: false },
    );
  });

  /** Runs `body` while a worker of its own runs, and stops the worker whatever happens. */
  async function withWorker(consumerName: string, body: () => Promise<unknown>): Promise<void> {
    const worker = webhooksOf(proxy).internals.createWorker({ consumerName });
    worker.start();
    try {
      await body();
    } finally {
      await worker.stop();
    }
  }

  afterAll(async () => {
    await proxy?.stop();
    await target?.close();
    await backend?.close();
    await redis?.close();
  });

  it('delivers a backlog of 300 events once each, at most 5 Redis commands per event', async () => {
    const res = await call(proxy.url, '/_admin/webhooks', { method: 'POST', body: { _id: 'batch', name: 'batch', type: 'http', condition: "method(GET) and path('/shop/orders')", url: `${target.url}/batch` } });
    expect(res.status).toBe(201);
    await untilKnown([proxy], 'batch');
    const events = 300;
    for (let i = 0; i < events; i += 30) await Promise.all(Array.from({ length: 30 }, () => call(proxy.url, '/shop/orders')));
    const { keys } = proxy.context;
    await waitFor(() => streamEvents(redis.client, keys.events), (e) => e.length === events, 10_000, 'the stream to hold every event');
    // 30 requests at a time: their events share entries (version 4).
    expect(await redis.client.xlen(keys.events)).toBeLessThan(events);

    const before = await commandsProcessed(redis);
    const worker = webhooksOf(proxy).internals.createWorker({ consumerName: 'batcher' });
    worker.start();
    try {
      await waitFor(() => redis.client.xlen(keys.events), (n) => n === 0, 30_000, 'every event to be delivered and acknowledged');
    } finally {
      await worker.stop();
    }
    // Everything the process sent meanwhile counts, the proxy's pollers and the worker's start and stop included.
    const perEvent = ((await commandsProcessed(redis)) - before - 1) / events;
    expect(perEvent).toBeLessThanOrEqual(5);

    const got = target.on('/batch');
    expect(got).toHaveLength(events);
    expect(new Set(got.map((r) => r.headers['webhook-id'])).size).toBe(events);
    const logs = (await call(proxy.url, '/_admin/webhooks/batch/logs?pagesize=1000')).json as Array<{ status: string }>;
    expect(logs.filter((e) => e.status === 'success')).toHaveLength(events);
    expect(((await redis.client.xpending(keys.events, keys.eventsGroup)) as [number])[0]).toBe(0);
  }, 60_000);

  it('counts its concurrency in events, not entries: an entry of many events starts only as many as slots are free', async () => {
    const res = await call(proxy.url, '/_admin/webhooks', { method: 'POST', body: { _id: 'slots', name: 'slots', type: 'http', condition: "path('/shop/slots')", url: `${target.url}/slots` } });
    expect(res.status).toBe(201);
    await untilKnown([proxy], 'slots');
    const { keys } = proxy.context;
    await Promise.all(Array.from({ length: 40 }, (_, i) => call(proxy.url, '/shop/slots', { method: 'POST', body: { i } })));
    await waitFor(() => streamEvents(redis.client, keys.events), (e) => e.length === 40, 10_000, 'the forty events in the stream');
    // Requests at once share entries: the four oldest hold more than four events (what a worker counting entries would start).
    const sizes = (await redis.client.xrangeBuffer(keys.events, '-', '+')).map(([, f]) => eventsInEntry(f));
    expect(sizes.slice(0, 4).reduce((a, b) => a + b, 0)).toBeGreaterThan(4);
    const previous = target.answer;
    target.answer = (req) => (req.url === '/slots' ? 'hang' : previous(req, 0));
    const worker = webhooksOf(proxy).internals.createWorker({ consumerName: 'slots', concurrency: 4 });
    worker.start();
    try {
      await waitFor(() => target.on('/slots'), (l) => l.length === 4, 5000, 'four deliveries to start');
      await sleep(500);
      expect(target.on('/slots')).toHaveLength(4); // no fifth while the four hang
      target.answer = previous;
      target.release();
      await waitFor(() => redis.client.xlen(keys.events), (n) => n === 0, 10_000, 'every event to be delivered and acknowledged');
    } finally {
      target.answer = previous;
      target.release();
      await worker.stop();
    }
    expect(new Set(target.on('/slots').map((r) => JSON.parse(r.body).request.body.i)).size).toBe(40);
    expect(target.on('/slots')).toHaveLength(40);
  }, 30_000);

  it('an event with one delivery commits its log entry and acknowledgement together, without a marker; one with two marks each delivery', async () => {
    for (const id of ['solo', 'pair-a', 'pair-b']) {
      const path = id === 'solo' ? '/shop/solo' : '/shop/pair';
      const res = await call(proxy.url, '/_admin/webhooks', { method: 'POST', body: { _id: id, name: id, type: 'http', condition: `path('${path}')`, url: `${target.url}/${id}` } });
      expect(res.status).toBe(201);
    }
    await untilKnown([proxy], 'solo');
    await untilKnown([proxy], 'pair-b');
    const { keys } = proxy.context;
    // A request no webhook matches takes every webhook's `skipped` entry for the next 10 s, so
    // the two events below carry deliveries only.
    // Apart by more than the proxy's 4 ms linger, so that each event gets an entry of its own.
    await call(proxy.url, '/shop/none');
    await sleep(50);
    await call(proxy.url, '/shop/solo', { method: 'POST', body: { n: 1 } });
    await sleep(50);
    await call(proxy.url, '/shop/pair', { method: 'POST', body: { n: 2 } });
    await waitFor(() => redis.client.xlen(keys.events), (n) => n === 3, 10_000, 'the three events in the stream');

    await withWorker('markers', () => waitFor(() => redis.client.xlen(keys.events), (n) => n === 0, 10_000, 'the events to be acknowledged'));
    expect(target.on('/solo')).toHaveLength(1);
    expect(target.on('/pair-a')).toHaveLength(1);
    expect(target.on('/pair-b')).toHaveLength(1);
    const markers = await redis.client.keys(keys.deliveryDone('*', '*'));
    // (The backlogs of the tests above shared entries: their deliveries were marked too.)
    expect(markers.map((k) => k.split(':').at(-1)).filter((id) => ['solo', 'pair-a', 'pair-b'].includes(String(id))).sort()).toEqual(['pair-a', 'pair-b']);
    for (const id of ['solo', 'pair-a', 'pair-b']) {
      const logs = (await call(proxy.url, `/_admin/webhooks/${id}/logs`)).json as Array<{ status: string }>;
      expect(logs.map((e) => e.status).sort()).toEqual(['skipped', 'success']);
    }
  }, 30_000);

  it('leaves an entry of a newer version pending for an upgraded worker, and acknowledges one that is not ours', async () => {
    const { keys } = proxy.context;
    await redis.client.del(keys.events);
    await redis.client.xgroup('CREATE', keys.events, keys.eventsGroup, '0', 'MKSTREAM');
    const newer = await redis.client.xadd(keys.events, '*', 'e', '{"v":5,"id":"evt_future","ma":["solo"]}\n');
    const foreign = await redis.client.xadd(keys.events, '*', 'x', 'not an event');
    const before = target.on('/solo').length;
    await call(proxy.url, '/shop/solo', { method: 'POST', body: { n: 3 } });
    await waitFor(() => redis.client.xlen(keys.events), (n) => n === 3, 10_000, 'the event behind the two hand-written entries');

    await withWorker('older', async () => {
      await waitFor(() => redis.client.xlen(keys.events), (n) => n === 1, 10_000, 'the event and the foreign entry to be acknowledged');
      await new Promise((r) => setTimeout(r, 2500)); // a sweep for orphans passes over the newer entry
      const pending = (await redis.client.xpending(keys.events, keys.eventsGroup, '-', '+', 10)) as Array<[string, string, number, number]>;
      expect(pending.map(([id]) => id)).toEqual([newer]);
      expect(pending[0]![3]).toBe(1); // delivered to this worker once, not claimed back every sweep
    });
    expect(target.on('/solo')).toHaveLength(before + 1);
    expect((await redis.client.xrange(keys.events, '-', '+')).map(([id]) => id)).toEqual([newer]);
    expect(foreign).toBeTruthy();
  }, 30_000);
});
