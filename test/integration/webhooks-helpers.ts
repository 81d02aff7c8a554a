/**
 * Shared pieces of the webhook integration tests: an HTTP client, a webhook target that records
 * what it receives and answers as each test scripts it, and polling helpers.
 */
import type { Redis } from 'ioredis';
import { decodeStreamEntry, type StreamRecord } from '../../src/webhooks/stream-record.js';
import type { RunningOutrigger } from '../../src/app.js';
import type { WebhooksModule } from '../../src/webhooks/module.js';
import { call, type CallResult } from '../support/http-client.js';
import { sleep, waitFor } from '../support/wait.js';
export { sleep, waitFor };
export { startTarget, type Answer, type Received, type Target } from '../support/webhook-target.js';
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
  for (const r of replicas) await waitFor(() => webhooksOf(r).internals.store.get(id), (d) => d !== undefined, 5000, `webhook ${id} on a replica`);
}

/** Lets role `hook-editor` manage webhooks (a permission on /_admin/webhooks); the answer, for the caller to check. */
export function permitHookEditors(base: string, rootAuth: string): Promise<CallResult> {
  return call(base, '/_admin/acl/hook-editors', {
    method: 'PUT',
    auth: rootAuth,
    body: { predicate: 'path-prefix(/_admin/webhooks)', roles: ['hook-editor'], priority: 1 },
  });
}
