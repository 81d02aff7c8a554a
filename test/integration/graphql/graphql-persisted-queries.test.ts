/**
 * Apollo's automatic persisted queries through the real proxy, two replicas and one real Redis
 * (SPEC §15). `@apollo/client` is not a dependency, so `persistedLink` below drives the protocol
 * with fetch exactly as Apollo Client's persisted-query link does: the hash alone first (POST, or
 * GET with `useGETForHashedQueries`), and on `PersistedQueryNotFound` the same request again by
 * POST with the query text beside the hash.
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { as, useStack } from '../../support/fixtures.js';
import { until } from '../../support/wait.js';
import { call, shopApp, shopData } from './graphql-helpers.js';

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');
/** What Apollo Client 4's HTTP link sends as Accept. */
const ACCEPT = 'application/graphql-response+json,application/json;q=0.9';
const QUERY = 'query OrderTotal($n: Int!) { order(number: $n) { number total } }';

interface Sent {
  method: string;
  withText: boolean;
}

/** One operation as Apollo Client's persisted-query link sends it; answers the result and the requests it took. */
async function persistedLink(base: string, auth: string, op: { query: string; variables?: Record<string, unknown>; operationName?: string }, useGet = false) {
  const extensions = { persistedQuery: { version: 1, sha256Hash: sha256(op.query) } };
  const sent: Sent[] = [];
  const headers = { authorization: auth, accept: ACCEPT };
  const post = async (withText: boolean) => {
    sent.push({ method: 'POST', withText });
    const body = { operationName: op.operationName, variables: op.variables ?? {}, extensions, ...(withText ? { query: op.query } : {}) };
    return fetch(`${base}/graphql/shop`, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  };
  const get = async () => {
    sent.push({ method: 'GET', withText: false });
    const qs = new URLSearchParams({ ...(op.operationName ? { operationName: op.operationName } : {}), variables: JSON.stringify(op.variables ?? {}), extensions: JSON.stringify(extensions) });
    return fetch(`${base}/graphql/shop?${qs}`, { headers });
  };
  let res = useGet ? await get() : await post(false);
  let json = (await res.json()) as { data?: any; errors?: Array<{ message: string; extensions?: { code?: string } }> };
  const notFound = json.errors?.some((e) => e.message === 'PersistedQueryNotFound' || e.extensions?.code === 'PERSISTED_QUERY_NOT_FOUND');
  if (notFound) {
    res = await post(true);
    json = (await res.json()) as typeof json;
  }
  return { status: res.status, json, sent };
}

describe("automatic persisted queries (Apollo's protocol)", () => {
  const stack = useStack({
    service: 'gql-apq',
    backend: { data: shopData() },
    users: { root: ['root'], alice: ['user'], lim: ['user', 'limited'] },
    config: {
      acl: { mode: 'enforce' },
      features: { webhooks: 'disabled' },
      limits: { policies: [{ name: 'per-user', by: 'user', limit: 3, window: '1d', roles: ['limited'], condition: "path-prefix('/graphql')" }] },
    },
    permissions: {
      'users-graphql': { predicate: 'path-prefix(/graphql)', roles: ['user'], priority: 1 },
      'users-read-shop': { predicate: 'method(GET) and path-prefix(/shop)', roles: ['user'], priority: 1 },
    },
    apps: {
      shop: shopApp(),
      locked: { ...shopApp('locked', 'locked'), descriptor: { uri: 'locked', trustedDocuments: ['{ orders(limit: 1) { number } }'] } },
    },
  });
  const ALICE = as('alice');

  it('a miss answers PersistedQueryNotFound (200), the retry with the text registers it, then the hash alone runs on another replica', async () => {
    const a = stack.proxy;
    const b = await stack.start();
    const op = { query: QUERY, variables: { n: 7 }, operationName: 'OrderTotal' };

    const miss = await call(a.url, '/graphql/shop', {
      method: 'POST',
      auth: ALICE,
      headers: { accept: ACCEPT },
      body: { variables: { n: 7 }, extensions: { persistedQuery: { version: 1, sha256Hash: sha256(QUERY) } } },
    });
    expect(miss.status).toBe(200);
    expect(miss.json).toEqual({ errors: [{ message: 'PersistedQueryNotFound', extensions: { code: 'PERSISTED_QUERY_NOT_FOUND' } }] });
    expect(miss.headers['content-type']).toBe('application/graphql-response+json; charset=utf-8');

    const first = await persistedLink(a.url, ALICE, op);
    expect(first.sent).toEqual([
      { method: 'POST', withText: false },
      { method: 'POST', withText: true },
    ]);
    expect(first.status).toBe(200);
    expect(first.json).toEqual({ data: { order: { number: 7, total: 70 } } });

    // Replica B never saw the text: it reads the registration from Redis.
    stack.backend.clearRequests();
    const onB = await persistedLink(b.url, ALICE, { ...op, variables: { n: 3 } });
    expect(onB.sent).toEqual([{ method: 'POST', withText: false }]);
    expect(onB.json).toEqual({ data: { order: { number: 3, total: 30 } } });
    expect(stack.backend.requests.filter((r) => r.path === '/shop/orders')).toHaveLength(1);
    expect(await stack.redis.client.hget('outrigger:{gql-apq}:apq-texts:shop', sha256(QUERY))).toBe(QUERY);
  });

  it('GET with the hash (useGETForHashedQueries): a miss falls back to POST with the text, then GETs run by hash alone', async () => {
    const query = '{ orders(limit: 2) { number } }';
    const first = await persistedLink(stack.proxy.url, ALICE, { query }, true);
    expect(first.sent).toEqual([
      { method: 'GET', withText: false },
      { method: 'POST', withText: true },
    ]);
    expect(first.json).toEqual({ data: { orders: [{ number: 1 }, { number: 2 }] } });
    const again = await persistedLink(stack.proxy.url, ALICE, { query }, true);
    expect(again.sent).toEqual([{ method: 'GET', withText: false }]);
    expect(again.status).toBe(200);
    expect(again.json).toEqual({ data: { orders: [{ number: 1 }, { number: 2 }] } });
    // A mutation is still POST only, by hash as by text.
    const mutation = 'mutation { __typename }';
    const ext = JSON.stringify({ persistedQuery: { version: 1, sha256Hash: sha256(mutation) } });
    const res = await call(stack.proxy.url, `/graphql/shop?extensions=${encodeURIComponent(ext)}&query=${encodeURIComponent(mutation)}`, { auth: ALICE, headers: { accept: ACCEPT } });
    expect(res.status).toBe(405);
  });

  it('a text whose sha256 is not the hash sent is refused (400), naming both, and nothing is registered', async () => {
    const wrong = sha256('{ __typename }');
    const res = await call(stack.proxy.url, '/graphql/shop', {
      method: 'POST',
      auth: ALICE,
      headers: { accept: ACCEPT },
      body: { query: QUERY, variables: { n: 1 }, extensions: { persistedQuery: { version: 1, sha256Hash: wrong } } },
    });
    expect(res.status).toBe(400);
    expect(res.json.errors[0].extensions.code).toBe('PERSISTED_QUERY_HASH_MISMATCH');
    expect(res.json.errors[0].message).toContain(sha256(QUERY));
    expect(res.json.errors[0].message).toContain(wrong);
    expect(await stack.redis.client.hget('outrigger:{gql-apq}:apq-texts:shop', wrong)).toBeNull();
  });

  it('another version, a malformed hash, and an invalid text are refused; an invalid text is not registered', async () => {
    const send = (extensions: unknown, query?: string) =>
      call(stack.proxy.url, '/graphql/shop', { method: 'POST', auth: ALICE, headers: { accept: ACCEPT }, body: { ...(query ? { query } : {}), extensions } });
    const v2 = await send({ persistedQuery: { version: 2, sha256Hash: sha256(QUERY) } });
    expect(v2.status).toBe(400);
    expect(v2.json.errors[0]).toMatchObject({ message: expect.stringMatching(/version 2 is not supported.*version 1/), extensions: { code: 'PERSISTED_QUERY_VERSION_NOT_SUPPORTED' } });
    const short = await send({ persistedQuery: { version: 1, sha256Hash: 'abc' } });
    expect(short.status).toBe(400);
    expect(short.json.errors[0].extensions.code).toBe('PERSISTED_QUERY_INVALID');
    const invalid = '{ noSuchField }';
    const refused = await send({ persistedQuery: { version: 1, sha256Hash: sha256(invalid) } }, invalid);
    expect(refused.status).toBe(400);
    expect(refused.json.errors[0].extensions.code).toBe('GRAPHQL_VALIDATION_FAILED');
    expect(await stack.redis.client.hget('outrigger:{gql-apq}:apq-texts:shop', sha256(invalid))).toBeNull();
  });

  it('an app with trusted documents refuses registration of anything not on its list', async () => {
    const other = '{ orders(limit: 2) { number } }';
    const ext = { persistedQuery: { version: 1, sha256Hash: sha256(other) } };
    const res = await call(stack.proxy.url, '/graphql/locked', { method: 'POST', auth: ALICE, headers: { accept: ACCEPT }, body: { query: other, extensions: ext } });
    expect(res.status).toBe(400);
    expect(res.json.errors[0].extensions.code).toBe('UNTRUSTED_DOCUMENT');
    expect(await stack.redis.client.exists('outrigger:{gql-apq}:apq-texts:locked')).toBe(0);
    const byHash = await call(stack.proxy.url, '/graphql/locked', { method: 'POST', auth: ALICE, headers: { accept: ACCEPT }, body: { extensions: ext } });
    expect(byHash.json.errors[0].extensions.code).toBe('PERSISTED_QUERY_NOT_FOUND');
    // The listed text runs by its hash, as before.
    const listed = '{ orders(limit: 1) { number } }';
    const ok = await call(stack.proxy.url, '/graphql/locked', {
      method: 'POST',
      auth: ALICE,
      headers: { accept: ACCEPT },
      body: { extensions: { persistedQuery: { version: 1, sha256Hash: sha256(listed) } } },
    });
    expect(ok.json).toEqual({ data: { orders: [{ number: 1 }] } });
  });

  it('with Redis out of reach: a hash this replica holds still runs, an unknown one is not found, and the retry with the text runs', async () => {
    const known = '{ orders(limit: 1) { total } }';
    expect((await persistedLink(stack.proxy.url, ALICE, { query: known })).json).toEqual({ data: { orders: [{ total: 10 }] } });
    await stack.redis.stop();
    try {
      const held = await persistedLink(stack.proxy.url, ALICE, { query: known });
      expect(held.sent).toHaveLength(1); // from the replica's own cache, no round trip
      expect(held.json).toEqual({ data: { orders: [{ total: 10 }] } });
      const fresh = await persistedLink(stack.proxy.url, ALICE, { query: '{ orders(limit: 1) { number } }' });
      expect(fresh.sent).toHaveLength(2);
      expect(fresh.status).toBe(200);
      expect(fresh.json).toEqual({ data: { orders: [{ number: 1 }] } });
    } finally {
      await stack.redis.restart();
      // The next rows register queries: wait until the proxy is back on Redis (readiness says so),
      // or a registration made while it reconnects is not kept and the row sees a second miss.
      await until(async () => (await call(stack.proxy.url, '/_health/ready')).status === 200, 'the proxy to be ready on the restarted Redis');
    }
  }, 60_000);

  it('a PersistedQueryNotFound answer counts for rate limits like any request: a first miss costs two', async () => {
    const LIM = as('lim');
    const query = '{ orders(limit: 3) { number } }';
    const first = await persistedLink(stack.proxy.url, LIM, { query });
    expect(first.sent).toHaveLength(2);
    expect(first.status).toBe(200);
    const second = await persistedLink(stack.proxy.url, LIM, { query });
    expect(second.sent).toHaveLength(1);
    expect(second.status).toBe(200);
    const third = await persistedLink(stack.proxy.url, LIM, { query });
    expect(third.status).toBe(429);
    expect(third.json.errors?.[0]?.extensions?.code).toBe('TOO_MANY_REQUESTS');
  });
});
