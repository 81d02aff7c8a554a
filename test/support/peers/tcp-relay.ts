import { connect, createServer, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

export interface TcpRelay {
  port: number;
  url(scheme?: string): string;
  /** Delay added to every chunk in each direction from now on (bytes keep their order). */
  setDelay(ms: number): void;
  /** Where new connections go from now on (open ones stay where they are, as behind a Service's NAT). */
  retarget(port: number): void;
  close(): Promise<void>;
}

/**
 * A TCP relay on loopback in front of a server (Redis here), adding a delay to each direction
 * while keeping the byte order: what `tc netem` would do, which these machines do not have.
 * Each direction has its own queue: a chunk leaves `delayMs` after it arrived (a lowered delay
 * never lets a chunk overtake the ones ahead of it).
 */
export async function startTcpRelay(targetPort: number, targetHost = '127.0.0.1'): Promise<TcpRelay> {
  let delayMs = 0;
  const sockets = new Set<Socket>();
  // One FIFO per direction, drained by one timer at a time: chunks leave in arrival order. (A
  // timer per chunk could fire out of order under load, since each timer's start is the event
  // loop's cached clock: that reorders bytes, which a Redis client reads as garbled replies.)
  const pipeDelayed = (from: Socket, to: Socket) => {
    const queue: Array<{ at: number; chunk: Buffer | null }> = [];
    let timer: NodeJS.Timeout | null = null;
    const pump = () => {
      timer = null;
      const now = Date.now();
      while (queue.length > 0 && queue[0]!.at <= now) {
        const { chunk } = queue.shift()!;
        if (chunk === null) to.end();
        else if (to.writable) to.write(chunk);
      }
      if (queue.length > 0) timer = setTimeout(pump, queue[0]!.at - now);
    };
    const push = (chunk: Buffer | null) => {
      if (delayMs === 0 && queue.length === 0) {
        if (chunk === null) to.end();
        else to.write(chunk);
        return;
      }
      queue.push({ at: Date.now() + delayMs, chunk });
      if (timer === null) timer = setTimeout(pump, queue[0]!.at - Date.now());
    };
    from.on('data', (chunk: Buffer) => push(chunk));
    from.on('end', () => push(null));
  };
  let port0 = targetPort;
  const server = createServer((client) => {
    const upstream = connect(port0, targetHost);
    sockets.add(client).add(upstream);
    pipeDelayed(client, upstream);
    pipeDelayed(upstream, client);
    const done = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('error', done).on('close', done);
    upstream.on('error', done).on('close', done);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    url: (scheme = 'redis') => `${scheme}://127.0.0.1:${port}`,
    setDelay: (ms) => (delayMs = ms),
    retarget: (p) => (port0 = p),
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
