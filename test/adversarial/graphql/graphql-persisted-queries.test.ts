/**
 * A flood of distinct automatic persisted queries (issue 48 "bad input"): each one a valid
 * document a caller may register, so nothing refuses them; the app's store must stay within its
 * bounds (count and bytes) by evicting its oldest registrations, and a client whose query was
 * evicted gets PersistedQueryNotFound and registers it again, one more round trip.
 * Through the proxy the byte bound (8 MiB) is reached with 95 KiB queries; the count bound, with
 * two stores standing for two replicas registering at once against the same Redis.
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { PERSISTED_QUERY_BOUNDS, PersistedQueryStore } from '../../../src/graphql/serve/persisted-query-store.js';
import { redisKeys } from '../../../src/store/keys.js';
import { as, useStack } from '../../support/fixtures.js';
import { call } from '../../support/clients/http-client.js';

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');
const ACCEPT = 'application/graphql-response+json,application/json;q=0.9';
const SCHEMA = 'type Item { n: Int } type Query { items: [Item] }';
const ITEMS = { db: 'adv', collection: 'items' };

/** A valid query of about 95 KiB (under the 100 KiB query bound), distinct per `i`, that reads nothing. */
const bigQuery = (i: number) => `# flood ${i} ${'x'.repeat(95 * 1024)}\n{ __typename }`;

describe('a flood of distinct persisted queries stays within the per-app bounds', () => {
  const stack = useStack({
    service: 'adv-apq',
    backend: { data: { adv: { items: [{ _id: 'a', n: 1 }] } } },
    users: { root: ['root'] },
    config: { features: { webhooks: 'disabled' } },
    apps: { flood: { _id: 'flood', descriptor: { uri: 'flood' }, schema: SCHEMA, mappings: { Query: { items: ITEMS } } } },
  });
  const ROOT = as('root');
  const keys = () => redisKeys('outrigger', 'adv-apq');

  const register = (query: string) =>
    call(stack.proxy.url, '/graphql/flood', { method: 'POST', auth: ROOT, headers: { accept: ACCEPT }, body: { query, extensions: { persistedQuery: { version: 1, sha256Hash: sha256(query) } } } });
  const byHash = (query: string, base = stack.proxy.url) =>
    call(base, '/graphql/flood', { method: 'POST', auth: ROOT, headers: { accept: ACCEPT }, body: { extensions: { persistedQuery: { version: 1, sha256Hash: sha256(query) } } } });

  it('past 8 MiB of query text the oldest registrations go; the bytes counted are the bytes held', async () => {
    const legit = '{ items { n } }';
    expect((await register(legit)).json).toEqual({ data: { items: [{ n: 1 }] } });
    const flood = 100; // 100 × 95 KiB ≈ 9.3 MiB: past the bound
    for (let i = 0; i < flood; i++) expect((await register(bigQuery(i))).status).toBe(200);

    const redis = stack.redis.client;
    const k = keys();
    const held = await redis.hlen(k.persistedQueryTexts('flood'));
    const lengths = await Promise.all((await redis.hkeys(k.persistedQueryTexts('flood'))).map((h) => redis.hstrlen(k.persistedQueryTexts('flood'), h)));
    const total = lengths.reduce((a, b) => a + b, 0);
    expect(total).toBeLessThanOrEqual(PERSISTED_QUERY_BOUNDS.maxBytes);
    expect(Number(await redis.hget(k.persistedQueryMeta('flood'), 'bytes'))).toBe(total);
    expect(held).toBeLessThan(flood);
    expect(await redis.zcard(k.persistedQueryOrder('flood'))).toBe(held);
    // The youngest stay, the oldest (the legit query among them) were evicted.
    expect(await redis.hexists(k.persistedQueryTexts('flood'), sha256(bigQuery(flood - 1)))).toBe(1);
    expect(await redis.hexists(k.persistedQueryTexts('flood'), sha256(legit))).toBe(0);
    expect(await redis.pttl(k.persistedQueryTexts('flood'))).toBeGreaterThan(0);

    // A replica that never saw the legit query answers PersistedQueryNotFound; the client registers it again.
    const other = await stack.start();
    expect((await byHash(legit, other.url)).json.errors[0].extensions.code).toBe('PERSISTED_QUERY_NOT_FOUND');
    expect((await register(legit)).status).toBe(200);
    expect((await byHash(legit, other.url)).json).toEqual({ data: { items: [{ n: 1 }] } });
  }, 60_000);

  it('two stores (as two replicas) registering 600 distinct queries at once keep at most maxQueries, the youngest', async () => {
    const bounds = { ...PERSISTED_QUERY_BOUNDS, maxQueries: 50 };
    const a = new PersistedQueryStore(stack.redis.client, keys(), bounds);
    const b = new PersistedQueryStore(stack.redis.client, keys(), bounds);
    const texts = Array.from({ length: 600 }, (_, i) => `{ items { n } } # ${i}`);
    await Promise.all(texts.map((t, i) => (i % 2 === 0 ? a : b).register('count', sha256(t), t)));
    const k = keys();
    expect(await stack.redis.client.hlen(k.persistedQueryTexts('count'))).toBe(50);
    expect(await stack.redis.client.zcard(k.persistedQueryOrder('count'))).toBe(50);
    const bytes = (await stack.redis.client.hvals(k.persistedQueryTexts('count'))).reduce((n, t) => n + Buffer.byteLength(t), 0);
    expect(Number(await stack.redis.client.hget(k.persistedQueryMeta('count'), 'bytes'))).toBe(bytes);
    // Sent in order on one connection, so the last 50 sent are the 50 held.
    const heldTexts = new Set(await stack.redis.client.hvals(k.persistedQueryTexts('count')));
    expect(heldTexts).toEqual(new Set(texts.slice(-50)));
    // Another app's store is its own: none of these is known there.
    expect(await new PersistedQueryStore(stack.redis.client, keys(), bounds).get('flood', sha256(texts[599]!))).toBeUndefined();
  });
});
