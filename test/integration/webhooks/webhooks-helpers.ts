/**
 * Shared pieces of the webhook integration tests: an HTTP client, a webhook target that records
 * what it receives and answers as each test scripts it, and polling helpers.
 */
import type { Redis } from 'ioredis';
import { afterAll, beforeEach } from 'vitest';
import type { WebhookWorker } from '../../../src/webhooks/deliver/worker.js';
import { decodeStreamEntry, type StreamRecord } from '../../../src/webhooks/stream-record.js';
import type { RunningOutrigger } from '../../../src/app.js';
import type { WebhooksModule } from '../../../src/webhooks/module.js';
import { type Running, useStack } from '../../support/fixtures.js';
import { call, type CallResult } from '../../support/clients/http-client.js';
import { sleep, waitFor } from '../../support/wait.js';
export { sleep, waitFor };
export { startTarget, type Answer, type Received, type Target } from '../../support/peers/webhook-target.js';
export { call, type CallResult };

/** The events a stream holds, in order (an entry of version 4 holds several). */
export async function streamEvents(redis: Redis, key: string): Promise<StreamRecord[]> {
  const entries = await redis.xrangeBuffer(key, '-', '+');
  return entries.flatMap(([, fields]) => decodeStreamEntry(fields) ?? []);
}

export function webhooksOf(running: RunningOutrigger): WebhooksModule {
  const module = running.modules.find((m) => m.name === 'webhooks') as WebhooksModule | undefined;
  if (!module) throw new Error('the webhooks module is not registered');
  return module;
}

/** Waits until every replica's in-process copy holds the webhook (the observer reads that copy). */
export async function untilKnown(replicas: RunningOutrigger[], id: string): Promise<void> {
  for (const r of replicas)
    await waitFor(
      () => webhooksOf(r).internals.store.get(id),
      (d) => d !== undefined,
      5000,
      `webhook ${id} on a replica`,
    );
}

/** Lets role `hook-editor` manage webhooks (a permission on /_admin/webhooks); the answer, for the caller to check. */
export function permitHookEditors(base: string, rootAuth: string): Promise<CallResult> {
  return call(base, '/_admin/acl/hook-editors', {
    method: 'PUT',
    auth: rootAuth,
    body: { predicate: 'path-prefix(/_admin/webhooks)', roles: ['hook-editor'], priority: 1 },
  });
}

/**
 * The stack of the worker tests: a backend and a webhook target, no proxy. Each test starts its
 * own proxies (`running`) and workers (`workers`); whatever an earlier test, or a failed try of
 * this one, left running is stopped before the next, so it cannot deliver into its counts.
 */
export function useWorkerStack() {
  // own-routes with no users: anonymous callers may use the admin API (tests only).
  const stack = useStack({
    backend: { data: { shop: { orders: [] } } },
    target: true,
    config: { acl: { mode: 'own-routes', adminRoles: ['$unauthenticated'] }, webhooks: { allowPrivateTargets: ['127.0.0.0/8'] } },
    outrigger: false,
  });
  const running: Running[] = [];
  const workers: WebhookWorker[] = [];
  afterAll(async () => {
    for (const w of workers) w.kill();
    stack.target.release();
    for (const r of running) await r.stop().catch(() => {});
  });
  beforeEach(async () => {
    for (const w of workers.splice(0)) w.kill();
    stack.target.release();
    for (const r of running.splice(0)) await r.stop().catch(() => {});
    stack.target.received.length = 0;
    stack.target.answer = () => ({ status: 200, body: 'ok' });
  });
  return { stack, running, workers };
}

/**
 * The positive event an absence is asserted after (issue 54), instead of a sleep that a merely
 * slow delivery outlasts: every event the replicas' observers queued is in the stream (a batch
 * leaves a producer's queue only once written), the workers have finished every stream entry
 * (an entry is deleted once acknowledged, after each of its deliveries is final or scheduled
 * for a retry), and no retry is scheduled. What has not happened by then never will.
 */
export async function untilSettled(redis: Redis, replicas: RunningOutrigger[], timeoutMs = 15_000): Promise<void> {
  const { keys } = replicas[0]!.context;
  await waitFor(
    async () => replicas.every((r) => webhooksOf(r).internals.producer.depth === 0) && (await redis.xlen(keys.events)) === 0 && (await redis.zcard(keys.retrySchedule)) === 0,
    (settled) => settled,
    timeoutMs,
    'every captured event delivered and no retry scheduled',
  );
}
