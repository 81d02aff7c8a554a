/**
 * SPEC §14 on Redis Cluster through three real replicas (issue 50): the record's key is tagged
 * `{service:digest}` (not `{service}`), so each claim and settle script touches one key in one
 * slot, and the records of many keys spread over the masters (CLUSTER KEYSLOT, and the keys each
 * master holds). The same key sent to every replica at once runs the write once, REST and GraphQL
 * alike: one backend write, one webhook event (the worker on the first replica delivering), every
 * other answer the recorded one or a 409; a copy sent after the first answer, to any replica, is
 * the recorded one. Bounded: the cluster, the replicas and the servers stop in afterAll.
 */
import { Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStandinBackend, type StandinBackend } from '../../../examples/standin-backend/index.js';
import { recordDigest } from '../../../src/idempotency/store.js';
import { redisKeys } from '../../../src/store/keys.js';
import { startTestOutrigger, staticUsers } from '../../support/outrigger.js';
import { startTestCluster, type TestCluster } from '../../support/redis/redis-topology.js';
import { until } from '../../support/wait.js';
import { call, type CallResult } from '../graphql/graphql-helpers.js';
import { putSubscriptionPermissions, subscriptionApp } from '../subscriptions/graphql-subscriptions-helpers.js';
import { CAROL, ROOT } from '../subscriptions/graphql-subscriptions-topology.js';
import { startTarget, untilKnown, untilSettled, type Target } from '../webhooks/webhooks-helpers.js';

type Running = Awaited<ReturnType<typeof startTestOutrigger>>;
const SERVICE = 'idem-cluster';
const CREATE = 'mutation Create($number: Int!) { createOrder(number: $number, status: "c") { number owner } }';

