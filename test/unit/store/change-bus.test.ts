import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { ChangeBus, type ChangeMessage } from '../../../src/store/change-bus.js';
import { startTestRedis, type TestRedis } from '../../support/redis/redis.js';
import { until } from '../../support/wait.js';

// The change bus on its own, over a real Redis (issue 54): what one replica publishes reaches the
// others on their subscriber connections, only on the service's channel, and a (re)subscription
// tells listeners to resync. Written so that `npm run mutate` kills the bus's mutants.
type Heard = Array<ChangeMessage | 'resync'>;

describe('change bus', () => {
  let redis: TestRedis;
  const open: Redis[] = [];
  const connect = async (): Promise<Redis> => {
    const conn = new Redis(redis.url, { maxRetriesPerRequest: 1, retryStrategy: () => 50 });
    conn.on('error', () => {});
    open.push(conn);
    await until(() => conn.status === 'ready', 'the connection ready');
    return conn;
  };
  const replica = async (channel: string, listen = true): Promise<{ bus: ChangeBus; heard: Heard; subscriber: Redis }> => {
    const subscriber = await connect();
    const bus = new ChangeBus(await connect(), subscriber, channel);
    const heard: Heard = [];
    if (listen) bus.on((message) => heard.push(message));
    await bus.start();
    return { bus, heard, subscriber };
  };

  beforeAll(async () => {
    redis = await startTestRedis();
  });
  afterAll(async () => {
    for (const conn of open) conn.disconnect();
    await redis?.close();
  });

  it('delivers a message published on one replica to another, and to the publisher itself at once', async () => {
    const a = await replica('svc:changes');
    const b = await replica('svc:changes');
    await a.bus.publish({ kind: 'apikeys', id: 'k1' });
    // The publisher's own listeners hear it synchronously, before Redis answers.
    expect(a.heard).toContainEqual({ kind: 'apikeys', id: 'k1' });
    await until(() => b.heard.length > 0, 'the message on replica b');
    expect(b.heard).toEqual([{ kind: 'apikeys', id: 'k1' }]);
  });

  it('is subscribed once start() resolves (a replica started on a ready connection hears the next message)', async () => {
    const a = await replica('svc2:changes');
    const b = await replica('svc2:changes');
    expect(await redis.client.pubsub('NUMSUB', 'svc2:changes')).toEqual(['svc2:changes', 2]);
    await a.bus.publish({ kind: 'permissions' });
    await until(() => b.heard.length === 1, 'the message on replica b');
    expect(b.heard[0]).toEqual({ kind: 'permissions' });
  });

  it("ignores other channels' messages and text that is not JSON", async () => {
    const a = await replica('one:changes');
    // Subscribed to a second channel on the same connection: its messages must not reach the bus.
    await a.subscriber.subscribe('other:changes');
    await redis.client.publish('other:changes', JSON.stringify({ kind: 'webhooks' }));
    await redis.client.publish('one:changes', '{not json');
    await redis.client.publish('one:changes', JSON.stringify({ kind: 'features', id: 'f' }));
    await until(() => a.heard.length > 0, 'the message on the bus channel');
    expect(a.heard).toEqual([{ kind: 'features', id: 'f' }]);
  });

  it('stops calling a listener once it unsubscribes', async () => {
    const a = await replica('unsub:changes', false);
    const kept: Heard = [];
    const dropped: Heard = [];
    a.bus.on((m) => kept.push(m));
    const off = a.bus.on((m) => dropped.push(m));
    off();
    await a.bus.publish({ kind: 'graphql-apps' });
    // Heard twice: at once from the publisher, then its own subscriber's copy from Redis.
    await until(() => kept.length === 2, 'the echo from Redis');
    expect(kept).toEqual([{ kind: 'graphql-apps' }, { kind: 'graphql-apps' }]);
    expect(dropped).toEqual([]);
  });

  it('subscribes on a connection that becomes ready after start(), and tells listeners to resync', async () => {
    const subscriber = new Redis(redis.url, { lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => 50 });
    subscriber.on('error', () => {});
    open.push(subscriber);
    const bus = new ChangeBus(await connect(), subscriber, 'late:changes');
    const heard: Heard = [];
    bus.on((m) => heard.push(m));
    await bus.start();
    expect(heard).toEqual([]);
    await subscriber.connect();
    await until(() => heard.includes('resync'), 'a resync on ready');
    await until(async () => ((await redis.client.pubsub('NUMSUB', 'late:changes')) as [string, number])[1] === 1, 'the late subscription');
    await redis.client.publish('late:changes', JSON.stringify({ kind: 'webhooks', id: 'w' }));
    await until(() => heard.length === 2, 'the message after the late subscription');
    expect(heard).toEqual(['resync', { kind: 'webhooks', id: 'w' }]);
  });

  it('resubscribes and resyncs after the subscriber connection drops and comes back', async () => {
    const a = await replica('again:changes');
    a.subscriber.disconnect(true);
    await until(() => a.heard.includes('resync'), 'a resync after the reconnect');
    await until(async () => ((await redis.client.pubsub('NUMSUB', 'again:changes')) as [string, number])[1] === 1, 'the resubscription');
    await redis.client.publish('again:changes', JSON.stringify({ kind: 'subscribed-collections' }));
    await until(() => a.heard.some((m) => m !== 'resync'), 'a message after the resubscription');
    expect(a.heard.filter((m) => m !== 'resync')).toEqual([{ kind: 'subscribed-collections' }]);
  });

  it('on a Cluster uses sharded pub/sub, and resyncs when the sharded subscribers are ready again', async () => {
    // A standalone Redis 7 answers SSUBSCRIBE/SPUBLISH too; marked as a Cluster, the connections
    // take the bus's Cluster path (ioredis' Cluster sets the same flag).
    const subscriber = await connect();
    const publisher = await connect();
    for (const conn of [subscriber, publisher]) Object.assign(conn, { isCluster: true });
    const bus = new ChangeBus(publisher, subscriber, 'sharded:changes');
    const heard: Heard = [];
    bus.on((m) => heard.push(m));
    await bus.start();
    expect(await redis.client.call('PUBSUB', 'SHARDNUMSUB', 'sharded:changes')).toEqual(['sharded:changes', 1]);
    expect(await redis.client.pubsub('NUMSUB', 'sharded:changes')).toEqual(['sharded:changes', 0]);
    await redis.client.call('SPUBLISH', 'sharded:changes', JSON.stringify({ kind: 'features' }));
    await until(() => heard.length === 1, 'the sharded message');
    subscriber.emit('subscribersReady');
    expect(heard).toEqual([{ kind: 'features' }, 'resync']);
    // The publisher sends with SPUBLISH: a plain subscriber of the channel hears nothing.
    const plain = await connect();
    await plain.subscribe('sharded:changes');
    const plainHeard: string[] = [];
    plain.on('message', (_channel: string, text: string) => plainHeard.push(text));
    await bus.publish({ kind: 'webhooks', id: 'w' });
    await until(() => heard.length === 4, 'the sharded echo');
    expect(heard.slice(2)).toEqual([
      { kind: 'webhooks', id: 'w' },
      { kind: 'webhooks', id: 'w' },
    ]);
    expect(plainHeard).toEqual([]);
  });

  it('a standalone subscriber does not take "subscribersReady" (a Cluster event) for a resync', async () => {
    const a = await replica('plain:changes');
    a.heard.length = 0;
    a.subscriber.emit('subscribersReady');
    expect(a.heard).toEqual([]);
  });

  it('publish never throws, even with Redis unreachable, and still tells local listeners', async () => {
    const dead = new Redis({ port: 1, lazyConnect: true, maxRetriesPerRequest: 0, enableOfflineQueue: false, retryStrategy: () => null });
    dead.on('error', () => {});
    const bus = new ChangeBus(dead, dead, 'dead:changes');
    const heard: Heard = [];
    bus.on((m) => heard.push(m));
    await expect(bus.publish({ kind: 'apikeys', id: 'x' })).resolves.toBeUndefined();
    expect(heard).toEqual([{ kind: 'apikeys', id: 'x' }]);
    dead.disconnect();
  });
});
