/**
 * SIGTERM on the built CLI, step by step (SPEC §2; the sequence is src/shutdown.ts): readiness
 * 503 at once, requests still served during the drain with `Connection: close`, new connections
 * refused after it while an in-flight request finishes, the teed events in Redis, exit 0; a
 * request still running at shutdown.timeoutSeconds is cut; a second signal exits at once and
 * the delivery it cut is reclaimed by another worker. `outrigger check` validates both settings.
 */
import { spawn } from 'node:child_process';
import { Agent, request as httpRequest, type IncomingMessage } from 'node:http';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redisKeys } from '../../../src/store/keys.js';
import { freePort } from '../../../src/util/free-port.js';
import { decodeStreamEntry } from '../../../src/webhooks/stream-record.js';
import { CLI, runCli, startCli, writeTempFile, type RunningCli } from '../../support/clients/cli.js';
import { startHttpServer, type TestServer } from '../../support/peers/http-servers.js';
import { startTestRedis, type TestRedis } from '../../support/redis/redis.js';
import { sleep, until, waitFor } from '../../support/wait.js';
import { startTarget, type Answer, type Target } from '../../support/peers/webhook-target.js';

interface Answered {
  status: number;
  headers: IncomingMessage['headers'];
  body: string;
}

/** One request over `agent` (false: a connection of its own), its answer read whole. */
function send(url: string, agent: Agent | false, method = 'GET'): Promise<Answered> {
  return new Promise((resolve, reject) => {
    httpRequest(url, { agent, method }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    })
      .on('error', reject)
      .end();
  });
}

/** Whether the server accepts a new TCP connection. */
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

const SERVICE = 'e2e-shutdown';
/** Starting a Node process on a loaded 2-core machine can take long; this only ends a start that never comes. */
const START_MS = 60_000;
const keys = redisKeys('outrigger', SERVICE);

