/**
 * SPEC §14's target through three real replicas and one real redis-server: 100 concurrent copies
 * of one keyed write → exactly 1 backend write, 1 webhook event (a worker delivering), and every
 * answer the recorded one or a 409 naming the key; a copy sent after the first answer arrived is
 * always the recorded one. Then, across replicas: another principal's key is its own record, an
 * answer over maxBodyBytes replays as 409, a replica SIGKILLed while it holds the lock (the built
 * CLI, a process of its own) leaves a record a retry runs past once lockSeconds have passed, and
 * without Redis a keyed write is refused (503) and never reaches the backend.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { call, type CallResult } from '../../support/clients/http-client.js';
import { startHttpServer, type TestServer } from '../../support/peers/http-servers.js';
import { basic, startTestOutrigger, staticUsers, type RawConfig } from '../../support/outrigger.js';
import { startTestRedis, type TestRedis } from '../../support/redis/redis.js';
import { requireBuiltCli, startCli, writeTempFile, type RunningCli } from '../../support/clients/cli.js';
import { startTarget, untilKnown, untilSettled, waitFor, type Target } from '../webhooks/webhooks-helpers.js';

type Running = Awaited<ReturnType<typeof startTestOutrigger>>;
const ROOT = basic('root', 'root-password');
const ALICE = basic('alice', 'alice-password');
const BOB = basic('bob', 'bob-password');
const LOCK_SECONDS = 3;

interface Write {
  path: string;
  at: number;
}

describe('idempotency across three replicas and one Redis', { timeout: 180_000 }, () => {
  let redis: TestRedis;
  let upstream: TestServer;
  let target: Target;
  let raw: RawConfig;
  const replicas: Running[] = [];
  const writes: Write[] = [];
  /** Requests the upstream holds unanswered until released (a write in flight when its replica dies). */
  const hanging: ServerResponse[] = [];
  const writesTo = (path: string) => writes.filter((w) => w.path === path).length;

  function backend(req: IncomingMessage, res: ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = req.url ?? '/';
      writes.push({ path, at: performance.now() });
      const n = writes.length;
      if (path.startsWith('/hang') && writesTo(path) === 1) return void hanging.push(res);
      setTimeout(
        () => {
          if (res.destroyed) return;
          if (path.startsWith('/big')) {
            res.writeHead(200, { 'content-type': 'text/plain' });
            return res.end('x'.repeat(4096));
          }
          res.writeHead(201, { 'content-type': 'application/json', location: `${path}/${n}` });
          res.end(JSON.stringify({ n, body: Buffer.concat(chunks).toString() }));
        },
        Number(req.headers['x-delay-ms'] ?? 0),
      );
    });
  }

  beforeAll(async () => {
    redis = await startTestRedis();
    upstream = await startHttpServer(backend);
    target = await startTarget();
    raw = {
      service: { id: 'idem-replicas' },
      upstream: { url: upstream.url },
      redis: { url: redis.url },
      users: await staticUsers({ root: ['root'], alice: ['user'], bob: ['user'] }),
      acl: { mode: 'enforce' },
      webhooks: { allowPrivateTargets: ['127.0.0.0/8'] },
      idempotency: { lockSeconds: LOCK_SECONDS, maxBodyBytes: 1024 },
    };
    // The first replica also runs the webhook worker.
    for (let i = 0; i < 3; i++) replicas.push(await startTestOutrigger(raw, { worker: i === 0 }));
    const permission = await call(replicas[0]!.url, '/_admin/acl/users-write', { method: 'PUT', auth: ROOT, body: { predicate: 'path-prefix(/)', roles: ['user'], priority: 10 } });
    expect(permission.status).toBe(201);
    // Every replica knows the permission and has verified alice once (Basic sign-in is cached per replica).
    for (const r of replicas)
      await waitFor(
        () => call(r.url, '/warm', { auth: ALICE }),
        (res) => res.status === 201,
        15_000,
        'the permission on every replica',
      );
  }, 120_000);

  afterAll(async () => {
    for (const res of hanging) res.destroy();
    for (const r of replicas) await r.stop().catch(() => {});
    target?.release();
    await target?.close();
    await upstream?.close();
    await redis?.close();
  });

  const post = (replica: number, path: string, key: string, auth = ALICE, headers: Record<string, string> = {}) =>
    call(replicas[replica % replicas.length]!.url, path, { method: 'POST', auth, body: { item: 'oar', qty: 2 }, headers: { 'idempotency-key': key, ...headers } });

  it('100 concurrent copies of one keyed write through 3 replicas: 1 backend write, 1 webhook event, each answer the recorded one or a 409', async () => {
    const hook = await call(replicas[0]!.url, '/_admin/webhooks', {
      method: 'POST',
      auth: ROOT,
      // No status in the condition: a 409 or a replay evaluated against it would be a second event.
      body: { name: 'burst', type: 'http', condition: "method(POST) and path-prefix('/orders-burst')", url: `${target.url}/burst` },
    });
    expect(hook.status, JSON.stringify(hook.json)).toBe(201);
    await untilKnown(replicas, hook.json._id);

    // Sent over ~1 s while the write takes 300 ms: copies arrive before, during and after it.
    const sent: Array<{ at: number; res: CallResult; received: number }> = [];
    await Promise.all(
      Array.from({ length: 100 }, async (_, i) => {
        await new Promise((r) => setTimeout(r, i * 10));
        const at = performance.now();
        const res = await post(i, '/orders-burst', '"burst-1"', ALICE, { 'x-delay-ms': '300' });
        sent.push({ at, res, received: performance.now() });
      }),
    );

    expect(writesTo('/orders-burst')).toBe(1);
    const ran = sent.filter((s) => s.res.status === 201 && s.res.headers['idempotent-replayed'] === undefined);
    expect(ran).toHaveLength(1);
    const recorded = ran[0]!.res.text;
    for (const { res } of sent) {
      if (res.status === 409) {
        expect(res.json.message).toContain('"burst-1"');
        continue;
      }
      expect(res.status).toBe(201);
      expect(res.text).toBe(recorded);
    }
    const replayed = sent.filter((s) => s.res.headers['idempotent-replayed'] === 'true');
    const conflicts = sent.filter((s) => s.res.status === 409);
    expect(replayed.length + conflicts.length).toBe(99);
    // A copy sent after the first answer arrived is always the recorded one.
    const answeredAt = ran[0]!.received;
    const later = sent.filter((s) => s.at > answeredAt);
    expect(later.length).toBeGreaterThan(0);
    for (const s of later) expect(s.res.headers['idempotent-replayed']).toBe('true');
    console.log(`burst: 1 ran, ${replayed.length} replayed, ${conflicts.length} x 409; ${later.length} sent after the answer, all replays`);

    // One event for the write that ran, none for the 99 answered from the record.
    await untilSettled(redis.client, replicas);
    expect(target.received.filter((r) => r.url === '/burst')).toHaveLength(1);
  });

  it('a copy after the write finished gets the recorded answer on every replica', async () => {
    const first = await post(0, '/orders-after', 'after-1');
    expect(first.status).toBe(201);
    for (let i = 0; i < 9; i++) {
      const again = await post(i, '/orders-after', 'after-1');
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(again.text).toBe(first.text);
    }
    expect(writesTo('/orders-after')).toBe(1);
  });

  it('keeps another principal under the same key a separate record, on another replica', async () => {
    const alice = await post(0, '/orders-shared', 'shared-key');
    const bob = await post(1, '/orders-shared', 'shared-key', BOB);
    expect(bob.status).toBe(201);
    expect(bob.headers['idempotent-replayed']).toBeUndefined();
    expect(bob.json.n).not.toBe(alice.json.n);
    expect((await post(2, '/orders-shared', 'shared-key', BOB)).headers['idempotent-replayed']).toBe('true');
    expect(writesTo('/orders-shared')).toBe(2);
  });

  it('replays an answer over maxBodyBytes as a 409 saying it was too large to keep, on another replica', async () => {
    const first = await post(0, '/big', 'big-1');
    expect(first.status).toBe(200);
    expect(first.text).toHaveLength(4096);
    const again = await post(2, '/big', 'big-1');
    expect(again.status).toBe(409);
    expect(again.json.message).toMatch(/already ran \(status 200\).*too large to keep/);
    expect(writesTo('/big')).toBe(1);
  });

  it('a replica SIGKILLed while it holds the lock: 409 until lockSeconds pass, then the retry runs', async () => {
    requireBuiltCli('a replica is killed with SIGKILL: it must be a process of its own');
    const file = writeTempFile('outrigger.yaml', stringify({ ...raw, listen: { host: '127.0.0.1', port: 0 }, log: { level: 'info' } }));
    let doomed: RunningCli | undefined;
    try {
      doomed = await startCli(file, ['--no-worker']);
      await waitFor(
        () => call(doomed!.url, '/warm', { auth: ALICE }),
        (res) => res.status === 201,
        20_000,
        'the killed replica serving',
      );
      const inFlight = call(doomed.url, '/hang', { method: 'POST', auth: ALICE, body: { item: 'oar', qty: 2 }, headers: { 'idempotency-key': 'killed-1' } }).catch((error: Error) => error);
      await waitFor(
        async () => writesTo('/hang'),
        (n) => n === 1,
        20_000,
        'the write reaching the backend',
      );
      doomed.child.kill('SIGKILL');
      const killedAt = performance.now();
      await doomed.exited;
      expect(await inFlight).toBeInstanceOf(Error);
      // The dead replica's record stays: a retry now is told the write is still running.
      const soon = await post(1, '/hang', 'killed-1');
      expect(soon.status).toBe(409);
      // Once the lock expires (no one refreshes it), the retry runs.
      const retried = await waitFor(
        () => post(2, '/hang', 'killed-1'),
        (res) => res.status !== 409,
        20_000,
        'the lock to expire',
      );
      const waitedMs = performance.now() - killedAt;
      expect(retried.status).toBe(201);
      expect(retried.headers['idempotent-replayed']).toBeUndefined();
      expect(waitedMs).toBeGreaterThan((LOCK_SECONDS - 1) * 1000);
      expect(writesTo('/hang')).toBe(2);
      console.log(`killed replica: the retry ran ${Math.round(waitedMs)} ms after the SIGKILL (lockSeconds ${LOCK_SECONDS})`);
    } finally {
      doomed?.child.kill('SIGKILL');
    }
  });

  it('without Redis a keyed write is refused with 503 and never reaches the backend; an unkeyed one is not refused for it', async () => {
    await redis.stop();
    try {
      const before = writesTo('/orders-down');
      const refused = await post(1, '/orders-down', 'down-1');
      expect(refused.status).toBe(503);
      expect(refused.json.message).toMatch(/not run unless it can be recorded/);
      expect(refused.headers['retry-after']).toBeDefined();
      expect(writesTo('/orders-down')).toBe(before);
      const plain = await call(replicas[1]!.url, '/orders-down', { method: 'POST', auth: ALICE, body: { item: 'oar' } });
      expect(plain.text).not.toMatch(/Idempotency-Key/);
    } finally {
      await redis.restart();
    }
  });
});
