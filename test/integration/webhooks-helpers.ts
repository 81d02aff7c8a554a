/**
 * Shared pieces of the webhook integration tests: an HTTP client, a webhook target that records
 * what it receives and answers as each test scripts it, and polling helpers.
 */
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { Redis } from 'ioredis';
import { decodeStreamEntry, type StreamRecord } from '../../src/webhooks/stream-record.js';
import type { RunningOutrigger } from '../../src/app.js';
import type { WebhooksModule } from '../../src/webhooks/module.js';
import { startHttpServer, type TestServer } from '../support/http-servers.js';
import { call, type CallResult } from '../support/http-client.js';
import { sleep, waitFor } from '../support/wait.js';
export { sleep, waitFor };
export { call, type CallResult };

export interface Received {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** performance.now() when the request's body had arrived. */
  at: number;
}

export type Answer = { status?: number; headers?: Record<string, string>; body?: string; delayMs?: number } | 'hang';

/** A webhook target on a loopback port: records every request, answers with `answer(request, index)`. */
export interface Target extends TestServer {
  received: Received[];
  /** Requests to one path. */
  on(path: string): Received[];
  answer: (req: Received, index: number) => Answer;
  /** Releases hanging requests (answers 200) and forgets them. */
  release(): void;
}

export async function startTarget(answer: Target['answer'] = () => ({ status: 200, body: 'ok' })): Promise<Target> {
  const hanging: ServerResponse[] = [];
  const target = {} as Target;
  target.received = [];
  target.answer = answer;
  const server = await startHttpServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const received: Received = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: performance.now() };
      const index = target.received.push(received) - 1;
      const a = target.answer(received, index);
      if (a === 'hang') {
        hanging.push(res);
        return;
      }
      const send = () => {
        if (res.destroyed) return;
        res.writeHead(a.status ?? 200, { 'content-type': 'text/plain', ...a.headers });
        res.end(a.body ?? '');
      };
      if (a.delayMs) setTimeout(send, a.delayMs);
      else send();
    });
  });
  return Object.assign(target, server, {
    on: (path: string) => target.received.filter((r) => r.url === path),
    release() {
      for (const res of hanging.splice(0)) if (!res.destroyed) res.writeHead(200).end('released');
    },
  });
}

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
