/**
 * The shutdown sequence in this process (src/shutdown.ts; the built CLI and its signals are
 * test/e2e/running/shutdown-signals.test.ts): readiness fails at once, answers carry Connection: close
 * during the drain, the stop-accepting callbacks (where subscriptions end) run once the server
 * no longer accepts and before in-flight requests are awaited.
 */
import { Agent, request as httpRequest, type IncomingMessage } from 'node:http';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ReconnectHint } from '../../../src/util/draining.js';
import { startHttpServer, type TestServer } from '../../support/peers/http-servers.js';
import { startTestOutrigger } from '../../support/outrigger.js';
import { startTestRedis, type TestRedis } from '../../support/redis/redis.js';
import { until } from '../../support/wait.js';

/** One GET over `agent`, its answer read whole. */
function get(url: string, agent: Agent | false): Promise<{ status: number; headers: IncomingMessage['headers']; body: string }> {
  return new Promise((resolve, reject) => {
    httpRequest(url, { agent }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    })
      .on('error', reject)
      .end();
  });
}

describe('the shutdown sequence (in process)', () => {
  let redis: TestRedis;
  let upstream: TestServer;
  const held: Array<() => void> = [];

  beforeAll(async () => {
    redis = await startTestRedis();
    upstream = await startHttpServer((req, res) => {
      if (req.url === '/held') return held.push(() => res.end('finished after the drain'));
      res.end('ok');
    });
  });
  afterAll(async () => {
    await upstream?.close();
    await redis?.close();
  });

  it('fails readiness at once, closes kept-alive connections after each answer, then runs the stop-accepting callbacks before awaiting in-flight requests', async () => {
    const running = await startTestOutrigger({
      service: { id: 'shutdown-in-process' },
      upstream: { url: upstream.url },
      redis: { url: redis.url },
      acl: { mode: 'own-routes' },
      // Long enough that the checks below run inside it on a busy machine; the stop is awaited at the end.
      shutdown: { drainSeconds: 5, timeoutSeconds: 20 },
    });
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const before = await get(`${running.url}/_health/ready`, agent);
      expect(before.status).toBe(200);
      expect(before.headers.connection).toBe('keep-alive');

      const seen: Array<{ hint: ReconnectHint; accepting: boolean; heldOpen: boolean }> = [];
      let heldDone = false;
      running.context.draining.onStopAccepting(async (hint) => {
        seen.push({ hint, accepting: await accepts(running.url), heldOpen: !heldDone });
      });
      const inFlight = get(`${running.url}/held`, false).then((r) => ((heldDone = true), r));
      await until(() => held.length === 1, 'the upstream to hold /held');

      const stopped = running.stop();
      // No wait: the drain begins in the same tick as stop().
      const ready = await get(`${running.url}/_health/ready`, agent);
      expect(ready.status).toBe(503);
      expect(JSON.parse(ready.body)).toMatchObject({ status: 'not ready', checks: { shutdown: 'draining' } });
      expect(ready.headers.connection).toBe('close');
      const served = await get(`${running.url}/anything`, agent);
      expect([served.status, served.body, served.headers.connection]).toEqual([200, 'ok', 'close']);
      expect(seen).toEqual([]);

      await until(() => seen.length === 1, 'the stop-accepting callback');
      expect(seen[0]).toEqual({ hint: { reason: 'shutdown', retryAfterMs: 1000 }, accepting: false, heldOpen: true });
      held.shift()!();
      const finished = await inFlight;
      expect([finished.status, finished.body, finished.headers.connection]).toEqual([200, 'finished after the drain', 'close']);
      await stopped;
    } finally {
      agent.destroy();
      await running.stop();
    }
  }, 60_000);
});

/** Whether a new TCP connection to the server is accepted. */
function accepts(url: string): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname, () => {
      socket.destroy();
      resolve(true);
    });
    socket.on('error', () => resolve(false));
  });
}
