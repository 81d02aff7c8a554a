/**
 * Closing the Redis connections never waits for Redis (issue 36). With Redis gone at shutdown,
 * a QUIT on a connection that holds queued commands (the subscriber, a blocking reader) sat in
 * the offline queue until Redis came back, which it may never do; with Redis frozen, a QUIT
 * waited behind what froze. The assertions are outcomes, not times: close() settles at all.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createRedisConnections, waitForRedis, type RedisConnections } from '../../../src/store/connections.js';
import { startTestRedis, type TestRedis } from '../../support/redis/redis.js';
import { until } from '../../support/wait.js';

const settles = (closing: Promise<void>) => Promise.race([closing.then(() => 'closed'), new Promise((resolve) => setTimeout(() => resolve('still waiting'), 20_000))]);

describe('closing Redis connections', () => {
  let redis: TestRedis | undefined;
  let frozenPid = 0;
  afterEach(async () => {
    if (frozenPid) process.kill(frozenPid, 'SIGCONT');
    frozenPid = 0;
    await redis?.close();
  });

  async function openAll(): Promise<{ conns: RedisConnections; all: RedisConnections['commands'][] }> {
    redis = await startTestRedis();
    const conns = createRedisConnections({ url: redis.url, cluster: null, sentinel: null, password: null, tls: false }, 'close-test');
    const all = [conns.commands, conns.subscriber, conns.blocking('reader', 1000)];
    for (const conn of all) conn.on('error', () => {});
    await Promise.all(all.map((conn) => waitForRedis(conn, 10_000)));
    return { conns, all };
  }

  it('ends while Redis is down, with commands waiting in the offline queues', async () => {
    const { conns, all } = await openAll();
    await redis!.stop();
    await until(() => all.every((c) => c.status !== 'ready'), 'every connection to notice Redis is gone');
    // What a replica's readers and probes leave queued while Redis is away.
    void all[2]!.xread('BLOCK', 1000, 'STREAMS', 'close-test-feed', '$').catch(() => {});
    void conns.subscriber.ping().catch(() => {});
    expect(await settles(conns.close())).toBe('closed');
  }, 60_000);

  it('ends while Redis is frozen (SIGSTOP), the connections still "ready"', async () => {
    const { conns } = await openAll();
    const pid = Number(/process_id:(\d+)/.exec(await redis!.client.info('server'))?.[1]);
    expect(pid).toBeGreaterThan(0);
    process.kill(pid, 'SIGSTOP');
    frozenPid = pid;
    expect(await settles(conns.close())).toBe('closed');
  }, 60_000);
});
