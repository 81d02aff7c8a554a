import type { Redis } from 'ioredis';

export interface StallWatchOptions {
  /** A reply awaited this long with nothing read from the socket, or a ready check pending this long, is a stall. */
  stallMs: number;
  /** PING when idle this often, so a stall is noticed even by a connection that sends nothing (the subscriber). */
  probeEveryMs?: number;
}

const TICK_MS = 500;

/**
 * A Redis that stops answering without closing its sockets (a frozen process or VM, a network
 * that drops packets silently) never produces an error: ioredis would wait on it forever, and
 * behind Sentinel it would never ask for the replica promoted meanwhile. This watches one
 * connection: commands awaiting a reply with no byte read from the socket for `stallMs`, or a
 * ready check pending that long, make it reconnect (which asks the sentinels again, and resends
 * or fails what was in flight). It reads ioredis' command queue, so an idle connection costs
 * nothing unless `probeEveryMs` asks for a PING.
 */
export function watchForStalls(conn: Redis, options: StallWatchOptions, isClosing: () => boolean): void {
  let lastReadAt = Date.now();
  let connectedAt = 0;
  let waitingSince = 0;
  let lastProbeAt = 0;
  conn.on('connect', () => {
    connectedAt = lastReadAt = Date.now();
    waitingSince = 0;
    conn.stream?.on('data', () => (lastReadAt = Date.now()));
  });

  const timer = setInterval(() => {
    if (isClosing()) return clearInterval(timer);
    const now = Date.now();
    if (conn.status === 'connect') {
      if (now - connectedAt > options.stallMs) conn.disconnect(true);
      return;
    }
    if (conn.status !== 'ready') return;
    if (conn.commandQueue.length === 0) {
      waitingSince = 0;
      if (options.probeEveryMs !== undefined && now - lastProbeAt >= options.probeEveryMs) {
        lastProbeAt = now;
        conn.ping().catch(() => {});
      }
      return;
    }
    waitingSince ||= now;
    if (now - Math.max(lastReadAt, waitingSince) > options.stallMs) {
      waitingSince = 0;
      conn.disconnect(true);
    }
  }, TICK_MS);
  timer.unref();
}
