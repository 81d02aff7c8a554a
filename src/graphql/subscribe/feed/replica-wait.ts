/**
 * Whether a batch of changes waits for replicas, and how (publisher.ts; issue 53 item 11).
 *
 * The first batch carries a ROLE behind its script: a master with fewer replicas than wanted (a
 * single node, a cluster shard without one) never makes a batch wait. Otherwise each batch's
 * script is followed by `WAIT <wanted> 1000` in the same round trip, on a connection of the
 * publisher's own (a WAIT holds up whatever follows it on its connection, and the request path's
 * commands must not queue behind it). When too few replicas acknowledge in time (a replica slow,
 * or gone for good), the batch is let go and the shortfall logged once; from then on batches do
 * not wait at all (a WAIT's timeout is only as fine as Redis's cron, 100 ms on Redis 7.0, so even
 * a short one would cost every write that much), and at most once a second a batch carries a ROLE
 * instead: once as many replicas have acknowledged what the master held at the previous probe (a
 * replica acknowledges every second), batches wait again.
 */
import type { ChainableCommander } from 'ioredis';

/** How long a batch waits for its acknowledgements before it is let go unreplicated (within AHEAD_WAIT_MS, the answer's wait). */
export const REPLICA_WAIT_MS = 1000;
/** While replicas are short: how often a batch probes whether they caught up. */
const PROBE_EVERY_MS = 1000;

type Then = (pipeline: ChainableCommander) => ChainableCommander;

export class ReplicaWait {
  private state: 'first' | 'waiting' | 'short' = 'first';
  private probedAt = 0;
  /** The master's replication offset at the last probe (-1: none yet). */
  private probedOffset = -1;

  constructor(
    private readonly wanted: number,
    private readonly onShort: (error: Error) => void,
  ) {}

  /** What to pipeline behind this batch's script: a WAIT; first, and while short at most every PROBE_EVERY_MS, a ROLE; else nothing. */
  next(): Then | undefined {
    if (this.state === 'waiting') return (p) => p.wait(this.wanted, REPLICA_WAIT_MS);
    if (this.state === 'short' && Date.now() - this.probedAt < PROBE_EVERY_MS) return undefined;
    this.probedAt = Date.now();
    return (p) => p.role();
  }

  /** What that command answered; its error is thrown (the batch is kept and sent again: its master may be gone). */
  answered(reply: unknown): void {
    if (reply instanceof Error) throw reply;
    if (Array.isArray(reply)) return this.probed(reply);
    if (this.state !== 'waiting' || Number(reply) >= this.wanted) return;
    this.short(`${Number(reply)} of ${this.wanted} replica(s) acknowledged a batch within ${REPLICA_WAIT_MS} ms (redis.waitForReplicas)`);
  }

  private probed(role: unknown[]): void {
    const [, offset, replicas] = role as [string, number, unknown];
    const listed = Array.isArray(replicas) ? replicas.filter((r) => Array.isArray(r)) : [];
    if (this.state === 'first') {
      if (listed.length >= this.wanted) this.state = 'waiting';
      else this.short(`the master has ${listed.length} replica(s), fewer than redis.waitForReplicas (${this.wanted})`);
      this.probedOffset = Number(offset);
      return;
    }
    const caughtUp = listed.filter((r) => Number((r as unknown[])[2]) >= this.probedOffset).length;
    if (this.probedOffset >= 0 && caughtUp >= this.wanted) this.state = 'waiting';
    this.probedOffset = Number(offset);
  }

  private short(why: string): void {
    this.state = 'short';
    this.probedAt = Date.now();
    this.probedOffset = -1;
    this.onShort(new Error(why));
  }
}
