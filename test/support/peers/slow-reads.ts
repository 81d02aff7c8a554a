/**
 * An HTTP relay in front of a backend that holds every GET for `slowMs` (0: none) and passes
 * everything else as it is: reads made slow on purpose, so a subscriber's re-read would come after
 * the writer's next write (issue 53's rows on the state a change carries).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { request } from 'undici';
import { startHttpServer, type TestServer } from './http-servers.js';
import { sleep } from '../wait.js';

export type SlowReads = TestServer & { slowMs: number };

export async function startSlowReads(target: string): Promise<SlowReads> {
  const relay = { slowMs: 0 } as SlowReads;
  const server = await startReadRelay(target, async (req) => {
    if (req.method === 'GET' && relay.slowMs > 0) await sleep(relay.slowMs);
  });
  return Object.assign(relay, server);
}

/**
 * A relay to `target` that runs `beforeForward` once a request's body has arrived and before it
 * goes on: the hold each kind of relay adds (slow reads here, gated reads). Answers are passed
 * whole, with their length.
 */
export async function startReadRelay(target: string, beforeForward: (req: IncomingMessage) => Promise<void>): Promise<TestServer> {
  return startHttpServer((req: IncomingMessage, res: ServerResponse) => {
    void (async () => {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      await beforeForward(req);
      const headers = { ...req.headers };
      for (const h of ['host', 'connection', 'content-length', 'transfer-encoding', 'keep-alive']) delete headers[h];
      const up = await request(`${target}${req.url}`, { method: req.method as 'GET', headers, body: chunks.length > 0 ? Buffer.concat(chunks) : null });
      const body = Buffer.from(await up.body.arrayBuffer());
      const out = { ...up.headers };
      for (const h of ['connection', 'transfer-encoding', 'keep-alive']) delete out[h];
      out['content-length'] = String(body.length);
      res.writeHead(up.statusCode, out);
      res.end(body);
    })().catch(() => res.destroy());
  });
}