describe('idempotency keys on Redis Cluster, three replicas (SPEC §14)', { timeout: 120_000 }, () => {
  let cluster: TestCluster;
  let client: Cluster;
  let backend: StandinBackend;
  let target: Target;
  const replicas: Running[] = [];
  const keys = redisKeys('outrigger', SERVICE);

  beforeAll(async () => {
    cluster = await startTestCluster({ masters: 3, replicas: 0 });
    const [host, port] = cluster.seeds[0]!.split(':');
    client = new Cluster([{ host: host!, port: Number(port) }]);
    backend = await startStandinBackend({ data: { shop: { orders: [] } } });
    target = await startTarget();
    const raw = {
      service: { id: SERVICE },
      upstream: { url: backend.url, identity: { mode: 'headers' } },
      redis: { cluster: { nodes: cluster.seeds } },
      users: await staticUsers({ root: ['root'], carol: ['everything'] }),
      acl: { mode: 'enforce' as const },
      webhooks: { allowPrivateTargets: ['127.0.0.0/8'] },
    };
    // The first replica also runs the webhook worker.
    for (let i = 0; i < 3; i++) replicas.push(await startTestOutrigger(raw, { worker: i === 0 }));
    await putSubscriptionPermissions(replicas[0]!.url, ROOT);
    expect((await call(replicas[0]!.url, '/gql-apps/subs', { method: 'PUT', auth: ROOT, body: subscriptionApp() })).status).toBe(201);
    for (const r of replicas)
      await until(async () => (await call(r.url, '/graphql/subs', { method: 'POST', auth: CAROL, body: { query: '{ __typename }' } })).status === 200, 'every replica serving the app', 20_000);
    // Events for the backend's writes (REST, and the GraphQL engine's), and for the GraphQL door's exchange.
    for (const [name, condition] of [
      ['orders', "method(POST) and path-prefix('/shop/orders')"],
      ['door', "method(POST) and path-prefix('/graphql/subs')"],
    ]) {
      const hook = await call(replicas[0]!.url, '/_admin/webhooks', { method: 'POST', auth: ROOT, body: { name, type: 'http', condition, url: `${target.url}/${name}` } });
      expect(hook.status, hook.text).toBe(201);
      await untilKnown(replicas, hook.json._id);
    }
  }, 120_000);

  afterAll(async () => {
    for (const r of replicas) await r.stop().catch(() => {});
    client?.disconnect();
    await target?.close();
    await backend?.close();
    await cluster?.close();
  });

  /** Backend inserts of order `n`, and the hook's deliveries whose event holds `"number":n` (as JSON, or escaped inside a JSON string). */
  const backendWrites = (n: number) => backend.requests.filter((r) => r.method === 'POST' && r.path === '/shop/orders' && new RegExp(`"number":${n}\\b`).test(r.body ?? '')).length;
  const deliveries = (hook: string, n: number) => target.on(`/${hook}`).filter((r) => new RegExp(`\\\\?"number\\\\?":${n}\\b`).test(r.body)).length;
  const rest = (replica: number, key: string, n: number) =>
    call(replicas[replica % 3]!.url, '/shop/orders', { method: 'POST', auth: CAROL, headers: { 'idempotency-key': key }, body: { number: n, status: 'c' } });
  const graphql = (replica: number, key: string, n: number) =>
    call(replicas[replica % 3]!.url, '/graphql/subs', { method: 'POST', auth: CAROL, headers: { 'idempotency-key': key }, body: { query: CREATE, variables: { number: n } } });

  /** One ran, every other answer its recorded text or a 409 naming the key; then a copy to each replica is the recorded one. */
  async function expectOnce(answers: CallResult[], key: string, again: (replica: number) => Promise<CallResult>): Promise<void> {
    const ran = answers.filter((a) => a.status < 300 && a.headers['idempotent-replayed'] === undefined);
    expect(ran, answers.map((a) => `${a.status} ${a.text.slice(0, 120)}`).join('\n')).toHaveLength(1);
    for (const a of answers) {
      if (a.status === 409) expect(a.text).toContain(key);
      else expect(a.text).toBe(ran[0]!.text);
    }
    for (let i = 0; i < 3; i++) {
      const replay = await again(i);
      expect(replay.headers['idempotent-replayed'], `replica ${i}`).toBe('true');
      expect(replay.text).toBe(ran[0]!.text);
    }
    console.log(`[cluster] ${key}: 1 ran, ${answers.filter((a) => a.headers['idempotent-replayed'] === 'true').length} replayed, ${answers.filter((a) => a.status === 409).length} x 409`);
  }

  it('REST: the same key sent to every replica at once writes once and fires one event; a copy after the answer is the recorded one on each replica', async () => {
    const answers = await Promise.all(Array.from({ length: 30 }, (_, i) => rest(i, 'cluster-rest-1', 1)));
    await expectOnce(answers, 'cluster-rest-1', (i) => rest(i, 'cluster-rest-1', 1));
    expect(backendWrites(1)).toBe(1);
    await untilSettled(client as unknown as Redis, replicas);
    expect(deliveries('orders', 1)).toBe(1);
  });

  it('GraphQL: the same key sent to every replica at once is one backend write, one event for it and one for the door', async () => {
    const answers = await Promise.all(Array.from({ length: 12 }, (_, i) => graphql(i, 'cluster-gql-1', 2)));
    await expectOnce(answers, 'cluster-gql-1', (i) => graphql(i, 'cluster-gql-1', 2));
    expect(answers.every((a) => a.status === 200 || a.status === 409)).toBe(true);
    expect(backendWrites(2)).toBe(1);
    await untilSettled(client as unknown as Redis, replicas);
    expect(deliveries('orders', 2)).toBe(1);
    expect(deliveries('door', 2)).toBe(1);
  });

  it("records are tagged by service and digest: many keys' records spread over more than one master, each in its key's own slot", async () => {
    const names = Array.from({ length: 24 }, (_, i) => `spread-${i}`);
    for (const [i, key] of names.entries()) expect((await rest(i, key, 100 + i)).status).toBe(201);
    const recordKeys = names.map((key) => keys.idempotencyRecord(recordDigest('user:carol', key)));
    // Each record is in Redis under the key the store names, with its answer.
    for (const key of recordKeys) expect(await client.exists(key), key).toBe(1);
    const slots = new Set(await Promise.all(recordKeys.map(async (key) => Number(await client.call('CLUSTER', 'KEYSLOT', key)))));
    expect(slots.size).toBeGreaterThan(1);
    // Not `{service}`: the service's own keys share one slot, the records do not.
    const serviceSlot = Number(await client.call('CLUSTER', 'KEYSLOT', keys.subscriptionFeed));
    expect([...slots].filter((slot) => slot !== serviceSlot).length).toBeGreaterThan(0);
    // What each master holds: the records are on more than one of them.
    const masters = new Set(await Promise.all(recordKeys.map((key) => cluster.masterOf(key))));
    const held = await Promise.all(
      [...masters].map(async (port) => {
        const node = new Redis({ host: '127.0.0.1', port, lazyConnect: true });
        try {
          const found: string[] = [];
          let cursor = '0';
          do {
            const [next, batch] = await node.scan(cursor, 'MATCH', `outrigger:idem:{${SERVICE}:*`, 'COUNT', 1000);
            cursor = next;
            found.push(...batch);
          } while (cursor !== '0');
          return { port, records: found.filter((k) => recordKeys.includes(k)).length, dbsize: await node.dbsize() };
        } finally {
          node.disconnect();
        }
      }),
    );
    console.log(`[cluster] ${recordKeys.length} records in ${slots.size} slots on ${masters.size} masters: ${held.map((h) => `:${h.port} ${h.records} records (DBSIZE ${h.dbsize})`).join(', ')}`);
    expect(held.filter((h) => h.records > 0).length).toBeGreaterThan(1);
    expect(held.reduce((sum, h) => sum + h.records, 0)).toBe(recordKeys.length);
  });
});
