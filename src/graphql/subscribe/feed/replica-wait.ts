/**
 * Whether a batch of changes waits for replicas, and how (publisher.ts; issue 53 item 11).
 *
 * Normally each batch's script is followed by `WAIT <wanted> 1000` in the same round trip, on a
 * connection of the publisher's own (a WAIT holds up whatever follows it on its connection, and
 * the request path's commands must not queue behind it). When too few replicas acknowledge in
 * time (a replica slow, or gone for good), the batch is let go and the shortfall logged once; from
 * then on batches do not wait at all (a WAIT's timeout is only as fine as Redis's cron, 100 ms on
 * Redis 7.0, so even a short one would cost every write that much), and at most once a second a
 * batch carries a ROLE instead: once as many replicas have acknowledged what the master held at
 * the previous probe (a replica acknowledges every second), batches wait again.
 */
import type { ChainableCommander } from 'ioredis';

/** How long a batch waits for its acknowledgements before it is let go unreplicated (within AHEAD_WAIT_MS, the answer's wait). */
export const REPLICA_WAIT_MS = 1000;
/** While replicas are short: how often a batch probes whether they caught up. */
const PROBE_EVERY_MS = 1000;

type Then = (pipeline: ChainableCommander) => ChainableCommander;

export class ReplicaWait {
  private short = false;
  private probedAt = 0;
  /** The master's replication offset at the last probe (-1: none yet). */
  private probedOffset = -1;

  constructor(
    private readonly wanted: number,
    private readonly onShort: (error: Error) => void,
  ) {}

  /** What to pipeline behind this batch's script: a WAIT; while short, a ROLE at most every PROBE_EVERY_MS, else nothing. */
  next(): Then | undefined {
    if (!this.short) return (p) => p.wait(this.wanted, REPLICA_WAIT_MS);
    if (Date.now() - this.probedAt < PROBE_EVERY_MS) return undefined;
    this.probedAt = Date.now();
    return (p) => p.role();
  }

  /** What that command answered; its error is thrown (the batch is kept and sent again: its master may be gone). */
  answered(reply: unknown): void {
    if (reply instanceof Error) throw reply;
    if (!this.short) {
      if (Number(reply) >= this.wanted) return;
      this.short = true;
      this.probedAt = Date.now();
      this.probedOffset = -1;
      this.onShort(new Error(`${Number(reply)} of ${this.wanted} replica(s) acknowledged a batch within ${REPLICA_WAIT_MS} ms (redis.waitForReplicas)`));
      return;
    }
    const [, offset, replicas] = reply as [string, number, unknown];
    const caughtUp = Array.isArray(replicas) ? replicas.filter((r) => Array.isArray(r) && Number(r[2]) >= this.probedOffset).length : 0;
    if (this.probedOffset >= 0 && caughtUp >= this.wanted) this.short = false;
    this.probedOffset = Number(offset);
  }
}