describe('SIGTERM on the built CLI: drain, then close', () => {
  let redis: TestRedis;
  let upstream: TestServer;
  let target: Target;
  let answer: (index: number) => Answer = () => ({ status: 200 });
  const held: Array<() => void> = [];

  beforeAll(async () => {
    redis = await startTestRedis();
    upstream = await startHttpServer((req, res) => {
      req.resume();
      if (req.url?.startsWith('/held')) return held.push(() => res.end('finished after the drain'));
      res.end('ok');
    });
    target = await startTarget((_req, index) => answer(index));
  });
  afterAll(async () => {
    for (const release of held.splice(0)) release();
    await target?.close();
    await upstream?.close();
    await redis?.close();
  });

  function configFile(shutdown: Record<string, number>, extra: Record<string, unknown> = {}): string {
    const setup = writeTempFile('setup.yaml', {
      webhooks: [{ _id: 'posts', name: 'posts', type: 'http', condition: 'method(POST)', url: `${target.url}/hook` }],
    });
    return writeTempFile('outrigger.yaml', {
      service: { id: SERVICE },
      listen: { host: '127.0.0.1', port: 0 },
      upstream: { url: upstream.url },
      redis: { url: redis.url },
      acl: { mode: 'own-routes', bootstrap: setup },
      webhooks: { allowPrivateTargets: ['127.0.0.0/8'], reclaimIdleMs: 500, retrySchedule: [] },
      log: { level: 'info' },
      shutdown,
      ...extra,
    });
  }

  /** Teed events in the stream: events a few ms apart share an entry, so entries (XLEN) undercount them. */
  const events = async () => (await redis.client.xrangeBuffer(keys.events, '-', '+')).reduce((n, [, fields]) => n + (decodeStreamEntry(fields)?.length ?? 0), 0);

  it('fails readiness at once, serves the drain with Connection: close, then refuses new connections while an in-flight request finishes, keeps every teed event, exits 0', async () => {
    await redis.client.del(keys.events);
    // The drain is long enough for the few requests made in it on a busy machine; nothing waits it out idly.
    const cli = await startCli(configFile({ drainSeconds: 8, timeoutSeconds: 30 }), ['--no-worker'], START_MS);
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const before = await send(`${cli.url}/_health/ready`, agent);
      expect([before.status, before.headers.connection]).toEqual([200, 'keep-alive']);
      const inFlight = send(`${cli.url}/held`, false, 'POST');
      // Watched from the start, so that an answer (or a cut) before the upstream lets go shows
      // below (issue 54: a .finally attached just before reading it could never have run). Caught
      // here too: if a step below fails, the request is cut by the clean-up, and its rejection
      // must not surface as an unhandled error of a later test.
      let settled = false;
      inFlight.finally(() => (settled = true)).catch(() => {});
      await until(() => held.length === 1, 'the upstream to hold POST /held');

      cli.child.kill('SIGTERM');
      await until(() => cli.output().includes('received SIGTERM'), 'the log line of the signal');
      // The drain begins in the same tick as that line: the very next probe fails.
      const ready = await send(`${cli.url}/_health/ready`, agent);
      expect(ready.status).toBe(503);
      expect(JSON.parse(ready.body).checks.shutdown).toBe('draining');
      expect(ready.headers.connection).toBe('close');

      // Still served, each answer closing its connection (the agent opens a new one each time).
      for (let i = 0; i < 3; i++) {
        const served = await send(`${cli.url}/during-drain-${i}`, agent, 'POST');
        expect([served.status, served.body, served.headers.connection]).toEqual([200, 'ok', 'close']);
      }

      await until(async () => !(await accepts(cli.url)), 'new connections to be refused after the drain', 20_000);
      // The line is written as the listener closes; it may reach our pipe a moment after a refused connect.
      await until(() => cli.output().includes('stopped accepting connections'), 'the log line saying so', 5_000);
      await waitFor(events, (n) => n === 3, 15_000, 'the three events of the drain in Redis');
      // Still held through the drain and the stop of accepting: the in-flight request was not cut.
      expect(settled).toBe(false);

      held.shift()!();
      const finished = await inFlight;
      expect([finished.status, finished.body, finished.headers.connection]).toEqual([200, 'finished after the drain', 'close']);
      expect(await cli.exited).toBe(0);
      // The held POST's event was queued after the server stopped accepting: the flush wrote it.
      expect(await events()).toBe(4);
      expect(cli.output()).toContain('Outrigger stopped');
    } finally {
      agent.destroy();
      stop(cli);
    }
  }, 180_000);

  it("SIGUSR2 (a native sidecar's preStop) drains without stopping; the SIGTERM that follows skips the drain time spent", async () => {
    const cli = await startCli(configFile({ drainSeconds: 1, timeoutSeconds: 10 }), ['--no-worker'], START_MS);
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      cli.child.kill('SIGUSR2');
      await until(() => cli.output().includes('received SIGUSR2'), 'the log line of SIGUSR2');
      const ready = await send(`${cli.url}/_health/ready`, agent);
      expect([ready.status, ready.headers.connection]).toEqual([503, 'close']);
      // Past drainSeconds, still serving: only SIGTERM (after the backend has exited) ends it.
      await sleep(1500);
      const served = await send(`${cli.url}/after-drain-seconds`, agent);
      expect([served.status, served.headers.connection]).toEqual([200, 'close']);
      expect(await accepts(cli.url)).toBe(true);

      cli.child.kill('SIGTERM');
      expect(await cli.exited).toBe(0);
      expect(cli.output()).toContain('stopped accepting connections');
      expect(cli.output()).not.toContain('s more, then Outrigger stops accepting');
    } finally {
      agent.destroy();
      stop(cli);
    }
  }, 180_000);

  it('cuts a request still in flight when shutdown.timeoutSeconds runs out, and still exits 0', async () => {
    const cli = await startCli(configFile({ drainSeconds: 0, timeoutSeconds: 1 }), ['--no-worker'], START_MS);
    try {
      const inFlight = send(`${cli.url}/held-forever`, false).then(
        () => 'answered',
        (error: NodeJS.ErrnoException) => error.code ?? error.message,
      );
      await until(() => held.length === 1, 'the upstream to hold /held-forever');
      cli.child.kill('SIGTERM');
      expect(await inFlight).toBe('ECONNRESET');
      expect(await cli.exited).toBe(0);
      expect(cli.output()).toMatch(/shutdown.timeoutSeconds ran out; cut the requests still in flight/);
    } finally {
      held.splice(0);
      stop(cli);
    }
  }, 180_000);

  it('lets the in-process worker finish the delivery it has in flight and acknowledge it before exit 0', async () => {
    await redis.client.del(keys.events);
    // The target answers only once the SIGTERM has been taken: the attempt is in flight across it.
    answer = () => 'hang';
    const deliveries = target.received.length;
    const cli = await startCli(configFile({ drainSeconds: 0, timeoutSeconds: 20 }), [], START_MS);
    try {
      expect((await send(`${cli.url}/orders`, false, 'POST')).status).toBe(200);
      await until(() => target.received.length === deliveries + 1, 'the in-process worker to start delivering the event');
      cli.child.kill('SIGTERM');
      await until(() => cli.output().includes('received SIGTERM'), 'the log line of the signal');
      target.release();
      expect(await cli.exited).toBe(0);
      // Delivered once, acknowledged by the stopping worker: nothing left for a reclaim.
      expect(target.received.length).toBe(deliveries + 1);
      const pending = (await redis.client.xpending(keys.events, keys.eventsGroup)) as [number, ...unknown[]];
      expect(pending[0]).toBe(0);
    } finally {
      answer = () => ({ status: 200 });
      stop(cli);
    }
  }, 180_000);

  it('exits at once on a second signal; the delivery it cut is still in Redis and another worker delivers it', async () => {
    await redis.client.del(keys.events);
    const deliveries = target.received.length;
    // This test's first delivery hangs (the index counts every delivery of the file); its redelivery is answered.
    answer = (index) => (index === deliveries ? 'hang' : { status: 200 });
    // A drain of a minute: only the second signal can end this process within the test's time.
    const cli = await startCli(configFile({ drainSeconds: 60, timeoutSeconds: 120 }), [], START_MS);
    let worker: RunningCli | null = null;
    try {
      const posted = await send(`${cli.url}/orders`, false, 'POST');
      expect(posted.status).toBe(200);
      await until(() => target.received.length === deliveries + 1, 'the in-process worker to start delivering the event');
      const eventId = target.received.at(-1)!.headers['webhook-id'];

      cli.child.kill('SIGTERM');
      await until(() => cli.output().includes('received SIGTERM'), 'the log line of the first signal');
      cli.child.kill('SIGTERM');
      expect(await cli.exited).toBe(143);
      expect(cli.output()).toContain('received SIGTERM again: exiting at once');

      // The event is in its stream, its delivery pending (never acknowledged), so not lost.
      expect(await events()).toBe(1);
      const pending = (await redis.client.xpending(keys.events, keys.eventsGroup)) as [number, ...unknown[]];
      expect(pending[0]).toBe(1);

      worker = await startWorker(configFile({ drainSeconds: 60, timeoutSeconds: 120 }));
      await until(() => target.received.length === deliveries + 2, 'another worker to reclaim and deliver the event', 30_000);
      expect(target.received.at(-1)!.headers['webhook-id']).toBe(eventId);
      await waitFor(
        async () => ((await redis.client.xpending(keys.events, keys.eventsGroup)) as [number])[0],
        (n) => n === 0,
        15_000,
        'the delivery to be acknowledged',
      );
      // `outrigger worker` serves nothing, so it has nothing to drain: SIGTERM stops it at once, exit 0.
      worker.child.kill('SIGTERM');
      expect(await worker.exited).toBe(0);
    } finally {
      target.release();
      answer = () => ({ status: 200 });
      stop(cli);
      if (worker) stop(worker);
    }
  }, 180_000);

  it('a SIGTERM that comes while Outrigger is still starting is taken once the start is done: exit 0, not killed', async () => {
    // Redis that does not answer holds the start for its 5 s wait, with the port already bound (503 STARTING).
    const port = await freePort();
    const file = writeTempFile('starting.yaml', {
      service: { id: `${SERVICE}-starting` },
      listen: { host: '127.0.0.1', port },
      upstream: { url: upstream.url },
      redis: { url: `redis://127.0.0.1:${await freePort()}` },
      acl: { mode: 'own-routes' },
      log: { level: 'info' },
      shutdown: { drainSeconds: 0, timeoutSeconds: 5 },
    });
    const child = spawn(process.execPath, [CLI, 'start', '--no-worker', '-c', file], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr.on('data', (c: Buffer) => (output += c.toString()));
    const exited = new Promise<[number | null, NodeJS.Signals | null]>((resolve) => child.on('exit', (code, signal) => resolve([code, signal])));
    try {
      const starting = await waitFor(
        () => send(`http://127.0.0.1:${port}/_health/ready`, false).catch(() => null),
        (answer) => answer !== null,
        START_MS,
        'the port to answer while Outrigger starts',
      );
      expect([starting!.status, JSON.parse(starting!.body).message]).toEqual([503, 'Outrigger is starting; try again in a moment']);
      child.kill('SIGTERM');
      expect(await exited).toEqual([0, null]);
      expect(output).toContain('received SIGTERM');
      expect(output).toContain('Outrigger stopped');
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
  }, 180_000);

  it('outrigger check validates shutdown.drainSeconds and shutdown.timeoutSeconds, and names the deprecated listen.shutdownGraceMs', async () => {
    const bad = await runCli(['check', '-c', configFile({ drainSeconds: 40, timeoutSeconds: -2 })], { timeoutMs: START_MS });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('shutdown.timeoutSeconds: must be a number of seconds from 0 to 3600 (got -2)');
    expect(bad.stderr).toContain('shutdown.drainSeconds: must not exceed shutdown.timeoutSeconds (25)');

    const old = writeTempFile('old.yaml', { service: { id: SERVICE }, listen: { shutdownGraceMs: 10_000 }, upstream: { url: upstream.url }, redis: { url: redis.url } });
    const deprecated = await runCli(['check', '-c', old], { timeoutMs: START_MS });
    expect(deprecated.code).toBe(0);
    expect(deprecated.stdout).toContain('warning: listen.shutdownGraceMs is deprecated: write shutdown: { drainSeconds: 5, timeoutSeconds: 15 }');
    expect(deprecated.stdout).toMatch(/old\.yaml: OK/);
  }, 180_000);
});

function stop(cli: RunningCli): void {
  if (cli.child.exitCode === null && cli.child.signalCode === null) cli.child.kill('SIGKILL');
}

/** `outrigger worker -c FILE`, resolved once it logs that its worker started. */
async function startWorker(file: string): Promise<RunningCli> {
  const child = spawn(process.execPath, [CLI, 'worker', '-c', file], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr.on('data', (c: Buffer) => (output += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  await until(() => output.includes('webhook worker started') || child.exitCode !== null, 'outrigger worker to start', START_MS);
  return { child, url: '', output: () => output, exited };
}
