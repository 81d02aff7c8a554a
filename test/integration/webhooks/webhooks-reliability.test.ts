import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { startOutrigger } from '../../../src/app.js';
import { createLogger } from '../../../src/observability/logger.js';
import type { WebhookWorker } from '../../../src/webhooks/deliver/worker.js';
import { decodeStreamEntry } from '../../../src/webhooks/stream-record.js';
import { startTestOutrigger, testConfig, type RawConfig } from '../../support/outrigger.js';
import { call, sleep, streamEvents, untilKnown, useWorkerStack, waitFor, webhooksOf } from './webhooks-helpers.js';
import type { Running } from '../../support/fixtures.js';

/** Deliveries, in-flight work and crashes across workers, and a Redis outage under traffic. */
describe('webhooks: reliability', () => {
  const { stack, running, workers } = useWorkerStack();

  let starts = 0;
  /** A proxy on keys of its own: a test never meets the entries an earlier one left. */
  async function start(serviceId: string, webhooks: RawConfig, worker: boolean): Promise<Running> {
    const r = await startTestOutrigger({ ...stack.raw, service: { id: `${serviceId}-${++starts}` }, webhooks: { ...stack.raw.webhooks, ...webhooks } }, { worker });
    running.push(r);
    return r;
  }
  async function hook(r: Running, doc: Record<string, unknown>) {
    const res = await call(r.url, '/_admin/webhooks', { method: 'POST', body: doc });
    expect(res.status, JSON.stringify(res.json)).toBe(201);
    await untilKnown([r], res.json._id);
    return res.json;
  }
  const logsOf = async (r: Running, id: string) => (await call(r.url, `/_admin/webhooks/${id}/logs?pagesize=1000`)).json;
  const pending = async (r: Running) => ((await stack.redis.client.xpending(r.context.keys.events, r.context.keys.eventsGroup)) as [number])[0];

  it('a worker killed mid-delivery: another worker reclaims its event and delivers it', async () => {
    const proxy = await start('wh-kill', { reclaimIdleMs: 600 }, false);
    const module = webhooksOf(proxy);
    const h = await hook(proxy, { name: 'kill', type: 'http', condition: "path('/shop/orders')", url: `${stack.target.url}/kill`, timeout_ms: 30_000 });
    stack.target.answer = (req, i) => (req.url === '/kill' && stack.target.on('/kill').length === 1 && i >= 0 ? 'hang' : { status: 200, body: 'ok' });
    const a = module.internals.createWorker({ consumerName: 'worker-a' });
    workers.push(a);
    a.start();
    await call(proxy.url, '/shop/orders', { method: 'POST', body: { order: 1 } });
    await waitFor(
      () => stack.target.on('/kill'),
      (l) => l.length === 1,
      5000,
      'worker A to start delivering',
    );
    expect(a.inFlight).toBe(1);
    a.kill(); // dies while the target still holds its request

    const b = module.internals.createWorker({ consumerName: 'worker-b' });
    workers.push(b);
    b.start();
    const logs = await waitFor(
      () => logsOf(proxy, h._id),
      (l) => l.length === 1,
      10_000,
      'worker B to deliver',
    );
    expect(logs[0]).toMatchObject({ status: 'success', attempt: 1 });
    const got = stack.target.on('/kill');
    expect(got).toHaveLength(2);
    expect(got[1]!.headers['webhook-id']).toBe(got[0]!.headers['webhook-id']);
    expect(JSON.parse(got[1]!.body).request.body).toEqual({ order: 1 });
    await waitFor(
      () => pending(proxy),
      (n) => n === 0,
      5000,
      'the entry to be acknowledged',
    );
    // The dead worker's late answer changes nothing.
    stack.target.release();
    // The positive event: the dead worker has done with its late answer (issue 54).
    await waitFor(
      () => a.inFlight,
      (n) => n === 0,
      10_000,
      'the dead worker to let go of its delivery',
    );
    expect(await logsOf(proxy, h._id)).toHaveLength(1);
    await b.stop();
  });

  it('a worker killed halfway through an entry of many events: the next one sends only the unfinished deliveries', async () => {
    const proxy = await start('wh-half', { reclaimIdleMs: 600 }, false);
    const module = webhooksOf(proxy);
    const keys = proxy.context.keys;
    const h = await hook(proxy, { name: 'half', type: 'http', condition: "path('/shop/orders')", url: `${stack.target.url}/half`, timeout_ms: 30_000 });
    const orderOf = (r: { body: string }) => JSON.parse(r.body).request.body.order as number;
    await Promise.all(Array.from({ length: 20 }, (_, i) => call(proxy.url, '/shop/orders', { method: 'POST', body: { order: i + 1 } })));
    await waitFor(
      () => streamEvents(stack.redis.client, keys.events),
      (e) => e.length === 20,
      5000,
      'the twenty events in the stream',
    );
    // Requests at once: their events share entries. The first event of each shared entry hangs
    // on its first delivery, the others succeed: every shared entry is left half done.
    const entries = (await stack.redis.client.xrangeBuffer(keys.events, '-', '+')).map(([, f]) => decodeStreamEntry(f)!.map((r) => (r.event.request.body as { order: number }).order));
    const shared = entries.filter((orders) => orders.length > 1);
    expect(shared.length).toBeGreaterThan(0);
    const hanging = new Set(shared.map((orders) => orders[0]!));
    stack.target.answer = (req) =>
      req.url === '/half' && hanging.has(orderOf(req)) && stack.target.on('/half').filter((r) => orderOf(r) === orderOf(req)).length === 1 ? 'hang' : { status: 200, body: 'ok' };

    const a = module.internals.createWorker({ consumerName: 'half-a' });
    workers.push(a);
    a.start();
    await waitFor(
      () => logsOf(proxy, h._id),
      (l) => l.length === 20 - hanging.size,
      5000,
      'worker A to finish the deliveries that answer',
    );
    expect(stack.target.on('/half')).toHaveLength(20);
    // Entries of one event are acknowledged; a shared one waits for its hanging delivery.
    await waitFor(
      () => pending(proxy),
      (n) => n === shared.length,
      5000,
      'only the shared entries to stay pending',
    );
    a.kill(); // dies while the hanging deliveries wait

    const b = module.internals.createWorker({ consumerName: 'half-b' });
    workers.push(b);
    b.start();
    await waitFor(
      () => logsOf(proxy, h._id),
      (l) => l.length === 20,
      15_000,
      'worker B to deliver the rest',
    );
    await waitFor(
      () => pending(proxy),
      (n) => n === 0,
      5000,
      'the entries to be acknowledged',
    );
    const got = stack.target.on('/half');
    expect(got).toHaveLength(20 + hanging.size);
    expect(
      got
        .slice(20)
        .map(orderOf)
        .sort((x, y) => x - y),
    ).toEqual([...hanging].sort((x, y) => x - y));
    for (const again of got.slice(20)) expect(again.headers['webhook-id']).toBe(got.find((r) => orderOf(r) === orderOf(again))!.headers['webhook-id']);
    const logs = await logsOf(proxy, h._id);
    expect(logs.map((e: { status: string }) => e.status)).toEqual(Array(20).fill('success'));
    expect(await stack.redis.client.xlen(keys.events)).toBe(0);
    stack.target.release();
    await waitFor(
      () => a.inFlight,
      (n) => n === 0,
      10_000,
      'the dead worker to let go of its deliveries',
    );
    expect(await logsOf(proxy, h._id)).toHaveLength(20); // A's late answers change nothing
    await b.stop();
  }, 30_000);

  it('a retry scheduled for later survives a worker restart and is not sent twice by a reclaim', async () => {
    const proxy = await start('wh-retry-restart', { reclaimIdleMs: 500, retrySchedule: ['3s'] }, false);
    const module = webhooksOf(proxy);
    const h = await hook(proxy, { name: 'later', type: 'http', condition: "path('/shop/orders')", url: `${stack.target.url}/later` });
    stack.target.answer = (req) => (req.url === '/later' && stack.target.on('/later').length === 1 ? { status: 503, body: 'try later' } : { status: 200, body: 'ok' });
    const keys = proxy.context.keys;

    // Worker A fails attempt 1, durably schedules the retry, then dies before acknowledging the entry.
    const a: WebhookWorker = module.internals.createWorker({ consumerName: 'retry-a', beforeAck: () => a.kill() });
    workers.push(a);
    a.start();
    await call(proxy.url, '/shop/orders', { method: 'POST', body: { order: 2 } });
    const first = await waitFor(
      () => logsOf(proxy, h._id),
      (l) => l.length === 1,
      5000,
      'attempt 1',
    );
    expect(first[0]).toMatchObject({ status: 'failed', attempt: 1, summary: { statusCode: 503 } });
    expect(first[0].nextAttemptAt.$date).toBeGreaterThanOrEqual(first[0].timestamp.$date + 3000);
    expect(await stack.redis.client.zcard(keys.retrySchedule)).toBe(1);
    expect(await pending(proxy)).toBe(1);

    // Worker B reclaims the unacknowledged entry: the delivery is already in the retry schedule, so it sends nothing.
    const b = module.internals.createWorker({ consumerName: 'retry-b' });
    workers.push(b);
    b.start();
    await waitFor(
      () => pending(proxy),
      (n) => n === 0,
      5000,
      'B to reclaim and acknowledge',
    );
    expect(stack.target.on('/later')).toHaveLength(1);
    // B is restarted (a deploy) before the retry is due; the retry is in Redis, not in B.
    await b.stop();
    expect(Date.now()).toBeLessThan(first[0].nextAttemptAt.$date);
    const c = module.internals.createWorker({ consumerName: 'retry-c' });
    workers.push(c);
    c.start();
    const logs = await waitFor(
      () => logsOf(proxy, h._id),
      (l) => l.length === 2,
      10_000,
      'the retry',
    );
    expect(logs[0]).toMatchObject({ status: 'success', attempt: 2 });
    expect(logs[0].timestamp.$date).toBeGreaterThanOrEqual(first[0].nextAttemptAt.$date);
    // Nothing is left that could send it again: no retry job, no unacknowledged entry (issue 54:
    // asserted from that state, not after a sleep a slow duplicate would outlast).
    await waitFor(
      async () => (await stack.redis.client.zcard(keys.retrySchedule)) + (await pending(proxy)),
      (n) => n === 0,
      10_000,
      'no retry job and no pending entry',
    );
    expect(stack.target.on('/later')).toHaveLength(2);
    expect(new Set(stack.target.on('/later').map((r) => r.headers['webhook-id'])).size).toBe(1);
    expect(await stack.redis.client.zcard(keys.retrySchedule)).toBe(0);
    expect(await logsOf(proxy, h._id)).toHaveLength(2);
    await c.stop();
  });

  it('a worker stopped while Redis is down with deliveries to record stops within seconds; another delivers its events later', async () => {
    const proxy = await start('wh-stop-outage', { reclaimIdleMs: 600 }, false);
    const module = webhooksOf(proxy);
    await hook(proxy, { name: 'stop', type: 'http', condition: "path('/shop/orders')", url: `${stack.target.url}/stop`, timeout_ms: 30_000 });
    // The first delivery of each event hangs until Redis is gone; every later one is answered.
    stack.target.answer = (req) => (req.url === '/stop' && stack.target.on('/stop').length <= 3 ? 'hang' : { status: 200, body: 'ok' });
    const a = module.internals.createWorker({ consumerName: 'stop-a' });
    workers.push(a);
    a.start();
    for (let order = 1; order <= 3; order++) await call(proxy.url, '/shop/orders', { method: 'POST', body: { order } });
    await waitFor(
      () => stack.target.on('/stop'),
      (l) => l.length === 3,
      5000,
      'worker A to start every delivery',
    );
    await stack.redis.stop();
    try {
      stack.target.release(); // the deliveries succeed, and their logs and acknowledgements cannot be written
      await sleep(200);
      const stopping = Date.now();
      await a.stop();
      const stopMs = Date.now() - stopping;
      console.log(`[worker] stop() with Redis down and 3 deliveries to record took ${stopMs} ms`);
      expect(stopMs).toBeLessThan(12_000);
    } finally {
      await stack.redis.restart();
    }
    // Unacknowledged, the entries go to the next worker: at least once.
    const b = module.internals.createWorker({ consumerName: 'stop-b' });
    workers.push(b);
    b.start();
    await waitFor(
      () => pending(proxy),
      (n) => n === 0,
      15_000,
      'worker B to deliver and acknowledge the entries',
    );
    const orders = stack.target
      .on('/stop')
      .slice(3)
      .map((r) => JSON.parse(r.body).request.body.order as number);
    expect(orders.sort()).toEqual([1, 2, 3]);
    await b.stop();
  }, 60_000);

  it('entries handed to a live worker whose read reply was lost are delivered within seconds, not after reclaimIdleMs', async () => {
    // What a restart, a failover or a reset socket can leave: Redis ran the worker's XREADGROUP
    // (the entries are pending for its consumer) and the reply never reached it.
    const proxy = await start('wh-lost-reply', {}, false); // reclaimIdleMs stays at its default, 120 s
    const module = webhooksOf(proxy);
    const keys = proxy.context.keys;
    await hook(proxy, { name: 'lost', type: 'http', condition: "path('/shop/orders')", url: `${stack.target.url}/lost` });
    stack.target.answer = () => ({ status: 200, body: 'ok' });
    for (const order of [1, 2, 3]) await call(proxy.url, '/shop/orders', { method: 'POST', body: { order } });
    await waitFor(
      () => streamEvents(stack.redis.client, keys.events),
      (e) => e.length === 3,
      5000,
      'the three events in the stream',
    );
    const entries = await stack.redis.client.xlen(keys.events); // 1 to 3: events a few ms apart share an entry
    await stack.redis.client.xgroup('CREATE', keys.events, keys.eventsGroup, '0', 'MKSTREAM').catch(() => {});
    const lost = (await stack.redis.client.xreadgroup('GROUP', keys.eventsGroup, 'lost-a', 'COUNT', 10, 'STREAMS', keys.events, '>')) as Array<[string, unknown[]]>;
    expect(lost[0]![1]).toHaveLength(entries);

    const a = module.internals.createWorker({ consumerName: 'lost-a' });
    workers.push(a);
    const startedAt = Date.now();
    a.start();
    await waitFor(
      () => stack.target.on('/lost'),
      (l) => l.length === 3,
      10_000,
      'the worker to take its entries back',
    );
    console.log(`[worker] entries of a lost read reply delivered ${Date.now() - startedAt} ms after the worker started`);
    const orders = stack.target.on('/lost').map((r) => JSON.parse(r.body).request.body.order as number);
    expect(orders.sort()).toEqual([1, 2, 3]);
    // Nothing is left that a later sweep could send again: every entry acknowledged and deleted.
    await waitFor(
      async () => (await pending(proxy)) + (await stack.redis.client.xlen(keys.events)),
      (n) => n === 0,
      5000,
      'the entries to be acknowledged and deleted',
    );
    expect(stack.target.on('/lost')).toHaveLength(3);
    await a.stop();
  });

  it('Redis stopped for 5 s under traffic: every event is delivered once it is back', async () => {
    const path = '/outage';
    const proxy = await start('wh-outage', {}, true);
    const h = await hook(proxy, { name: 'outage', type: 'http', condition: "method(POST) and path('/shop/orders')", url: `${stack.target.url}${path}` });
    stack.target.answer = () => ({ status: 200, body: 'ok' });
    const sent: number[] = [];
    let n = 0;
    let stopTraffic = false;
    const traffic = (async () => {
      while (!stopTraffic) {
        const i = ++n;
        const res = await call(proxy.url, '/shop/orders', { method: 'POST', body: { i } });
        expect(res.status).toBe(201); // the proxy keeps serving without Redis
        sent.push(i);
        await sleep(40);
      }
    })();
    await sleep(800);
    await stack.redis.stop();
    const stoppedAt = Date.now();
    await sleep(5000);
    const sentDuringOutage = sent.length;
    await stack.redis.restart();
    await sleep(800);
    stopTraffic = true;
    await traffic;
    expect(Date.now() - stoppedAt).toBeGreaterThanOrEqual(5000);
    expect(sentDuringOutage).toBeGreaterThan(50);

    const delivered = await waitFor(
      () => new Set(stack.target.on(path).map((r) => JSON.parse(r.body).request.body.i as number)),
      (s) => s.size >= sent.length,
      30_000,
      'every event to be delivered',
    ).catch(async (error: Error) => {
      const got = new Set(stack.target.on(path).map((r) => JSON.parse(r.body).request.body.i as number));
      const missing = sent.filter((i) => !got.has(i));
      const dropped = proxy.context.metrics.webhookEventsDropped.get();
      throw new Error(`${error.message.split(';')[0]}: ${missing.length} of ${sent.length} missing (${missing.slice(0, 20).join(', ')}), ${await pending(proxy)} pending, ${dropped} dropped`);
    });
    expect([...delivered].sort((x, y) => x - y)).toEqual([...sent].sort((x, y) => x - y));
    expect(proxy.context.metrics.webhookEventsDropped.get()).toBe(0);
    await waitFor(
      () => logsOf(proxy, h._id),
      (l) => l.filter((e: any) => e.status === 'success').length >= sent.length,
      10_000,
      'the logs',
    );
    const duplicates = stack.target.on(path).length - delivered.size;
    expect(duplicates).toBeLessThanOrEqual(2); // at-least-once: a lost EXEC reply may repeat a batch
  }, 60_000);

  it('holds events while Redis is down, drops only past the queue capacity (counted and logged), and flushes on shutdown', async () => {
    let logText = '';
    const sink = new Writable({
      write(chunk, _enc, done) {
        logText += chunk.toString();
        done();
      },
    });
    const config = testConfig({ ...stack.raw, service: { id: 'wh-queue' }, webhooks: { ...stack.raw.webhooks, queueCapacity: 10 } });
    const proxy = (await startOutrigger(config, { worker: false, logger: createLogger({ level: 'warn', destination: sink }) })) as Running;
    const h = await hook(proxy, { name: 'queue', type: 'http', condition: "path('/shop/orders')", url: `${stack.target.url}/queue` });
    void h;
    await stack.redis.stop();
    try {
      for (let i = 0; i < 14; i++) expect((await call(proxy.url, '/shop/orders', { method: 'POST', body: { i } })).status).toBe(201);
      const module = webhooksOf(proxy);
      expect(module.internals.producer.depth).toBe(10);
      expect(proxy.context.metrics.webhookEventsQueued.get()).toBe(10);
      expect(proxy.context.metrics.webhookEventsDropped.get()).toBe(4);
      expect(proxy.context.metrics.registry.render()).toMatch(/outrigger_webhook_events_dropped_total 4/);
      expect(logText).toContain('webhook event queue is full');
      // SIGTERM while Redis is still down: stop() keeps flushing, and Redis comes back meanwhile.
      const stopping = proxy.stop();
      await sleep(700);
      await stack.redis.restart();
      await stopping;
    } finally {
      if ((await stack.redis.client.ping().catch(() => null)) !== 'PONG') await stack.redis.restart();
    }
    const events = await waitFor(
      () => streamEvents(stack.redis.client, proxy.context.keys.events),
      (e) => e.length === 10,
      5000,
      'the flushed events',
    );
    expect(events.map((record) => (record.event.request.body as { i: number }).i)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    // Written in one batch once Redis was back: one entry holds them all.
    expect(await stack.redis.client.xlen(proxy.context.keys.events)).toBe(1);
  }, 30_000);
});
