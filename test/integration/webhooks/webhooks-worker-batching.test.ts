import { describe, expect, it } from 'vitest';
import { type TestRedis } from '../../support/redis/redis.js';
import { eventsInEntry } from '../../../src/webhooks/stream-record.js';
import { call, sleep, streamEvents, untilKnown, waitFor, webhooksOf } from './webhooks-helpers.js';
import { useStack } from '../../support/fixtures.js';
import { monitor } from '../../support/redis/redis-monitor.js';

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
  const stack = useStack({
    service: 'wh-batching',
    backend: { data: { shop: { orders: [] } } },
    target: true,
    config: { acl: { mode: 'own-routes', adminRoles: ['$unauthenticated'] }, webhooks: { allowPrivateTargets: ['127.0.0.0/8'] } },
  });

  /**
   * Resolves once the workers' dead-consumer sweep (XPENDING of the group, every 2 s) has run
   * `n` times from now, seen at Redis: the positive event an absence is asserted after (issue 54),
   * since whatever a sweep could start has been started by then.
   */
  async function sweeps(n: number): Promise<void> {
    const watch = await monitor(stack.redis.port);
    try {
      await waitFor(
        () => watch.seen.filter((c) => c.args[0]?.toLowerCase() === 'xpending' && c.args.length === 3).length,
        (k) => k >= n,
        15_000,
        `${n} sweeps`,
      );
    } finally {
      await watch.stop();
    }
  }

  /** Runs `body` while a worker of its own runs, and stops the worker whatever happens. */
  async function withWorker(consumerName: string, body: () => Promise<unknown>): Promise<void> {
    const worker = webhooksOf(stack.proxy).internals.createWorker({ consumerName });
    worker.start();
    try {
      await body();
    } finally {
      await worker.stop();
    }
  }

  it('delivers a backlog of 300 events once each, at most 5 Redis commands per event', async () => {
    const res = await call(stack.proxy.url, '/_admin/webhooks', {
      method: 'POST',
      body: { _id: 'batch', name: 'batch', type: 'http', condition: "method(GET) and path('/shop/orders')", url: `${stack.target.url}/batch` },
    });
    expect(res.status).toBe(201);
    await untilKnown([stack.proxy], 'batch');
    const events = 300;
    for (let i = 0; i < events; i += 30) await Promise.all(Array.from({ length: 30 }, () => call(stack.proxy.url, '/shop/orders')));
    const { keys } = stack.proxy.context;
    await waitFor(
      () => streamEvents(stack.redis.client, keys.events),
      (e) => e.length === events,
      10_000,
      'the stream to hold every event',
    );
    // 30 requests at a time: their events share entries (version 4).
    expect(await stack.redis.client.xlen(keys.events)).toBeLessThan(events);

    const before = await commandsProcessed(stack.redis);
    const worker = webhooksOf(stack.proxy).internals.createWorker({ consumerName: 'batcher' });
    worker.start();
    try {
      await waitFor(
        () => stack.redis.client.xlen(keys.events),
        (n) => n === 0,
        30_000,
        'every event to be delivered and acknowledged',
      );
    } finally {
      await worker.stop();
    }
    // Everything the process sent meanwhile counts, the proxy's pollers and the worker's start and stop included.
    const perEvent = ((await commandsProcessed(stack.redis)) - before - 1) / events;
    expect(perEvent).toBeLessThanOrEqual(5);

    const got = stack.target.on('/batch');
    expect(got).toHaveLength(events);
    expect(new Set(got.map((r) => r.headers['webhook-id'])).size).toBe(events);
    const logs = (await call(stack.proxy.url, '/_admin/webhooks/batch/logs?pagesize=1000')).json as Array<{ status: string }>;
    expect(logs.filter((e) => e.status === 'success')).toHaveLength(events);
    expect(((await stack.redis.client.xpending(keys.events, keys.eventsGroup)) as [number])[0]).toBe(0);
  }, 60_000);

  it('counts its concurrency in events, not entries: an entry of many events starts only as many as slots are free', async () => {
    const res = await call(stack.proxy.url, '/_admin/webhooks', {
      method: 'POST',
      body: { _id: 'slots', name: 'slots', type: 'http', condition: "path('/shop/slots')", url: `${stack.target.url}/slots` },
    });
    expect(res.status).toBe(201);
    await untilKnown([stack.proxy], 'slots');
    const { keys } = stack.proxy.context;
    await Promise.all(Array.from({ length: 40 }, (_, i) => call(stack.proxy.url, '/shop/slots', { method: 'POST', body: { i } })));
    await waitFor(
      () => streamEvents(stack.redis.client, keys.events),
      (e) => e.length === 40,
      10_000,
      'the forty events in the stream',
    );
    // Requests at once share entries: the four oldest hold more than four events (what a worker counting entries would start).
    const sizes = (await stack.redis.client.xrangeBuffer(keys.events, '-', '+')).map(([, f]) => eventsInEntry(f));
    expect(sizes.slice(0, 4).reduce((a, b) => a + b, 0)).toBeGreaterThan(4);
    const previous = stack.target.answer;
    stack.target.answer = (req) => (req.url === '/slots' ? 'hang' : previous(req, 0));
    const worker = webhooksOf(stack.proxy).internals.createWorker({ consumerName: 'slots', concurrency: 4 });
    worker.start();
    try {
      await waitFor(
        () => stack.target.on('/slots'),
        (l) => l.length === 4,
        5000,
        'four deliveries to start',
      );
      await sweeps(2); // the worker ran on for two sweeps with the four hanging
      expect(stack.target.on('/slots')).toHaveLength(4); // no fifth while the four hang
      stack.target.answer = previous;
      stack.target.release();
      await waitFor(
        () => stack.redis.client.xlen(keys.events),
        (n) => n === 0,
        10_000,
        'every event to be delivered and acknowledged',
      );
    } finally {
      stack.target.answer = previous;
      stack.target.release();
      await worker.stop();
    }
    expect(new Set(stack.target.on('/slots').map((r) => JSON.parse(r.body).request.body.i)).size).toBe(40);
    expect(stack.target.on('/slots')).toHaveLength(40);
  }, 30_000);

  it("an event with one delivery commits its log entry and acknowledgement together, without a marker; one with two marks each delivery in its entry's hash, deleted at acknowledgement", async () => {
    for (const id of ['solo', 'pair-a', 'pair-b']) {
      const path = id === 'solo' ? '/shop/solo' : '/shop/pair';
      const res = await call(stack.proxy.url, '/_admin/webhooks', { method: 'POST', body: { _id: id, name: id, type: 'http', condition: `path('${path}')`, url: `${stack.target.url}/${id}` } });
      expect(res.status).toBe(201);
    }
    await untilKnown([stack.proxy], 'solo');
    await untilKnown([stack.proxy], 'pair-b');
    const { keys } = stack.proxy.context;
    // A request no webhook matches takes every webhook's `skipped` entry for the next 10 s, so
    // the two events below carry deliveries only.
    // Apart by more than the proxy's 4 ms linger, so that each event gets an entry of its own.
    await call(stack.proxy.url, '/shop/none');
    await sleep(50);
    await call(stack.proxy.url, '/shop/solo', { method: 'POST', body: { n: 1 } });
    await sleep(50);
    await call(stack.proxy.url, '/shop/pair', { method: 'POST', body: { n: 2 } });
    await waitFor(
      () => stack.redis.client.xlen(keys.events),
      (n) => n === 3,
      10_000,
      'the three events in the stream',
    );

    // What the worker writes, as Redis sees it: markers are SETs of `delivered:` keys or HSETs of `entry-delivered:` hashes.
    const redisMonitor = await stack.redis.client.monitor();
    const marked: string[] = [];
    let ended = false;
    redisMonitor.on('monitor', (_time: string, args: string[]) => {
      const [command, key, ...rest] = args.map(String);
      if (command?.toLowerCase() === 'echo' && key === 'markers-end') ended = true;
      if (command?.toLowerCase() === 'set' && key?.startsWith(keys.deliveryDone('', '').slice(0, -2))) marked.push(`key ${key.split(':').at(-1)}`);
      if (command?.toLowerCase() === 'hset' && key?.startsWith(keys.entryDeliveries(''))) for (let i = 0; i < rest.length; i += 2) marked.push(`field ${rest[i]!.split(':').at(-1)} ${rest[i + 1]}`);
    });
    try {
      await withWorker('markers', () =>
        waitFor(
          () => stack.redis.client.xlen(keys.events),
          (n) => n === 0,
          10_000,
          'the events to be acknowledged',
        ),
      );
      // MONITOR streams asynchronously: the marker showing up means every line before it has.
      await stack.redis.client.echo('markers-end');
      await waitFor(
        () => ended,
        (e) => e,
        10_000,
        'the monitor to show the end marker',
      );
    } finally {
      redisMonitor.disconnect();
    }
    expect(stack.target.on('/solo')).toHaveLength(1);
    expect(stack.target.on('/pair-a')).toHaveLength(1);
    expect(stack.target.on('/pair-b')).toHaveLength(1);
    expect(marked.sort()).toEqual(['field pair-a success', 'field pair-b success']);
    // Deleted with the acknowledgement (the tests above shared entries: none of theirs is left either).
    expect(await stack.redis.client.keys(`${keys.entryDeliveries('')}*`)).toEqual([]);
    for (const id of ['solo', 'pair-a', 'pair-b']) {
      const logs = (await call(stack.proxy.url, `/_admin/webhooks/${id}/logs`)).json as Array<{ status: string }>;
      expect(logs.map((e) => e.status).sort()).toEqual(['skipped', 'success']);
    }
  }, 30_000);

  it('leaves an entry of a newer version pending for an upgraded worker, and acknowledges one that is not ours', async () => {
    const { keys } = stack.proxy.context;
    await stack.redis.client.del(keys.events);
    await stack.redis.client.xgroup('CREATE', keys.events, keys.eventsGroup, '0', 'MKSTREAM');
    const newer = await stack.redis.client.xadd(keys.events, '*', 'e', '{"v":5,"id":"evt_future","ma":["solo"]}\n');
    const foreign = await stack.redis.client.xadd(keys.events, '*', 'x', 'not an event');
    const before = stack.target.on('/solo').length;
    await call(stack.proxy.url, '/shop/solo', { method: 'POST', body: { n: 3 } });
    await waitFor(
      () => stack.redis.client.xlen(keys.events),
      (n) => n === 3,
      10_000,
      'the event behind the two hand-written entries',
    );
    expect((await stack.redis.client.xrange(keys.events, '-', '+')).map(([id]) => id).slice(0, 2)).toEqual([newer, foreign]);

    await withWorker('older', async () => {
      await waitFor(
        () => stack.redis.client.xlen(keys.events),
        (n) => n === 1,
        10_000,
        'the event and the foreign entry to be acknowledged',
      );
      await sweeps(2); // sweeps for orphans pass over the newer entry
      const pending = (await stack.redis.client.xpending(keys.events, keys.eventsGroup, '-', '+', 10)) as Array<[string, string, number, number]>;
      expect(pending.map(([id]) => id)).toEqual([newer]);
      expect(pending[0]![3]).toBe(1); // delivered to this worker once, not claimed back every sweep
    });
    expect(stack.target.on('/solo')).toHaveLength(before + 1);
    // The foreign entry (in the stream before the worker ran) was acknowledged and deleted: only the newer one is left.
    expect((await stack.redis.client.xrange(keys.events, '-', '+')).map(([id]) => id)).toEqual([newer]);
  }, 30_000);
});
