/**
 * Idempotency keys on GraphQL mutations (SPEC §14, issue 50) through the real proxy, Redis and
 * the RESTHeart stand-in, with a gate in front of the stand-in for the engine's backend calls
 * (a delay, failing writes). A keyed mutation runs once; its repeat is the recorded answer with
 * `Idempotent-Replayed: true`, reaching no backend, publishing no subscription change and firing
 * no webhook; a repeat while it runs is 409, another request under the key 422, Redis away 503,
 * GraphQL-shaped, and none of these is evaluated against webhooks (a hook on the path and those
 * statuses receives only a marker the handler refused); a query ignores the header; a failure
 * before execution or a backend 5xx keeps nothing, a partial answer is kept; an answer over
 * `maxBodyBytes` is given whole and its repeat is 409 saying it was too large to keep.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { request } from 'undici';
import { beforeAll, describe, expect, it } from 'vitest';
import { call } from '../graphql/graphql-helpers.js';
import { putSubscriptionPermissions, rawSse, subscribed, subscriptionApp } from '../subscriptions/graphql-subscriptions-helpers.js';
import { untilKnown, untilSettled, waitFor } from '../webhooks/webhooks-helpers.js';
import { as, ROOT, useStack } from '../../support/fixtures.js';
import { startHttpServer, type TestServer } from '../../support/peers/http-servers.js';
import { sleep } from '../../support/wait.js';

const ALICE = as('alice');
const BOB = as('bob');
/** May use the app, may not write orders. */
const VIEWER = as('viewer');
const CREATE = 'mutation Create($number: Int!, $status: String) { createOrder(number: $number, status: $status) { number status owner } }';

/** The engine's backend: forwards to the stand-in, after `delayMs` for writes, or fails the writes `fail` picks with a 500. */
interface Gate extends TestServer {
  delayMs: number;
  fail: () => boolean;
  to: string;
}

function useGate(): Gate {
  const gate = { delayMs: 0, fail: () => false, to: '' } as unknown as Gate;
  beforeAll(async () => {
    const server = await startHttpServer((req, res) => void forward(gate, req, res, req.method !== 'GET'));
    Object.assign(gate, { url: server.url, port: server.port, server: server.server, close: server.close });
    return () => server.close();
  });
  return gate;
}

async function forward(gate: Gate, req: IncomingMessage, res: ServerResponse, write: boolean): Promise<void> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  if (write && gate.delayMs > 0) await sleep(gate.delayMs);
  if (write && gate.fail()) {
    res.writeHead(500, { 'content-type': 'application/json' });
    return void res.end('{"message":"the gate failed this write"}');
  }
  const headers = { ...req.headers } as Record<string, string>;
  delete headers.host;
  delete headers.connection;
  const answer = await request(`${gate.to}${req.url}`, { method: req.method as 'GET', headers, body: chunks.length ? Buffer.concat(chunks) : undefined });
  const body = Buffer.from(await answer.body.arrayBuffer());
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(answer.headers)) if (v !== undefined && k !== 'transfer-encoding' && k !== 'connection' && k !== 'keep-alive') out[k] = String(v);
  res.writeHead(answer.statusCode, { ...out, 'content-length': String(body.length) });
  res.end(body);
}

