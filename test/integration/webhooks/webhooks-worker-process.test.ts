import { spawn, type ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, requireBuiltCli, writeTempFile } from '../../support/clients/cli.js';
import { startTestOutrigger, type RawConfig } from '../../support/outrigger.js';
import { call, sleep, untilKnown, waitFor, webhooksOf } from './webhooks-helpers.js';
import type { WebhooksModule } from '../../../src/webhooks/module.js';
import { useStack } from '../../support/fixtures.js';

/**
 * `outrigger worker` as its own process (the built CLI: `npm test` builds first), SIGKILLed while
 * a target holds its delivery; a worker elsewhere reclaims the event and delivers it.
 */
describe('webhooks: a standalone worker process killed mid-delivery', () => {
  beforeAll(() => requireBuiltCli('this file runs `outrigger worker` from dist/'));
  const stack = useStack({
    service: 'wh-process',
    backend: { data: { shop: { orders: [] } } },
    target: true,
    config: { acl: { mode: 'own-routes', adminRoles: ['$unauthenticated'] }, webhooks: { allowPrivateTargets: ['127.0.0.0/8'], reclaimIdleMs: 1000 }, log: { level: 'info' } },
  });
  let child: ChildProcess | null = null;
  afterAll(() => {
    child?.kill('SIGKILL');
    stack.target.release();
  });

  it('delivers the events of a SIGKILLed worker process from another worker', async () => {
    const hook = await call(stack.proxy.url, '/_admin/webhooks', {
      method: 'POST',
      body: { _id: 'proc', name: 'proc', type: 'http', condition: "path('/shop/orders')", url: `${stack.target.url}/proc` },
    });
    expect(hook.status).toBe(201);
    await untilKnown([stack.proxy], 'proc');
    stack.target.answer = () => (stack.target.on('/proc').length === 1 ? 'hang' : { status: 200, body: 'ok' });

    const file = writeTempFile('worker.yaml', stack.raw);
    let output = '';
    child = spawn(process.execPath, [CLI, 'worker', '-c', file], { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout!.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr!.on('data', (c: Buffer) => (output += c.toString()));
    const exited = new Promise<number | null>((resolve) => child!.on('exit', (code, signal) => resolve(code ?? (signal ? -1 : null))));

    await call(stack.proxy.url, '/shop/orders', { method: 'POST', body: { order: 'p1' } });
    await waitFor(
      () => stack.target.on('/proc'),
      (l) => l.length === 1,
      15_000,
      `the worker process to deliver (its output: ${output})`,
    );
    child.kill('SIGKILL');
    expect(await exited).toBe(-1);
    child = null;

    const worker = webhooksOf(stack.proxy).internals.createWorker({ consumerName: 'survivor' });
    worker.start();
    try {
      const logs = await waitFor(
        async () => (await call(stack.proxy.url, '/_admin/webhooks/proc/logs')).json,
        (l) => l.length === 1,
        10_000,
        'the survivor to deliver',
      );
      expect(logs[0]).toMatchObject({ status: 'success', attempt: 1 });
      const got = stack.target.on('/proc');
      expect(got).toHaveLength(2);
      expect(got[1]!.headers['webhook-id']).toBe(got[0]!.headers['webhook-id']);
      expect(JSON.parse(got[1]!.body).request.body).toEqual({ order: 'p1' });
      await waitFor(
        async () => ((await stack.redis.client.xpending(stack.proxy.context.keys.events, stack.proxy.context.keys.eventsGroup)) as [number])[0],
        (n) => n === 0,
        5000,
        'the ack',
      );
    } finally {
      await worker.stop();
    }
  }, 40_000);

  it('a dead worker is found by its expired heartbeat: its events go to another worker within seconds, not after reclaimIdleMs', async () => {
    // reclaimIdleMs is two minutes here: only the heartbeat can explain a redelivery within 15 s.
    const slowRaw: RawConfig = { ...stack.raw, service: { id: 'wh-heartbeat' }, webhooks: { allowPrivateTargets: ['127.0.0.0/8'], reclaimIdleMs: 120_000 } };
    const front = await startTestOutrigger(slowRaw, { worker: false });
    let survivor: ReturnType<WebhooksModule['internals']['createWorker']> | null = null;
    try {
      const hook = await call(front.url, '/_admin/webhooks', {
        method: 'POST',
        body: { _id: 'beat', name: 'beat', type: 'http', condition: "path('/shop/orders')", url: `${stack.target.url}/beat`, timeout_ms: 30_000 },
      });
      expect(hook.status).toBe(201);
      await untilKnown([front], 'beat');
      // Every first delivery of an event hangs (the worker process is busy with them when it dies).
      const seen = new Map<string, number>();
      stack.target.answer = (req) => {
        if (req.url !== '/beat') return { status: 200, body: 'ok' };
        const id = req.headers['webhook-id'] as string;
        seen.set(id, (seen.get(id) ?? 0) + 1);
        return seen.get(id) === 1 ? 'hang' : { status: 200, body: 'ok' };
      };

      const file = writeTempFile('worker-heartbeat.yaml', slowRaw);
      let output = '';
      child = spawn(process.execPath, [CLI, 'worker', '-c', file], { stdio: ['ignore', 'pipe', 'pipe'] });
      child.stdout!.on('data', (c: Buffer) => (output += c.toString()));
      child.stderr!.on('data', (c: Buffer) => (output += c.toString()));
      const exited = new Promise<number | null>((resolve) => child!.on('exit', (code, signal) => resolve(code ?? (signal ? -1 : null))));

      // A live worker beside it, running all along: it must not take the child's hanging deliveries while the child lives.
      survivor = webhooksOf(front).internals.createWorker({ consumerName: 'heartbeat-survivor' });
      const events = 4;
      // The survivor starts only after the child holds every event, so the child gets them all.
      for (let i = 0; i < events; i++) await call(front.url, '/shop/orders', { method: 'POST', body: { order: `hb${i}` } });
      // Not a speed goal: a Node process can take over 15 s to load and start on a loaded machine (issue 40).
      await waitFor(
        () => stack.target.on('/beat'),
        (l) => l.length === events,
        60_000,
        `the worker process to start every delivery (its output: ${output})`,
      );
      survivor.start();
      // Slow but alive: 8 s of hanging (longer than the 5 s heartbeat TTL and several sweeps) take nothing away.
      await sleep(8000);
      expect(stack.target.on('/beat')).toHaveLength(events);

      child.kill('SIGKILL');
      const killedAt = Date.now();
      expect(await exited).toBe(-1);
      child = null;
      await waitFor(
        () => stack.target.on('/beat'),
        (l) => l.length === 2 * events,
        30_000,
        "the survivor to deliver the dead worker's events",
      );
      const tookMs = Date.now() - killedAt;
      console.log(`[worker] a SIGKILLed worker's ${events} events delivered by another ${tookMs} ms after the kill`);
      expect(tookMs).toBeLessThan(15_000);
      const bodies = stack.target
        .on('/beat')
        .slice(events)
        .map((r) => JSON.parse(r.body).request.body.order as string);
      expect(bodies.sort()).toEqual(Array.from({ length: events }, (_, i) => `hb${i}`).sort());
      await waitFor(
        async () => ((await stack.redis.client.xpending(front.context.keys.events, front.context.keys.eventsGroup)) as [number])[0],
        (n) => n === 0,
        5000,
        'the acks',
      );
    } finally {
      stack.target.release();
      await survivor?.stop();
      await front.stop();
    }
  }, 120_000);
});
