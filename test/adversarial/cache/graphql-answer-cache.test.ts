/**
 * Whole GraphQL answers in the response cache under abuse (SPEC §12, `descriptor.cache`): a
 * flood of distinct variables turns entries over inside `cache.maxBytes` and nothing errors; an
 * answer larger than `cache.maxEntryBytes` is served and never stored; a mutation sent to a
 * cached app is never answered from memory.
 */
import { describe, expect, it } from 'vitest';
import { as, ROOT, useStack } from '../../support/fixtures.js';
import { call } from '../../support/clients/http-client.js';
import { gql, shopApp, shopData } from '../../integration/graphql/graphql-helpers.js';

const ALICE = as('alice');
const MAX_BYTES = 48 * 1024;

describe('whole GraphQL answers under abuse', () => {
  const app = shopApp();
  const stack = useStack({
    service: 'gql-answers-abuse',
    jwtIdentity: true,
    backend: { data: shopData() },
    users: { root: ['root'], alice: ['user'] },
    config: {
      acl: { mode: 'enforce' },
      features: { webhooks: 'disabled' },
      cache: { rules: [{ when: 'path-prefix(/nothing)', maxAgeSeconds: 60 }], maxBytes: MAX_BYTES, maxEntryBytes: 4 * 1024 },
    },
    permissions: {
      graphql: { predicate: 'path-prefix(/graphql)', roles: ['user'], priority: 1 },
      read: { predicate: 'method(GET) and path-prefix(/shop)', roles: ['user'], priority: 1 },
    },
    apps: { shop: { ...app, descriptor: { ...(app.descriptor as object), cache: { maxAgeSeconds: 600 } } } },
  });
  const state = async () => (await call(stack.proxy.url, '/_admin/cache', { auth: ROOT })).json as { entries: number; bytes: number };

  it('holds a flood of distinct variables inside cache.maxBytes, every answer 200', async () => {
    const query = 'query Range($min: Int, $max: Int) { ordersInRange(range: {min: $min, max: $max}) { number } }';
    let stored = 0;
    for (let wave = 0; wave < 6; wave++) {
      const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => gql(stack.proxy.url, 'shop', query, { auth: ALICE, variables: { min: wave * 50 + i, max: 400 + wave * 50 + i } })));
      for (const a of answers) {
        expect(a.status, a.text).toBe(200);
        if (/stored/.test(String(a.headers['cache-status']))) stored++;
      }
      const now = await state();
      expect(now.bytes).toBeLessThanOrEqual(MAX_BYTES);
    }
    // Every one was stored (and older ones turned over), none refused for room.
    expect(stored).toBe(300);
    expect((await state()).entries).toBeLessThan(300);
  });

  it('serves an answer larger than cache.maxEntryBytes (4 KiB) and never stores it', async () => {
    const big = '{ orders(limit: 100) { number owner total secret status } }';
    for (let i = 0; i < 2; i++) {
      const res = await gql(stack.proxy.url, 'shop', big, { auth: ALICE });
      expect(res.status).toBe(200);
      expect(res.text.length).toBeGreaterThan(4 * 1024);
      expect(res.headers['cache-status']).toBe('Outrigger;fwd=miss');
    }
  });

  it('answers a document with errors fresh each time, never from memory', async () => {
    for (let i = 0; i < 2; i++) {
      const res = await gql(stack.proxy.url, 'shop', '{ refused { number } }', { auth: ALICE });
      expect(res.json.errors?.length).toBeGreaterThan(0);
      expect(res.headers['cache-status'] ?? 'Outrigger;fwd=miss').toBe('Outrigger;fwd=miss');
    }
  });
});
