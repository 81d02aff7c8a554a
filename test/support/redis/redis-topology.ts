/**
 * Real Redis topologies for tests: a Redis Cluster (masters with replicas) and a Sentinel setup,
 * each made of `redis-server` children on free loopback ports, in a temp dir, killed by the test
 * (SIGKILL for failover tests) and cleaned up by `close()`.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';

export interface RedisNodeProcess {
  port: number;
  child: ChildProcess;
  alive(): boolean;
  kill(signal?: NodeJS.Signals): Promise<void>;
}

const children = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of children) child.kill('SIGKILL');
});

/** A port free on loopback whose cluster bus port (port + 10000) is free too. */
async function freeClusterPort(taken: Set<number>): Promise<number> {
  for (let i = 0; i < 200; i++) {
    const port = await listenOnce(0);
    if (port > 55_000 || taken.has(port) || taken.has(port + 10_000)) continue;
    if (
      await listenOnce(port + 10_000).then(
        () => true,
        () => false,
      )
    ) {
      taken.add(port);
      taken.add(port + 10_000);
      return port;
    }
  }
  throw new Error('no free port pair for a cluster node');
}

function listenOnce(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      const got = (server.address() as { port: number }).port;
      server.close(() => resolve(got));
    });
  });
}

function startServer(binary: string, args: string[], port: number, dir: string): RedisNodeProcess {
  mkdirSync(dir, { recursive: true });
  const child = spawn(binary, args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  child.stderr?.resume();
  children.add(child);
  child.once('exit', () => children.delete(child));
  const alive = () => child.exitCode === null && child.signalCode === null;
  return {
    port,
    child,
    alive,
    kill(signal: NodeJS.Signals = 'SIGKILL') {
      if (!alive()) return Promise.resolve();
      return new Promise((resolve) => {
        child.once('exit', () => resolve());
        child.kill(signal);
      });
    },
  };
}

async function untilPingable(port: number, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const probe = new Redis(port, '127.0.0.1', { lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0 });
    probe.on('error', () => {});
    try {
      await probe.connect();
      await probe.ping();
      return;
    } catch {
      await sleep(50);
    } finally {
      probe.disconnect();
    }
  }
  throw new Error(`redis on port ${port} did not answer within ${timeoutMs} ms`);
}

