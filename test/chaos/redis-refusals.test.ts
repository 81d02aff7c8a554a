/**
 * Issue 28 item 2: every Redis refusal reaches a client as 503 with Retry-After and a message
 * saying what Redis refused, never as 500, at every door (test/adversarial/doors/doors.ts). Redis is
 * made full (maxmemory below what it holds, noeviction: writes answer OOM) and then read-only
 * (REPLICAOF another server: writes answer READONLY); one representative request per door each
 * time. The operator sees each refusal in the log and in outrigger_redis_refusals_total.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DOORS, type Door } from '../adversarial/doors/doors.js';
import { closePools, send, startInputSystem, type Answer, type InputSystem } from '../adversarial/doors/input-system.js';
import { startTestRedis, type TestRedis } from '../support/redis/redis.js';
import { eventually } from '../adversarial/support.js';

function representative(door: Door, targetUrl: string): { path: string; body?: string } {
  const path = door.path.replaceAll('{id}', door.covers === 'admin:features' ? 'webhooks' : 'x1');
  const webhook = { name: 'chaos', type: 'http', condition: 'method(POST)', url: `${targetUrl}/hook` };
  const bodies: Record<string, unknown> = {
    key: { name: 'chaos key', roles: ['user'] },
    permission: { ...(door.method === 'POST' ? { _id: 'chaos' } : {}), predicate: "path-prefix('/chaos')", roles: ['user'] },
    webhook: door.method === 'POST' ? { _id: 'chaos', ...webhook } : webhook,
    app: {
      ...(door.method === 'POST' ? { _id: 'chaos' } : {}),
      descriptor: { name: 'chaos', uri: 'chaos' },
      schema: 'type Order { number: Int, status: String } type Query { orders(status: String, limit: Int): [Order] }',
      mappings: { Query: { orders: { db: 'shop', collection: 'orders', find: { status: { $arg: 'status' } }, limit: { $arg: 'limit' } } } },
    },
    'test-send': { webhookId: 'x1' },
    condition: { condition: 'method(POST)' },
    graphql: { query: '{ orders(limit: 3) { number } }' },
  };
  if (door.body === 'none') return { path: door.shape === 'graphql' ? `${path}?query=${encodeURIComponent('{ orders(limit: 3) { number } }')}` : path };
  if (door.covers === '/register') return { path, body: JSON.stringify({ client_name: 'chaos', redirect_uris: ['http://127.0.0.1:9/callback'] }) };
  if (path.endsWith('/recover')) return { path, body: JSON.stringify({ since: '2020-01-01T00:00:00Z' }) };
  return { path, body: JSON.stringify(bodies[door.shape ?? 'any'] ?? { chaos: true }) };
}

describe('chaos: Redis refuses (full, read-only): no door answers 500', () => {
  let sys: InputSystem;
  let other: TestRedis;

  beforeAll(async () => {
    sys = await startInputSystem('chaos-refusals');
    other = await startTestRedis();
  }, 60_000);
  afterAll(async () => {
    await sys?.redis.client.config('SET', 'maxmemory', '0').catch(() => {});
    await sys?.redis.client.replicaof('NO', 'ONE').catch(() => {});
    await closePools();
    await sys?.close();
    await other?.close();
  });

  async function everyDoor(): Promise<Array<{ door: Door; answer: Answer; retryAfter: boolean }>> {
    const out = [];
    for (const door of DOORS) {
      const { path, body } = representative(door, sys.target.url);
      const headers: Record<string, string> = { ...(door.auth ? { authorization: door.auth } : {}), ...(body !== undefined ? { 'content-type': 'application/json' } : {}) };
      if (door.covers === '/token') headers['content-type'] = 'application/x-www-form-urlencoded';
      const answer = await send(sys.url, door.method, path, headers, door.covers === '/token' ? 'grant_type=authorization_code&code=x&code_verifier=y&client_id=z' : body);
      out.push({ door, answer, retryAfter: /"message"/.test(answer.text) && answer.status === 503 ? await retryAfterOf(door, path, headers, body) : false });
    }
    return out;
  }

  async function retryAfterOf(door: Door, path: string, headers: Record<string, string>, body?: string): Promise<boolean> {
    const res = await fetch(`${sys.url}${path}`, { method: door.method, headers, body });
    await res.text();
    return res.status !== 503 || Number(res.headers.get('retry-after')) > 0;
  }

  function expectNo500(results: Array<{ door: Door; answer: Answer; retryAfter: boolean }>) {
    const table = results.map((r) => `${r.answer.status} ${r.door.method} ${r.door.name}: ${r.answer.message.slice(0, 120)}`);
    for (const r of results) {
      expect(r.answer.status, table.join('\n')).not.toBe(500);
      // Readiness answering 503 (not ready) is the health door's own answer, not a refusal.
      if (r.answer.status === 503 && r.door.covers !== '/_health') expect(r.retryAfter, `${r.door.name}: 503 without Retry-After`).toBe(true);
    }
    return table;
  }

  it('Redis full (OOM, noeviction): 503 saying Redis is out of memory, never 500, at every door', { timeout: 120_000 }, async () => {
    const client = sys.redis.client;
    await client.config('SET', 'maxmemory-policy', 'noeviction');
    await client.config('SET', 'maxmemory', '1');
    try {
      const table = expectNo500(await everyDoor());
      console.log(`Redis full (OOM):\n${table.join('\n')}`);
      // The two doors the issue saw answering 500, twenty times each.
      for (let i = 0; i < 20; i++) {
        const key = await send(sys.url, 'POST', '/keys', { authorization: DOORS[0]!.auth, 'content-type': 'application/json' }, JSON.stringify({ name: `k${i}`, roles: ['user'] }));
        expect(key.status, key.text).toBe(503);
        expect(key.message).toMatch(/out of memory .*OOM/);
        const hook = DOORS.find((d) => d.name === 'admin: create a webhook')!;
        const created = await send(sys.url, 'POST', '/_admin/webhooks', { authorization: hook.auth, 'content-type': 'application/json' }, representative(hook, sys.target.url).body);
        expect(created.status, created.text).toBe(503);
        expect(created.message).toMatch(/out of memory .*OOM/);
      }
      const metrics = await (await fetch(`${sys.url}/_metrics`)).text();
      expect(Number(/outrigger_redis_refusals_total\{reason="oom"\} (\d+)/.exec(metrics)?.[1])).toBeGreaterThanOrEqual(40);
      expect(sys.cli.output()).toMatch(/"reason":"oom".*Redis refused a command/);
    } finally {
      await client.config('SET', 'maxmemory', '0');
    }
    expect(sys.alive()).toBe(true);
  });

  it('Redis read-only (REPLICAOF another server): 503 saying Redis is a read-only replica, never 500, at every door', { timeout: 120_000 }, async () => {
    const client = sys.redis.client;
    // A replica takes its master's data: the master gets Outrigger's first (users, permissions,
    // keys), as after a failover, or the sync would empty what Outrigger reads and the doors would
    // answer 401/403 for the lost records instead of meeting the read-only refusal.
    for (const key of await client.keys('*')) {
      const [dump, ttl] = await Promise.all([client.dumpBuffer(key), client.pttl(key)]);
      if (dump) await other.client.restore(key, ttl > 0 ? ttl : 0, dump, 'REPLACE');
    }
    await client.replicaof('127.0.0.1', String(other.port));
    try {
      expect(await eventually(async () => /master_link_status:up/.test(await client.info('replication')), 10_000)).toBe(true);
      // Redis drops its clients when it becomes a replica; Outrigger reconnects by itself.
      expect(await eventually(async () => (await fetch(`${sys.url}/_health/ready`)).status === 200, 10_000)).toBe(true);
      const table = expectNo500(await everyDoor());
      console.log(`Redis read-only (REPLICAOF):\n${table.join('\n')}`);
      const key = await send(sys.url, 'POST', '/keys', { authorization: DOORS[0]!.auth, 'content-type': 'application/json' }, JSON.stringify({ name: 'ro', roles: ['user'] }));
      expect(key.status, key.text).toBe(503);
      expect(key.message).toMatch(/read-only replica \(READONLY\)/);
      const metrics = await (await fetch(`${sys.url}/_metrics`)).text();
      expect(Number(/outrigger_redis_refusals_total\{reason="readonly"\} (\d+)/.exec(metrics)?.[1])).toBeGreaterThan(0);
    } finally {
      await client.replicaof('NO', 'ONE');
    }
    expect(sys.alive()).toBe(true);
  });
});
