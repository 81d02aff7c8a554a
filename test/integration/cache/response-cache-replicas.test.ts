/**
 * The response cache across replicas sharing one real redis-server (SPEC §12): a write through
 * replica A reaches B's cache through Redis (polled, not timed), `consistency: strong` makes B
 * exact at once, `outrigger cache purge` drops on every replica, and a replica that loses Redis
 * stays exact for its own writes and stores nothing until Redis is back.
 */
import { describe, expect, it } from 'vitest';
import { call } from '../../support/clients/http-client.js';
import { useStack, type Running } from '../../support/fixtures.js';
import { requireBuiltCli, runCli, writeTempFile } from '../../support/clients/cli.js';
import { waitFor } from '../../support/wait.js';
import { cacheUpstream } from './response-cache-upstream.js';

const RULES = [{ name: 'db', when: 'path-prefix(/db)', maxAgeSeconds: 60 }];

describe('response cache across replicas', () => {
  const upstream = cacheUpstream();
  const stack = useStack({
    service: 'cache-replicas',
    upstream: (req, res) => upstream.handle(req, res),
    config: { acl: { mode: 'own-routes' }, cache: { rules: RULES } },
  });
  const read = async (replica: Running, path: string) => {
    const res = await call(replica.url, path);
    return { version: res.json.version as number, hit: /hit/.test(String(res.headers['cache-status'])) };
  };
  const write = (replica: Running, path: string) => call(replica.url, path, { method: 'PATCH', body: { at: Date.now() } });

  it("drops B's entry when a write passes through A (polled until it happens)", async () => {
    const a = stack.proxy;
    const b = await stack.start();
    await read(b, '/db/orders');
    expect((await read(b, '/db/orders')).hit).toBe(true);
    const lags: number[] = [];
    for (let i = 0; i < 10; i++) {
      expect((await write(a, '/db/orders/o1')).status).toBe(200);
      const answered = performance.now();
      const expected = upstream.version;
      // Same replica: exact at once.
      expect((await read(a, '/db/orders')).version).toBe(expected);
      await waitFor(
        () => read(b, '/db/orders'),
        (r) => r.version === expected,
        5000,
        `replica B to drop /db/orders (version ${expected})`,
      );
      lags.push(performance.now() - answered);
      expect((await read(b, '/db/orders')).hit).toBe(true);
    }
    console.log(`cache drop reached replica B after ${lags.map((l) => l.toFixed(1)).join(', ')} ms (polled every 25 ms)`);
  });

  it('with consistency: strong, B never serves a state older than a write answered through A', async () => {
    const a = await stack.start({ service: { id: 'cache-strong' }, cache: { consistency: 'strong' } });
    const b = await stack.start({ service: { id: 'cache-strong' }, cache: { consistency: 'strong' } });
    await read(b, '/db/strong');
    expect((await read(b, '/db/strong')).hit).toBe(true);
    for (let i = 0; i < 20; i++) {
      expect((await write(a, '/db/strong/x')).status).toBe(200);
      expect((await read(b, '/db/strong')).version).toBe(upstream.version);
    }
    expect((await read(b, '/db/strong')).hit).toBe(true);
  });

  it('outrigger cache purge drops on every replica, through Redis', async () => {
    requireBuiltCli('the purge is a CLI command');
    const b = await stack.start();
    await read(stack.proxy, '/db/purged');
    await read(b, '/db/purged');
    expect((await read(b, '/db/purged')).hit).toBe(true);
    const config = writeTempFile('outrigger.yaml', { service: { id: 'cache-replicas' }, upstream: { url: stack.upstreamUrl }, redis: { url: stack.redis.url }, cache: { rules: RULES } });
    const bad = await runCli(['cache', 'purge', '-c', config, '--collection', 'a/b/c']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/--collection must be db\/collection/);
    const done = await runCli(['cache', 'purge', '-c', config, '--collection', 'db/purged']);
    expect(done.stdout).toMatch(/purged db\/purged on every replica/);
    expect(done.code).toBe(0);
    for (const replica of [stack.proxy, b])
      await waitFor(
        () => read(replica, '/db/purged'),
        (r) => !r.hit,
        5000,
        'the purge to reach a replica',
      );
  });

  it('loses Redis: its own writes still drop exactly, nothing is stored until Redis is back', async () => {
    const a = stack.proxy;
    const cache = a.context.responseCache!.cache;
    await read(a, '/db/away');
    expect((await read(a, '/db/away')).hit).toBe(true);
    await stack.redis.stop();
    try {
      await waitFor(
        () => cache.storing,
        (storing) => !storing,
        10_000,
        'the replica to notice Redis is away',
      );
      expect(cache.entries).toBe(0);
      for (let i = 0; i < 3; i++) {
        const res = await call(a.url, '/db/away');
        expect(res.headers['cache-status']).toBe('Outrigger;fwd=miss');
        expect((await write(a, '/db/away/1')).status).toBe(200);
        expect((await read(a, '/db/away')).version).toBe(upstream.version);
      }
    } finally {
      await stack.redis.restart();
    }
    await waitFor(
      () => cache.storing,
      (storing) => storing,
      15_000,
      'the replica to store again once Redis is back',
    );
    await read(a, '/db/away');
    expect((await read(a, '/db/away')).hit).toBe(true);
  });
});