describe('idempotency keys on GraphQL mutations (SPEC §14)', () => {
  const gate = useGate();
  const stack = useStack({
    service: 'idem-gql',
    backend: { data: { shop: { orders: [] } } },
    jwtIdentity: true,
    target: true,
    users: { root: ['root'], alice: ['owner'], bob: ['owner'], viewer: ['viewer'] },
    config: () => ({
      acl: { mode: 'enforce' },
      graphql: { backend: { url: gate.url } },
      webhooks: { allowPrivateTargets: ['127.0.0.0/8'], retrySchedule: ['300ms'] },
      idempotency: { maxBodyBytes: 2048 },
    }),
    outrigger: { worker: true },
  });
  let number = 100;
  beforeAll(async () => {
    gate.to = stack.backend.url;
    await putSubscriptionPermissions(stack.proxy.url, ROOT);
    await stack.put('/_admin/acl/graphql-viewer', { predicate: 'path-prefix(/graphql/subs)', roles: ['viewer'], priority: 1 });
    await stack.put('/gql-apps/subs', subscriptionApp());
  });

  const mutate = (key: string | undefined, variables: Record<string, unknown>, auth = ALICE, query = CREATE) =>
    call(stack.proxy.url, '/graphql/subs', {
      method: 'POST',
      auth,
      headers: { accept: 'application/graphql-response+json', ...(key !== undefined ? { 'idempotency-key': key } : {}) },
      body: { query, variables },
    });
  const writes = () => stack.backend.requests.filter((r) => r.method === 'POST' && r.path === '/shop/orders').length;
  const hook = async (name: string, condition: string) => {
    const created = await call(stack.proxy.url, '/_admin/webhooks', { method: 'POST', auth: ROOT, body: { name, type: 'http', condition, url: `${stack.target.url}/${name}` } });
    expect(created.status, created.text).toBe(201);
    await untilKnown([stack.proxy], created.json._id);
  };

  it('runs once: the repeat is the recorded answer with Idempotent-Replayed: true, no backend write, no subscription change, no webhook', async () => {
    await hook('writes', "path-prefix('/shop/orders') and method(POST)");
    await hook('door', "path-prefix('/graphql/subs') and method(POST)");
    const sub = await rawSse(stack.proxy.url, 'subs', 'subscription { myOrders { op document { number } } }', { auth: ALICE });
    await subscribed(stack.proxy.url, 1);
    stack.backend.clearRequests();
    const n = ++number;
    const first = await mutate('"order-1"', { number: n });
    expect(first.status, first.text).toBe(200);
    expect(first.json).toEqual({ data: { createOrder: { number: n, status: 'open', owner: 'alice' } } });
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    const again = await mutate('"order-1"', { number: n });
    expect(again.status).toBe(200);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.headers['content-type']).toBe(first.headers['content-type']);
    expect(again.text).toBe(first.text);
    // A bare token names the same key.
    expect((await mutate('order-1', { number: n })).headers['idempotent-replayed']).toBe('true');
    expect(writes()).toBe(1);

    // Changes arrive in feed order: once the marker (an unkeyed write) arrived, a replay's change would have come before it.
    const marker = ++number;
    expect((await mutate(undefined, { number: marker })).status).toBe(200);
    const nexts = await sub.waitForNexts(2);
    await sleep(200);
    expect(sub.nexts().map((e) => (e.payload.data as { myOrders: { document: { number: number } } }).myOrders.document.number)).toEqual([n, marker]);
    expect(nexts).toHaveLength(2);
    await sub.close();
    // One delivery per write that ran: the keyed one and the marker, for the backend write and for the door's exchange alike.
    for (const name of ['writes', 'door'])
      await waitFor(
        () => stack.target.on(`/${name}`),
        (r) => r.length >= 2,
        10_000,
        `${name} deliveries`,
      );
    await sleep(800);
    expect(stack.target.on('/writes')).toHaveLength(2);
    expect(stack.target.on('/door')).toHaveLength(2);
  });

  it('the key with other variables, another operationName or another document is 422, GraphQL-shaped, and runs nothing', async () => {
    const n = ++number;
    expect((await mutate('order-2', { number: n })).status).toBe(200);
    stack.backend.clearRequests();
    for (const other of [{ number: n + 1000 }, { number: n, status: 'open' }]) {
      const res = await mutate('order-2', other);
      expect(res.status, res.text).toBe(422);
      expect(res.headers['content-type']).toBe('application/graphql-response+json; charset=utf-8');
      expect(res.json.errors[0].extensions.code).toBe('IDEMPOTENCY_KEY_REUSED');
      expect(res.json.errors[0].message).toMatch(/order-2/);
      expect(res.json.data).toBeUndefined();
    }
    const renamed = await mutate('order-2', { number: n }, ALICE, CREATE.replace('mutation Create', 'mutation Create2'));
    expect(renamed.status).toBe(422);
    // Variables in another member order are the same request (canonical JSON).
    const reordered = await call(stack.proxy.url, '/graphql/subs', {
      method: 'POST',
      auth: ALICE,
      headers: { 'idempotency-key': 'order-2', 'content-type': 'application/json' },
      rawBody: `{"variables":{"number":${n}},"query":${JSON.stringify(CREATE)}}`,
    });
    expect(reordered.headers['idempotent-replayed']).toBe('true');
    expect(writes()).toBe(0);
  });

  it('copies sent while it runs get 409 naming the key or, once it finished, the recorded answer; one backend write', async () => {
    gate.delayMs = 400;
    try {
      const n = ++number;
      stack.backend.clearRequests();
      const answers = await Promise.all(Array.from({ length: 8 }, () => mutate('order-3', { number: n })));
      const ran = answers.filter((a) => a.status === 200 && a.headers['idempotent-replayed'] === undefined);
      const busy = answers.filter((a) => a.status === 409);
      expect(ran).toHaveLength(1);
      expect(busy.length).toBeGreaterThan(0);
      for (const a of busy) {
        expect(a.json.errors[0].extensions.code).toBe('IDEMPOTENCY_KEY_IN_USE');
        expect(a.json.errors[0].message).toMatch(/order-3/);
      }
      for (const a of answers) if (a.status === 200) expect(a.text).toBe(ran[0]!.text);
      const after = await mutate('order-3', { number: n });
      expect(after.headers['idempotent-replayed']).toBe('true');
      expect(after.text).toBe(ran[0]!.text);
      expect(writes()).toBe(1);
    } finally {
      gate.delayMs = 0;
    }
  });

  it('a query ignores the header: it runs each time and leaves no record', async () => {
    const query = 'query { orders { number } }';
    for (let i = 0; i < 2; i++) {
      const res = await mutate('order-4', {}, ALICE, query);
      expect(res.status).toBe(200);
      expect(res.headers['idempotent-replayed']).toBeUndefined();
    }
    // The key is still free for a mutation.
    const n = ++number;
    const res = await mutate('order-4', { number: n });
    expect(res.status).toBe(200);
    expect(res.headers['idempotent-replayed']).toBeUndefined();
  });

  it('a refusal before execution, a write refused before it was sent and a backend failure keep nothing: the retry under the key runs', async () => {
    const n = ++number;
    const invalid = await mutate('order-5', { number: 'five' });
    expect(invalid.status).toBe(400);
    expect(invalid.json.errors[0].extensions.code).toBe('BAD_USER_INPUT');
    // Executed, but its only field's write was refused by the write policy before it was sent: nothing is kept.
    stack.backend.clearRequests();
    for (let i = 0; i < 2; i++) {
      const res = await mutate('order-5b', { number: n }, VIEWER);
      expect(res.status, res.text).toBe(200);
      expect(res.json.errors[0].extensions.code).toBe('FORBIDDEN');
      expect(res.headers['idempotent-replayed']).toBeUndefined();
    }
    expect(writes()).toBe(0);
    gate.fail = () => true;
    let failed;
    try {
      failed = await mutate('order-5', { number: n });
    } finally {
      gate.fail = () => false;
    }
    expect(failed.status, failed.text).toBe(502);
    stack.backend.clearRequests();
    const retry = await mutate('order-5', { number: n });
    expect(retry.status, retry.text).toBe(200);
    expect(retry.headers['idempotent-replayed']).toBeUndefined();
    expect(writes()).toBe(1);
  });

  it('a partial answer (one root field wrote, one failed) is kept: the repeat replays it and writes nothing', async () => {
    const n = ++number;
    const two = 'mutation Two($a: Int!, $b: Int!) { a: createOrder(number: $a) { number } b: createOrder(number: $b) { number } }';
    // The second write of this request fails at the gate.
    let seen = 0;
    gate.fail = () => ++seen === 2;
    let first;
    try {
      first = await mutate('order-6', { a: n, b: n + 5000 }, ALICE, two);
    } finally {
      gate.fail = () => false;
    }
    expect(first.status, first.text).toBe(200);
    expect(first.json.data.a).toEqual({ number: n });
    expect(first.json.data.b).toBeNull();
    expect(first.json.errors.length).toBeGreaterThan(0);
    stack.backend.clearRequests();
    const again = await mutate('order-6', { a: n, b: n + 5000 }, ALICE, two);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.text).toBe(first.text);
    expect(writes()).toBe(0);
  });

  /** The response statuses of the events a hook delivered (the default payload: `response.statusCode`). */
  const deliveredStatuses = (name: string) => stack.target.on(`/${name}`).map((r) => (JSON.parse(r.body) as { response: { statusCode: number } }).response.statusCode);

  it("the door's own 409 and 422 are not evaluated against webhooks: a hook on the path and those statuses gets only the marker", async () => {
    await hook('refusals', "path-prefix('/graphql/subs') and method(POST) and (equals(%s, 400) or equals(%s, 409) or equals(%s, 422) or equals(%s, 503))");
    const n = ++number;
    gate.delayMs = 400;
    let answers;
    try {
      answers = await Promise.all(Array.from({ length: 4 }, () => mutate('order-9', { number: n })));
    } finally {
      gate.delayMs = 0;
    }
    expect(answers.filter((a) => a.status === 409).length, answers.map((a) => a.status).join()).toBeGreaterThan(0);
    expect((await mutate('order-9', { number: n + 1 })).status).toBe(422);
    // The marker: a 400 the handler gave (bad variables), observed like any other refused request.
    expect((await mutate(undefined, { number: 'nine' })).status).toBe(400);
    await untilSettled(stack.redis.client, [stack.proxy]);
    expect(deliveredStatuses('refusals')).toEqual([400]);
  });

  it('an answer over maxBodyBytes is given whole; the repeat is 409 saying it ran and was too large to keep, and writes nothing', async () => {
    const n = ++number;
    // 90 long aliases of the order's status (graphql.maxAliases is 100): an answer of about 4 KB, over this stack's 2048 bytes.
    const wide = `mutation Wide($number: Int!) { createOrder(number: $number) { ${Array.from({ length: 90 }, (_, i) => `status_under_an_alias_long_enough_to_fill_${i}: status`).join(' ')} } }`;
    stack.backend.clearRequests();
    const first = await mutate('order-10', { number: n }, ALICE, wide);
    expect(first.status, first.text.slice(0, 300)).toBe(200);
    expect(first.text.length).toBeGreaterThan(2048);
    expect(first.json.data.createOrder.status_under_an_alias_long_enough_to_fill_89).toBe('open');
    const again = await mutate('order-10', { number: n }, ALICE, wide);
    expect(again.status).toBe(409);
    expect(again.headers['content-type']).toBe('application/graphql-response+json; charset=utf-8');
    expect(again.json.errors[0].extensions.code).toBe('IDEMPOTENCY_ANSWER_NOT_KEPT');
    expect(again.json.errors[0].message).toMatch(/mutation with Idempotency-Key "order-10" already ran \(status 200\), but its answer was too large to keep/);
    expect(writes()).toBe(1);
  });

  it("another caller's same key is a record of its own", async () => {
    const n = ++number;
    stack.backend.clearRequests();
    const alice = await mutate('shared-key', { number: n }, ALICE);
    const bob = await mutate('shared-key', { number: n }, BOB);
    expect(alice.status).toBe(200);
    expect(bob.status).toBe(200);
    expect(bob.headers['idempotent-replayed']).toBeUndefined();
    expect(bob.json.data.createOrder.owner).toBe('bob');
    expect(writes()).toBe(2);
  });

  it('Redis away: a keyed mutation is refused 503 and not run; an unkeyed one still runs', async () => {
    const n = ++number;
    await stack.redis.stop();
    try {
      stack.backend.clearRequests();
      const res = await mutate('order-7', { number: n });
      expect(res.status, res.text).toBe(503);
      expect(res.json.errors[0].extensions).toMatchObject({ code: 'SERVICE_UNAVAILABLE', reason: 'IDEMPOTENCY_UNAVAILABLE' });
      expect(res.headers['retry-after']).toMatch(/^\d+$/);
      expect(writes()).toBe(0);
      const unkeyed = await mutate(undefined, { number: n });
      expect(unkeyed.status, unkeyed.text).toBe(200);
      expect(writes()).toBe(1);
    } finally {
      await stack.redis.restart();
    }
    // The 503 was not evaluated against webhooks either (events queued while Redis was away are written once it is back).
    const before = deliveredStatuses('refusals');
    expect((await mutate(undefined, { number: 'seven' })).status).toBe(400);
    await waitFor(
      async () => deliveredStatuses('refusals').length,
      (count) => count > before.length,
      15_000,
      'the marker delivered after the restart',
    );
    await untilSettled(stack.redis.client, [stack.proxy]);
    expect(deliveredStatuses('refusals')).toEqual([...before, 400]);
  });
});
