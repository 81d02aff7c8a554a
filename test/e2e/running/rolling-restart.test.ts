/**
 * The measure of the drain (SPEC §2, issue 36): steady client load through a round-robin
 * balancer that drops a replica when its readiness fails (test/support/peers/balancer.ts, as a
 * Service would) while each of two replicas of the built CLI in turn gets SIGTERM, exits and is
 * started again (a rolling update). Zero failed client requests, zero lost webhook events.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Agent, request } from 'undici';
import { startBalancer, type Balancer } from '../../support/peers/balancer.js';
import { startCli, writeTempFile, type RunningCli } from '../../support/clients/cli.js';
import { startHttpServer, type TestServer } from '../../support/peers/http-servers.js';
import { startTestRedis, type TestRedis } from '../../support/redis/redis.js';
import { sleep, until, waitFor } from '../../support/wait.js';
import { startTarget, type Target } from '../../support/peers/webhook-target.js';

const SERVICE = 'e2e-rolling';
const CLIENTS = 4;
/** Bounds the load whatever happens; the restarts end it long before on a normal run. */
const MAX_REQUESTS = 20_000;
/** Each client's pause between requests. */
const PAUSE_MS = 10;

describe('a rolling restart behind a balancer', () => {
  let redis: TestRedis;
  let upstream: TestServer;
  let target: Target;
  let balancer: Balancer;
  let configFile: string;
  const replicas: RunningCli[] = [];

  beforeAll(async () => {
    redis = await startTestRedis();
    upstream = await startHttpServer((req, res) => {
      req.resume();
      req.on('end', () => res.end('ok'));
    });
    target = await startTarget();
    balancer = await startBalancer({ probeEveryMs: 100 });
    const setup = writeTempFile('setup.yaml', {
      webhooks: [{ _id: 'orders', name: 'orders', type: 'http', condition: 'method(POST)', url: `${target.url}/hook` }],
    });
    configFile = writeTempFile('outrigger.yaml', {
      service: { id: SERVICE },
      listen: { host: '127.0.0.1', port: 0 },
      upstream: { url: upstream.url },
      redis: { url: redis.url },
      acl: { mode: 'own-routes', bootstrap: setup },
      webhooks: { allowPrivateTargets: ['127.0.0.0/8'] },
      // info: startCli reads the URL from the start summary.
      log: { level: 'info' },
      // Forty probe periods of the balancer: time to take the replica out of rotation on a loaded machine.
      shutdown: { drainSeconds: 4, timeoutSeconds: 15 },
    });
  });
  afterAll(async () => {
    for (const replica of replicas) if (replica.child.exitCode === null) replica.child.kill('SIGKILL');
    await balancer?.close();
    await target?.close();
    await upstream?.close();
    await redis?.close();
  });

  async function startReplica(): Promise<RunningCli> {
    const replica = await startCli(configFile, [], 60_000);
    replicas.push(replica);
    balancer.add(replica.url);
    await until(() => balancer.ready().includes(replica.url), `the balancer to see ${replica.url} ready`, 30_000);
    return replica;
  }

  /** What a failed wait for the last events prints: where each missing event is, and what the replicas logged beyond info. */
  async function undelivered(missing: string[]): Promise<string> {
    const keys = await redis.client.keys('*');
    const stream = keys.find((key) => key.endsWith(':events'));
    const pending = stream ? await redis.client.call('XPENDING', stream, 'webhook-workers').catch((e: unknown) => String(e)) : 'no stream';
    const retries = keys.find((key) => key.endsWith(':webhook-retries'));
    const retryJobs = retries ? await redis.client.zrange(retries, 0, -1, 'WITHSCORES') : [];
    const notable = replicas.flatMap((replica, i) =>
      replica
        .output()
        .split('\n')
        .filter((line) => /"level":(40|50|60)|reclaim|took back|pending/.test(line))
        .map((line) => `replica ${i}: ${line.slice(0, 400)}`),
    );
    return [
      `missing: ${JSON.stringify(missing.slice(0, 20))}`,
      `XPENDING: ${JSON.stringify(pending)}`,
      `retry jobs: ${JSON.stringify(retryJobs).slice(0, 2000)}`,
      `stream length: ${stream ? await redis.client.xlen(stream) : 0}`,
      ...notable.slice(0, 60),
    ].join('\n');
  }

  it('serves every request and delivers every event while both replicas are restarted in turn', async () => {
    const current = [await startReplica(), await startReplica()];
    const dispatcher = new Agent({ keepAliveTimeout: 30_000, pipelining: 1 });
    const failures: string[] = [];
    const posted: string[] = [];
    let sent = 0;
    let loading = true;
    const client = async (n: number) => {
      while (loading && sent < MAX_REQUESTS) {
        const id = `c${n}-${sent++}`;
        try {
          const res = await request(`${balancer.url}/orders/${id}`, { method: 'POST', body: `{"id":"${id}"}`, headers: { 'content-type': 'application/json' }, dispatcher });
          const text = await res.body.text();
          if (res.statusCode === 200 && text === 'ok') posted.push(id);
          else failures.push(`${id}: ${res.statusCode} ${text.slice(0, 200)}`);
        } catch (error) {
          failures.push(`${id}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
        }
        // A steady load, not a flood: the deliveries of every event must be awaited afterwards.
        await sleep(PAUSE_MS);
      }
    };
    const load = Promise.all(Array.from({ length: CLIENTS }, (_, n) => client(n)));
    const started = Date.now();
    const marks: Array<[string, number]> = [];
    const mark = (what: string) => marks.push([`${what} (${posted.length} ok)`, Date.now()]);
    try {
      await until(() => posted.length >= 100, 'load to flow through both replicas');
      for (let i = 0; i < 2; i++) {
        const old = current[i]!;
        const before = posted.length;
        mark(`SIGTERM ${i + 1}`);
        old.child.kill('SIGTERM');
        expect(await old.exited).toBe(0);
        mark(`exit ${i + 1}`);
        // The Service's endpoint goes with the pod; the balancer had stopped using it at the first failed probe.
        balancer.remove(old.url);
        current[i] = await startReplica();
        mark(`ready ${i + 1}`);
        await until(() => posted.length >= before + 200, 'load to flow again through the new replica', 30_000);
      }
    } finally {
      loading = false;
      await load;
      await dispatcher.close();
    }
    const seconds = (Date.now() - started) / 1000;
    expect(failures).toEqual([]);
    expect(balancer.refused).toBe(0);

    // Every answered POST is an event; each is delivered (at least once) by one of the workers.
    const delivered = new Set<string>();
    let read = 0;
    const deliveredCount = () => {
      for (; read < target.received.length; read++) delivered.add((JSON.parse(target.received[read]!.body) as { request: { path: string } }).request.path.slice('/orders/'.length));
      return delivered.size;
    };
    try {
      await waitFor(deliveredCount, (n) => n >= posted.length, 120_000, 'every event to be delivered');
    } catch (error) {
      throw new Error(`${(error as Error).message}\n${await undelivered(posted.filter((id) => !delivered.has(id)))}`);
    }
    mark('all delivered');
    expect(posted.filter((id) => !delivered.has(id))).toEqual([]);
    const phases = marks.map(([what, at]) => `${what} +${((at - started) / 1000).toFixed(1)}s`).join(', ');
    process.stdout.write(
      `rolling restart: ${posted.length} requests from ${CLIENTS} clients in ${seconds.toFixed(1)} s across 2 restarts, ` +
        `${failures.length} failed, ${delivered.size}/${posted.length} events delivered (${target.received.length} deliveries), ` +
        `connections per replica ${JSON.stringify([...balancer.connections.values()])}; ${phases}\n`,
    );
    for (const replica of current) replica.child.kill('SIGTERM');
    for (const replica of current) expect(await replica.exited).toBe(0);
  }, 300_000);
});
