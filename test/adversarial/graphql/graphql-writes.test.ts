/**
 * The mutation door (issue 27 item 7): operator injection through arguments and input objects
 * (`$where`, `$function`, `$expr`, `$`-keys at any depth, dotted keys reaching other fields),
 * bulk sizes past the bound, deep input objects, read-backs the caller may not see, and a
 * permission change between the ACL check and the write. Every refusal is asserted with the
 * number of backend writes it let through: zero.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startStandinBackend, type StandinBackend } from '../../../examples/standin-backend/index.js';
import { startTestRedis, type TestRedis } from '../../support/redis/redis.js';
import { basic, startTestOutrigger, staticUsers } from '../../support/outrigger.js';
import { call, gql } from '../../integration/graphql/graphql-helpers.js';
import { hex, mutationApp, mutationData, putMutationPermissions } from '../../integration/graphql/graphql-mutations-helpers.js';

const JWT_SECRET = 'a-test-secret-that-is-at-least-32-characters-long';
const ROOT = basic('root', 'root-password');
const ALICE = basic('alice', 'alice-password');

/** A pass-through to the stand-in that can hold a POST until released (to change permissions meanwhile). */
async function startGate(backendUrl: string): Promise<{ url: string; hold(): { arrived: Promise<void>; release(): void }; close(): Promise<void> }> {
  let held: { arrive: () => void; wait: Promise<void> } | undefined;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void (async () => {
        const gate = req.method === 'POST' ? held : undefined;
        held = undefined;
        if (gate) {
          gate.arrive();
          await gate.wait;
        }
        const headers = { ...req.headers };
        delete headers.host;
        delete headers.connection;
        const answer = await request(`${backendUrl}${req.url}`, { method: req.method as 'POST', headers, body: chunks.length ? Buffer.concat(chunks) : undefined });
        const body = Buffer.from(await answer.body.arrayBuffer());
        const out: Record<string, string> = {};
        for (const [k, v] of Object.entries(answer.headers)) if (typeof v === 'string' && k !== 'transfer-encoding' && k !== 'connection') out[k] = v;
        res.writeHead(answer.statusCode, out).end(body);
      })();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    hold() {
      let arrive!: () => void;
      let release!: () => void;
      const arrived = new Promise<void>((r) => (arrive = r));
      const wait = new Promise<void>((r) => (release = r));
      held = { arrive, wait };
      return { arrived, release };
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe('adversarial: GraphQL mutations', () => {
  let redis: TestRedis;
  let backend: StandinBackend;
  let gate: Awaited<ReturnType<typeof startGate>>;
  let proxy: Awaited<ReturnType<typeof startTestOutrigger>>;
  const writes = () => backend.requests.filter((r) => r.method !== 'GET');

  beforeAll(async () => {
    redis = await startTestRedis();
    backend = await startStandinBackend({ data: mutationData(), jwt: { secret: JWT_SECRET } });
    gate = await startGate(backend.url);
    proxy = await startTestOutrigger({
      service: { id: 'gql-writes-adversarial' },
      upstream: { url: backend.url, identity: { mode: 'jwt', jwt: { secret: JWT_SECRET } } },
      redis: { url: redis.url },
      users: await staticUsers({ root: ['root'], alice: ['writer'] }),
      acl: { mode: 'enforce' },
      graphql: { backend: { url: gate.url }, maxAliases: 500 },
    });
    await putMutationPermissions(proxy.url, ROOT);
    expect((await call(proxy.url, '/gql-apps/writes', { method: 'PUT', auth: ROOT, body: mutationApp() })).status).toBe(201);
  });

  afterAll(async () => {
    await proxy?.stop();
    await gate?.close();
    await backend?.close();
    await redis?.close();
  });

  beforeEach(() => backend.clearRequests());

  const injections: Array<[string, string, Record<string, unknown>]> = [
    ['$where as a whole filter value', 'mutation ($s: BsonDocument) { purgeWhere(status: $s) }', { s: { $where: 'sleep(1000)' } }],
    ['$ne widening a filter to every document', 'mutation ($s: BsonDocument) { purgeWhere(status: $s) }', { s: { $ne: null } }],
    ['$expr in a filter value', 'mutation ($s: BsonDocument) { purgeWhere(status: $s) }', { s: { $expr: { $eq: [1, 1] } } }],
    ['$function deep in an inserted document', 'mutation ($d: BsonDocument!) { insertDoc(doc: $d) }', { d: { a: { b: [{ c: { $function: { body: 'x', args: [], lang: 'js' } } }] } } }],
    ['$set smuggled inside an update value', 'mutation ($c: BsonDocument) { setAnything(id: "' + hex(1) + '", changes: $c) }', { c: { status: { $set: { owner: 'mallory' } } } }],
    ['a $-key at the top of $set', 'mutation ($c: BsonDocument) { setAnything(id: "' + hex(1) + '", changes: $c) }', { c: { $unset: { owner: 1 } } }],
    ['a dotted key reaching another field', 'mutation ($c: BsonDocument) { setAnything(id: "' + hex(1) + '", changes: $c) }', { c: { 'owner.name': 'mallory' } }],
    ['a dotted key in an inserted document', 'mutation ($d: BsonDocument!) { insertDoc(doc: $d) }', { d: { profile: { 'roles.0': 'admin' } } }],
    ['an operator written as an inline literal', `mutation { purgeWhere(status: {$where: "1"}) }`, {}],
  ];
  for (const [name, query, variables] of injections) {
    it(`operator injection: ${name} is a 400 with no backend write`, async () => {
      const res = await gql(proxy.url, 'writes', query, { auth: ALICE, variables });
      expect(res.status, res.text).toBe(400);
      expect(res.json.data ?? null).toBeNull();
      expect(writes()).toHaveLength(0);
    });
  }

  it('an input object written whole carries only its declared fields (GraphQL refuses others)', async () => {
    const res = await gql(proxy.url, 'writes', 'mutation { insertWhole(input: {number: 1, total: 1, owner: "alice", _id: "x"}) { number } }', { auth: ALICE });
    expect(res.status).toBe(400);
    expect(writes()).toHaveLength(0);
  });

  it('a bulk insert past graphql.maxBulkWrite (default 1000) is a 400 before any write, also split over several fields', async () => {
    const docs = Array.from({ length: 1001 }, (_, i) => ({ number: 10_000 + i, total: 1 }));
    const one = await gql(proxy.url, 'writes', 'mutation ($o: [NewOrder!]!) { importOrderCount(orders: $o) }', { auth: ALICE, variables: { o: docs } });
    expect(one.status).toBe(400);
    expect(one.json.errors[0].extensions).toMatchObject({ code: 'BULK_WRITE_TOO_LARGE', documents: 1001, maxBulkWrite: 1000 });
    const half = docs.slice(0, 600);
    const split = await gql(proxy.url, 'writes', 'mutation ($o: [NewOrder!]!) { a: importOrderCount(orders: $o) b: importOrderCount(orders: $o) }', { auth: ALICE, variables: { o: half } });
    expect(split.status).toBe(400);
    expect(writes()).toHaveLength(0);
  });

  it('more writes than graphql.maxBackendWrites (default 100), through aliases and fragments, is a 400 before any write', async () => {
    const fields = Array.from({ length: 60 }, (_, i) => `m${i}: removeOrder(id: "${hex(900 + i)}")`).join(' ');
    const res = await gql(proxy.url, 'writes', `mutation { ...F ...G } fragment F on Mutation { ${fields} } fragment G on Mutation { ${fields.replaceAll(' m', ' n')} }`, { auth: ALICE });
    expect(res.status).toBe(400);
    expect(res.json.errors.map((e: { extensions: { code: string } }) => e.extensions.code)).toContain('TOO_MANY_BACKEND_WRITES');
    expect(backend.requests).toHaveLength(0);
  });

  it('deep input objects are refused before any write', async () => {
    let deep: Record<string, unknown> = { leaf: 1 };
    for (let i = 0; i < 40; i++) deep = { d: deep };
    const res = await gql(proxy.url, 'writes', 'mutation ($d: BsonDocument!) { insertDoc(doc: $d) }', { auth: ALICE, variables: { d: deep } });
    expect(res.status).toBe(400);
    expect(writes()).toHaveLength(0);
  });

  it('a read-back the caller may not see: the write stands, the fields projectResponse hides stay hidden, another owner comes back null', async () => {
    const own = await gql(proxy.url, 'writes', `mutation { setStatus(id: "${hex(2)}", status: "x") { number secret } }`, { auth: ALICE });
    expect(own.json.data.setStatus).toEqual({ number: 2, secret: null });
    const other = await gql(proxy.url, 'writes', `mutation { setStatus(id: "${hex(8)}", status: "x") { number secret } deleteOrder(id: "${hex(9)}") { secret } }`, { auth: ALICE });
    expect(other.json).toEqual({ data: { setStatus: null, deleteOrder: null } });
    expect(backend.collection('shop', 'orders').find((o) => o.number === 8)!.status).toBe('x');
    expect(backend.collection('shop', 'orders').find((o) => o.number === 9)).toBeUndefined();
  });

  it('a permission change between the ACL check and the write: the write in flight uses the decision it was checked with; the next write is decided anew', async () => {
    const held = gate.hold();
    const pending = gql(proxy.url, 'writes', 'mutation { a: createOrderId(number: 5000, total: 1) b: createOrderId(number: 5001, total: 1) }', { auth: ALICE });
    await held.arrived; // a's POST was decided and sent; the backend has not answered yet
    expect((await call(proxy.url, '/_admin/acl/write-orders', { method: 'DELETE', auth: ROOT })).status).toBe(204);
    held.release();
    const res = await pending;
    expect(res.json.data.a).toMatch(/^[0-9a-f]{24}$/);
    expect(res.json.data.b).toBeNull();
    expect(res.json.errors[0]).toMatchObject({ path: ['b'], extensions: { code: 'FORBIDDEN' } });
    expect(writes().map((r) => JSON.parse(r.body!).number)).toEqual([5000]);
  });
});
