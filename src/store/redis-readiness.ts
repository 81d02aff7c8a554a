import type { Cluster, Redis } from 'ioredis';
import type { RedisTopology } from './connections.js';
import { withTimeout } from '../util/with-timeout.js';

export interface RedisReadinessReport {
  ready: boolean;
  /** `ok (...)` or what is wrong, for `/_health/ready`'s `checks.redis`. */
  detail: string;
}

/**
 * What `/_health/ready` says about Redis. On one node, the connection's state is the answer. On
 * a cluster or behind Sentinel a connected client can still be useless (the shard that holds the
 * service's slot lost its master, or the client sits on a demoted master), so a probe asks every
 * `intervalMs`: on a cluster `CLUSTER INFO` and a read of a key in the service's slot (which
 * reaches the slot's current master), behind Sentinel `ROLE` on the command connection. The
 * answer is never older than one interval plus the probe's timeout.
 */
export class RedisReadiness {
  private last: RedisReadinessReport = { ready: false, detail: 'not probed yet' };
  private timer: NodeJS.Timeout | null = null;
  private probing = false;

  constructor(
    private readonly redis: Redis,
    private readonly topology: RedisTopology,
    /** A key carrying the service's hash tag. */
    private readonly slotKey: string,
    private readonly intervalMs = 2000,
  ) {}

  start(): void {
    if (this.topology === 'single') return;
    void this.probe();
    this.timer = setInterval(() => void this.probe(), this.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  report(): RedisReadinessReport {
    if (this.redis.status !== 'ready') return { ready: false, detail: `not ready (${this.redis.status})` };
    if (this.topology === 'single') return { ready: true, detail: 'ok' };
    return this.last;
  }

  /** Runs one probe now (also used by tests to avoid waiting for the timer). */
  async probe(): Promise<RedisReadinessReport> {
    if (this.probing) return this.last;
    this.probing = true;
    try {
      this.last = await withTimeout(this.topology === 'cluster' ? this.probeCluster() : this.probeSentinel(), Math.max(500, this.intervalMs - 200));
    } catch (error) {
      this.last = { ready: false, detail: `not ready (${this.topology}: ${(error as Error).message})` };
    } finally {
      this.probing = false;
    }
    return this.last;
  }

  private async probeCluster(): Promise<RedisReadinessReport> {
    const cluster = this.redis as unknown as Cluster;
    const info = String(await cluster.cluster('INFO'));
    const state = /cluster_state:(\w+)/.exec(info)?.[1] ?? 'unknown';
    // A keyed read goes to the master that owns the service's slot now; it fails while that
    // shard has no master, which is exactly when this replica cannot serve.
    await cluster.exists(this.slotKey);
    const masters = cluster.nodes('master').length;
    if (state !== 'ok') return { ready: false, detail: `not ready (cluster_state:${state})` };
    return { ready: true, detail: `ok (cluster, ${masters} masters)` };
  }

  private async probeSentinel(): Promise<RedisReadinessReport> {
    const role = (await this.redis.call('ROLE')) as [string, unknown, unknown[]?];
    if (role[0] !== 'master') return { ready: false, detail: `not ready (sentinel: connected to a ${role[0]}, waiting for the master)` };
    const replicas = Array.isArray(role[2]) ? role[2].length : 0;
    return { ready: true, detail: `ok (sentinel, master with ${replicas} replica${replicas === 1 ? '' : 's'})` };
  }
}