export async function until<T>(read: () => Promise<T>, done: (v: T) => boolean, timeoutMs: number, what: string): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await read();
      if (done(value)) return value;
      last = value;
    } catch (error) {
      last = (error as Error).message;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}; last: ${JSON.stringify(last)?.slice(0, 500)}`);
    await sleep(100);
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One plain connection to one node (never follows redirects): for assertions and topology queries. */
async function ask<T>(port: number, work: (r: Redis) => Promise<T>): Promise<T> {
  // A frozen (SIGSTOPped) node accepts the connection and never answers: give up on it.
  const r = new Redis(port, '127.0.0.1', { lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0, connectTimeout: 1000, commandTimeout: 2000 });
  r.on('error', () => {});
  try {
    await r.connect();
    return await work(r);
  } finally {
    r.disconnect();
  }
}

export interface TestCluster {
  nodes: RedisNodeProcess[];
  /** `redis.cluster.nodes` for the config: every node, as host:port. */
  seeds: string[];
  /** The port of the master that now serves `key`'s slot (asked from a live node). */
  masterOf(key: string): Promise<number>;
  node(port: number): RedisNodeProcess;
  /** How many live replicas the master serving `key`'s slot has (CLUSTER SLOTS leaves failed nodes out). */
  replicasOf(key: string): Promise<number>;
  /** Waits until `key`'s slot is served by a master other than `oldPort` and the cluster is ok. */
  waitForFailover(key: string, oldPort: number, timeoutMs: number): Promise<number>;
  /**
   * Live resharding of `key`'s slot to another master, as `redis-cli --cluster reshard` does it
   * (IMPORTING / MIGRATING, MIGRATE of its keys in batches, SETSLOT NODE everywhere), while
   * clients keep using it. Resolves once every live node names the new owner.
   */
  moveSlotOf(key: string): Promise<{ slot: number; fromPort: number; toPort: number; keysMoved: number }>;
  close(): Promise<void>;
}

/**
 * `masters` masters with `replicas` replicas each, made by `redis-cli --cluster create`.
 * `nodeTimeoutMs` is cluster-node-timeout: a master is declared failed after it, so a failover
 * takes about that plus an election.
 */
export async function startTestCluster(options: { masters?: number; replicas?: number; nodeTimeoutMs?: number } = {}): Promise<TestCluster> {
  const masters = options.masters ?? 3;
  const replicas = options.replicas ?? 1;
  const dir = mkdtempSync(join(tmpdir(), 'outrigger-test-cluster-'));
  const taken = new Set<number>();
  const nodes: RedisNodeProcess[] = [];
  try {
    for (let i = 0; i < masters * (1 + replicas); i++) {
      const port = await freeClusterPort(taken);
      nodes.push(
        startServer(
          'redis-server',
          [
            '--port',
            String(port),
            '--bind',
            '127.0.0.1',
            '--cluster-enabled',
            'yes',
            '--cluster-config-file',
            `nodes-${port}.conf`,
            '--cluster-node-timeout',
            String(options.nodeTimeoutMs ?? 1500),
            '--appendonly',
            'no',
            '--save',
            '',
            '--daemonize',
            'no',
            '--loglevel',
            'warning',
            '--dir',
            join(dir, String(port)),
          ],
          port,
          join(dir, String(port)),
        ),
      );
    }
    await Promise.all(nodes.map((n) => untilPingable(n.port)));
    const created = spawnSync('redis-cli', ['--cluster', 'create', ...nodes.map((n) => `127.0.0.1:${n.port}`), '--cluster-replicas', String(replicas), '--cluster-yes'], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    if (created.status !== 0) throw new Error(`redis-cli --cluster create failed: ${created.stdout}\n${created.stderr}`);
    // Every node agrees the cluster is ok and every replica has finished its first sync.
    await until(
      () => Promise.all(nodes.map((n) => ask(n.port, async (r) => `${await r.cluster('INFO')}\n${await r.info('replication')}`))),
      (infos) => infos.every((i) => i.includes('cluster_state:ok') && !i.includes('master_link_status:down') && !i.includes('master_sync_in_progress:1')),
      30_000,
      'the cluster to settle',
    );
  } catch (error) {
    await Promise.all(nodes.map((n) => n.kill()));
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }

  const live = () => nodes.filter((n) => n.alive());
  const masterOf = async (key: string) => {
    for (const n of live()) {
      try {
        return await ask(n.port, async (r) => {
          const slot = Number(await r.cluster('KEYSLOT', key));
          const ranges = (await r.cluster('SLOTS')) as unknown as Array<[number, number, [string, number, ...unknown[]]]>;
          const owner = ranges.find(([from, to]) => slot >= from && slot <= to);
          if (!owner) throw new Error(`slot ${slot} has no owner`);
          return Number(owner[2][1]);
        });
      } catch {
        // try the next node
      }
    }
    throw new Error('no live cluster node answered');
  };
  return {
    nodes,
    seeds: nodes.map((n) => `127.0.0.1:${n.port}`),
    masterOf,
    node: (port) => nodes.find((n) => n.port === port)!,
    async replicasOf(key) {
      const port = await masterOf(key);
      return ask(port, async (r) => {
        const slot = Number(await r.cluster('KEYSLOT', key));
        const ranges = (await r.cluster('SLOTS')) as unknown as Array<[number, number, ...unknown[]]>;
        const owner = ranges.find(([from, to]) => slot >= from && slot <= to);
        return owner ? owner.length - 3 : 0;
      });
    },
    async waitForFailover(key, oldPort, timeoutMs) {
      const promoted = await until(
        async () => {
          const port = await masterOf(key);
          const info = port === oldPort ? '' : String(await ask(port, (r) => r.cluster('INFO')));
          return { port, ok: info.includes('cluster_state:ok') };
        },
        (v) => v.port !== oldPort && v.ok,
        timeoutMs,
        `a replica to take over from ${oldPort}`,
      );
      return promoted.port;
    },
    async moveSlotOf(key) {
      const fromPort = await masterOf(key);
      const { slot, toPort } = await ask(fromPort, async (r) => {
        const slot = Number(await r.cluster('KEYSLOT', key));
        const ranges = (await r.cluster('SLOTS')) as unknown as Array<[number, number, [string, number, ...unknown[]]]>;
        const other = ranges.map(([, , owner]) => Number(owner[1])).find((port) => port !== fromPort);
        if (other === undefined) throw new Error('no other master to move the slot to');
        return { slot, toPort: other };
      });
      const idOf = (port: number) => ask(port, (r) => r.call('CLUSTER', 'MYID') as Promise<string>);
      const [fromId, toId] = [await idOf(fromPort), await idOf(toPort)];
      await ask(toPort, (r) => r.call('CLUSTER', 'SETSLOT', slot, 'IMPORTING', fromId));
      await ask(fromPort, (r) => r.call('CLUSTER', 'SETSLOT', slot, 'MIGRATING', toId));
      let keysMoved = 0;
      await ask(fromPort, async (r) => {
        for (;;) {
          const batch = (await r.call('CLUSTER', 'GETKEYSINSLOT', slot, 10)) as string[];
          if (batch.length === 0) return;
          await r.call('MIGRATE', '127.0.0.1', toPort, '', 0, 5000, 'KEYS', ...batch);
          keysMoved += batch.length;
        }
      });
      // The new owner first, then the old one, then every other master (the order the docs give).
      const masters = [
        ...new Set([toPort, fromPort, ...(await ask(toPort, async (r) => ((await r.cluster('SLOTS')) as unknown as Array<[number, number, [string, number]]>).map(([, , o]) => Number(o[1]))))]),
      ];
      for (const port of masters) await ask(port, (r) => r.call('CLUSTER', 'SETSLOT', slot, 'NODE', toId));
      await until(
        () =>
          Promise.all(
            live().map((n) => ask(n.port, async (r) => ((await r.cluster('SLOTS')) as unknown as Array<[number, number, [string, number]]>).find(([a, z]) => slot >= a && slot <= z)?.[2][1])),
          ),
        (owners) => owners.every((port) => Number(port) === toPort),
        15_000,
        `every node to name ${toPort} as the owner of slot ${slot}`,
      );
      return { slot, fromPort, toPort, keysMoved };
    },
    async close() {
      await Promise.all(nodes.map((n) => n.kill()));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface TestSentinel {
  masterName: string;
  master: RedisNodeProcess;
  replica: RedisNodeProcess;
  sentinels: RedisNodeProcess[];
  /** `redis.sentinel.nodes` for the config. */
  seeds: string[];
  /** The master's port as the sentinels report it now. */
  masterPort(): Promise<number>;
  /** Waits until the sentinels report a master other than `oldPort` and it answers as master. */
  waitForFailover(oldPort: number, timeoutMs: number): Promise<number>;
  close(): Promise<void>;
}

/**
 * One master, one replica, three sentinels (quorum 2) tuned to fail over in seconds:
 * `downAfterMs` until the master is subjectively down, `failoverTimeoutMs` for the whole failover.
 */
export async function startTestSentinel(options: { downAfterMs?: number; failoverTimeoutMs?: number } = {}): Promise<TestSentinel> {
  const masterName = 'outrigger-test';
  const dir = mkdtempSync(join(tmpdir(), 'outrigger-test-sentinel-'));
  const taken = new Set<number>();
  const started: RedisNodeProcess[] = [];
  const data = (port: number, extra: string[]) =>
    startServer(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--appendonly', 'no', '--save', '', '--daemonize', 'no', '--loglevel', 'warning', '--dir', join(dir, String(port)), ...extra],
      port,
      join(dir, String(port)),
    );
  try {
    const masterPort = await freeClusterPort(taken);
    const replicaPort = await freeClusterPort(taken);
    const master = data(masterPort, []);
    started.push(master);
    await untilPingable(masterPort);
    const replica = data(replicaPort, ['--replicaof', '127.0.0.1', String(masterPort)]);
    started.push(replica);
    await untilPingable(replicaPort);
    await until(
      () => ask(replicaPort, (r) => r.info('replication')),
      (i) => i.includes('master_link_status:up'),
      15_000,
      'the replica to sync',
    );
    const sentinels: RedisNodeProcess[] = [];
    for (let i = 0; i < 3; i++) {
      const port = await freeClusterPort(taken);
      const sdir = join(dir, `sentinel-${port}`);
      mkdirSync(sdir, { recursive: true });
      const file = join(sdir, 'sentinel.conf');
      writeFileSync(
        file,
        [
          `port ${port}`,
          'bind 127.0.0.1',
          `dir ${sdir}`,
          `sentinel monitor ${masterName} 127.0.0.1 ${masterPort} 2`,
          `sentinel down-after-milliseconds ${masterName} ${options.downAfterMs ?? 1000}`,
          `sentinel failover-timeout ${masterName} ${options.failoverTimeoutMs ?? 3000}`,
          `sentinel parallel-syncs ${masterName} 1`,
          '',
        ].join('\n'),
      );
      const s = startServer('redis-server', [file, '--sentinel'], port, sdir);
      sentinels.push(s);
      started.push(s);
    }
    await Promise.all(sentinels.map((s) => untilPingable(s.port)));
    // Every sentinel has found the replica and the other sentinels, so a failover can be agreed.
    await until(
      () => Promise.all(sentinels.map((s) => ask(s.port, (r) => r.call('SENTINEL', 'MASTER', masterName) as Promise<string[]>))),
      (all) =>
        all.every((flat) => {
          const m = new Map<string, string>();
          for (let i = 0; i + 1 < flat.length; i += 2) m.set(flat[i]!, flat[i + 1]!);
          return Number(m.get('num-slaves')) >= 1 && Number(m.get('num-other-sentinels')) >= 2;
        }),
      20_000,
      'the sentinels to discover each other and the replica',
    );
    const masterPortNow = async () => {
      for (const s of sentinels.filter((x) => x.alive())) {
        try {
          const addr = (await ask(s.port, (r) => r.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', masterName))) as [string, string];
          return Number(addr[1]);
        } catch {
          // next sentinel
        }
      }
      throw new Error('no sentinel answered');
    };
    return {
      masterName,
      master,
      replica,
      sentinels,
      seeds: sentinels.map((s) => `127.0.0.1:${s.port}`),
      masterPort: masterPortNow,
      async waitForFailover(oldPort, timeoutMs) {
        const port = await until(masterPortNow, (p) => p !== oldPort, timeoutMs, 'the sentinels to promote the replica');
        await until(
          () => ask(port, (r) => r.call('ROLE') as Promise<[string]>),
          (role) => role[0] === 'master',
          timeoutMs,
          'the promoted replica to act as master',
        );
        return port;
      },
      async close() {
        await Promise.all(started.map((n) => n.kill()));
        rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    await Promise.all(started.map((n) => n.kill()));
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
}
