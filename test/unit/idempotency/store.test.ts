import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { createIdempotencyStore, recordDigest, type IdempotencyTicket } from '../../../src/idempotency/store.js';
import { redisKeys } from '../../../src/store/keys.js';
import { startTestRedis, type TestRedis } from '../../support/redis/redis.js';

let redis: TestRedis;
let client: Redis;
const keys = redisKeys('outrigger', 'idem-unit');
const options = { ttlSeconds: 60, lockSeconds: 1, maxBodyBytes: 16 };

beforeAll(async () => {
  redis = await startTestRedis();
  client = new Redis(redis.url);
});
afterAll(async () => {
  client.disconnect();
  await redis.close();
});

const ticketOf = (claim: { kind: string; ticket?: IdempotencyTicket }) => {
  expect(claim.kind).toBe('run');
  return claim.ticket!;
};

describe('the idempotency store', () => {
  it('runs the first claim, answers in-flight while it runs, replays once recorded', async () => {
    const store = createIdempotencyStore(client, keys, options);
    const ticket = ticketOf(await store.claim('user:a', 'k1', 'fp'));
    expect(await store.claim('user:a', 'k1', 'fp')).toEqual({ kind: 'in-flight' });
    expect(await store.claim('user:a', 'k1', 'other')).toEqual({ kind: 'mismatch' });
    await ticket.record({ status: 201, headers: { 'content-type': 'application/octet-stream' }, body: Buffer.from([0, 255, 1]) });
    expect(await store.claim('user:a', 'k1', 'fp')).toEqual({ kind: 'replay', answer: { status: 201, headers: { 'content-type': 'application/octet-stream' }, body: Buffer.from([0, 255, 1]) } });
    expect(await store.claim('user:a', 'k1', 'other')).toEqual({ kind: 'mismatch' });
    const ttl = await client.pttl(keys.idempotencyRecord(recordDigest('user:a', 'k1')));
    expect(ttl).toBeGreaterThan(50_000);
  });

  it('keeps another scope with the same key apart', async () => {
    const store = createIdempotencyStore(client, keys, options);
    const ticket = ticketOf(await store.claim('user:a', 'shared', 'fp'));
    ticketOf(await store.claim('user:b', 'shared', 'fp-b'));
    await ticket.release();
  });

  it('releases so a retry runs, and keeps only the status of an answer over the bound', async () => {
    const store = createIdempotencyStore(client, keys, options);
    await ticketOf(await store.claim('user:a', 'k2', 'fp')).release();
    const again = ticketOf(await store.claim('user:a', 'k2', 'fp'));
    await again.record({ status: 200, headers: {}, body: Buffer.alloc(17) });
    expect(await store.claim('user:a', 'k2', 'fp')).toEqual({ kind: 'too-large', status: 200 });
  });

  it('lets a lock nobody refreshes expire after lockSeconds, and a late record of the dead run touch nothing', async () => {
    const store = createIdempotencyStore(client, keys, options);
    const record = keys.idempotencyRecord(recordDigest('user:a', 'k3'));
    const dead = ticketOf(await store.claim('user:a', 'k3', 'fp'));
    // A run whose process died: its record stays in state run, no refresh, for lockSeconds.
    await client.hset(record, 't', 'a-dead-ticket');
    await client.pexpire(record, 300);
    await new Promise((r) => setTimeout(r, 400));
    const retry = ticketOf(await store.claim('user:a', 'k3', 'fp'));
    await dead.record({ status: 418, headers: {}, body: Buffer.from('late') });
    expect(await store.claim('user:a', 'k3', 'fp')).toEqual({ kind: 'in-flight' });
    await retry.record({ status: 201, headers: {}, body: Buffer.from('x') });
    expect(await store.claim('user:a', 'k3', 'fp')).toEqual({ kind: 'replay', answer: { status: 201, headers: {}, body: Buffer.from('x') } });
  });

  it('refreshes a running lock every third of its life', async () => {
    const store = createIdempotencyStore(client, keys, options);
    const ticket = ticketOf(await store.claim('user:a', 'k4', 'fp'));
    await new Promise((r) => setTimeout(r, 1500));
    expect(await store.claim('user:a', 'k4', 'fp')).toEqual({ kind: 'in-flight' });
    await ticket.release();
    expect(store.roundTrips).toBeGreaterThanOrEqual(5);
  });

  it('says unavailable when Redis cannot answer', async () => {
    const down = new Redis({ port: 1, lazyConnect: true, maxRetriesPerRequest: 0, enableOfflineQueue: false, retryStrategy: () => null });
    down.on('error', () => {});
    const store = createIdempotencyStore(down, keys, options);
    expect((await store.claim('user:a', 'k5', 'fp')).kind).toBe('unavailable');
    down.disconnect();
  });
});
